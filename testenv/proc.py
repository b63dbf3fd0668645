"""Start and stop the processes of the test environment, always by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spawn(argv: list[str], log: Path, env: dict[str, str], cwd: Path) -> int:
    """Start a daemon in its own session (so a Ctrl-C of `up` does not kill it)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    return proc.pid


def _exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def alive(pid: int, exe: str | Path | None = None) -> bool:
    """True if pid runs (and, when given, runs exe): a recycled pid is not ours."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                # A zombie has exited; only its parent's wait is missing (an init slow
                # to reap orphans leaves it so for long). But the leader of a Go
                # program shows Z while its other threads still exit and hold its
                # sockets: it is gone only once it holds no file any more.
                _reap(pid)
                return _holds_files(pid)
    except OSError:
        return False
    if exe is None:
        return True
    actual = _exe(pid)
    if actual is None:
        return False
    return os.path.realpath(actual.removesuffix(" (deleted)")) == os.path.realpath(exe)


def _holds_files(pid: int) -> bool:
    try:
        return bool(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _reap(pid: int) -> None:
    # Our own children (started by this process) must be waited for, or they stay zombies.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(pid: int, exe: str | Path | None = None, timeout: float = 15.0) -> bool:
    """SIGTERM, then SIGKILL after timeout. Returns True if it was running."""
    if not alive(pid, exe):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not alive(pid):
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        _reap(pid)
        if not alive(pid):
            break
        time.sleep(0.1)
    return True


def rss_kib(pid: int) -> int:
    """Resident memory of one process, in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
