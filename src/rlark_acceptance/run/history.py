"""The history of a profile's runs (docs/contract.md §4.3): one object per run, appended.

Each run adds its ``run-summary.json`` as ``<profile name>/<UTC stamp>-<run id>.json`` under
the history's location (a folder, or ``s3://bucket/prefix`` read with boto3's standard
chain), created only if nothing is there (a folder's link, S3's ``If-None-Match: *``): two
runs at once both land, none rewrites another's. The stamp leads the key, so the keys sort
as the runs started.

Where, unless the user says otherwise: ``--history`` or the profile's ``history.path``, else
the default, ``history/`` in the user's state folder (``RLARK_ACCEPTANCE_STATE``, else
``$XDG_STATE_HOME/rlark-acceptance``), so that a profile's second run already compares with
its first. ``--no-history`` or ``history: false`` keep nothing and compare nothing.

What it keeps (``Retention``, enforced on each append): the default location keeps the
newest ``DEFAULT_KEEP`` runs of each profile and none older than ``DEFAULT_KEEP_DAYS`` days; a
location the user named keeps every run unless the profile's ``history.keep`` /
``history.keepDays`` say otherwise (a shared store may have readers of its own). Only the
entries a run of the harness appended are removed (a key ``<profile>/<stamp>-<run id>.json``,
judged by the stamp in it), never the entry just appended, never another file.

Reading it back never fails on one entry: a damaged one (not JSON, cut short) or a foreign
one (another tool's file, a summary without durations) is skipped with a warning naming it.
A reader that needs only the newest runs (the budgets' last ones) reads back from the newest
until it has them; the older ones are listed and counted, not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Protocol

from rlark_acceptance.model.budgets import HistorySpec
from rlark_acceptance.run.step6.removals import state_root
from rlark_acceptance.storage.store import FileStore, S3Store, StoreError, join_key

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_STAMP = "%Y%m%dT%H%M%SZ"
# The name of an entry a run appended (``entry_key``): the only files a prune removes.
_ENTRY = re.compile(r"^(\d{8}T\d{6}Z)-[A-Za-z0-9._-]+\.json$")

# The default location's policy: a nightly run's two months and more, a few MB of JSON.
DEFAULT_KEEP: Final = 60
DEFAULT_KEEP_DAYS: Final = 90.0


class _Backend(Protocol):  # a Store that can also create objects (``storage.Creatable``)
    def list(self, prefix: str = "") -> Any: ...
    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes: ...
    def create(self, key: str, data: bytes) -> None: ...
    def delete(self, keys: Sequence[str]) -> None: ...
    def describe(self) -> str: ...


@dataclass(frozen=True)
class Retention:
    """What a history keeps of each profile's runs: the newest ``keep``, none older than
    ``days`` (None: no bound of that kind)."""

    keep: int | None = None
    days: float | None = None

    def expired(self, keys: Sequence[str], own: str, now: datetime) -> list[str]:
        """Of a profile's ``keys``, the entries past the policy, oldest first; never ``own``
        (the entry just appended), never a key that is not an entry's."""
        stamped = sorted((stamp, key) for key in keys if (stamp := _stamp_of(key)) is not None)
        gone: list[str] = []
        if self.days is not None:
            oldest = now - timedelta(days=self.days)
            gone += [key for stamp, key in stamped if stamp < oldest]
        if self.keep is not None and len(stamped) > self.keep:
            gone += [key for _, key in stamped[: len(stamped) - self.keep]]
        return sorted({k for k in gone if k != own}, key=lambda k: (_stamp_of(k), k))


def _stamp_of(key: str) -> datetime | None:
    found = _ENTRY.match(key.rsplit("/", 1)[-1])
    if found is None:
        return None
    return datetime.strptime(found[1], _STAMP).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Located:
    """Where a run's history is (a folder, relative to the profile's, or ``s3://``), and
    what its appends keep."""

    path: str
    retention: Retention = Retention()


def default_location() -> Path:
    """The history a profile's runs are kept in when nothing names one."""
    return state_root() / "history"


def located(spec: HistorySpec, option: str | None = None, off: bool = False) -> Located | None:
    """The run's history: ``option`` (``--history``) over the profile's, over the default;
    None when ``off`` (``--no-history``) or the profile says ``history: false`` and no
    ``--history`` overrides it."""
    named = option or spec.path
    if off or (spec.off and option is None):
        return None
    if named:
        return Located(named, Retention(spec.keep, spec.keep_days))
    return Located(
        str(default_location()),
        Retention(
            DEFAULT_KEEP if spec.keep is None else spec.keep,
            DEFAULT_KEEP_DAYS if spec.keep_days is None else spec.keep_days,
        ),
    )


@dataclass(frozen=True)
class Entry:
    key: str
    summary: dict[str, Any]

    @property
    def durations(self) -> dict[str, float]:
        return dict(self.summary.get("durations") or {})

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.summary.get("provenance") or {})


