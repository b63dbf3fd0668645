"""The reading of a Worker's log on the ``kubernetes`` target as one state machine.

What happened goes in as an event (a reader's stream opened, refused, a batch of its lines,
its end or its break; an answer to "what is the current file's first line"; the Worker
over; a reader handing lines on; a tick), with the run's clock read by the caller; what to
do comes out as actions (open a stream since a stamp, shut one, ask the current file's
first line, start a reader for a new file, put lines, say lines lost, give up naming the
node). Nothing here blocks, reads a clock, or touches a thread: the observer's threads do
the blocking reads, feed what they got in under one lock, and carry the actions out. So a
test can drive every interleaving of rotations, outages, slow consumers and stream ends on
a fake clock (``tests/adapters/kubelet.py``).

A segment's reader asks for one next step at a time (``Step``): open its stream, wait, ask
the current file's first line, or finish. While its stream is open, each batch it feeds
may end the segment (``Finish``: its lines from there on are the next segment's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from rlark_acceptance.adapters.clock import Clock
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, LogCursor, since_time, stamp_key
from rlark_acceptance.adapters.kubernetes.logfiles import (
    EMPTY_PROBE_SECONDS,
    FILE_IDLE_SECONDS,
    FILE_SILENT_SECONDS,
    PROBE_SECONDS,
    Chain,
    Segment,
    first_stamp,
)

# The API server answers but cannot reach the node's kubelet for this long: the node is
# named as lost (a kubelet restarting takes a second or two).
KUBELET_SECONDS = 5.0
# A Worker that is over and whose newest log reader delivered nothing for this long, on
# the current file: the rest is read in one request (kwok never closes a followed log; a
# kubelet closes it at its next check after the container's end). A reader of a rotated
# file is never cut so: the kubelet closes it at its file's end, or ``Chain.stalled``.
IDLE_SECONDS = 1.0
# Waits of a reader before it opens its stream again: the API server's RBAC still loading,
# the kubelet not answering yet, a follow closed before the Worker is known to be over.
RETRY_SECONDS = 0.5
REOPEN_SECONDS = 0.2
# A rotated file's reader whose stream ended cleanly waits this long for the Pod's watch to
# tell the Worker over (the kubelet ends a follow at its file's end once the container has
# exited): only past it is the rest of its file said to be lost.
OVER_SECONDS = 5.0


# --- events ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Begin:
    """The reader of segment ``seg`` starts."""

    seg: int


@dataclass(frozen=True)
class Resume:
    """The reader of ``seg`` waited as it was told (``Wait``)."""

    seg: int


@dataclass(frozen=True)
class Opened:
    """The reader's request was answered: its stream is open."""

    seg: int


@dataclass(frozen=True)
class Refused:
    """The API server answered the reader's request with an error (``status`` None: none
    given); ``transient``: a refusal the API server gives while its RBAC is loading."""

    seg: int
    status: int | None
    transient: bool = False


@dataclass(frozen=True)
class Lines:
    """A batch of lines the reader's stream gave, as read (stamped); empty: it gave part of
    a line."""

    seg: int
    lines: list[str]


@dataclass(frozen=True)
class Ended:
    """The reader's stream ended cleanly; ``rest``: what it gave after its last newline."""

    seg: int
    rest: str = ""


@dataclass(frozen=True)
class Broke:
    """The reader's stream failed, or was shut under it (``Shut``); ``transport``: an HTTP
    or socket error, else one the reader cannot take for an outage."""

    seg: int
    rest: str = ""
    transport: bool = True


@dataclass(frozen=True)
class Probed:
    """The answer to ``Probe``: the request sent at ``sent`` and answered at ``answered``
    (the run's wall clock), the current file's first stamped line (``first``: the body read,
    None: the request failed). ``seg``: the reader that asked, None: the ticks'."""

    seg: int | None
    sent: float
    answered: float
    first: str | None

    @property
    def known(self) -> bool:
        return self.first is not None

    @property
    def current(self) -> str | None:
        return None if self.first is None else first_stamp(self.first)


@dataclass(frozen=True)
class Over:
    """The Worker can print nothing more (a terminal Pod or container); ``finished``: when
    its container finished, by the node's clock in whole seconds, if the Pod says."""

    finished: float | None = None


