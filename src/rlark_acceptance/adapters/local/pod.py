"""One local Worker Pod: its process, its supervisor thread, its history and observers.

The supervisor is event-driven: it blocks in ``select`` on the Worker's output pipe and the
init's status pipe, so every log line reaches the observers as soon as it is written, and
the terminal phase is posted the moment the init has exited, which is after it stopped Ray
and unmounted object storage (so the bucket already holds everything the Pod wrote).
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
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import Event, Happening, Observation, PodStatus
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


class PodRun:
    """A Pod's state as the adapter knows it; thread-safe."""

    def __init__(self, status: PodStatus, namespace: str, scratch: Path | None) -> None:
        self.namespace = namespace
        self.scratch = scratch
        self.status = status
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.history: list[Happening] = []
        self.observers: list[Observation] = []
        self.events: list[Event] = []
        self.log_lines: list[str] = []
        self.lock = threading.RLock()
        self.log_file = None if scratch is None else scratch / "pod.log"
        self.deleted = False
        self.started_at: float | None = None  # monotonic, when the Worker began running
        self.ended = False
        self._lock_fd: int | None = None

    def hold_scratch(self) -> None:
        """Lock the scratch for this process's lifetime: a sweeper skips it while we live."""
        assert self.scratch is not None
        self._lock_fd = os.open(self.scratch / LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)

    @property
    def name(self) -> str:
        return self.status.name

    # --- what observers see -------------------------------------------------------------
    def _post(self, happening: Happening) -> None:
        with self.lock:
            self.history.append(happening)
            for obs in self.observers:
                # The same item for every observer, time-stamped once when it happened
                # (put_line & co. would re-stamp a replayed item with the replay time).
                obs._q.put(happening)

    def set_phase(self, **changes: object) -> None:
        with self.lock:
            self.status = replace(self.status, **changes)  # type: ignore[arg-type]
            self._post(Happening("pod", time.monotonic(), pod=self.status))

    def event(
        self, reason: str, message: str, type_: str = "Normal", source: str = "kubelet"
    ) -> None:
        ev = Event(f"pod/{self.name}", reason, message, type_, source, time.time())
        with self.lock:
            self.events.append(ev)
            self._post(Happening("event", time.monotonic(), event=ev))

    def line(self, text: str, log: object) -> None:
        with self.lock:
            self.log_lines.append(text)
            if log is not None:
                log.write(text + "\n")  # type: ignore[attr-defined]
                log.flush()  # type: ignore[attr-defined]
            self._post(Happening("log", time.monotonic(), line=text))

    def end_log(self) -> None:
        with self.lock:
            self.ended = True
            self._post(Happening("end", time.monotonic()))

    def attach(self, obs: Observation) -> None:
        """Replay everything so far into ``obs``, then keep it fed (no gap, no duplicate)."""
        with self.lock:
            for h in self.history:
                obs._q.put(h)
            self.observers.append(obs)

    def text(self) -> str:
        with self.lock:
            if self.log_file is not None and self.log_file.is_file():
                return self.log_file.read_text(errors="replace")
            return "".join(line + "\n" for line in self.log_lines)

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
        bufs = {out_fd: b"", status_r: b""}
        sel = selectors.DefaultSelector()
        sel.register(status_r, selectors.EVENT_READ)
        sel.register(out_fd, selectors.EVENT_READ)
        failure: str | None = None
        log = self.log_file.open("a", encoding="utf-8") if self.log_file else None
        try:
            while sel.get_map():
                ready = [key.fd for key, _ in sel.select()]
                # Status first: Running is posted before the first line the Worker printed.
                for fd in sorted(ready, key=lambda f: f != status_r):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        sel.unregister(fd)
                        lines, bufs[fd] = [bufs[fd]] if bufs[fd] else [], b""
                    else:
                        *lines, bufs[fd] = (bufs[fd] + chunk).split(b"\n")
                    for raw in lines:
                        text = raw.decode("utf-8", errors="replace").rstrip("\r")
                        if fd == status_r:
                            failure = self._on_status(text) or failure
                        else:
                            self.line(text, log)
            code = proc.wait()
        finally:
            sel.close()
            os.close(status_r)
            if log is not None:
                log.close()
        self.end_log()
        self._finish(code, failure)

    def _on_status(self, text: str) -> str | None:
        word, _, rest = text.partition(" ")
        if word == STATUS_STARTED:
            self.started_at = time.monotonic()
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
                tail = self.log_lines[-1] if self.log_lines else "no output"
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
        """SIGTERM the init (unshare forwards it), SIGKILL the group after ``grace``."""
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
            self.thread.join(timeout=10.0)

    def remove_scratch(self, is_mounted: Callable[[Path], bool]) -> None:
        if self.scratch is not None:
            remove_scratch(self.scratch, is_mounted)
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = None


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
