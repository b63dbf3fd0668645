"""The history by default: where a run is kept when nothing names a history, how to keep it
nowhere, and what the history keeps of a profile's runs (its policy, enforced on each
append, by several writers at once without losing the newest)."""

from __future__ import annotations

import multiprocessing
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.budgets import HistorySpec
from rlark_acceptance.run.history import (
    DEFAULT_KEEP,
    DEFAULT_KEEP_DAYS,
    History,
    Located,
    Retention,
    default_location,
    entry_key,
    located,
    open_history,
)
from rlark_acceptance.storage import FileStore, StoreError

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _summary(run_id: str) -> dict[str, Any]:
    return {"runId": run_id, "verdict": "passed", "durations": {"rayHead": 5.0}}


def test_nothing_named_is_the_users_state_folder_with_the_default_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLARK_ACCEPTANCE_STATE", str(tmp_path / "state"))
    assert default_location() == tmp_path / "state" / "history"
    assert located(HistorySpec()) == Located(
        str(tmp_path / "state" / "history"), Retention(DEFAULT_KEEP, DEFAULT_KEEP_DAYS)
    )
    monkeypatch.delenv("RLARK_ACCEPTANCE_STATE")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_location() == tmp_path / "xdg" / "rlark-acceptance" / "history"


def test_a_named_history_keeps_every_run_unless_the_profile_bounds_it() -> None:
    assert located(HistorySpec("s3://b/h")) == Located("s3://b/h", Retention())
    assert located(HistorySpec(), "/shared/h") == Located("/shared/h", Retention())
    bounded = HistorySpec("s3://b/h", keep=200, keep_days=365.0)
    assert located(bounded) == Located("s3://b/h", Retention(200, 365.0))
    assert located(bounded, "/other") == Located("/other", Retention(200, 365.0))
    # The profile's bounds on the default location replace the default's.
    assert located(HistorySpec(keep=5)) == Located(
        str(default_location()), Retention(5, DEFAULT_KEEP_DAYS)
    )


def test_no_history_is_the_users_choice_and_an_option_overrides_the_profile() -> None:
    assert located(HistorySpec(), off=True) is None
    assert located(HistorySpec("s3://b/h"), off=True) is None
    assert located(HistorySpec(off=True)) is None
    assert located(HistorySpec(off=True), "/h") == Located("/h", Retention())


def _keys(history: History, profile: str = "smoke") -> list[str]:
    return [i.key for i in history.store.list(profile + "/")]


def test_the_newest_runs_are_kept_the_older_removed_on_append(tmp_path: Path) -> None:
    history = History(FileStore(tmp_path), Retention(keep=3))
    for i in range(5):
        history.append(_summary(f"r{i}"), "smoke", T0 + timedelta(minutes=i))
    assert _keys(history) == [
        entry_key("smoke", f"r{i}", T0 + timedelta(minutes=i)) for i in (2, 3, 4)
    ]
    assert history.pruned == (entry_key("smoke", "r1", T0 + timedelta(minutes=1)),)
    assert [e.summary["runId"] for e in history.read("smoke").entries] == ["r2", "r3", "r4"]


def test_runs_older_than_the_days_kept_are_removed_by_their_stamp(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    history = History(FileStore(tmp_path), Retention(days=30))
    history.append(_summary("old"), "smoke", now - timedelta(days=31))
    history.append(_summary("recent"), "smoke", now - timedelta(days=29))
    history.append(_summary("new"), "smoke", now)
    assert [e.summary["runId"] for e in history.read("smoke").entries] == ["recent", "new"]


def test_only_entries_a_run_appended_are_removed_never_the_one_just_appended(
    tmp_path: Path,
) -> None:
    """Another tool's file, a writer's file on its way in, another profile's runs, and an
    entry appended late with an old stamp (a long run keyed by its start) all stay."""
    store = FileStore(tmp_path)
    store.create("smoke/notes.json", b"{}")
    store.create("smoke/.20200101T000000Z-x.json.1.tmp", b"")
    store.create("smoke/20200101T000000Z-x.json.bak", b"")
    other = History(store, Retention(keep=1))
    other.append(_summary("o1"), "other", T0)
    history = History(store, Retention(keep=1, days=1))
    history.append(_summary("new"), "smoke", T0 + timedelta(hours=1))
    late = history.append(_summary("late"), "smoke", T0)  # older than a day, and not the newest
    assert late in _keys(history)
    assert sorted(k.rsplit("/", 1)[-1] for k in _keys(history)) == sorted(
        [
            ".20200101T000000Z-x.json.1.tmp",
            "20200101T000000Z-x.json.bak",
            "notes.json",
            late.split("/")[1],
        ]
    )
    assert _keys(history, "other") == [entry_key("other", "o1", T0)]


class RefusingRemovals(FileStore):
    """A folder whose removals are refused, as a bucket policy without DeleteObject."""

    def delete(self, keys: Any) -> None:
        raise StoreError("AccessDenied", keys[0], "no DeleteObject here")


def test_a_store_that_refuses_the_removal_keeps_the_run_and_says_why(tmp_path: Path) -> None:
    history = History(RefusingRemovals(tmp_path), Retention(keep=1))
    history.append(_summary("r0"), "smoke", T0)
    history.append(_summary("r1"), "smoke", T0 + timedelta(minutes=1))
    assert history.pruned == ()
    assert history.problems == (
        "history: kept beyond its policy (AccessDenied: no DeleteObject here)",
    )
    assert len(_keys(history)) == 2


def _append_many(location: str, keep: int, writer: str, count: int) -> list[str]:
    history = open_history(Located(location, Retention(keep=keep)), Path("."))
    start = T0 + timedelta(seconds=int(writer[1:]))
    return [
        history.append(_summary(f"{writer}-{i}"), "smoke", start + timedelta(minutes=i))
        for i in range(count)
    ]


@pytest.mark.parametrize("keep", [1000, 12])
def test_writers_at_once_lose_nothing_the_policy_keeps(tmp_path: Path, keep: int) -> None:
    """Six processes append five runs each at once, each pruning as it appends: with room
    for all, all 30 are there; bounded to 12, the 12 newest are, and nothing else is."""
    location = str(tmp_path / f"h-{uuid.uuid4().hex[:6]}")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(6) as pool:
        written = pool.starmap(_append_many, [(location, keep, f"w{n}", 5) for n in range(6)])
    every = sorted((k for keys in written for k in keys), key=lambda k: k.split("/")[1])
    assert len(every) == 30
    kept = _keys(History(FileStore(location)))
    assert sorted(kept) == sorted(every)[-keep:]
