"""The Allure results as a pure function of a run report built by hand: one result per
check, the run's error one more, the counts Allure shows the record's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import ALL_CHECKS, BY_ID, remedy
from rlark_acceptance.model.findings import Location
from rlark_acceptance.run import allure_results
from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.report import (
    CheckResult,
    Evidence,
    RunReport,
    ScenarioRecord,
    kind_of,
)
from rlark_acceptance.secrets import Redactor
from tests.run.suite_runs import STATUSES, allure_counts_of

T0 = 1_800_000_000.0
SECRET = "hunter2-s3cr3t-value"


def _scenario(
    r: RunReport, nodeid: str, checks: list[str], *, tags: tuple[str, ...] = (), at: float = 0
) -> ScenarioRecord:
    s = r.add(ScenarioRecord(nodeid, f"scenario {nodeid}", "f", checks, kind_of(tags)))
    s.started, s.duration = T0 + at, 2.0
    return s


def green_report() -> RunReport:
    r = RunReport("p.yaml", run_id="261207000000-aaaaaa")
    for i, c in enumerate(ALL_CHECKS):
        if c.id != "T.4":  # opt-in: not selected
            _scenario(r, f"p-{c.id}", [c.id], at=i).finish("passed")
    return r


def red_report_at_37() -> RunReport:
    """The profile fails at 3.7 (a finding at its line); Step 6 never starts; a self-check
    of 3.7 is inconclusive, one of 3.4 failed (broken: the profile passed 3.4)."""
    r = RunReport("p.yaml", run_id="261207000000-bbbbbb")
    for i, c in enumerate(ALL_CHECKS):
        if c.id in ("3.7", "T.4"):
            continue
        s = _scenario(r, f"p-{c.id}", [c.id], at=i)
        if BY_ID[c.id].kind == "runtime" or c.id[0] in "TB1":
            s.finish("notReached", message="not reached: the pre-flight failed at check 3.7")
        else:
            s.finish("passed")
    _scenario(r, "p-3.7", ["3.1", "3.7"], at=40).finish(
        "failed",
        step="Then the Worker is configured as the page says",
        message="checks failed: 3.7\noutput-read-only — /mnt/ckpt is read-only",
        details=[
            CheckResult("3.1", "passed"),
            CheckResult(
                "3.7",
                "failed",
                "output-read-only — /mnt/ckpt is read-only",
                Location("site/job.yaml", 31),
            ),
        ],
    )
    r.scenarios["p-3.7"].primary = "3.1"  # written for 3.1-3.7, its first tag 3.1
    r.scenarios["p-3.7"].evidence = [
        Evidence("Job YAML", "yaml", f"kind: Job\ntoken: {SECRET}\n"),
        Evidence("pre-flight findings", "json", '{"check": "3.7"}'),
    ]
    _scenario(r, "s-3.7", ["3.7"], tags=("negative",), at=41).finish(
        "failed", step="Then the pre-flight names 3.7", message="3.7 was not named alone"
    )
    _scenario(r, "s-3.4", ["3.4"], tags=("negative",), at=42).finish("passed")
    return r


def _files(r: RunReport, redactor: Redactor | None = None, **kw: Any) -> dict[str, str]:
    return allure_results.results(r, redactor or Redactor(), **kw)


def _results(files: dict[str, str]) -> list[dict[str, Any]]:
    return [json.loads(t) for n, t in files.items() if n.endswith("-result.json")]


def _by_check(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {r["name"].split("]")[0][1:]: r for r in _results(files)}


def _shown(files: dict[str, str]) -> dict[str, int]:
    """What Allure's header counts: results by status, and in all."""
    results = _results(files)
    out = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
    return out | {"total": len(results)}


