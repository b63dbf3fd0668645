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
later one is spooled to an unnamed temporary file and put in order once the segments
before it are read, so the harness's memory stays flat however far the Worker is ahead.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, stamp_key

# While the follow is behind, the current file's first line is asked for this often: well
# inside the kubelet's 10 s between size checks, so no file is rotated past unseen.
PROBE_SECONDS = 1.0
# A follow whose lines arrive this long after they were stamped is behind the Worker.
BEHIND_SECONDS = 2.0
# ... and has delivered within this long: a Worker that has fallen silent is not one to
# chase. Long enough that a reader held off a loaded machine's CPU for seconds, behind by
# files, is still chased: then, above all, a file must not be rotated past unseen.
ARRIVING_SECONDS = 10.0
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
# A segment's lines are kept in memory up to this much, then written to its spool file.
SPOOL_BYTES = 1 << 20
# The spools of the files not yet being put hold at most this much between them: past it,
# their readers wait with their streams open (the kubelet keeps a file open for the reader
# that opened it, rotated or removed) and read on as the spools before them are put. The
# file being put may hold as much again: its reader waits until the consumer has caught up,
# and the file is emptied then. So the disk a log's read-ahead takes is bounded, not the
# Worker's output: a consumer slower than the Worker is waited for, never outrun.
SPOOL_AHEAD_BYTES = 128 << 20
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


class Spools:
    """What the spools of one log's segments hold on disk between them, and the most they
    held (reported with the read), with the one condition their readers and the one putting
    them wait on."""

    def __init__(self) -> None:
        self.bound = SPOOL_AHEAD_BYTES  # as it is when the log is first followed
        self.held = 0
        self.peak = 0
        self.cond = threading.Condition()

    def grew(self, nbytes: int) -> None:
        self.held += nbytes
        self.peak = max(self.peak, self.held)


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
    done: bool = False
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
    drained: bool = False  # its spool has been put; a line spooled later is put at once
    # Where its file ends inside a line: the text its reader got after the last newline, the
    # head of the next file's first line. A rotation cuts the line in flight (containerd
    # replaces the container's logger, and the old one ends its file with the part it has as
    # a partial entry); a line over containerd's 16 KiB is stored in partial entries anyway.
    tail: str | None = None
    first: str | None = None  # the first line it took, as read (stamped)
    last_line: str | None = None  # the last line it took, as read
    cut: str | None = None  # the first line it read that is the next segment's, as read
    gapped: bool = False  # its file's first lines had been rotated away when it was read
    # The spools of the log's segments, together: what they hold, and their one condition.
    spools: Spools = field(default_factory=Spools)
    # Its spool is being put (the segments before it are): its reader waits for room in its
    # own spool only, never for the others', which wait for it.
    draining: bool = False
    waiting: bool = False  # its reader waits for room in the spools
    _spool: IO[bytes] | None = None
    _size: int = 0  # bytes written to the spool file since it was last emptied
    _read: int = 0  # ... and read back
    _pending: list[bytes] = field(default_factory=list)
    _pending_size: int = 0
    _pending_written: float | None = None
    # (end offset, when its last line was written) of each write to the spool file
    _marks: list[tuple[int, float | None]] = field(default_factory=list)

    @property
    def written(self) -> float | None:
        """When the last line taken was written (seconds since the epoch), by its stamp."""
        last = self.last
        return None if last is None else last[0] + last[1] / 1e9

    def spool(
        self, texts: list[str], written: float | None = None, stop: threading.Event | None = None
    ) -> bool:
        """Keep lines (the last one written at ``written``) for when the segments before
        this one are read (False: too late, the spool has been put already). Written to
        the file a megabyte at a time, once the spools have room (``SPOOL_AHEAD_BYTES``):
        until then the caller waits, its stream unread, or until ``stop``."""
        if self.drained:
            return False
        if not texts:
            return True
        data = ("\n".join(texts) + "\n").encode("utf-8", "replace")
        cond = self.spools.cond
        with cond:
            self._pending.append(data)
            self._pending_size += len(data)
            self._pending_written = written or self._pending_written
            cond.notify_all()
            if self._pending_size < SPOOL_BYTES:
                return True
            while not (self._room() or self.drained or (stop is not None and stop.is_set())):
                self.waiting = True
                cond.wait(0.5)
            self.waiting = False
            if self.drained or not self._pending:  # stopped, or put from memory meanwhile
                return True
            if self._spool is None:
                # Closed when the spool is put (spooled).
                self._spool = tempfile.TemporaryFile(prefix="rlark-log-")  # noqa: SIM115
            data = b"".join(self._pending)
            os.pwrite(self._spool.fileno(), data, self._size)
            self._size += len(data)
            self.spools.grew(len(data))
            self._marks.append((self._size, self._pending_written))
            self._pending, self._pending_size = [], 0
            cond.notify_all()
        return True

    def _room(self) -> bool:
        """Whether its pending lines may be written to its spool file now (under the lock)."""
        if self.draining:
            return self._size < self.spools.bound
        return self.spools.held < self.spools.bound

    def finish(self) -> None:
        with self.spools.cond:
            self.done = True
            self.spools.cond.notify_all()

    def spooled(self, stop: threading.Event) -> Iterator[tuple[list[str], float | None]]:
        """The spooled lines, a batch at a time with when its last line was written (at
        the latest), as they are written, until the segment's reader is done and
        everything is read (or ``stop``); the spool is then removed."""
        cond = self.spools.cond
        rest = b""
        with cond:
            self.draining = True
            cond.notify_all()
        try:
            while not stop.is_set():
                with cond:
                    while (
                        self._size == self._read
                        and not self._pending
                        and not self.done
                        and not stop.is_set()
                    ):
                        cond.wait(0.5)
                    data, written = self._read_back()
                    done = self.done
                if not data:
                    if done:
                        return
                    continue
                *whole, rest = (rest + data).split(b"\n")
                if whole:
                    yield b"\n".join(whole).decode("utf-8", "replace").split("\n"), written
        finally:
            with cond:
                self.drained = True
                self._pending = []
                self._empty()
                if self._spool is not None:
                    self._spool.close()
                    self._spool = None
                cond.notify_all()

    def _read_back(self) -> tuple[bytes, float | None]:
        """The next bytes of the spool, in order: its file's, then what is in memory; and
        when their last line was written, at the latest (under the lock). The file is
        emptied once read to its end, which makes room for its reader."""
        if self._spool is not None and self._size > self._read:
            size = min(self._size - self._read, SPOOL_BYTES)
            data = os.pread(self._spool.fileno(), size, self._read)
            self._read += len(data)
            # The write the bytes end in: its last line was written no later.
            written = next((w for end, w in self._marks if end >= self._read), None)
            if self._read == self._size:
                self._empty()
            return data, written or self._pending_written
        if self._pending:
            data, written = b"".join(self._pending), self._pending_written
            self._pending, self._pending_size = [], 0
            self.spools.cond.notify_all()  # its reader may be waiting to write them
            return data, written
        return b"", None

    def _empty(self) -> None:
        """The spool file read to its end: emptied, its room given back (under the lock)."""
        if self._spool is not None and self._size:
            os.ftruncate(self._spool.fileno(), 0)
        self.spools.grew(-self._size)
        self._size = self._read = 0
        self._marks = []
        self.spools.cond.notify_all()


