"""One local Worker Pod: its process, its supervisor thread, its history and observers.

The supervisor is event-driven: it blocks in ``select`` on the Worker's output pipe and the
init's status pipe, so every log line reaches the observers as soon as it is written, and
the terminal phase is posted the moment the init has exited, which is after it stopped Ray
and unmounted object storage (so the bucket already holds everything the Pod wrote).

The log is kept once, on disk (``pod.log``, as a kubelet keeps a container's log): what
reaches observers are batches of the lines of each read, and the Pod's history names the
batches by their place in that file, so an observer that attaches late reads them back from
it. Memory stays flat whatever the Worker prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import (
    Event,
    EventSeen,
    Happening,
    LogEnded,
    LogLines,
    Observation,
    PodChanged,
    PodStatus,
)
from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.local.spec import (
    STATUS_ERROR,
    STATUS_MOUNT_FAILED,
    STATUS_STARTED,
    WorkerSpec,
)

# How long delete() lets the init stop the Pod (Ray, s3fs uploads) before SIGKILL, as a
# terminationGracePeriodSeconds.
GRACE_S = 20.0
CONTAINER = "worker"
LOCK_NAME = ".owner.lock"
# One read of the Worker's output: the pipe is widened to this, so a Worker printing as fast
# as it can is read in a few large batches rather than many 64 KiB ones.
READ_BYTES = 1024 * 1024
# A line longer than this is cut into pieces of it (a kubelet cuts long lines too), so a
# Worker printing without a newline cannot grow the buffer.
MAX_LINE_BYTES = 1024 * 1024
# A late observer reads the history's log back from the file in pieces of this size.
REPLAY_BYTES = 4 * 1024 * 1024


@dataclass
class LogSpan:
    """Lines of the Pod's history, by their place in ``pod.log``: bytes ``start`` to ``end``."""

    start: int
    end: int
    at: float
    whole: bool = True  # ends at a line's end (a cut long line does not)


def split_lines(data: bytes) -> list[str]:
    """The lines of complete output (``data`` ends where a line ended), as a log shows them."""
    text = data.decode("utf-8", errors="replace")
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    return lines