def test_a_green_run_is_one_passed_result_per_check_and_t4_not_selected() -> None:
    r = green_report()
    files = _files(r)
    results = _by_check(files)
    assert set(results) == {c.id for c in ALL_CHECKS}
    assert len(_results(files)) == r.counts()["total"] == len(ALL_CHECKS)
    assert _shown(files) == allure_counts_of(r.counts())
    t4 = results["T.4"]
    assert t4["status"] == "skipped" and t4["statusDetails"]["message"].startswith("not selected")
    one = results["6.3"]
    assert one["name"] == f"[6.3] {BY_ID['6.3'].says}"
    assert [s["name"] for s in one["steps"]] == ["[6.3] scenario p-6.3"]
    assert one["steps"][0]["status"] == "passed"
    assert one["start"] == one["steps"][0]["start"] and one["stop"] - one["start"] == 2000
    labels = {(x["name"], x["value"]) for x in one["labels"]}
    assert {("epic", writers.PAGE), ("feature", writers.section_label("6.3"))} <= labels
    assert ("acceptance", "profile") in labels and ("severity", "critical") in labels
    assert not [n for n, _ in labels if n == "failedCheck"]
    # Pure: the same report gives the same files, names included.
    assert _files(r) == files


def test_the_history_id_follows_a_check_across_runs_and_the_uuids_do_not() -> None:
    a, b = _files(green_report()), _files(red_report_at_37())
    ida = {c: x["historyId"] for c, x in _by_check(a).items()}
    idb = {c: x["historyId"] for c, x in _by_check(b).items()}
    assert ida == idb and len(set(ida.values())) == len(ida)
    assert not {x["uuid"] for x in _results(a)} & {x["uuid"] for x in _results(b)}


def test_a_red_run_at_37_says_the_message_once_with_remedy_and_line() -> None:
    r = red_report_at_37()
    files = _files(r)
    results = _by_check(files)
    assert len(_results(files)) == r.counts()["total"]
    assert _shown(files) == allure_counts_of(r.counts())
    failed = results["3.7"]
    assert failed["status"] == "failed"
    message = failed["statusDetails"]["message"]
    assert message == "[3.7] output-read-only — /mnt/ckpt is read-only"
    labels = {(x["name"], x["value"]) for x in failed["labels"]}
    assert ("failedCheck", "3.7") in labels and ("acceptance", "profile") in labels
    assert remedy("3.7") in failed["description"] and "`site/job.yaml:31`" in failed["description"]
    whole = json.dumps(failed, ensure_ascii=False)
    assert whole.count("/mnt/ckpt is read-only") == 1, "the message said more than once"
    # The profile's scenario first, its failing step below it (the check's message says
    # why); then the inconclusive self-check, with its own failure.
    mine, other = failed["steps"]
    assert mine["status"] == "failed" and "statusDetails" not in mine
    (step,) = mine["steps"]
    assert step["name"] == "Then the Worker is configured as the page says"
    assert "statusDetails" not in step
    assert [a["name"] for a in mine["attachments"]] == ["Job YAML", "pre-flight findings"]
    assert other["status"] == "skipped"
    assert other["statusDetails"]["message"] == "inconclusive: the profile itself fails at 3.7"
    assert other["steps"][0]["statusDetails"]["message"] == "3.7 was not named alone"
    # Not reached: skipped, in the words the gate reads.
    step6 = results["6.1"]
    assert step6["status"] == "skipped"
    assert step6["statusDetails"]["message"].startswith("not reached")
    assert ("acceptance", "profile") in {(x["name"], x["value"]) for x in step6["labels"]}


def test_a_check_whose_self_check_failed_is_broken_and_the_harness_s() -> None:
    r = green_report()
    _scenario(r, "s-3.4", ["3.4"], tags=("negative",), at=50).finish(
        "failed", step="Then 3.4 is named", message="the pre-flight passed it"
    )
    files = _files(r)
    broken = _by_check(files)["3.4"]
    assert broken["status"] == "broken"
    assert broken["statusDetails"]["message"].startswith("[3.4] self-check failed")
    labels = {(x["name"], x["value"]) for x in broken["labels"]}
    assert ("acceptance", "self-check") in labels and ("failedCheck", "3.4") not in labels
    assert [s["status"] for s in broken["steps"]] == ["passed", "failed"]
    assert _shown(files) == allure_counts_of(r.counts())


