"""Who holds each test service: one lease file per holder, locked for as long as it holds.

Several runs on one machine share a state dir's services (a release of two profiles, a
pytest session started while another is in Step 6). A service must stop when the last of
them is done, and never under one that still uses it. So each holder (a pytest session, a
``testenv`` command) takes a lease: a file of its own under ``<state>/leases/<service>/``,
holding its pid, command line and start time, on which it keeps a shared ``flock`` until it
releases it. The kernel drops the lock when the holder's process ends, however it ends
(SIGKILL too), so a lease whose lock can be taken exclusively is one whose holder is gone:
a crash releases its lease, and a recycled pid never counts as a holder.

A service kept by hand (``testenv up``, or a session with ``RLARK_TESTENV_KEEP=1``) has a
``kept.json`` record instead: it holds until ``testenv down``, with no process behind it.

Every decision to start or stop a service is taken under that service's own exclusive lock
(``deciding``): two holders ending together cannot both see the other and leave it running,
nor can one stop it under a third that is taking a lease at that moment.

    with lease.deciding("s3"):
        mine = lease.take("s3")
    ...
    with lease.deciding("s3"):
        mine.release()
        last = not lease.holders("s3")
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from testenv.paths import state_root

KEPT = "kept.json"
SUFFIX = ".lease"


def leases_root() -> Path:
    """Kept out of `down`'s clean-up: the lock files in it must stay the same files."""
    return state_root() / "leases"


def service_dir(service: str) -> Path:
    return leases_root() / service


@dataclass(frozen=True)
class Holder:
    """One holder of a service, as its lease file names it."""

    pid: int
    command: tuple[str, ...]
    started: str  # when the holding process started (UTC, ISO 8601)
    kept: bool = False  # a `testenv up` by hand: holds until `testenv down`, no process behind

    def line(self) -> str:
        """One line for a terminal: who, since when, doing what."""
        # A `python -c` script has newlines: escaped, so a holder stays one line.
        command = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shlex.join(self.command))
        if len(command) > 160:
            command = command[:157] + "..."
        if self.kept:
            return (
                f"kept until `testenv down` by pid {self.pid} (started {self.started}): {command}"
            )
        return f"held by pid {self.pid} (started {self.started}): {command}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["command"] = list(self.command)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Holder:
        """From ``to_json``'s form; ``ValueError`` / ``TypeError`` if it is not one."""
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        command = raw.get("command", [])
        if not isinstance(command, list):
            raise ValueError("command is not a list")
        return cls(
            pid=int(raw.get("pid", 0)),
            command=tuple(str(a) for a in command),
            started=str(raw.get("started", "")),
            kept=bool(raw.get("kept", False)),
        )


def _process_start(pid: int) -> str:
    """The process's start time, from the kernel's own clock of it (not the lease's time:
    a holder is the process, and its start tells it apart from a later one of the same pid)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime
    with open("/proc/stat") as fh:
        boot = next(int(line.split()[1]) for line in fh if line.startswith("btime "))
    when = datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def this_process() -> Holder:
    argv = Path("/proc/self/cmdline").read_bytes().split(b"\0")
    command = tuple(a.decode(errors="replace") for a in argv if a)
    return Holder(pid=os.getpid(), command=command, started=_process_start(os.getpid()))


@contextlib.contextmanager
def deciding(*services: str) -> Iterator[None]:
    """The services' start/stop locks, exclusive, for a decision to start or stop them.

    Taken in the order given (callers pass them in testenv's own order) and always before
    the state dir's lock, never while holding it, so two callers cannot wait on each other.
    """
    with contextlib.ExitStack() as stack:
        for service in services:
            leases_root().mkdir(parents=True, exist_ok=True)
            fh = stack.enter_context((leases_root() / f"{service}.lock").open("a"))
            fcntl.flock(fh, fcntl.LOCK_EX)
            stack.callback(fcntl.flock, fh, fcntl.LOCK_UN)
        yield


class Lease:
    """This process's hold on a service: its lease file, open and locked shared."""

    def __init__(self, service: str, path: Path, fh: IO[str]) -> None:
        self.service = service
        self.path = path
        self._fh: IO[str] | None = fh

    def release(self) -> None:
        """Remove the lease file, then drop the lock (idempotent)."""
        if self._fh is None:
            return
        self.path.unlink(missing_ok=True)
        self._fh.close()  # closing the file releases its flock
        self._fh = None

    def __repr__(self) -> str:
        return f"Lease({self.service!r}, {self.path.name!r}, held={self._fh is not None})"


def take(service: str) -> Lease:
    """A lease on ``service`` for this process; call it inside ``deciding(service)``.

    The file is locked before it gets its ``.lease`` name, so a lease file seen unlocked is
    always one whose holder is gone, never one being taken.
    """
    d = service_dir(service)
    d.mkdir(parents=True, exist_ok=True)
    for stale in d.glob("*.tmp"):  # left by a holder killed while taking its lease
        stale.unlink(missing_ok=True)
    name = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = d / f"{name}.tmp"
    fh = tmp.open("x")
    try:
        fcntl.flock(fh, fcntl.LOCK_SH)
        fh.write(json.dumps(this_process().to_json()) + "\n")
        fh.flush()
        path = d / f"{name}{SUFFIX}"
        os.rename(tmp, path)
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    return Lease(service, path, fh)


def _live(path: Path) -> bool:
    """True while the lease's holder keeps its lock; a dead holder's file is removed."""
    try:
        fh = path.open()
    except FileNotFoundError:
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        path.unlink(missing_ok=True)
        return False


def holders(service: str, *, besides: Lease | None = None) -> list[Holder]:
    """The live holders of ``service`` (the kept record first, if any), oldest lease first;
    ``besides``: a lease of this process to leave out."""
    d = service_dir(service)
    out = []
    kept = d / KEPT
    with contextlib.suppress(FileNotFoundError):
        try:
            out.append(replace(Holder.from_json(json.loads(kept.read_text())), kept=True))
        except (ValueError, TypeError):
            out.append(Holder(0, (), "", kept=True))  # damaged, still a record of keeping
    files = sorted(d.glob(f"*{SUFFIX}"), key=_mtime) if d.is_dir() else []
    for path in files:
        if besides is not None and path == besides.path:
            continue
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue
        if not _live(path):
            continue
        try:
            out.append(replace(Holder.from_json(json.loads(text)), kept=False))
        except (ValueError, TypeError):
            out.append(Holder(0, (), ""))
    return out


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def keep(service: str) -> None:
    """Record that ``service`` is kept by hand (this process's command), until `down`."""
    d = service_dir(service)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"{KEPT}.{os.getpid()}"
    tmp.write_text(json.dumps(replace(this_process(), kept=True).to_json()) + "\n")
    os.replace(tmp, d / KEPT)


def unkeep(service: str) -> None:
    (service_dir(service) / KEPT).unlink(missing_ok=True)
