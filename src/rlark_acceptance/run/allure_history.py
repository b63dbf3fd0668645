"""Allure 3's history kept in the runs' history store (docs/contract.md §4.3), so that the
trend graphs of a report rendered on one machine show the runs rendered on every other.

Allure appends one *history data point* per ``generate`` to ``allure-history.jsonl`` beside
the results (``allurerc.mjs``). When the run kept its summary in a history (``--history``
or the profile's ``history:``), ``rlark-acceptance report`` also:

- before rendering, writes into that file the points the store holds for the profile (each
  rendered run's, from any machine; the newest ``POINTS_READ``) beside the local ones, oldest
  first, without this run's own earlier point (a second render of a run replaces its point,
  it does not add one);
- after rendering, adds this render's point to the store as
  ``.allure-history/<profile>/<stamp>-<run id>.json``, created only if the run has none yet:
  one point per run, never rewriting another's. The leading dot keeps the points out of
  the profile's folder of summaries (``run.history.folder`` never starts with a dot).

A point that is not JSON or not a data point is skipped with a warning naming it; a store
that does not answer is a warning too: the report renders from the local history alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlark_acceptance.run.history import History, entry_key, folder, open_history
from rlark_acceptance.storage.store import StoreError, join_key

POINTS = ".allure-history"
# The newest points read into a render: what Allure's trend graphs draw, without one GET
# per run the profile ever had.
POINTS_READ = 50


@dataclass(frozen=True)
class Shared:
    """Where a run's Allure points go: its history, its profile and its run id."""

    history: History
    profile_name: str
    run_id: str

    @property
    def prefix(self) -> str:
        return join_key(POINTS, folder(self.profile_name)) + "/"

    def describe(self) -> str:
        return f"{self.history.describe()}/{self.prefix}"


def of_run(reports: Path, location: str | None = None) -> Shared | None:
    """The history of the run whose record is in ``reports``: ``location`` when given, else
    the one the run kept its summary in (``budgets.history`` of run-summary.json). None when
    the run kept none, or there is no record of a run."""
    try:
        summary = json.loads((reports / "run-summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict):
        return None
    run_id = summary.get("runId")
    profile_name = (summary.get("provenance") or {}).get("profileName")
    where = location or (summary.get("budgets") or {}).get("history")
    if not (isinstance(run_id, str) and isinstance(profile_name, str) and isinstance(where, str)):
        return None
    if where.startswith("file://"):
        where = where[len("file://") :]
    return Shared(open_history(where, Path.cwd()), profile_name, run_id)


def _is_point(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("uuid"), str)
        and isinstance(data.get("timestamp"), int | float)
        and isinstance(data.get("testResults"), dict)
    )


def _of_this_run(key: str, shared: Shared) -> bool:
    return key.rsplit("/", 1)[-1].endswith(f"-{folder(shared.run_id)}.json")


@dataclass(frozen=True)
class Pulled:
    warnings: list[str]  # entries skipped, a store that did not answer
    has_point: bool | None  # the store holds this run's point (None: the store was not read)


def pull(shared: Shared, jsonl: Path) -> Pulled:
    """Write into ``jsonl`` the store's points and the local ones, oldest first."""
    warnings: list[str] = []
    local = _read_local(jsonl, warnings)
    stored: list[dict[str, Any]] = []
    mine: set[str] = set()  # this run's point in the store: not given to this render
    try:
        infos = list(shared.history.store.list(shared.prefix))
    except StoreError as exc:
        text = f"Allure history: {shared.describe()} not read ({exc.code}: {exc.detail})"
        return Pulled([text], None)
    # A writer's file on its way in starts with a dot; the keys sort as the renders ran.
    keys = sorted(i.key for i in infos if not i.key.rsplit("/", 1)[-1].startswith("."))
    has_point = any(_of_this_run(key, shared) for key in keys)
    for key in keys[-POINTS_READ:]:
        where = f"{shared.history.describe()}/{key}"
        try:
            data = json.loads(shared.history.store.read(key).decode("utf-8"))
        except StoreError as exc:
            warnings.append(f"Allure history: skipped {where}: unreadable ({exc.code})")
            continue
        except (UnicodeDecodeError, ValueError):
            warnings.append(f"Allure history: skipped {where}: damaged (not JSON)")
            continue
        if not _is_point(data):
            warnings.append(f"Allure history: skipped {where}: not a history point")
        elif _of_this_run(key, shared):
            mine.add(data["uuid"])
        else:
            stored.append(data)
    points: dict[str, dict[str, Any]] = {}
    for point in [*local, *stored]:
        if point["uuid"] not in mine:
            points.setdefault(point["uuid"], point)
    ordered = sorted(points.values(), key=lambda p: float(p["timestamp"]))
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in ordered)
    tmp = jsonl.with_name(f".{jsonl.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(jsonl)  # whole: a reader never sees half of it
    return Pulled(warnings, has_point)


def _read_local(jsonl: Path, warnings: list[str]) -> list[dict[str, Any]]:
    try:
        lines = jsonl.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    points = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if _is_point(data):
            points.append(data)
        else:
            warnings.append(f"Allure history: skipped {jsonl}:{number}: not a history point")
    return points


def push(
    shared: Shared, jsonl: Path, before: set[str], has_point: bool | None
) -> tuple[str | None, list[str]]:
    """Add this render's point (the one in ``jsonl`` whose uuid is not in ``before``) to the
    store, unless it holds the run's point already; returns its key (None: none added) and
    warnings. ``has_point``: as ``pull`` found it. Unless True, the store is listed again
    right before the point is added: another render of this run may have added one during
    this render (seconds), and the keys carry the render's time, so creating cannot tell."""
    fresh = [p for p in _read_local(jsonl, []) if p["uuid"] not in before]
    if not fresh:
        return None, []
    point = fresh[-1]
    when = datetime.fromtimestamp(float(point["timestamp"]) / 1000, UTC)
    key = join_key(POINTS, entry_key(shared.profile_name, shared.run_id, when))
    try:
        if not has_point:
            infos = shared.history.store.list(shared.prefix)
            has_point = any(_of_this_run(i.key, shared) for i in infos)
        # The run's first point stays: a key per run, whatever the second render's stamp.
        if has_point:
            return None, []
        shared.history.store.create(key, json.dumps(point, ensure_ascii=False).encode("utf-8"))
    except StoreError as exc:
        if exc.code == "AlreadyExists":
            return None, []
        return None, [
            f"Allure history: this render's point not kept in {shared.describe()} "
            f"({exc.code}: {exc.detail})"
        ]
    return key, []


def uuids(jsonl: Path) -> set[str]:
    return {p["uuid"] for p in _read_local(jsonl, [])}


__all__ = ["POINTS", "Pulled", "Shared", "of_run", "pull", "push", "uuids"]
