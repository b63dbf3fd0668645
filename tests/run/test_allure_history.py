"""Allure 3's history points kept in the history store: read into the local history before a
render, this render's added after it, one per run, damaged entries skipped with a warning.
On a folder store and on the S3 test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.run import allure_history
from rlark_acceptance.run.allure_history import POINTS, Shared, of_run, pull, push, uuids
from rlark_acceptance.run.history import History, open_history


def _point(uuid: str, ms: int) -> dict[str, Any]:
    return {
        "uuid": uuid,
        "name": f"report {uuid}",
        "timestamp": ms,
        "knownTestCaseIds": [],
        "testResults": {"h1": {"id": uuid, "status": "passed", "historyId": "h1"}},
        "metrics": {},
        "url": "",
    }


def _write_local(jsonl: Path, *points: dict[str, Any]) -> None:
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in points), encoding="utf-8")


def _render(shared: Shared, jsonl: Path, uuid: str, ms: int) -> str | None:
    """What ``report`` does around Allure's ``generate``, which appends its point."""
    pulled = pull(shared, jsonl)
    assert pulled.warnings == []
    before = uuids(jsonl)
    with jsonl.open("a", encoding="utf-8") as f:
        f.write(json.dumps(_point(uuid, ms)) + "\n")
    key, more = push(shared, jsonl, before, pulled.has_point)
    assert more == []
    return key


def _local(jsonl: Path) -> list[str]:
    return [json.loads(x)["uuid"] for x in jsonl.read_text(encoding="utf-8").splitlines()]


