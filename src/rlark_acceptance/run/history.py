"""The history of a profile's runs (docs/contract.md §4.3): one object per run, appended.

Each run adds its ``run-summary.json`` as ``<profile name>/<UTC stamp>-<run id>.json`` under
the history's location (a folder, or ``s3://bucket/prefix`` read with boto3's standard
chain), created only if nothing is there (a folder's link, S3's ``If-None-Match: *``): two
runs at once both land, none rewrites another's. The stamp leads the key, so the keys sort
as the runs started.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from rlark_acceptance.storage.store import FileStore, S3Store, StoreError, join_key

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_STAMP = "%Y%m%dT%H%M%SZ"


class _Backend(Protocol):  # a Store that can also create objects (``storage.Creatable``)
    def list(self, prefix: str = "") -> Any: ...
    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes: ...
    def create(self, key: str, data: bytes) -> None: ...
    def describe(self) -> str: ...


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
    def __init__(self, store: _Backend) -> None:
        self.store = store

    def describe(self) -> str:
        return self.store.describe()

    def append(self, summary: Mapping[str, Any], profile_name: str, when: datetime) -> str:
        """Adds ``summary`` (already redacted) as a new object; returns its key."""
        key = entry_key(profile_name, str(summary.get("runId") or "run"), when)
        data = json.dumps(summary, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        self.store.create(key, data)
        return key

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


def open_history(location: str, base: Path, client: Any = None) -> History:
    """The history at ``location``: ``s3://bucket/prefix`` (``client``: boto3's from the
    standard chain by default), or a folder (relative to ``base``, the profile's)."""
    if location.startswith("s3://"):
        bucket, _, prefix = location[len("s3://") :].partition("/")
        if client is None:
            from rlark_acceptance.adapters.local.s3 import client as s3_client

            client = s3_client()
        return History(S3Store(client, bucket, prefix))
    path = Path(location).expanduser()
    return History(FileStore(path if path.is_absolute() else base / path))


__all__ = ["Entry", "History", "Runs", "entry_key", "folder", "open_history"]