@dataclass(frozen=True)
class Runs:
    """The profile's earlier runs, oldest first, and what was skipped reading them."""

    entries: tuple[Entry, ...]
    warnings: tuple[str, ...] = ()
    # Runs of the profile the history holds: those read, and those older than the ones a
    # reader needed, which were listed and not read (counted as runs).
    count: int = 0

    def last(self, n: int) -> tuple[Entry, ...]:
        return self.entries[-n:] if n > 0 else ()


def folder(profile_name: str) -> str:
    """The profile's folder in the history: its name, with no ``/`` or ``..`` to leave it."""
    safe = _UNSAFE.sub("_", profile_name).strip(".") or "profile"
    return safe


def entry_key(profile_name: str, run_id: str, when: datetime) -> str:
    stamp = when.astimezone(UTC).strftime(_STAMP)
    return join_key(folder(profile_name), f"{stamp}-{folder(run_id)}.json")


class History:
    def __init__(self, store: _Backend, retention: Retention = Retention()) -> None:
        self.store = store
        self.retention = retention
        # The last append's removals, and why the policy could not be enforced (a store
        # that refused: the entry is kept all the same, and the next append tries again).
        self.pruned: tuple[str, ...] = ()
        self.problems: tuple[str, ...] = ()

    def describe(self) -> str:
        return self.store.describe()

    def append(self, summary: Mapping[str, Any], profile_name: str, when: datetime) -> str:
        """Adds ``summary`` (already redacted) as a new object; returns its key."""
        key = entry_key(profile_name, str(summary.get("runId") or "run"), when)
        data = json.dumps(summary, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        self.store.create(key, data)
        self._prune(profile_name, key)
        return key

    def _prune(self, profile_name: str, own: str, now: datetime | None = None) -> None:
        self.pruned, self.problems = (), ()
        if self.retention == Retention():
            return
        try:
            keys = [info.key for info in self.store.list(folder(profile_name) + "/")]
            gone = self.retention.expired(keys, own, now or datetime.now(UTC))
            if gone:
                self.store.delete(gone)
        except StoreError as exc:
            self.problems = (f"history: kept beyond its policy ({exc.code}: {exc.detail})",)
            return
        self.pruned = tuple(gone)

    def read(
        self, profile_name: str, enough: Callable[[Sequence[Entry]], bool] | None = None
    ) -> Runs:
        """The profile's runs, oldest first. ``enough``: read from the newest back only
        until it holds for what was read (newest first): one GET per run a reader needs, not
        per run the profile ever had (a year of nightly runs is hundreds)."""
        base = folder(profile_name)
        keys = [
            info.key
            for info in self.store.list(base + "/")
            # a writer's file on its way in (``FileStore.create``)
            if not info.key.rsplit("/", 1)[-1].startswith(".")
        ]
        found: list[Entry] = []
        warnings: list[str] = []
        unread = len(keys)
        for key in reversed(keys):  # keys begin with the run's time: the newest last
            if enough is not None and enough(found):
                break
            unread -= 1
            entry, problem = self._entry(key, profile_name)
            if problem is not None:
                warnings.append(f"history: skipped {self.describe()}/{key}: {problem}")
            elif entry is not None:
                found.append(entry)
        return Runs(tuple(reversed(found)), tuple(reversed(warnings)), len(found) + unread)

    def _entry(self, key: str, profile_name: str) -> tuple[Entry | None, str | None]:
        if not key.endswith(".json"):
            return None, "not a run's summary (not .json)"
        try:
            data = json.loads(self.store.read(key).decode("utf-8"))
        except StoreError as exc:
            return None, f"unreadable ({exc.code}: {exc.detail})"
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return None, f"damaged (not JSON: {exc})"
        return _checked(key, data, profile_name)


def _checked(key: str, data: Any, profile_name: str) -> tuple[Entry | None, str | None]:
    if not isinstance(data, dict) or not isinstance(data.get("runId"), str):
        return None, "not a run's summary (no runId)"
    durations = data.get("durations")
    if not isinstance(durations, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in durations.values()
    ):
        return None, "not a run's summary (no durations in seconds)"
    named = (data.get("provenance") or {}).get("profileName")
    if named is not None and named != profile_name:
        return None, f"a run of another profile ({named})"
    return Entry(key, data), None


def open_history(location: str | Located, base: Path, client: Any = None) -> History:
    """The history at ``location``: ``s3://bucket/prefix`` (``client``: boto3's from the
    standard chain by default), or a folder (relative to ``base``, the profile's); a
    ``Located`` brings the policy its appends enforce."""
    if isinstance(location, Located):
        found = open_history(location.path, base, client)
        found.retention = location.retention
        return found
    if location.startswith("s3://"):
        bucket, _, prefix = location[len("s3://") :].partition("/")
        if client is None:
            from rlark_acceptance.adapters.local.s3 import client as s3_client

            client = s3_client()
        return History(S3Store(client, bucket, prefix))
    path = Path(location).expanduser()
    return History(FileStore(path if path.is_absolute() else base / path))


__all__ = [
    "DEFAULT_KEEP",
    "DEFAULT_KEEP_DAYS",
    "Entry",
    "History",
    "Located",
    "Retention",
    "Runs",
    "default_location",
    "entry_key",
    "folder",
    "located",
    "open_history",
]