@dataclass(frozen=True)
class Held:
    """The reader of ``seg`` hands lines on (``held``: it may wait for a busy consumer or for
    room in the spools) or has handed them."""

    seg: int
    held: bool


@dataclass(frozen=True)
class Tick:
    """Time passed (the caller feeds one every so often)."""


@dataclass(frozen=True)
class Quit:
    """The reader of ``seg`` gave up: the API server is past its bound, or the run stopped."""

    seg: int


Event = (
    Begin | Resume | Opened | Refused | Lines | Ended | Broke | Probed | Over | Held | Tick | Quit
)


# --- actions -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Open:
    """The reader opens its stream (again, closing any it has): ``follow``, or its final read
    of what its file holds; from ``since`` (None: the file's start)."""

    seg: int
    since: str | None
    follow: bool


@dataclass(frozen=True)
class Wait:
    seg: int
    seconds: float


@dataclass(frozen=True)
class Probe:
    """Ask the current file's first line, and feed the answer (``Probed``)."""

    seg: int | None


@dataclass(frozen=True)
class Finish:
    """The reader of ``seg`` is done: its segment is read, or can be read no more."""

    seg: int


@dataclass(frozen=True)
class Failed:
    """The reader's request or stream failed in transport: the API server's reach decides
    whether to wait (then ``Resume``) or to give up (then ``Finish``)."""

    seg: int


@dataclass(frozen=True)
class Raise:
    """The reader met an error it cannot take: it is raised (reported in the stream)."""

    seg: int


@dataclass(frozen=True)
class NodeLost:
    """The node's kubelet has not answered the API server for ``KUBELET_SECONDS``."""

    seg: int


Step = Open | Wait | Probe | Finish | Failed | Raise


@dataclass(frozen=True)
class Put:
    """Hand ``texts`` of ``seg`` on, in order (the last written at ``written``)."""

    seg: int
    texts: list[str]
    written: float | None


@dataclass(frozen=True)
class Lost:
    """Lines between the gap's two stamps may be missing: the kubelet rotated them away."""

    gap: Gap


@dataclass(frozen=True)
class Shut:
    """Shut ``seg``'s stream under its reader (it then feeds ``Broke``)."""

    seg: int


@dataclass(frozen=True)
class Read:
    """A new segment, ``seg``: start its reader."""

    seg: int


Action = Step | Put | Lost | Shut | Read | NodeLost


@dataclass
class Reader:
    """What a segment's reader is at."""

    cursor: LogCursor
    follow: bool = True  # its open request, or the last one, is a follow
    down_since: float | None = None  # the kubelet has not answered since
    rest: str = ""  # what its stream gave after the last newline, at its end
    opened: int = 0  # the requests it made
    saw: bool = False  # its stream gave a line
    ended: float | None = None  # when its last stream ended cleanly (None: it broke)
    ended_at: float | None = None  # ... by the wall clock, set against the container's end


