"""The files of a Worker's log the kubelet rotates, each read before it is rotated past.

The kubelet serves only the file now at the log's path. A follow that falls behind the
Worker reads the file it opened to its end and then the file at the path, so every file
rotated in between (at ``containerLogMaxSize``, checked every 10 s) is lost to it, though
the node still has them. Those files are reachable only while they are current: so while the
follow is behind (its lines arriving well after they were stamped), the current file's
first line is asked for every ``PROBE_SECONDS`` (``limitBytes``, a cheap request), and a
file that is new gets a reader of its own at once (``sinceTime`` its first line). The
kubelet keeps a file open for the reader that opened it, rotated, compressed or removed.

Each reader is a ``Segment`` of the log: from its file's first line up to the next
segment's. The first segment is the follow itself, put to the observation as it reads; a
later one is kept in its ``Spool`` (``logspool.py``) and put in order once the segments
before it are read.
"""

from __future__ import annotations

import bisect
import contextlib
from collections import deque
from dataclasses import dataclass, field

from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, stamp_key
from rlark_acceptance.adapters.kubernetes.logspool import Spool, Spools

# While the follow is behind, the current file's first line is asked for this often: well
# inside the kubelet's 10 s between size checks, so no file is rotated past unseen.
PROBE_SECONDS = 1.0
# ... and this often while the current file is seen empty (below).
EMPTY_PROBE_SECONDS = 0.5
# A file seen empty by a probe gets no reader, and the kubelet rotates it once it is past
# containerLogMaxSize, which a loud Worker fills in seconds. Its lines are read only if a
# later probe sees it with a line: one answered at most this long after the probe that saw
# it empty. Further apart, a file seen empty may have got its lines and been rotated between
# the two answers, unread (the harness's premise: no file is filled and rotated within this
# long of its first line).
EMPTY_SEEN_SECONDS = 3.0
# A follow whose lines arrive this long after they were stamped is behind the Worker.
BEHIND_SECONDS = 2.0
# ... and has delivered within this long: a Worker that has fallen silent is not one to
# chase. Long enough that a reader held off a loaded machine's CPU for seconds, behind by
# files, is still chased: then, above all, a file must not be rotated past unseen.
ARRIVING_SECONDS = 10.0
# The kubelet's size checks, and so its rotations of one log, are at least this far apart
# (containerLogMonitorInterval, counted from the end of the last check).
ROTATED_APART_SECONDS = 10.0
# Probes at most this far apart see every file. The kubelet rotates a log only at its size
# checks (containerLogMonitorInterval, 10 s, counted from the end of the last check), so a
# file stays current for at least 10 s; 3 s spare for the node's clock, which stamps the
# lines, against this process's, which times the probes.
WATCH_GAP_SECONDS = 7.0
PROBES_KEPT = 3600
# A segment whose reader delivered nothing for this long while the next one's reader got
# lines is at its rotated file's end: the kubelet and the API server served the next file
# meanwhile, and this process read it.
FILE_IDLE_SECONDS = 2.0
# ... and with no lines for the next one meanwhile either (the Worker silent since the
# rotation, or this process, the kubelet or the API server held off a loaded machine's CPU,
# when the idle time says nothing of the file), after this long.
FILE_SILENT_SECONDS = 10.0
# A stream with lines to give gives them within this long (the kubelet and the API server
# serve each stream on its own). A file's last lines were written before the next file's
# first: a reader that has had nothing for this long after the next file's reader got its
# first line has nothing more to come from its own.
SERVED_SECONDS = 1.0
# Bytes asked of the current file: enough for a first line's stamp.
PROBE_BYTES = 256

Key = tuple[float, int]


def first_stamp(body: str) -> str | None:
    """The stamp of the first line of a stamped log excerpt, if it has one."""
    stamp = body.partition(" ")[0].strip()
    try:
        stamp_key(stamp)
    except ValueError:
        return None
    return stamp


