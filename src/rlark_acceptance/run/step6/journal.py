"""What a run killed outright wrote at a location of its own, removed by a later run.

A run removes what it wrote after it passes (``Engine.settle_outputs``), but SIGKILL runs no
clean-up: its checkpoints would stay in the site's bucket for good. So a later run removes
them, under the rule a site's storage owner holds any tool with write access to their
bucket to: the harness removes an object only when it can prove that a run of its own
wrote it, and that this run is over.

- **Written by a run of its own**: only at the run's own location. A run whose output folder
  lies on a writable object-storage mount submits its Job with ``/<run id>`` appended to the
  mount's prefix (``run_id.for_run``): nothing but that run's Worker writes under that
  prefix. A location shared with other writers (a hostPath, a mount the run id cannot be
  given to, the profile's prefix itself) is never swept, whatever appeared there: what
  appeared there cannot be told from a neighbour's or another team's objects.
- **The journal**: before submitting, such a run writes into this machine's state directory
  its run id, its own location's identity, the profile's location it lies under
  (``shared``), what was there (nothing, by construction), and its process (host, boot,
  pid, start time), and holds a lock on the file until its outputs are settled.
- **Over**: a journal whose lock is free and whose process is gone (SIGKILL, a machine that
  rebooted), or that its run handed on (``Journal.hand_on``: it ended with objects it could
  not remove). Liveness is never the lock alone: a run whose lock were lost while it still
  reads its outputs would otherwise be swept.
- **The sweep**: the next run of the same ``shared`` location finds the dead run's location
  again from its run id (``locate_run``), removes there what the journal did not list, and
  only when that location is the journal's to the letter.

Every removal is appended to the machine's removal log (``removals``), so a run whose
checkpoint disappears can say whether the harness removed it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from rlark_acceptance.adapters.base import LeftoversRemoved, LeftoversUnchecked
from rlark_acceptance.run.step6 import removals
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.storage import ObjectNotFound, Removable, StoreError

# A dead run's journal of a location no run has come back to (a test server's port, a
# profile since changed) is forgotten after this long; the objects it names are not touched.
FORGET_AFTER_S = 14 * 24 * 3600.0


def state_dir() -> Path:
    return removals.state_root() / "outputs"


def identity(loc: Location) -> str:
    return loc.identity


class Journal:
    """A live run's journal: held (locked) until ``close()`` or ``hand_on()``."""

    def __init__(self, path: Path, fh: IO[str]) -> None:
        self.path, self._fh = path, fh

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._fh.close()  # releases the lock

    def hand_on(self) -> None:
        """Release the lock and keep the journal: this run ends with objects it could not
        remove (its Worker could not be deleted, the store refused), and the next run of the
        location removes them as it removes a killed run's. Marked handed on: its process
        may live on, and a Worker that could not be deleted may write on after that
        removal, so the journal stays until a run finds nothing more there."""
        with contextlib.suppress(OSError, ValueError):
            self._fh.seek(0)
            entry = json.loads(self.path.read_text(encoding="utf-8"))
            self._fh.truncate()
            json.dump(entry | {"handedOn": True}, self._fh)
            self._fh.flush()
        self._fh.close()


def open_journal(loc: Location, *, run_id: str, shared: str) -> Journal | None:
    """Journal ``loc``, run ``run_id``'s own location under ``shared``, before submission;
    None when there is nothing to journal (no listing, or no state directory)."""
    if loc.baseline is None:
        return None
    folder = state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4().hex}.json"
        fh = path.open("w", encoding="utf-8")
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        entry: dict[str, object] = {
            "where": identity(loc),
            "baseline": sorted(loc.baseline),
            "runId": run_id,
            "shared": shared,
            "process": this_process(),
        }
        json.dump(entry, fh)
        fh.flush()
    except OSError:
        return None  # no state directory: the run goes on, as it did without journals
    return Journal(path, fh)