def test_an_interrupt_is_one_broken_result_more_and_what_never_ran_not_reached() -> None:
    r = RunReport("p.yaml", run_id="261207000000-cccccc")
    _scenario(r, "p-3.1", ["3.1"]).finish("passed")
    r.add(ScenarioRecord("p-6.1", "任务列表中出现本次 Job", "f", ["6.1"], "profile"))
    r.add(ScenarioRecord("p-6.2", "Pod", "f", ["6.2"], "profile"))
    r.interrupted, r.interrupted_at = True, "p-6.1"
    files = _files(r)
    results = _results(files)
    assert len(results) == r.counts()["total"] == len(ALL_CHECKS) + 1
    assert _shown(files) == allure_counts_of(r.counts())
    (run,) = [x for x in results if x["name"].startswith("[run] ")]
    assert run["name"] == "[run] interrupted during [6.1] 任务列表中出现本次 Job"
    assert run["status"] == "broken"
    assert ("acceptance", "run") in {(x["name"], x["value"]) for x in run["labels"]}
    by = _by_check(files)
    assert by["6.1"]["statusDetails"]["message"].startswith("not finished: the run was interrupted")
    assert by["6.2"]["statusDetails"]["message"] == "not reached: interrupted"


def test_a_usage_error_is_one_broken_result_and_every_check_not_reached() -> None:
    r = RunReport("p.yaml", run_id="261207000000-dddddd", error="usage error: no such file")
    files = _files(r)
    results = _results(files)
    assert len(results) == r.counts()["total"] and r.counts()["notReached"] == len(ALL_CHECKS)
    (run,) = [x for x in results if x["name"] == "[run] error"]
    assert run["statusDetails"]["message"] == "usage error: no such file"
    assert ("acceptance", "run") in {(x["name"], x["value"]) for x in run["labels"]}


def test_evidence_and_the_summary_are_files_and_no_secret_is_in_any(tmp_path: Path) -> None:
    r = red_report_at_37()
    r.evidence = [Evidence("Step 6: Worker log (excerpt)", "text", f"log {SECRET}")]
    redactor = Redactor()
    redactor.remember([SECRET])  # found by a scan after the evidence was taken
    files = _files(r, redactor, doc_url="https://docs.example/single-node")
    assert not [n for n, t in files.items() if SECRET in t]
    (glob,) = [json.loads(t) for n, t in files.items() if n.endswith("-globals.json")]
    names = [a["name"] for a in glob["attachments"]]
    assert names == ["Step 6: Worker log (excerpt)", writers.SUMMARY_FILE]
    summary = json.loads(files[glob["attachments"][1]["source"]])
    assert summary["counts"] == r.counts()
    failed = _by_check(files)["3.7"]
    job = failed["steps"][0]["attachments"][0]
    assert job["type"] == "application/yaml" and job["source"].endswith("-attachment.yaml")
    assert files[job["source"]].startswith("kind: Job")
    assert failed["links"] == [
        {
            "name": f"doc: {BY_ID['3.7'].section}",
            "url": "https://docs.example/single-node#check-3-7",
            "type": "link",
        }
    ]
    for name in ("categories.json", "environment.properties", "executor.json"):
        assert name in files
    assert "NOT ACCEPTED at 3.7" in json.loads(files["executor.json"])["reportName"]

    # Written: an earlier run's results go, a file that is no result stays.
    (tmp_path / "old-result.json").write_text("{}", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    allure_results.write(tmp_path, files)
    assert not (tmp_path / "old-result.json").exists() and (tmp_path / "notes.txt").exists()
    assert len(list(tmp_path.glob("*-result.json"))) == r.counts()["total"]


def test_a_self_check_sits_under_its_own_check_and_the_profile_s_under_each_it_decides() -> None:
    """A self-check of Step 6 that also names 2.1 is a step of 6.1 only; the profile's one
    scenario of 3.1-3.7 a step of each, passed where it found that check right."""
    r = RunReport("p.yaml")
    _scenario(r, "s", ["2.1", "6.1"], tags=("negative",)).finish("passed")
    r.scenarios["s"].primary = "6.1"
    _scenario(r, "p", ["3.1", "3.7"]).finish(
        "failed",
        step="Then",
        message="3.7 failed",
        details=[CheckResult("3.1", "passed"), CheckResult("3.7", "failed", "read-only")],
    )
    by = _by_check(_files(r))
    steps = {c: [s["status"] for s in x["steps"]] for c, x in by.items() if x["steps"]}
    assert steps == {"3.1": ["passed"], "3.7": ["failed"], "6.1": ["passed"]}
    assert by["6.1"]["labels"][1]["value"] == "08 Step 6 确认任务开始运行"