class Chain:
    """The segments of one Worker's log, in order: what each has taken, so a segment added
    for a file cuts off its predecessor exactly at that file's start. Kept by the log
    machine (``logmachine.py``), which its callers feed under one lock."""

    def __init__(self, clock: Clock = SYSTEM) -> None:
        self.clock = clock
        self.spools = Spools()
        self.segments: list[Segment] = [
            Segment(None, None, arrived=clock.monotonic(), spools=self.spools)
        ]
        # The current file's first line asked for, successfully: when each request was sent
        # and when its answer came (the run's wall clock, which ``watched`` sets against the
        # node's stamps). The file it names was current at some moment between the two,
        # which one is not known.
        self.probed: deque[tuple[float, float]] = deque(maxlen=PROBES_KEPT)
        # ... and unanswered (the API server or the kubelet down): when each was sent.
        self.unanswered: deque[float] = deque(maxlen=PROBES_KEPT)

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
        if fresh and (not self.probed or wall - self.probed[-1][1] >= 0.5):
            self.probed.append((wall, wall))

    def behind(self) -> bool:
        """The newest segment's reader delivers lines stamped well before now (or waits for
        room in the spools to keep them, or waits for a busy consumer to take them: the
        Worker is not silent, the reader is held)."""
        now = self.clock.monotonic()
        head = self.head
        held = head.waiting or head.handing
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
        seg = Segment(stamp, key, arrived=self.clock.monotonic(), spools=self.spools)
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
        ``FILE_SILENT_SECONDS`` while the next one has lines. A reader handing lines on is
        not idle: cut then, the rest of its file would be lost without a word. A reader
        left at its file's end is moved on by the kubelet at the log's next rotation, to the
        file then current: the files between are skipped, and a line its file ended inside
        is joined to another's end."""
        now = self.clock.monotonic()

        def at_end(seg: Segment, nxt: Segment) -> bool:
            idle = now - seg.arrived
            if idle >= FILE_SILENT_SECONDS:
                return True
            # The next reader's lines, unless it waits for room in the spools (since before
            # this one's last lines, maybe): then those of any other.
            others = [s for s in self.segments if s is not seg] if nxt.waiting else [nxt]
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
        API server was down, though it was current for 10 s."""
        try:
            a, b = stamp_key(gap.after), stamp_key(gap.before)
        except ValueError:
            return False
        start, stop = a[0] + a[1] / 1e9, b[0] + b[1] / 1e9
        if any(start <= sent <= stop for sent in self.unanswered):
            return False
        probes = sorted(p for p in self.probed if start <= p[1] and p[0] <= stop)
        latest = start  # the latest moment a file was last seen, at the earliest
        for sent, answered in probes:
            if answered - latest > WATCH_GAP_SECONDS:
                return False
            latest = max(latest, sent)
        return stop - latest <= WATCH_GAP_SECONDS

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