class PodRun:
    """A Pod's state as the adapter knows it; thread-safe."""

    def __init__(
        self, status: PodStatus, namespace: str, scratch: Path | None, clock: Clock = SYSTEM
    ) -> None:
        self.clock = clock  # the run's: what the Pod's happenings are stamped with
        self.namespace = namespace
        self.scratch = scratch
        self.status = status
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.history: list[Happening | LogSpan] = []
        self.observers: list[Observation] = []
        self.events: list[Event] = []
        self.last_line: str | None = None
        self.lock = threading.RLock()
        self.log_file = None if scratch is None else scratch / "pod.log"
        self.deleted = False
        self.ended = False
        self._lock_fd: int | None = None

    def hold_scratch(self) -> None:
        """Lock the scratch for this process's lifetime: a sweeper skips it while we live."""
        assert self.scratch is not None
        # Locked under another name, then renamed: a sweeper (another run on this machine)
        # judges only a scratch whose lock file exists, and so never finds it free between
        # its creation and our flock. The lock belongs to the inode and survives the rename.
        pending = self.scratch / f"{LOCK_NAME}.{os.getpid()}"
        self._lock_fd = os.open(pending, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        os.rename(pending, self.scratch / LOCK_NAME)

    @property
    def name(self) -> str:
        return self.status.name

    # --- what observers see -------------------------------------------------------------
    def _post(self, happening: Happening) -> None:
        with self.lock:
            self.history.append(happening)
            self._send(happening)

    def _send(self, happening: Happening) -> None:
        # The same item for every observer, time-stamped once when it happened (put_line &
        # co. would re-stamp a replayed item with the replay time).
        for obs in list(self.observers):
            obs.put(happening)

    def set_phase(self, **changes: object) -> None:
        with self.lock:
            self.status = replace(self.status, **changes)  # type: ignore[arg-type]
            self._post(PodChanged(self.clock.monotonic(), self.status))

    def event(
        self, reason: str, message: str, type_: str = "Normal", source: str = "kubelet"
    ) -> None:
        ev = Event(f"pod/{self.name}", reason, message, type_, source, self.clock.wall())
        with self.lock:
            self.events.append(ev)
            self._post(EventSeen(self.clock.monotonic(), ev))

    def lines(self, lines: list[str], span: LogSpan) -> None:
        """Lines the Worker printed, at ``span`` of the log file."""
        if not lines:
            return
        happening = LogLines(span.at, lines)
        with self.lock:
            self.last_line = lines[-1]
            last = self.history[-1] if self.history else None
            if isinstance(last, LogSpan) and last.whole and last.end == span.start:
                last.end, last.whole = span.end, span.whole  # one span per run of lines
            else:
                self.history.append(span)
            observers = list(self.observers)
        # Outside the lock: an observer that is behind makes this wait (backpressure on the
        # Worker's pipe), and nothing else of the Pod must wait with it.
        for obs in observers:
            obs.put(happening)

    def end_log(self) -> None:
        with self.lock:
            self.ended = True
            self._post(LogEnded(self.clock.monotonic()))

    def attach(self, obs: Observation) -> None:
        """Replay everything so far into ``obs``, then keep it fed (no gap, no duplicate)."""
        with self.lock:
            obs._replay = self._replay(list(self.history))
            self.observers.append(obs)

    def detach_all(self) -> None:
        with self.lock:
            observers, self.observers = self.observers, []
        for obs in observers:
            obs.close()

    def _replay(self, history: list[Happening | LogSpan]) -> Iterator[Happening]:
        for item in history:
            if isinstance(item, Happening):
                yield item
                continue
            if self.log_file is None:
                continue
            try:
                with self.log_file.open("rb") as fh:
                    fh.seek(item.start)
                    left, carry = item.end - item.start, b""
                    while left > 0 and (data := fh.read(min(REPLAY_BYTES, left))):
                        left -= len(data)
                        data = carry + data
                        cut = len(data) if left <= 0 else data.rfind(b"\n") + 1
                        whole, carry = data[:cut], data[cut:]
                        if whole:
                            yield LogLines(item.at, split_lines(whole))
            except OSError:
                return  # the scratch is gone with the deleted Pod: nothing left to replay

    def text(self) -> str:
        with self.lock:
            if self.log_file is not None and self.log_file.is_file():
                return self.log_file.read_text(errors="replace")
            return ""

    # --- the Worker process -------------------------------------------------------------
    def start(self, spec: WorkerSpec, spec_path: Path, env: dict[str, str], status_r: int) -> None:
        argv = [
            "unshare",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--propagation",
            "private",
            sys.executable,
            "-m",
            "rlark_acceptance.adapters.local.worker",
            str(spec_path),
        ]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one stream, as a container's log
            env=env,
            pass_fds=(spec.status_fd,),
            start_new_session=True,  # its own process group: delete() kills exactly this
        )
        os.close(spec.status_fd)  # the init holds the write end now
        proc = self.proc
        self.thread = cleanup.spawn(f"pod-{self.name}", lambda: self._supervise(proc, status_r))

    def _supervise(self, proc: subprocess.Popen[bytes], status_r: int) -> None:
        assert proc.stdout is not None
        out_fd = proc.stdout.fileno()
        with contextlib.suppress(OSError):  # a narrower pipe is only slower
            fcntl.fcntl(out_fd, fcntl.F_SETPIPE_SZ, READ_BYTES)
        status_buf = b""
        sel = selectors.DefaultSelector()
        sel.register(status_r, selectors.EVENT_READ)
        sel.register(out_fd, selectors.EVENT_READ)
        failure: str | None = None
        log = _LogFile(self, self.log_file)
        try:
            while sel.get_map():
                ready = [key.fd for key, _ in sel.select()]
                # Status first: Running is posted before the first line the Worker printed.
                for fd in sorted(ready, key=lambda f: f != status_r):
                    chunk = os.read(fd, READ_BYTES)
                    if not chunk:
                        sel.unregister(fd)
                    if fd == out_fd:
                        log.take(chunk)
                        continue
                    *words, status_buf = (status_buf + chunk).split(b"\n")
                    if not chunk and status_buf:
                        words, status_buf = [status_buf], b""
                    for raw in words:
                        text = raw.decode("utf-8", errors="replace").rstrip("\r")
                        failure = self._on_status(text) or failure
            code = proc.wait()
        finally:
            sel.close()
            os.close(status_r)
            log.close()
        self.end_log()
        self._finish(code, failure)

    def _on_status(self, text: str) -> str | None:
        word, _, rest = text.partition(" ")
        if word == STATUS_STARTED:
            self.event("Created", f"Created container {CONTAINER}")
            self.event("Started", f"Started container {CONTAINER}")
            self.set_phase(phase="Running", reason=None, message=None)
        elif word == STATUS_MOUNT_FAILED:
            self.event("FailedMount", rest, "Warning")
            return rest
        elif word == STATUS_ERROR:
            self.event("Failed", rest, "Warning")
            return rest
        return None

    def _finish(self, code: int, failure: str | None) -> None:
        if self.status.phase != "Running":
            # The container never started: kubelet keeps such a Pod Pending with a reason.
            if failure is None:  # e.g. unshare refused (not root, no CAP_SYS_ADMIN)
                tail = self.last_line if self.last_line is not None else "no output"
                failure = f"the Worker's init exited with {code}: {tail}"
            self.set_phase(phase="Pending", reason="CreateContainerError", message=failure)
        elif code == 0:
            self.set_phase(phase="Succeeded", reason="Completed", exit_code=0, message=None)
        else:
            self.set_phase(
                phase="Failed",
                reason="Error",
                exit_code=code,
                message=f"container {CONTAINER} exited with code {code}",
            )

    # --- deletion -----------------------------------------------------------------------
    def stop(self, grace: float = GRACE_S) -> None:
        """SIGTERM the Pod's process group (unshare and its init: the init stops the rest),
        SIGKILL the group after ``grace``."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self.event("Killing", f"Stopping container {CONTAINER}")
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                # --kill-child makes the init die with unshare; the kernel then kills the
                # rest of the Pod's PID namespace.
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=1.0)
            if self.thread.is_alive():
                # An observer nobody reads any more must not hold the supervisor (it waits
                # while an observer is full): the deleted Pod's observations end here.
                self.detach_all()
                self.thread.join(timeout=10.0)

    def remove_scratch(self, is_mounted: Callable[[Path], bool]) -> None:
        if self.scratch is not None:
            remove_scratch(self.scratch, is_mounted)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None


class _LogFile:
    """The Worker's output as it arrives: appended to ``pod.log`` as printed, its complete
    lines posted to the Pod's observers one batch per read."""

    def __init__(self, pod: PodRun, path: Path | None) -> None:
        self.pod = pod
        self.fh = path.open("ab", buffering=0) if path is not None else None
        self.written = 0  # bytes in the file
        self.posted = 0  # bytes of the file posted as lines
        self.pending = b""  # the start of a line not ended yet

    def take(self, chunk: bytes) -> None:
        """One read of the pipe; an empty chunk is its end (what is pending is a last line)."""
        if not chunk:
            if self.pending:
                self._write(b"\n")  # the file ends at a line's end, as a container log does
                self._post(self.pending + b"\n", whole=True)
                self.pending = b""
            return
        self._write(chunk)
        data = self.pending + chunk if self.pending else chunk
        cut = data.rfind(b"\n") + 1
        if cut:
            self.pending = data[cut:]
            self._post(data[:cut], whole=True)
        else:
            self.pending = data
        if len(self.pending) > MAX_LINE_BYTES:
            piece, self.pending = self.pending, b""
            self._post(piece, whole=False)

    def _write(self, data: bytes) -> None:
        if self.fh is not None:
            self.fh.write(data)
        self.written += len(data)

    def _post(self, data: bytes, *, whole: bool) -> None:
        span = LogSpan(self.posted, self.posted + len(data), self.pod.clock.monotonic(), whole)
        self.posted = span.end
        self.pod.lines(split_lines(data), span)

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def remove_scratch(scratch: Path, is_mounted: Callable[[Path], bool]) -> None:
    if not scratch.exists():
        return
    if is_mounted(scratch):
        # Never delete through a mount that leaked into this namespace (it could be a bind
        # of a host directory); leave it for a human instead.
        raise RuntimeError(f"refusing to remove {scratch}: a mount is still attached inside")
    shutil.rmtree(scratch, ignore_errors=True)


def scratch_is_orphaned(scratch: Path) -> bool:
    """True when the process that created this scratch is gone (its lock is free)."""
    try:
        fd = os.open(scratch / LOCK_NAME, os.O_RDWR)
    except OSError:
        return False  # no lock file (yet): not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
