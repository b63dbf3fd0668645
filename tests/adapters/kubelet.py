"""A stand-in kubelet and API server for the log machine (``logmachine.py``), on a fake clock,
and a driver that does with the machine's actions what the observer's threads do.

The Worker's log is stored as the runtime stores it: entries, a line longer than ``MAX``
characters in partial ones. The kubelet rotates it at its size checks (every 10 s, past
``max_entries``), and serves it as it does:

- a read starts at the file now at the log's path (from ``sinceTime``: entries stamped
  before that second skipped), and stamps an entry only where a line begins;
- a follow that waits at its file's end when that file is rotated goes on into the new one;
  one that reaches the end of a file rotated meanwhile waits there for the next rotation,
  then goes on into the file current then (the files between are skipped). (The kubelet's
  follow watches the log's folder from its first wait at a file's end on: one that waited
  so before the rotation finds the new file's creation queued when it reaches its file's
  end, and goes on at once into the file current then, the files between skipped all the
  same. The stand-in has only the first kind.)
- a follow at its file's end once the container is over is ended, and so is a read that is
  not a follow, at its file's end;
- ``limitBytes``: the current file's first line.

The API server goes down for a while (streams broken, requests failing) or restarts
(streams ended cleanly); the consumer is busy for a while (the first segment's reader held
while it hands lines on). Which of the things that can happen next happens is drawn from a
seeded ``random.Random``: every example is one interleaving, and the same seed gives the
same one.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rlark_acceptance.adapters.kubernetes.logcursor import Gap, stamp_key
from rlark_acceptance.adapters.kubernetes.logfiles import continued
from rlark_acceptance.adapters.kubernetes.logmachine import (
    Begin,
    Broke,
    Ended,
    Event,
    Failed,
    Finish,
    Held,
    Lines,
    LogMachine,
    Lost,
    NodeLost,
    Open,
    Opened,
    Over,
    Probe,
    Probed,
    Put,
    Raise,
    Read,
    Resume,
    Shut,
    Step,
    Tick,
    Wait,
)
from rlark_acceptance.adapters.kubernetes.stream import LineSplitter

T0 = datetime(2026, 12, 1, 9, 40, tzinfo=UTC)
EPOCH = T0.timestamp()
MAX = 6  # characters of an entry: a longer line is stored in partial entries
ROTATION_CHECK = 10.0  # the kubelet's containerLogMonitorInterval
TICK = 0.25  # as the observer's
# A file is rotated only once its first line has been in it this long (the log machine's
# premise, ``logfiles.EMPTY_SEEN_SECONDS``): a file the probes saw empty is seen again with
# its first line if their answers come closer than this, and otherwise said as maybe lost.
# (The probes once came up to 3.25 s apart here, a second after an answer at the next tick,
# answered within two: a file seen empty, filled and rotated between two answers was lost
# without a word, the world named in the property test.)
FILLED = 3.0
# A stream with entries to serve is served within this long, whatever else is served: the
# kubelet and the API server serve each stream on its own. (Held off a loaded machine's CPU,
# this process is held as a whole, every reader alike, which ``Chain.stalled`` allows for.)
FAIR = 1.0
# The observer's streams hand on what they hold; a read of the stand-in gives this many
# entries at most.
CHUNK = 3


def stamp(t: float, seq: int) -> str:
    """The runtime's stamp of an entry written at ``t`` (sim seconds), made unique by ``seq``."""
    ms = round(t * 1000)
    whole = (T0 + timedelta(milliseconds=ms - ms % 1000)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{whole}.{ms % 1000:03d}{seq % 1_000_000:06d}Z"


@dataclass(frozen=True)
class Entry:
    stamp: str
    text: str
    partial: bool
    line: int  # the index of the line it is part of


@dataclass
class World:
    """What happens, drawn by the test: the Worker's lines and when each is written, the
    files' size, the API server's outages and restarts, the consumer's busy spells."""

    texts: list[str]
    gaps: list[float]  # seconds before each line is written
    max_entries: int
    outages: list[tuple[float, float]]  # (start, seconds) of the API server down
    restarts: list[float]  # the API server restarted: every stream ended cleanly
    busy: list[float]  # seconds the consumer is busy after each of its first puts
    seed: int
    over_after: float = 0.5  # the Pod watch tells the Worker over this long after its end


# What a world is drawn from (the property test's strategy and ``random_world`` alike): a
# line's length past its number (none, one entry, two and three entries, more), the seconds
# before each line, an outage's length, a busy spell of the consumer.
LENGTHS = (0, 1, MAX, 2 * MAX + 1, 4 * MAX)
GAPS = (0.0, 0.001, 0.05, 0.3, 1.0, 3.0, 12.0)
OUTAGE_SECONDS = (0.5, 2.0, 8.0, 12.0, 25.0)
BUSY_SECONDS = (0.0, 0.5, 3.0, 15.0, 40.0)


def random_world(rng: random.Random, *, api_up: bool = False) -> World:
    """A world drawn as the property test draws one, from ``rng`` (a longer exploration than
    the test's, ``bench/log_worlds.py``); ``api_up``: no outage, no restart."""
    n = rng.randint(1, 40)
    outages = [(rng.uniform(0, 60), rng.choice(OUTAGE_SECONDS)) for _ in range(rng.randint(0, 2))]
    restarts = [rng.uniform(0, 60) for _ in range(rng.randint(0, 2))]
    return World(
        texts=[f"{i}:" + "x" * rng.choice(LENGTHS) for i in range(n)],
        gaps=[rng.choice(GAPS) for _ in range(n)],
        max_entries=rng.randint(2, 8),
        outages=[] if api_up else outages,
        restarts=[] if api_up else restarts,
        busy=[rng.choice(BUSY_SECONDS) for _ in range(rng.randint(0, 3))],
        seed=rng.randint(0, 2**32 - 1),
    )


@dataclass
class Stream:
    seg: int
    follow: bool
    file: int
    pos: int = 0
    since: tuple[float, int] | None = None
    new: bool = True  # the next entry served starts a line
    stuck: bool = False  # at the end of a file rotated before it got there
    shut: bool = False
    split: LineSplitter = field(default_factory=LineSplitter)
    ready: float | None = None  # it has had entries to serve since then


@dataclass
class Outcome:
    lines: list[str]  # the lines put, in order
    lost: list[Gap]
    finished: bool
    node_lost: bool


class Sim:
    """One run of the machine against the stand-in, to its end (every reader done and the
    spools put) or ``horizon`` seconds."""

    def __init__(self, world: World, horizon: float = 900.0) -> None:
        self.w = world
        self.rng = random.Random(world.seed)
        self.now = 0.0
        self.horizon = horizon
        self.m = LogMachine(0.0, EPOCH)
        self.files: list[list[Entry]] = [[]]
        self.entries: list[Entry] = []
        self.written_at: dict[str, float] = {}
        self.lines_written = 0
        self.worker_over_at: float | None = None
        self.over_told = False
        self.streams: dict[int, Stream] = {}
        self.waits: dict[int, float] = {}  # reader → when it resumes
        self.asks: list[tuple[float, int, int | None, float]] = []  # (answer at, n, asker, sent)
        self.held_until: dict[int, float] = {}
        self.puts: dict[int, list[str]] = {}
        self.lost: list[Gap] = []
        self.node_lost = False
        self.next_tick = TICK
        self.next_check = ROTATION_CHECK
        self.next_write = world.gaps[0] if world.gaps else 0.0
        self.busy = list(world.busy)
        self.n = itertools.count()
        self.trace: list[str] = []  # what was fed and what came out, for a failure's message

    # --- the world ---------------------------------------------------------------------
    def down(self) -> bool:
        return any(a <= self.now < a + s for a, s in self.w.outages)

    def write(self) -> None:
        i = self.lines_written
        text = self.w.texts[i]
        parts = [text[j : j + MAX] for j in range(0, len(text), MAX)] or [""]
        for j, part in enumerate(parts):
            e = Entry(stamp(self.now, len(self.entries)), part, j < len(parts) - 1, i)
            self.entries.append(e)
            self.written_at[e.stamp] = self.now
            self.files[-1].append(e)
        self.lines_written += 1
        if self.lines_written < len(self.w.texts):
            self.next_write = self.now + self.w.gaps[self.lines_written]
        else:
            self.worker_over_at = self.now

    def rotate(self) -> None:
        """The kubelet's size check: past the size, a new file at the log's path. A follow
        waiting at the end of the file rotated goes on into the new one; one stuck at the
        end of an older file goes on into it too, the files between skipped."""
        self.next_check = self.now + ROTATION_CHECK
        cur = self.files[-1]
        if len(cur) < self.w.max_entries or self.worker_over_at is not None:
            return
        if self.now - self.written_at[cur[0].stamp] < FILLED:
            return  # (see FILLED)
        self.files.append([])
        last = len(self.files) - 1
        self.trace.append(f"{self.now:8.3f} rotated: file {last} is current")
        for s in self.streams.values():
            if not s.follow or s.pos < len(self.files[s.file]):
                continue
            if s.file == last - 1 or s.stuck:
                s.file, s.pos, s.stuck = last, 0, False

    # --- the driver, as the observer's threads ------------------------------------------
    def feed(self, ev: Event) -> Step | None:
        acts = self.m.feed(ev, self.now, EPOCH + self.now)
        self.trace.append(f"{self.now:8.3f} {ev} -> {acts}")
        step: Step | None = None
        for a in acts:
            match a:
                case Put(k, texts, _):
                    self.puts.setdefault(k, []).extend(texts)
                    if k == 0 and self.busy:  # a Step 6 busy elsewhere holds the reader
                        spell = self.busy.pop(0)
                        if spell > 0:
                            self.m.feed(Held(0, True), self.now, EPOCH + self.now)
                            self.held_until[0] = self.now + spell
                case Lost(gap):
                    self.lost.append(gap)
                case Shut(k):
                    if k in self.streams:
                        self.streams[k].shut = True
                case Read(k):
                    self.run(k, self.feed(Begin(k)))
                case NodeLost():
                    self.node_lost = True
                case _:
                    step = a
        return step

    def run(self, k: int, step: Step | None) -> None:
        """Carry a reader's step out as far as it goes without the world."""
        while step is not None:
            match step:
                case Finish() | Raise():
                    self.streams.pop(k, None)
                    return
                case Wait(_, seconds):
                    self.waits[k] = self.now + seconds
                    return
                case Failed():
                    self.waits[k] = self.now + 0.5  # the reach's backoff
                    return
                case Probe(asker):
                    self.ask(asker)
                    return
                case Open(_, since, follow):
                    self.streams.pop(k, None)
                    if self.down():
                        step = Failed(k)
                        continue
                    key = stamp_key(since) if since else None
                    self.streams[k] = Stream(k, follow, len(self.files) - 1, since=key)
                    step = self.feed(Opened(k))
                    if step is None:
                        return
                    continue
            raise AssertionError(step)

    def ended(self, k: int, broke: bool) -> None:
        s = self.streams.pop(k)
        ev: Event = Broke(k, s.split.rest) if broke else Ended(k, s.split.rest)
        self.run(k, self.feed(ev))

    def overdue(self, k: int) -> bool:
        ready = self.streams[k].ready
        return ready is not None and self.now >= ready + FAIR

    def serve(self, k: int) -> None:
        """The next few entries of ``k``'s stream."""
        s = self.streams[k]
        s.ready = None
        file = self.files[s.file]
        text = []
        for e in file[s.pos : s.pos + self.rng.randint(1, CHUNK)]:
            s.pos += 1
            if s.since is not None and stamp_key(e.stamp)[0] < s.since[0]:
                s.new = not e.partial
                continue
            text.append((f"{e.stamp} " if s.new else "") + e.text + ("" if e.partial else "\n"))
            s.new = not e.partial
        batch = s.split.feed("".join(text))
        if batch or text:  # (as the observer's streams: a read of part of a line is fed)
            self.run(k, self.feed(Lines(k, batch)))

    def choices(self) -> list[tuple[str, int]]:
        """What the stand-in can do now, for streams: serve entries, end, break."""
        out: list[tuple[str, int]] = []
        cur = len(self.files) - 1
        for k, s in self.streams.items():
            if self.held_until.get(k, -1.0) > self.now:
                continue  # its reader waits on the consumer
            if s.shut:
                out.append(("end", k))
                continue
            if self.down():
                out.append(("break", k))
                continue
            if s.pos < len(self.files[s.file]):
                out.append(("serve", k))
                s.ready = self.now if s.ready is None else s.ready
                continue
            if s.file != cur and s.follow and not s.stuck:
                s.stuck = True
            if not s.follow or self.worker_over_at is not None:
                out.append(("end", k))
        return out

    def step(self) -> bool:
        """One thing happens; False when nothing more can."""
        opts = self.choices()
        due = [o for o in opts if o[0] == "serve" and self.overdue(o[1])]
        if due:  # (see FAIR)
            self.serve(self.rng.choice(due)[1])
            return True
        if opts and (self.rng.random() < 0.7 or self.now > self.horizon * 0.8):
            what, k = self.rng.choice(opts)
            if what == "serve":
                self.serve(k)
            else:
                shut = self.streams[k].shut
                self.ended(k, broke=what == "break" or (shut and self.rng.random() < 0.5))
            return True
        # Time passes to the next timed happening.
        timed = [self.next_tick, self.next_check]
        if self.worker_over_at is None:
            timed.append(self.next_write)
        elif not self.over_told:
            timed.append(self.worker_over_at + self.w.over_after)
        timed += self.waits.values()
        timed += [a[0] for a in self.asks]
        timed += [t for t in self.held_until.values() if t > self.now]
        timed += [a + s for a, s in self.w.outages if a + s > self.now]
        timed += [r for r in self.w.restarts if r > self.now]
        timed += [s.ready + FAIR for s in self.streams.values() if s.ready is not None]
        if self.rng.random() < 0.3 and opts:
            timed.append(self.now + self.rng.choice((0.01, 0.1, 1.0)))
        nxt = min(t for t in timed if t >= self.now)
        self.now = nxt
        if self.now > self.horizon:
            return False
        if self.worker_over_at is None and self.now >= self.next_write:
            self.write()
        if self.now >= self.next_check:
            self.rotate()
        told = self.worker_over_at is not None and not self.over_told
        if told and self.now >= (self.worker_over_at or 0.0) + self.w.over_after:
            self.over_told = True
            exit_ = self.worker_over_at or 0.0
            self.feed(Over(EPOCH + float(int(exit_))))  # finishedAt: whole seconds
        for r in self.w.restarts:
            if r == self.now:
                # Every stream ends, cleanly until the start of the second the Worker's
                # container finishes in, broken from then on: a clean end from then is taken
                # for the kubelet's at the reader's file's end (the Pod's finishedAt has whole
                # seconds), and a rotated file's reader cut cleanly in mid-file then would
                # lose the rest of its file without a word.
                # (compared as the machine compares them: on the wall clock's floats)
                late = EPOCH + self.now >= EPOCH + float(int(sum(self.w.gaps)))
                for k in list(self.streams):
                    self.ended(k, broke=late)
        for k, t in list(self.held_until.items()):
            if t <= self.now:
                del self.held_until[k]
                self.feed(Held(k, False))
        for k, t in list(self.waits.items()):
            if t <= self.now:
                del self.waits[k]
                self.run(k, self.feed(Resume(k)))
        for a in sorted(self.asks):
            if a[0] <= self.now:
                self.asks.remove(a)
                self.feed_probe(a[2], a[3])
        if self.now >= self.next_tick:
            self.next_tick = self.now + TICK
            if isinstance(self.feed(Tick()), Probe):
                self.ask(None)
        return True

    def ask(self, asker: int | None) -> None:
        """A question for the current file's first line, answered a little later."""
        later = self.now + self.rng.choice((0.0, 0.05, 0.5, 2.0))
        self.asks.append((later, next(self.n), asker, EPOCH + self.now))

    def feed_probe(self, asker: int | None, sent: float) -> None:
        first: str | None = None
        if not self.down():
            cur = self.files[-1]
            first = f"{cur[0].stamp} {cur[0].text}" if cur else ""
        step = self.feed(Probed(asker, sent, EPOCH + self.now, first))
        if asker is not None:
            self.run(asker, step)

    def go(self) -> Outcome:
        self.run(0, self.feed(Begin(0)))
        while not (self.m.read and self.over_told):
            if not self.step():
                break
        return Outcome(self.drained(), self.lost, self.m.read, self.node_lost)

    def drained(self) -> list[str]:
        segs = self.m.segments
        out = list(self.puts.get(0, []))
        for i in range(1, len(segs)):
            out += continued(segs[i - 1], segs[i], self.puts.get(i, []))
        return out

    def written(self) -> list[tuple[list[str], str]]:
        """The Worker's lines: the stamps of its entries, and its text."""
        lines: dict[int, tuple[list[str], str]] = {}
        for e in self.entries:
            stamps, text = lines.get(e.line, ([], ""))
            lines[e.line] = ([*stamps, e.stamp], text + e.text)
        return [lines[i] for i in sorted(lines)]


def unaccounted(
    written: list[tuple[list[str], str]], put: list[str], lost: list[Gap]
) -> str | None:
    """What breaks the promise (None: nothing): every written line put once, in order, whole,
    unless a gap said as lost covers it (a line with an entry inside one may be put cut
    short, or not at all)."""
    spans = [(stamp_key(g.after), stamp_key(g.before)) for g in lost]

    def named(stamps: list[str]) -> bool:
        return any(a <= stamp_key(s) < b for s in stamps for a, b in spans)

    j = 0
    for i, text in enumerate(put):
        while j < len(written):
            stamps, whole = written[j]
            if whole == text or (named(stamps) and text and whole.startswith(text)):
                break
            if not named(stamps):
                return f"line {j} {whole!r} ({stamps[0]}) missing before put line {i} {text!r}"
            j += 1
        if j == len(written):
            return f"put line {i} {text!r} is no written line (twice, out of order, or made up)"
        j += 1
    for stamps, whole in written[j:]:
        if not named(stamps):
            return f"line {whole!r} ({stamps[0]}) missing at the end"
    return None