def keys_before(lines: list[str], end: Key) -> int:
    """How many of ``lines`` (stamped, in order) are stamped before ``end``."""

    def key(raw: str) -> Key:
        try:
            return stamp_key(raw.partition(" ")[0])
        except ValueError:  # a line the runtime did not stamp belongs with the one before
            return (float("-inf"), 0)

    if not lines or key(lines[-1]) < end:
        return len(lines)
    return bisect.bisect_left(lines, end, key=key)


def _cut(stamped: list[str], end: Key | None) -> tuple[int, Key | None]:
    """How many of ``stamped`` come before ``end``, and the stamp of the last of them."""
    n = len(stamped) if end is None else keys_before(stamped, end)
    if not n:
        return 0, None
    try:
        return n, stamp_key(stamped[n - 1].partition(" ")[0])
    except ValueError:  # a line the runtime did not stamp
        return n, None


@dataclass
class Segment:
    """One file's worth of the log: from ``stamp`` (None: the log's start) to the next
    segment's first line."""

    stamp: str | None
    start: Key | None
    end: Key | None = None  # the next segment's first line, once there is one
    last: Key | None = None  # the last line taken
    # The run's monotonic time of the last lines taken (of its start, before it took any),
    # or of the end of its reader's last handing them on: its idle time counts from then.
    arrived: float = 0.0
    # ... of the last lines taken only (0: none yet): shows the kubelet and the API server
    # serving this process then, for another segment's reader idle since before.
    took: float = 0.0
    first_took: float | None = None  # ... of the first lines taken
    done: bool = False  # its reader has nothing more to do (the machine's word)
    # Its file is the current one and the Worker is over: its reader reads the rest in one
    # request, and no segment comes after it (``Chain.close_head``).
    final: bool = False
    # Read to its file's end: idle while the next segment has lines, its file rotated
    # (nothing more is written to a file once its successor has a line).
    complete: bool = False
    # Its reader's stream is open: only such a reader can be idle at its file's end (one
    # between two requests has shown nothing of where it is).
    reading: bool = False
    # Its reader is handing lines on (to a Step 6 busy elsewhere, it may wait): not idle,
    # whatever the time since its last lines arrived.
    handing: bool = False
    # Where its file ends inside a line: the text its reader got after the last newline, the
    # head of the next file's first line. A rotation cuts the line in flight (containerd
    # replaces the container's logger, and the old one ends its file with the part it has as
    # a partial entry); a line over containerd's 16 KiB is stored in partial entries anyway.
    tail: str | None = None
    first: str | None = None  # the first line it took, as read (stamped)
    last_line: str | None = None  # the last line it took, as read
    cut: str | None = None  # the first line it read that is the next segment's, as read
    gapped: bool = False  # its file's first lines had been rotated away when it was read
    # Its lines kept on disk until the segments before it are put (the observer's threads
    # write and read it; the machine only reads whether its reader waits for room).
    spool: Spool = field(default_factory=Spool)

    @property
    def written(self) -> float | None:
        """When the last line taken was written (seconds since the epoch), by its stamp."""
        last = self.last
        return None if last is None else last[0] + last[1] / 1e9


