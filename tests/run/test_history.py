"""The history of a profile's runs: appended, read back oldest first, a damaged or foreign
entry skipped with a warning naming it, two writers at once both landing, on a folder and on
the S3 test server."""

from __future__ import annotations

import json
import multiprocessing
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.budgets import Budgets
from rlark_acceptance.run.budgets import enough, evaluate
from rlark_acceptance.run.history import History, entry_key, open_history
from rlark_acceptance.storage import FileStore, S3Store, StoreError

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _summary(run_id: str, ray_head: float, name: str = "smoke") -> dict[str, Any]:
    return {
        "runId": run_id,
        "verdict": "passed",
        "durations": {"submit": 0.1, "rayHead": ray_head},
        "provenance": {"profileName": name, "node": "local-node"},
    }


def test_runs_are_appended_and_read_back_oldest_first(history: History) -> None:
    keys = [
        history.append(_summary(f"r{i}", 5.0 + i), "smoke", T0 + timedelta(minutes=10 - i))
        for i in range(3)
    ]
    assert keys[0] == "smoke/20261130T121000Z-r0.json"
    runs = history.read("smoke")
    assert [e.summary["runId"] for e in runs.entries] == ["r2", "r1", "r0"]
    assert [e.durations["rayHead"] for e in runs.last(2)] == [6.0, 5.0]
    assert runs.warnings == ()
    assert history.read("another-profile").entries == ()


def test_a_reader_that_needs_the_last_runs_reads_only_those(history: History) -> None:
    """An old damaged entry is not read (no warning) once the newest give each stage its
    last runs; the older ones are counted. A stage the newest runs never reached is looked
    for further back, as the budgets take it."""
    store: Any = history.store
    store.create("smoke/20261101T000000Z-cut.json", b'{"runId": "cut", "durat')
    for i in range(6):
        history.append(_summary(f"r{i}", 5.0 + i), "smoke", T0 + timedelta(minutes=i))
    runs = history.read("smoke", enough({"submit": 0.1, "rayHead": 6.0}, last=3))
    assert [e.summary["runId"] for e in runs.entries] == ["r3", "r4", "r5"]
    assert runs.warnings == () and runs.count == 7
    # The two newest never reached their Ray head: three that did are further back.
    for i in (6, 7):
        failed = _summary(f"r{i}", 0.0)
        del failed["durations"]["rayHead"]
        history.append(failed, "smoke", T0 + timedelta(minutes=i))
    runs = history.read("smoke", enough({"submit": 0.1, "rayHead": 6.0}, last=3))
    assert [e.summary["runId"] for e in runs.entries] == ["r3", "r4", "r5", "r6", "r7"]
    report = evaluate(
        {"submit": 0.1, "rayHead": 6.0},
        Budgets({}),
        [e.durations for e in runs.entries],
        last=3,
        count=runs.count,
    )
    assert report.as_dict()["earlierRuns"] == 9 and report.stages[1].median == 9.0  # r3-r5
    # Everything, as before, when nothing says what is enough.
    everything = history.read("smoke")
    assert everything.count == 8 and len(everything.entries) == 8 and len(everything.warnings) == 1


def test_an_entry_is_never_rewritten(history: History) -> None:
    history.append(_summary("r1", 5.0), "smoke", T0)
    with pytest.raises(StoreError) as caught:
        history.append(_summary("r1", 99.0), "smoke", T0)
    assert caught.value.code == "AlreadyExists"
    [entry] = history.read("smoke").entries
    assert entry.durations["rayHead"] == 5.0