def this_process() -> dict[str, object]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid, "start": _start_time(pid)}


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (a pid reused later differs)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def process_alive(process: object) -> bool | None:
    """Whether the journal's process still runs (None: it cannot be told from here, a
    journal of another host or of an older harness: the lock alone then says)."""
    if not isinstance(process, dict) or process.get("host") != socket.gethostname():
        return None
    boot = _boot_id()
    if boot is None or process.get("boot") != boot:
        return None if boot is None else False  # the machine rebooted since: it is gone
    pid = process.get("pid")
    if not isinstance(pid, int):
        return None
    start = _start_time(pid)
    return start is not None and start == process.get("start")


def _held(path: Path) -> bool | None:
    """Whether a live run holds the journal's lock (None: it is gone or unreadable)."""
    try:
        with path.open(encoding="utf-8") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False
    except OSError:
        return None


def _over(path: Path, data: dict[str, Any]) -> bool:
    """The journal's run is over: its lock is free, and it handed the journal on or its
    process is gone. A process that still runs keeps its run live, lock or not."""
    if _held(path) is not False:
        return False
    return bool(data.get("handedOn")) or process_alive(data.get("process")) is not True


def _forget_if_stale(path: Path) -> None:
    with contextlib.suppress(OSError):
        if time.time() - path.stat().st_mtime > FORGET_AFTER_S and _held(path) is False:
            path.unlink()


def sweep_dead_runs(
    shared: str, locate_run: Callable[[str], Location | Unlocated], *, by: str
) -> list[str]:
    """Remove from the own locations of runs of ``shared`` that are over what they wrote
    (``locate_run(run_id)`` finds each again); says so with a ``LeftoversRemoved`` warning
    and returns the removed keys. ``by``: the run sweeping, for the removal log."""
    folder = state_dir()
    if not folder.is_dir():
        return []
    removed: list[str] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or not a journal
        if not isinstance(data, dict):
            _forget_if_stale(path)
            continue
        run_id, where = data.get("runId"), data.get("where")
        if data.get("shared") != shared or not isinstance(run_id, str) or not run_id:
            # Another location's, or an older harness's journal of a shared location:
            # nothing there is provably a run's own, so nothing is removed for it.
            _forget_if_stale(path)
            continue
        if not _over(path, data):
            continue
        found = locate_run(run_id)
        if not isinstance(found, Location) or identity(found) != where:
            continue  # not where the journal says the run wrote: nothing is proven there
        baseline = {str(k) for k in data.get("baseline") or []}
        removed += _remove_written(
            found, path, baseline, linger=bool(data.get("handedOn")), by=by, dead=run_id
        )
    if removed:
        warnings.warn(
            LeftoversRemoved(
                f"removed {len(removed)} object(s) written by a run that died without "
                f"cleaning up (from its own location under {shared.split(' ')[-1]})"
            ),
            stacklevel=2,
        )
    return removed


def _remove_written(
    loc: Location, path: Path, baseline: set[str], *, linger: bool, by: str, dead: str
) -> list[str]:
    """What is at the dead run's own ``loc`` now and not in its listing, removed; then its
    journal, unless ``linger`` (a handed-on run, whose Worker may still write) and
    something was there to remove: a later run looks again."""
    if not isinstance(loc.store, Removable):
        return []
    try:
        try:
            now = {o.key for o in loc.store.list(loc.prefix + "/" if loc.prefix else "")}
        except ObjectNotFound:
            now = set()
        written = sorted(now - baseline)
        if written:
            removals.log(identity(loc), written, by=by, why=f"the dead run {dead}'s own location")
            loc.store.delete(written)
    except StoreError as exc:
        # This run's verdict is its own; the journal stays, so the next run tries again.
        warnings.warn(
            LeftoversUnchecked(
                f"what a run that died without cleaning up wrote at {loc.where} could not be "
                f"removed: {exc}; the next run tries again"
            ),
            stacklevel=3,
        )
        return []
    if linger and written:
        return written
    with contextlib.suppress(OSError):
        path.unlink()
    return written