class Chain:
    """The segments of one Worker's log, in order: what each has taken, so a segment added
    for a file cuts off its predecessor exactly at that file's start. Kept by the log
    machine (``logmachine.py``), which its callers feed under one lock."""

    def __init__(self, clock: Clock = SYSTEM) -> None:
        self.clock = clock
        self.spools = Spools()
        self.segments: list[Segment] = [
            Segment(None, None, arrived=clock.monotonic(), spool=Spool(self.spools))
        ]
        # The current file's first line asked for, successfully: when each request was sent
        # and when its answer came (the run's wall clock, which ``watched`` sets against the
        # node's stamps). The file it names was current at some moment between the two,
        # which one is not known.
        self.probed: deque[tuple[float, float]] = deque(maxlen=PROBES_KEPT)
        # ... and unanswered (the API server or the kubelet down): when each was sent.
        self.unanswered: deque[float] = deque(maxlen=PROBES_KEPT)
        # ... and of ``probed``, those that found the current file empty.
        self.empty: deque[tuple[float, float]] = deque(maxlen=PROBES_KEPT)
        self.kept_up = float("-inf")  # the last line the newest reader took as it was written

    @property
    def head(self) -> Segment:
        return self.segments[-1]

    def take(self, seg: Segment, stamped: list[str]) -> tuple[int, Gap | None]:
        """How many of the new stamped lines belong to ``seg`` (those before the next
        segment's start), noted as taken; and, for a segment's first lines, the gap a
        first line later than its file's shows (the kubelet rotated that file before it
        was asked for)."""
        n, last = _cut(stamped, seg.end)
        first_take = seg.last is None
        if n:
            seg.last = last or seg.last
            seg.arrived = seg.took = self.clock.monotonic()
            if seg.first_took is None:
                seg.first_took = seg.took
            seg.first = seg.first or stamped[0]
            seg.last_line = stamped[n - 1]
            if seg is self.head and last is not None:
                self._kept_up(last)
        if n < len(stamped) and seg.cut is None:
            seg.cut = stamped[n]
        if not n or not first_take or seg.stamp is None or seg.start is None:
            return n, None
        first = stamped[0].partition(" ")[0]
        try:
            later = first != seg.stamp and stamp_key(first) > seg.start
        except ValueError:
            later = False
        seg.gapped = later
        return n, Gap(seg.stamp, first) if later else None

    def _kept_up(self, last: Key) -> None:
        """The newest reader took a line written less than ``BEHIND_SECONDS`` ago: it reads
        the current file as it is written (a rotation it follows into the next), so that
        file was seen then, as a probe sees it (``watched``; noted twice a second at most)."""
        wall = self.clock.wall()
        fresh = wall - (last[0] + last[1] / 1e9) < BEHIND_SECONDS
        # (Apart from the probes': a probe's answer just before must not hide that the file
        # it saw empty has lines now, ``_filled_unseen``.)
        if fresh and wall - self.kept_up >= 0.5:
            self.kept_up = wall
            self.probed.append((wall, wall))

    def behind(self) -> bool:
        """The newest segment's reader delivers lines stamped well before now (or waits for
        room in the spools to keep them, or waits for a busy consumer to take them: the
        Worker is not silent, the reader is held)."""
        now = self.clock.monotonic()
        head = self.head
        held = head.spool.waiting or head.handing
        last, arrived = head.last, now if held else head.arrived
        return (
            last is not None
            and now - arrived < ARRIVING_SECONDS
            and self.clock.wall() - last[0] > BEHIND_SECONDS
        )

    def add(self, stamp: str) -> Segment | None:
        """A segment from the file whose first line is stamped ``stamp``, unless the newest
        segment has taken that line already (it read into that file itself) or is done."""
        key = stamp_key(stamp)
        head = self.head
        if head.done or head.final or (head.last is not None and head.last >= key):
            return None
        if head.start is not None and head.start >= key:
            return None
        head.end = key
        seg = Segment(stamp, key, arrived=self.clock.monotonic(), spool=Spool(self.spools))
        self.segments.append(seg)
        return seg

    def idle(self) -> tuple[Segment, float]:
        """The newest segment, and for how long its reader has delivered nothing (0 while it
        hands lines on)."""
        head = self.head
        return head, 0.0 if head.handing else self.clock.monotonic() - head.arrived

    def close_head(self, seg: Segment, current: str | None, *, anyway: bool = False) -> bool:
        """Mark ``seg`` final if it is the newest segment and its reader is on the current
        file (whose first line is stamped ``current``, None if it has no stamped line): it
        has taken that line, or its own file starts there; or ``anyway``. False if the
        current file may be a later one (it gets a segment of its own, ``add``): cut then,
        the rest of ``seg``'s file would be lost."""
        key = None
        if current is not None:
            with contextlib.suppress(ValueError):
                key = stamp_key(current)
        on_current = (
            key is None
            or (seg.last is not None and seg.last >= key)
            or (seg.start is not None and seg.start >= key)
        )
        if seg is not self.head or seg.done or not (on_current or anyway):
            return False
        seg.final = True
        return True

    def held(self, seg: Segment, held: bool) -> None:
        """``seg``'s reader hands lines on (``held``: it may wait for a busy consumer or for
        room in the spools) or has: it is not idle meanwhile, and its idle time counts from
        the handing's end (the consumer's wait is not the file's silence)."""
        seg.handing = held
        if not held:
            seg.arrived = self.clock.monotonic()

    def stalled(self) -> list[Segment]:
        """Segments read to their file's end (a reader at the end of a rotated file waits
        for a write that never comes), each marked complete once: idle for
        ``FILE_IDLE_SECONDS`` while the next one's reader got lines (any other's, where that
        one waits for room in the spools, maybe since before), or for
        ``FILE_SILENT_SECONDS`` while the next one has lines; either only once the next one's
        first lines are ``SERVED_SECONDS`` old. A reader handing lines on is
        not idle: cut then, the rest of its file would be lost without a word. A reader
        left at its file's end is moved on by the kubelet at the log's next rotation, to the
        file then current: the files between are skipped, and a line its file ended inside
        is joined to another's end."""
        now = self.clock.monotonic()

        def at_end(seg: Segment, nxt: Segment) -> bool:
            idle = now - seg.arrived
            if nxt.first_took is None or now - nxt.first_took <= SERVED_SECONDS:
                # Lines its file got just before the rotation (the Worker silent for long,
                # then writing) may still be on their way, however long it has been idle.
                return False
            if idle >= FILE_SILENT_SECONDS:
                return True
            # The next reader's lines, unless it waits for room in the spools (since before
            # this one's last lines, maybe): then those of any other.
            others = [s for s in self.segments if s is not seg] if nxt.spool.waiting else [nxt]
            return idle >= FILE_IDLE_SECONDS and any(
                other.took - seg.arrived >= FILE_IDLE_SECONDS for other in others
            )

        found = [
            seg
            for seg, nxt in zip(self.segments, self.segments[1:], strict=False)
            if not (seg.done or seg.complete or seg.handing)
            and seg.reading
            and seg.last is not None
            and nxt.last is not None
            and at_end(seg, nxt)
        ]
        for seg in found:
            seg.complete = True
        return found

    def within(self, seg: Segment, gap: Gap) -> Gap | None:
        """The part of a gap ``seg``'s reader found that is ``seg``'s own: a read resumed
        after its file was rotated is served a later file, and the lines from the next
        segment's first line on are that segment's reader's (None: the gap is all theirs)."""
        nxt = self.after(seg)
        if nxt is None or nxt.stamp is None or nxt.start is None:  # (only the first has none)
            return gap
        try:
            if stamp_key(gap.after) >= nxt.start:
                return None
            if stamp_key(gap.before) <= nxt.start:
                return gap
        except ValueError:
            return gap
        return Gap(gap.after, nxt.stamp, jump=gap.jump)

    def watched(self, gap: Gap) -> bool:
        """Whether no file can have been current unseen between the gap's two lines: the
        jump of the stamps then skipped no file, it is the Worker's own silence.

        The line before the jump was written to a file current then, the line after it to
        one current then, and each probe saw the file current at some moment between its
        request and its answer. A file is current for at least 10 s, so one was skipped
        only where two of these moments can lie over ``WATCH_GAP_SECONDS`` apart: a probe's
        moment is taken as its request's time against a later moment, as its answer's
        against an earlier one. The whole jump counts, also past the next segment's first
        line: the readers of later files stop at their files' ends, so a file between two
        of them that no probe saw is lost without any other reader noticing.

        A probe left unanswered in between makes it unseen: a file seen empty before it (a
        Worker silent since the rotation) may have got its lines and been rotated while the
        API server was down, though it was current for 10 s. So does a probe that saw the
        current file empty with no answer for ``EMPTY_SEEN_SECONDS`` after it: seen empty,
        that file had no reader, and it may have been filled and rotated before the next."""
        try:
            a, b = stamp_key(gap.after), stamp_key(gap.before)
        except ValueError:
            return False
        start, stop = a[0] + a[1] / 1e9, b[0] + b[1] / 1e9
        if any(start <= sent <= stop for sent in self.unanswered):
            return False
        probes = sorted(p for p in self.probed if start <= p[1] and p[0] <= stop)
        if self._filled_unseen(start, stop):
            return False
        latest = start  # the latest moment a file was last seen, at the earliest
        for sent, answered in probes:
            if answered - latest > WATCH_GAP_SECONDS:
                return False
            latest = max(latest, sent)
        return stop - latest <= WATCH_GAP_SECONDS

    def _filled_unseen(self, start: float, stop: float) -> bool:
        """Whether a file a probe saw empty between the stamps ``start`` and ``stop`` may have
        got lines and been rotated before any later sighting: no answer came for
        ``EMPTY_SEEN_SECONDS`` after that probe's, and a rotation was possible meanwhile.
        The kubelet rotates a log at most every ``ROTATED_APART_SECONDS``, and the empty file
        came at a rotation after the last sighting before of a file with lines (or after
        ``start``, a line's stamp by the node's clock: ``WATCH_GAP_SECONDS`` spares the
        difference), so it is rotated no sooner than that long after that sighting."""
        empty = set(self.empty)
        spans = sorted(p for p in empty if start <= p[1] and p[0] <= stop)
        if not spans:
            return False
        answers = sorted(a for _, a in self.probed)
        lined = sorted((a, s) for s, a in self.probed if (s, a) not in empty)
        for sent, answered in spans:
            at = bisect.bisect_right(answers, answered)
            seen = min(answers[at], stop) if at < len(answers) else stop
            if seen - answered <= EMPTY_SEEN_SECONDS:
                continue
            before = lined[: bisect.bisect_right(lined, (sent, float("inf")))]
            left = max(
                [start - (ROTATED_APART_SECONDS - WATCH_GAP_SECONDS), *(s for _, s in before)]
            )
            if seen > left + ROTATED_APART_SECONDS:
                return True
        return False

    def after(self, seg: Segment) -> Segment | None:
        """The segment after ``seg``; None while ``seg`` is the newest (the follow takes the
        next one once ``seg`` is done; ``within`` asks while ``seg`` is read)."""
        at = self.segments.index(seg)
        return self.segments[at + 1] if at + 1 < len(self.segments) else None