def test_two_machines_see_each_others_renders_one_point_per_run(
    history: History, tmp_path: Path
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run1 = Shared(history, "site-a", "run-1")
    run2 = Shared(history, "site-a", "run-2")
    assert _render(run1, a, "p1", 1_000) is not None
    # Another machine, its own reports directory: run 1's point comes from the store.
    key = _render(run2, b, "p2", 2_000)
    assert key is not None and key.startswith(f"{POINTS}/site-a/") and key.endswith("-run-2.json")
    assert _local(b) == ["p1", "p2"]
    # Run 1 rendered again on its machine: its new point replaces its first in what Allure
    # reads, and the store keeps one point for it.
    assert _render(run1, a, "p1-again", 3_000) is None
    assert _local(a) == ["p2", "p1-again"]
    kept = [i.key for i in history.store.list(f"{POINTS}/site-a/")]
    assert len(kept) == 2, kept
    # The profile's summaries are not among the points, nor the points among its summaries.
    assert history.read("site-a").entries == ()
    assert _render(Shared(history, "site-b", "run-3"), tmp_path / "c.jsonl", "p3", 4_000)
    assert _local(tmp_path / "c.jsonl") == ["p3"], "another profile's points"


def test_two_renders_of_one_run_at_once_keep_one_point(history: History, tmp_path: Path) -> None:
    # Both pulled before either pushed: the second finds the first's point when it adds its.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run = Shared(history, "site-a", "run-1")
    pulled_a, pulled_b = pull(run, a), pull(run, b)
    assert pulled_a.has_point is False and pulled_b.has_point is False
    for jsonl, uuid, ms, pulled in ((a, "pa", 1_000, pulled_a), (b, "pb", 2_000, pulled_b)):
        before = uuids(jsonl)
        with jsonl.open("a", encoding="utf-8") as f:
            f.write(json.dumps(_point(uuid, ms)) + "\n")
        key, more = push(run, jsonl, before, pulled.has_point)
        assert more == [] and (key is not None) == (uuid == "pa"), (uuid, key)
    assert len(list(history.store.list(f"{POINTS}/site-a/"))) == 1


def test_a_damaged_point_is_skipped_with_a_warning_and_the_local_history_kept(
    tmp_path: Path,
) -> None:
    history = open_history(str(tmp_path / "history"), tmp_path)
    history.store.create(f"{POINTS}/site-a/20261201T000000Z-old.json", b'{"uuid": "x", "tim')
    history.store.create(f"{POINTS}/site-a/20261202T000000Z-other.json", b'{"runId": "r"}')
    jsonl = tmp_path / "allure-history.jsonl"
    _write_local(jsonl, _point("local", 500))
    with jsonl.open("a", encoding="utf-8") as f:
        f.write("not json\n")
    warnings = pull(Shared(history, "site-a", "run-1"), jsonl).warnings
    assert len(warnings) == 3, warnings
    assert any("20261201T000000Z-old.json: damaged (not JSON)" in w for w in warnings)
    assert any("-other.json: not a history point" in w for w in warnings)
    assert any(f"{jsonl}:2: not a history point" in w for w in warnings)
    assert _local(jsonl) == ["local"]


def test_a_store_that_does_not_answer_is_a_warning_and_the_render_goes_on(
    tmp_path: Path, s3_env: Any
) -> None:
    history = open_history("s3://no-such-bucket-here/prefix", tmp_path, client=s3_env.client())
    jsonl = tmp_path / "allure-history.jsonl"
    _write_local(jsonl, _point("local", 500))
    shared = Shared(history, "site-a", "run-1")
    pulled = pull(shared, jsonl)
    assert pulled.has_point is None, "not read: not known"
    assert len(pulled.warnings) == 1 and "not read" in pulled.warnings[0], pulled.warnings
    assert "s3://no-such-bucket-here/prefix/.allure-history/site-a/" in pulled.warnings[0]
    assert _local(jsonl) == ["local"]
    # After the render, the store is asked again, and its silence is said, not swallowed.
    before = uuids(jsonl)
    with jsonl.open("a", encoding="utf-8") as f:
        f.write(json.dumps(_point("this", 600)) + "\n")
    key, more = push(shared, jsonl, before, pulled.has_point)
    assert key is None and len(more) == 1 and "this render's point not kept" in more[0], more


def test_the_history_is_the_one_the_run_kept_its_summary_in(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    assert of_run(reports) is None  # no record of a run
    summary = {
        "runId": "run-9",
        "provenance": {"profileName": "site-a"},
        "budgets": {"history": f"file://{tmp_path / 'history'}"},
    }
    (reports / "run-summary.json").write_text(json.dumps(summary), encoding="utf-8")
    shared = of_run(reports)
    assert shared is not None and (shared.profile_name, shared.run_id) == ("site-a", "run-9")
    assert shared.describe() == f"file://{tmp_path / 'history'}/{POINTS}/site-a/"
    other = of_run(reports, str(tmp_path / "elsewhere"))
    assert other is not None and "elsewhere" in other.describe()
    summary["budgets"] = {"history": None}
    (reports / "run-summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert of_run(reports) is None  # the run kept no history: the local one alone
    assert allure_history.of_run(reports, "s3://b/p") is not None


def test_only_the_newest_points_are_read(tmp_path: Path) -> None:
    history = open_history(str(tmp_path / "history"), tmp_path)
    for i in range(allure_history.POINTS_READ + 5):
        key = f"{POINTS}/site-a/20261201T{i // 60:02d}{i % 60:02d}00Z-run-{i}.json"
        history.store.create(key, json.dumps(_point(f"p{i}", 1_000 + i)).encode())
    jsonl = tmp_path / "allure-history.jsonl"
    assert pull(Shared(history, "site-a", "run-new"), jsonl) == allure_history.Pulled([], False)
    read = _local(jsonl)
    assert len(read) == allure_history.POINTS_READ and read[-1] == f"p{len(read) + 4}"
    assert read[0] == "p5", "not the newest"


def test_a_history_for_a_report_without_a_run_record_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --history`` names where this run's point goes by the run's record: without
    one (its profile and run id), one line at the record's path, before anything renders."""
    from rlark_acceptance.cli import main

    results = tmp_path / "reports" / "allure-results"
    results.mkdir(parents=True)
    (results / "0-result.json").write_text('{"uuid": "0", "name": "x"}', encoding="utf-8")
    argv = ["report", "--reports-dir", str(tmp_path / "reports"), "--history", "hist"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run-summary.json" in err[0] and "--history hist" in err[0], err
    assert not (tmp_path / "reports" / "allure-report").exists()
