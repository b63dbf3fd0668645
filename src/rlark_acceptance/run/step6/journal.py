"""What a run killed outright wrote at the persistent location, removed by the next run.

A run removes what it wrote after it passes (``outputs.settle_outputs``), but SIGKILL runs no
clean-up: its checkpoints would stay in the site's bucket for good, and the next run would
count them as "there before" and never touch them. So before submitting, a run writes a
journal of the location's listing (what was there already) into this machine's state
directory and holds a lock on it until it has settled its outputs. A journal whose lock is
free belongs to a run that died. The next run on the same location removes what is there
now and was not in the dead run's listing, then the journal; while another live run holds a
journal on that location nothing is removed (its writes could not be told apart).

A run that ends with objects it could not remove (its Worker could not be deleted and may
still write, or the store refused) leaves its journal unlocked, as a killed run does: the
next run removes them.

A run whose outputs go to its own location (``run_id``: the profile's location with the run
id appended) journals that location with the run id and the profile's location it belongs
to (``shared``). The next run of the profile finds a dead run's journal by the shared
location, and removes what the dead run wrote at the dead run's own location.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO

from rlark_acceptance.adapters.base import LeftoversRemoved, LeftoversUnchecked
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.storage import ObjectNotFound, Removable, StoreError

# A dead run's journal of a location no run has come back to (a test server's port, a
# profile since changed) is forgotten after this long; the objects it names are not touched.
FORGET_AFTER_S = 14 * 24 * 3600.0


def state_dir() -> Path:
    base = os.environ.get("RLARK_ACCEPTANCE_STATE")
    if base:
        return Path(base) / "outputs"
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "rlark-acceptance" / "outputs"


def _identity(loc: Location) -> str:
    """The location across runs: the store's endpoint (two S3 servers may hold buckets of
    the same name) and the path in it."""
    return f"{getattr(loc.store, 'endpoint', '') or ''} {loc.where}".strip()


class Journal:
    """A live run's journal: held (locked) until ``close()``."""

    def __init__(self, path: Path, fh: IO[str]) -> None:
        self.path, self._fh = path, fh

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._fh.close()  # releases the lock

    def hand_on(self) -> None:
        """Release the lock and keep the journal: this run ends with objects it could not
        remove (its Worker could not be deleted, the store refused), and the next run of the
        location removes them as it removes a killed run's. Marked handed on: a Worker
        that could not be deleted may write on after that removal, so at a location of its
        own the journal stays until a run finds nothing more there."""
        with contextlib.suppress(OSError, ValueError):
            self._fh.seek(0)
            entry = json.loads(self.path.read_text(encoding="utf-8"))
            self._fh.truncate()
            json.dump(entry | {"handedOn": True}, self._fh)
            self._fh.flush()
        self._fh.close()


def identity(loc: Location) -> str:
    return _identity(loc)


def open_journal(
    loc: Location, *, run_id: str | None = None, shared: str | None = None
) -> Journal | None:
    """Journal ``loc``'s listing before submission; None when it has none to journal.

    ``run_id`` and ``shared``: ``loc`` is that run's own location, under ``shared``."""
    if loc.baseline is None:
        return None
    folder = state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4().hex}.json"
        fh = path.open("w", encoding="utf-8")
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        entry: dict[str, object] = {"where": _identity(loc), "baseline": sorted(loc.baseline)}
        if run_id is not None and shared is not None:
            entry |= {"runId": run_id, "shared": shared}
        json.dump(entry, fh)
        fh.flush()
    except OSError:
        return None  # no state directory: the run goes on, as it did without journals
    return Journal(path, fh)


def _held(path: Path) -> bool | None:
    """Whether a live run holds the journal (None: it is gone or unreadable)."""
    try:
        with path.open(encoding="utf-8") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False
    except OSError:
        return None


def _forget_if_stale(path: Path) -> None:
    with contextlib.suppress(OSError):
        if time.time() - path.stat().st_mtime > FORGET_AFTER_S and _held(path) is False:
            path.unlink()


def sweep_dead_runs(
    loc: Location,
    *,
    shared: str | None = None,
    locate_run: Callable[[str], Location | Unlocated] | None = None,
) -> list[str]:
    """Remove from ``loc`` what runs that died there wrote, and from their own locations
    what dead runs of the same ``shared`` location wrote (``locate_run(run_id)``); says so
    with a ``LeftoversRemoved`` warning and returns the removed keys."""
    folder = state_dir()
    if not folder.is_dir():
        return []
    dead: list[tuple[Path, set[str]]] = []
    own: list[tuple[Path, str, set[str], bool]] = []  # dead runs of their own location
    live_here = False
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            _forget_if_stale(path)
            continue
        baseline = {str(k) for k in data.get("baseline") or []}
        if data.get("where") == _identity(loc):
            held = _held(path)
            live_here = live_here or bool(held)
            if held is False:
                dead.append((path, baseline))
        elif shared is not None and data.get("shared") == shared and data.get("runId"):
            if _held(path) is False:
                own.append((path, str(data["runId"]), baseline, bool(data.get("handedOn"))))
        else:
            _forget_if_stale(path)
    removed: list[str] = []
    if dead and not live_here:  # a live run writing here too: its objects cannot be told apart
        removed += _remove_written(loc, dead)
    for path, run_id, baseline, handed_on in own:
        if locate_run is None:
            break
        where = locate_run(run_id)
        if isinstance(where, Location):
            removed += _remove_written(where, [(path, baseline)], linger=handed_on)
    if removed:
        warnings.warn(
            LeftoversRemoved(
                f"removed {len(removed)} object(s) written by a run that died without "
                f"cleaning up (from {loc.where} or a dead run's own location beside it)"
            ),
            stacklevel=2,
        )
    return removed


def _remove_written(
    loc: Location, dead: list[tuple[Path, set[str]]], *, linger: bool = False
) -> list[str]:
    """What is at ``loc`` now and in none of the dead runs' listings, removed; then their
    journals, unless ``linger`` (a handed-on run's own location, whose Worker may still
    write) and something was there to remove: a later run looks again."""
    if not isinstance(loc.store, Removable):
        return []
    try:
        try:
            now = {o.key for o in loc.store.list(loc.prefix + "/" if loc.prefix else "")}
        except ObjectNotFound:
            now = set()
        # What none of the dead runs found there before it started is what they wrote.
        before = set.intersection(*(baseline for _, baseline in dead))
        written = sorted(now - before)
        if written:
            loc.store.delete(written)
    except StoreError as exc:
        # This run's verdict is its own; the journals stay, so the next run tries again.
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
    for path, _ in dead:
        with contextlib.suppress(OSError):
            path.unlink()
    return written