def continued(prev: Segment, seg: Segment, texts: list[str]) -> list[str]:
    """``seg``'s first texts as they follow ``prev``'s, where ``prev``'s file ended inside a
    line (``Segment.tail``: stored in partial entries, and the kubelet stamps only a line's
    first entry, and starts every read at a new line):

    - ``prev``'s reader stopped at its file's end: its ``tail`` is that line's head, and
      ``seg``'s first line, read from its file's first entry, the rest: joined into one;
    - ``prev``'s reader went on into ``seg``'s file (its follow, which the kubelet joins
      across files) and took the whole line: ``seg``'s first line is that line's end again,
      which ``prev`` never read as a line of its own (the first line of ``seg``'s file it
      cut is another): dropped;
    - ``seg``'s file had lost its first lines (rotated away unread, already said): ``prev``'s
      tail is put as a line of its own, cut short;
    - ``seg``'s file holds no line of its own (``texts`` empty once it is done), only more of
      that line (one longer than a whole file): its tail goes on from ``prev``'s, or, where
      ``prev`` read the line whole, is dropped, ``prev``'s ending passed on; either for the
      segment after it (this is why ``seg`` is changed).
    """
    if not texts:
        if prev.tail is not None and seg.tail is not None:
            seg.tail = prev.tail + seg.tail
            return []
        whole = prev.last_line.partition(" ")[2] if prev.last_line else ""
        cut = prev.cut.partition(" ")[0] if prev.cut is not None else seg.stamp
        if cut != seg.stamp and seg.first is None and seg.tail and seg.tail in whole:
            seg.tail, seg.cut, seg.last_line = None, prev.cut, prev.last_line
            return []
        return [prev.tail] if prev.tail is not None else []
    if prev.tail is not None:
        return [prev.tail + texts[0], *texts[1:]] if not seg.gapped else [prev.tail, *texts]
    first, cut, last = seg.first, prev.cut, prev.last_line
    if first is None or cut is None or last is None or first == cut:
        return texts
    end = first.partition(" ")[2]
    whole = last.partition(" ")[2]
    return texts[1:] if len(whole) > len(end) and whole.endswith(end) else texts
