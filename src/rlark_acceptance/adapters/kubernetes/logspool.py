"""A later segment's lines, kept on disk until the segments before it are put.

The first segment of a Worker's log (``logfiles.Segment``) is the follow, put to the
observation as it is read. A later one is read ahead, while the follow is behind, and its
lines wait here: in memory up to ``SPOOL_BYTES``, then in an unnamed temporary file, so the
harness's memory stays flat however far the Worker is ahead, and the spools of one log
together hold at most about ``2 * SPOOL_AHEAD_BYTES`` of disk. The log machine never calls a
spool (it only reads whether a reader waits for room); the observer's threads write and put
them.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

# A segment's lines are kept in memory up to this much, then written to its spool file.
SPOOL_BYTES = 1 << 20
# The spools of the files not yet being put hold at most this much between them: past it,
# their readers wait with their streams open (the kubelet keeps a file open for the reader
# that opened it, rotated or removed) and read on as the spools before them are put. The
# file being put may hold as much again: its reader waits until the consumer has caught up,
# and the file is emptied then. So the disk a log's read-ahead takes is bounded, not the
# Worker's output: a consumer slower than the Worker is waited for, never outrun.
SPOOL_AHEAD_BYTES = 128 << 20


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
class Spool:
    """One segment's lines, kept for when the segments before it are put."""

    # The spools of the log's segments, together: what they hold, and their one condition.
    spools: Spools = field(default_factory=Spools)
    ended: bool = False  # its segment's reader is done: nothing more comes
    drained: bool = False  # it has been put; a line kept later is put at once
    # It is being put (the segments before it are): its reader waits for room in it alone,
    # never in the others', which wait for it.
    draining: bool = False
    waiting: bool = False  # its reader waits for room in the spools
    _file: IO[bytes] | None = None
    _size: int = 0  # bytes written to the file since it was last emptied
    _read: int = 0  # ... and read back
    _pending: list[bytes] = field(default_factory=list)
    _pending_size: int = 0
    _pending_written: float | None = None
    # (end offset, when its last line was written) of each write to the file
    _marks: list[tuple[int, float | None]] = field(default_factory=list)

    def keep(
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
            if self._file is None:
                # Closed when the spool is put (drain).
                self._file = tempfile.TemporaryFile(prefix="rlark-log-")  # noqa: SIM115
            data = b"".join(self._pending)
            os.pwrite(self._file.fileno(), data, self._size)
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

    def end(self) -> None:
        """Its segment's reader is done: once what it holds is put, the spool is too."""
        with self.spools.cond:
            self.ended = True
            self.spools.cond.notify_all()

    def drain(self, stop: threading.Event) -> Iterator[tuple[list[str], float | None]]:
        """The spooled lines, a batch at a time with when its last line was written (at
        the latest), as they are written, until the segment's reader is done (``end``) and
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
                        and not self.ended
                        and not stop.is_set()
                    ):
                        cond.wait(0.5)
                    data, written = self._read_back()
                    done = self.ended
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
                if self._file is not None:
                    self._file.close()
                    self._file = None
                cond.notify_all()

    def _read_back(self) -> tuple[bytes, float | None]:
        """The next bytes of the spool, in order: its file's, then what is in memory; and
        when their last line was written, at the latest (under the lock). The file is
        emptied once read to its end, which makes room for its reader."""
        if self._file is not None and self._size > self._read:
            size = min(self._size - self._read, SPOOL_BYTES)
            data = os.pread(self._file.fileno(), size, self._read)
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
        if self._file is not None and self._size:
            os.ftruncate(self._file.fileno(), 0)
        self.spools.grew(-self._size)
        self._size = self._read = 0
        self._marks = []
        self.spools.cond.notify_all()