@dataclass
class LogMachine:
    """The segments of one Worker's log (``Chain``), their readers, and whether the Worker
    is over. ``feed`` is the only way in; the caller holds one lock around it."""

    mono: float = 0.0
    wall: float = 0.0
    over: bool = False
    finished: float | None = None  # when the Worker's container finished (``Over``)
    chain: Chain = field(init=False)
    readers: list[Reader] = field(init=False)
    next_probe: float = 0.0  # the ticks ask the current file's first line from then on
    asking: bool = False  # the ticks' question is out
    # The log's reading began then (a stamp): the earliest a line it lost can have been
    # written, where no line read says more.
    began: str = field(init=False)

    def __post_init__(self) -> None:
        self.began = datetime.fromtimestamp(self.wall, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.chain = Chain(Clock(lambda: self.mono, lambda: self.wall))
        self.readers = [Reader(LogCursor())]

    @property
    def segments(self) -> list[Segment]:
        return self.chain.segments

    def feed(self, ev: Event, mono: float, wall: float) -> list[Action]:
        self.mono, self.wall = max(self.mono, mono), wall
        match ev:
            case Begin(seg):
                return self._open(seg)
            case Resume(seg):
                # After a clean end, waiting for the Worker to be told over; else after a
                # refusal or a break.
                ended = self.readers[seg].ended is not None
                return self._after_end(seg) if ended else self._open(seg)
            case Opened(seg):
                return self._opened(seg)
            case Refused():
                return self._refused(ev)
            case Lines(seg, lines):
                return self._lines(seg, lines)
            case Ended(seg, rest):
                return self._ended(seg, rest)
            case Broke():
                return self._broke(ev)
            case Probed():
                return self._probed(ev)
            case Over(finished):
                self.over, self.finished = True, finished
                return []
            case Held(seg, held):
                self.chain.held(self.segments[seg], held)
                return []
            case Tick():
                return self._tick()
            case Quit(seg):
                self.segments[seg].done = True
                return []

    # --- a reader ------------------------------------------------------------------------
    def _open(self, k: int) -> list[Action]:
        seg, reader = self.segments[k], self.readers[k]
        if seg.done:
            return [self._finish(k)]
        if reader.opened and seg.end is not None:
            # Its stream broke or ended before its file's end, and that file has been rotated
            # (a later one has a segment): the kubelet serves only the current file, so the
            # rest of this one cannot be read again.
            return self._unreadable(k)
        reader.saw, reader.ended = False, None
        reader.cursor.resume()
        reader.follow = not seg.final
        reader.opened += 1
        since = reader.cursor.since() or (since_time(seg.stamp) if seg.stamp else None)
        return [Open(k, since, reader.follow)]

    def _between(self, k: int) -> list[Action]:
        """``k``'s reader is at its file's end: a file between it and the next segment's that
        no probe saw (the API server did not answer them) was rotated away unread."""
        seg, nxt = self.segments[k], self.segments[k + 1]
        after = seg.last_line.partition(" ")[0] if seg.last_line else seg.stamp
        if after is None or nxt.stamp is None:
            return []
        gap = Gap(after, nxt.stamp, jump=True)
        return [] if self.chain.watched(gap) else [Lost(Gap(after, nxt.stamp))]

    def _unreadable(self, k: int) -> list[Action]:
        """``k``'s file was rotated before its reader got to its end: what it had not read
        is said, from its last line read to the next file's first, and it finishes."""
        seg, reader = self.segments[k], self.readers[k]
        after = reader.cursor.stamp or seg.stamp or self.began
        before = self.segments[k + 1].stamp
        assert before is not None  # (only the first segment has none)
        return [Lost(Gap(after, before)), self._finish(k)]

    def _finish(self, k: int) -> Finish:
        self.segments[k].done = True
        return Finish(k)

    def _raise(self, k: int) -> Raise:
        self.segments[k].done = True
        return Raise(k)

    def _opened(self, k: int) -> list[Action]:
        seg, reader = self.segments[k], self.readers[k]
        reader.down_since = None
        seg.reading = True
        if seg.final and reader.follow:  # made final between the request and its answer
            return self._open(k)
        return []

    def _refused(self, ev: Refused) -> list[Action]:
        k, reader = ev.seg, self.readers[ev.seg]
        if ev.status in (401, 403) and ev.transient:
            return [Wait(k, RETRY_SECONDS)]  # the API server's RBAC is still loading
        if ev.status == 403:
            return [self._raise(k)]
        if ev.status is None or ev.status < 500:
            return [self._finish(k)]  # the Pod is gone (404), or its log cannot be read
        # The API server answered; the kubelet behind it did not (or not yet).
        if reader.down_since is None:
            reader.down_since = self.mono
        if self.mono - reader.down_since >= KUBELET_SECONDS:
            return [NodeLost(k), self._finish(k)]
        return [Wait(k, RETRY_SECONDS)]

    def _lines(self, k: int, batch: list[str]) -> list[Action]:
        """Put the batch's new lines that are ``k``'s; its reader finishes once a line of the
        next file's segment is read (this segment is whole)."""
        seg, cursor, chain = self.segments[k], self.readers[k].cursor, self.chain
        acts: list[Action] = []
        reader = self.readers[k]
        reader.saw = reader.saw or bool(batch)
        if not seg.handing:
            # (Lines a resumed read repeats count too, and an empty batch, the head of a line
            # stored in parts whose rest is still to come: it is not idle at its file's end.)
            seg.arrived = self.mono
        if k == 0 and reader.opened > 1 and cursor.stamp is None and batch:
            # The log read again before any line of it was: its first file may have been
            # rotated meanwhile, and this read be served a later one.
            first = first_stamp(batch[0])
            if first is not None and stamp_key(first) > stamp_key(self.began):
                acts.append(Lost(Gap(self.began, first)))
        new, gap = cursor.take_batch(batch, raw=cursor.stamped is not False)
        if gap is not None and not gap.jump:  # a read resumed: later files have own readers
            gap = chain.within(seg, gap)
        if gap is not None and not (gap.jump and chain.watched(gap)):
            acts.append(Lost(gap))
        ours = True
        if cursor.stamped and new:
            n, gap = chain.take(seg, new)
            if gap is not None:
                acts.append(Lost(gap))
            ours = n == len(new)
            new = [line.partition(" ")[2] for line in new[:n]]
        if new:
            acts.append(Put(k, new, seg.written))
        if not ours:  # the next file's reader has the rest
            nxt = self.segments[k + 1].stamp
            assert nxt is not None  # (only the first segment has none)
            if seg.last is None and (seg.stamp is not None or reader.opened > 1):
                # It read no line of its own: its file was rotated before it got to it (the
                # first segment's, before its read again), and the read was served a later
                # one. (The follow's first read starts at the log's first line: a line the
                # current file starts with may be that one, read by a reader of its own.)
                acts.append(Lost(Gap(seg.stamp or self.began, nxt)))
            elif seg.cut is None or seg.cut.partition(" ")[0] != nxt:
                acts += self._between(k)  # it went on past the next file's first line
            acts.append(self._finish(k))
        return acts

    def _file_ends(self, k: int, rest: str) -> list[Action]:
        """``k``'s reader is at its file's end: what it read after the last newline is the
        head of the next file's first line (``logfiles.continued`` joins them)."""
        seg, reader = self.segments[k], self.readers[k]
        if not reader.saw and seg.end is not None:
            # Cut before its stream gave a line: a read resumed after a break, served a file
            # later than its own (or nothing yet). What it had not read of its file is gone.
            return self._unreadable(k)
        stamp = first_stamp(rest) if rest else None
        # A text stamped at or after the next file's start is a line of a later file (the
        # kubelet moved this reader on from its rotated file's end, or a read resumed after
        # that file was rotated is served a later one): the later segments' readers have it.
        later = stamp is not None and seg.end is not None and stamp_key(stamp) >= seg.end
        if rest and not later:
            seg.tail = rest.partition(" ")[2] if stamp is not None else rest
        return [*self._between(k), self._finish(k)]

    def _ended(self, k: int, rest: str) -> list[Action]:
        seg, reader = self.segments[k], self.readers[k]
        seg.reading = False
        reader.ended, reader.ended_at, reader.rest = self.mono, self.wall, rest
        return self._after_end(k)

    def _after_end(self, k: int) -> list[Action]:
        """What ``k``'s reader does after its stream ended cleanly."""
        seg, reader = self.segments[k], self.readers[k]
        finished = self.finished
        if self.over and finished is not None and (reader.ended_at or 0.0) < finished:
            # Ended before the container finished: not the kubelet's end at the file's end
            # but a cut (an API server restarting), read again (or, on a file since rotated,
            # said as lost).
            reader.ended = None
            return self._open(k)
        if self.over and seg.end is None and not seg.final and reader.follow:
            # The kubelet closed the follow at its file's end: the container has exited. A
            # reader that fell behind was on a rotated file, whose end is not the log's:
            # the current file is asked for (``_probed`` then settles this reader).
            return [Probe(k)]
        return self._settle(k)

    def _settle(self, k: int) -> list[Action]:
        seg, reader = self.segments[k], self.readers[k]
        if (seg.end is not None and self.over) or seg.complete:
            return self._file_ends(k, reader.rest)  # the next segment has the rest
        if not reader.follow:  # its final read: the log's last line may lack a newline
            acts = self._lines(k, [reader.rest]) if reader.rest else []
            return [*acts, self._finish(k)] if not seg.done else acts
        if seg.final:
            return self._open(k)  # read the rest at once
        if reader.ended is not None and self.mono - reader.ended < OVER_SECONDS:
            # The kubelet ends a follow at its file's end once the container has exited,
            # which the Pod's watch may tell a moment later: waited for, a while (``Resume``
            # comes back here), so that end is not taken for a cut in mid-file.
            return [Wait(k, REOPEN_SECONDS)]
        # Closed while the Worker runs on (the API server or kubelet restarting): follow
        # again from the last line (a rotated file's reader cannot: ``_open`` says so).
        return self._open(k)

    def _broke(self, ev: Broke) -> list[Action]:
        k, seg, reader = ev.seg, self.segments[ev.seg], self.readers[ev.seg]
        seg.reading, reader.ended = False, None
        if seg.complete:
            return self._file_ends(k, ev.rest)  # shut at its rotated file's end
        if not ev.transport:
            return [self._raise(k)]
        if seg.final and reader.follow:
            return self._open(k)  # shut for its final read
        return [Failed(k)]

    # --- the current file ----------------------------------------------------------------
    def _probed(self, ev: Probed) -> list[Action]:
        chain, acts = self.chain, []
        current = ev.current
        if ev.known:
            chain.probed.append((ev.sent, ev.answered))
            if current is None:
                chain.empty.append((ev.sent, ev.answered))
        else:
            chain.unanswered.append(ev.sent)
        if ev.seg is not None:  # a reader at its stream's end, the Worker over
            if not chain.close_head(self.segments[ev.seg], current) and current is not None:
                acts += self._add(current)
            return acts + self._settle(ev.seg)
        self.asking = False
        # A file seen empty has no reader: its lines are read only if a probe sees it again
        # with a line before the kubelet rotates it, which a loud Worker's can be within
        # seconds of its first line. So it is asked for again sooner.
        again = EMPTY_PROBE_SECONDS if ev.known and current is None else PROBE_SECONDS
        self.next_probe = self.mono + (IDLE_SECONDS if self.over else again)
        head, idle = self.chain.idle()
        if self.over and not head.final and idle >= IDLE_SECONDS:
            # The container has exited, so its log is complete: the newest reader, idle on
            # the current file, stops following and reads the rest at once. Where the
            # current file is a later one (a loaded machine held the reader off the CPU
            # while the kubelet rotated), that file gets a reader first, and the newest
            # reader goes on to its own file's end. Unknown (the API server did not answer)
            # past FILE_SILENT_SECONDS: its own stream is likely down too; its final read
            # says so.
            anyway = not ev.known and idle >= FILE_SILENT_SECONDS
            if (ev.known or anyway) and chain.close_head(head, current, anyway=anyway):
                return [Shut(len(self.segments) - 1)]
        if current is not None:
            acts += self._add(current)
        return acts

    def _add(self, stamp: str) -> list[Action]:
        """A reader of its own for the file whose first line is stamped ``stamp``, unless the
        newest reader has that line already."""
        if self.chain.add(stamp) is None:
            return []
        self.readers.append(Reader(LogCursor()))
        return [Read(len(self.segments) - 1)]

    def _tick(self) -> list[Action]:
        """Readers at their rotated files' ends shut; the current file asked for while the
        newest reader is behind the Worker, or idle once the Worker is over."""
        chain = self.chain
        acts: list[Action] = [Shut(self.segments.index(s)) for s in chain.stalled()]
        if self.asking or self.mono < self.next_probe or chain.head.done:
            return acts
        head, idle = self.chain.idle()
        # A reader silent for FILE_IDLE_SECONDS may be waiting at the end of a file rotated
        # before it got there, which the kubelet moves it on from only at the next rotation,
        # past the files between: the current file is asked for then too (a Worker that is
        # silent costs a small request a second).
        if self.over:
            ask = not head.final and idle >= IDLE_SECONDS
        else:
            # (A reader that has read nothing yet cannot be there: it would have.)
            ask = (idle >= FILE_IDLE_SECONDS and head.last is not None) or chain.behind()
        if ask:
            self.asking = True
            acts.append(Probe(None))
        return acts

    @property
    def read(self) -> bool:
        """Every segment's reader is done."""
        return all(seg.done for seg in self.segments)