def test_damaged_and_foreign_entries_are_skipped_each_with_a_warning(
    history: History, tmp_path: Path
) -> None:
    history.append(_summary("good", 5.0), "smoke", T0)
    store: Any = history.store
    store.create("smoke/20261130T130000Z-cut.json", b'{"runId": "cut", "durat')
    store.create("smoke/20261130T130100Z-binary.json", b"\xff\xfe\x00")
    store.create("smoke/notes.txt", b"kept by hand")
    store.create("smoke/20261130T130200Z-other.json", json.dumps({"name": "x"}).encode())
    other = json.dumps(_summary("moved", 1.0, name="another")).encode()
    store.create("smoke/20261130T130300Z-moved.json", other)

    runs = history.read("smoke")

    assert [e.summary["runId"] for e in runs.entries] == ["good"]
    where = history.describe()
    expected = {
        f"{where}/smoke/20261130T130000Z-cut.json": "damaged (not JSON",
        f"{where}/smoke/20261130T130100Z-binary.json": "damaged (not JSON",
        f"{where}/smoke/notes.txt": "not a run's summary (not .json)",
        f"{where}/smoke/20261130T130200Z-other.json": "not a run's summary (no runId)",
        f"{where}/smoke/20261130T130300Z-moved.json": "a run of another profile (another)",
    }
    assert len(runs.warnings) == len(expected), runs.warnings
    for name, why in expected.items():
        assert any(w.startswith(f"history: skipped {name}: {why}") for w in runs.warnings), (
            name,
            runs.warnings,
        )


def _append(location: str, run_id: str, env: dict[str, str]) -> str:
    os.environ.update(env)  # boto3's standard chain, as the run's process has it
    return open_history(location, Path(".")).append(_summary(run_id, 4.0), "smoke", T0)


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_two_writers_at_once_both_land(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two processes append the same second (a CI retry beside a scheduled run): each
    run's own key, neither lost, in a folder and in a bucket."""
    location, env = str(tmp_path), {}
    if where == "s3":
        s3_env = request.getfixturevalue("s3_env")
        location = f"s3://{s3_env.bucket}/rlark-acceptance-tests/{uuid.uuid4().hex}"
        env = s3_env.boto_env()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        keys = pool.starmap(_append, [(location, r, env) for r in ("run-a", "run-b")])
    assert sorted(keys) == [entry_key("smoke", r, T0) for r in ("run-a", "run-b")]
    client = request.getfixturevalue("s3_env").client() if where == "s3" else None
    history = open_history(location, tmp_path, client=client)
    try:
        runs = history.read("smoke")
        assert sorted(e.summary["runId"] for e in runs.entries) == ["run-a", "run-b"]
    finally:
        if where == "s3":
            history.store.delete([o.key for o in history.store.list("")])


def test_two_writers_of_one_key_on_s3_one_lands_the_other_is_refused(s3_env: Any) -> None:
    prefix = f"rlark-acceptance-tests/{uuid.uuid4().hex}"
    store = S3Store(s3_env.client(), s3_env.bucket, prefix)
    try:
        first, second = History(store), History(S3Store(s3_env.client(), s3_env.bucket, prefix))
        first.append(_summary("same", 1.0), "smoke", T0)
        with pytest.raises(StoreError):
            second.append(_summary("same", 2.0), "smoke", T0)
        first.append(_summary("other", 3.0), "smoke", T0)
        runs = first.read("smoke")
        assert {e.summary["runId"]: e.durations["rayHead"] for e in runs.entries} == {
            "same": 1.0,
            "other": 3.0,
        }
    finally:
        store.delete([o.key for o in store.list("")])


def test_a_profile_name_cannot_leave_its_folder(tmp_path: Path) -> None:
    key = entry_key("../../etc/x y", "../r1", T0)
    folder, name = key.split("/")
    assert folder not in ("", ".", "..") and name == "20261130T120000Z-_r1.json"
    assert entry_key("..", "r1", T0) == "profile/20261130T120000Z-r1.json"
    History(FileStore(tmp_path / "h")).append(_summary("r1", 1.0), "../../etc/x y", T0)
    [written] = tmp_path.rglob("*.json")
    assert written.parent.parent == tmp_path / "h", written
