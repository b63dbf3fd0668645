"""The run record's semantics (docs/contract.md §4) on the model alone: what counts, what
comes first."""

from __future__ import annotations

import json
from pathlib import Path

from rlark_acceptance.model.doc_checks import ALL_CHECKS, CHECKS, remedy
from rlark_acceptance.model.findings import Location
from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.report import CheckResult, RunReport, ScenarioRecord, kind_of
from rlark_acceptance.secrets import Redactor


def _scenario(report: RunReport, name: str, checks: list[str], *, tags: tuple[str, ...] = ()):
    return report.add(ScenarioRecord(name, name, "f", checks, kind_of(tags)))


def _all_pass(report: RunReport) -> None:
    _scenario(report, "everything", [c.id for c in ALL_CHECKS]).finish("passed")


def test_a_green_run() -> None:
    r = RunReport("p.yaml")
    _all_pass(r)
    s = r.summary()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None
    assert set(s["checks"].values()) == {"passed"}
    assert not r.exit_failed()


def test_the_earliest_failure_follows_the_doc_not_the_run_order() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "z-step6", ["6.4"]).finish("failed", step="Then s", message="no signal")
    _scenario(r, "a-step3", ["3.1", "3.7"]).finish(
        "failed",
        step="Then checks pass",
        message="check 3.7 is failed",
        details=[
            CheckResult("3.1", "passed"),
            CheckResult("3.7", "failed", "output-read-only: ...", Location("site/job.yaml", 31)),
        ],
    )
    s = r.summary()
    assert s["checks"]["3.1"] == "passed", "3.1 is not failed by its neighbour in the scenario"
    first = s["earliestFailure"]
    assert first == {
        "check": "3.7",
        "scenario": "a-step3",
        "step": "Then checks pass",
        "message": "output-read-only: ...",
        "hint": remedy("3.7"),
        "location": "site/job.yaml:31",
    }


def test_a_self_check_fails_the_run_but_never_takes_the_earliest_failure() -> None:
    r = RunReport("p.yaml")
    _all_pass(r)
    _scenario(r, "negative 0.1", ["0.1"], tags=("negative",)).finish("failed", message="boom")
    s = r.summary()
    assert s["earliestFailure"] is None and s["verdict"] == "passed"
    assert s["selfChecks"] == {
        "passed": 0,
        "failed": [{"check": "0.1", "scenario": "negative 0.1", "message": "boom"}],
    }
    assert r.exit_failed()


def test_a_self_check_is_inconclusive_when_the_profile_itself_fails() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "6.4 as it is", ["6.4"]).finish("failed", message="no signal")
    _scenario(r, "fault", ["6.5"], tags=("fault-injection",)).finish("failed", message="6.4≠6.5")
    _scenario(r, "fine", ["6.2"], tags=("fault-injection",)).finish("passed")
    sc = r.summary()["selfChecks"]
    assert sc["passed"] == 1 and sc["failed"] == []
    assert [e["scenario"] for e in sc["inconclusive"]] == ["fault"]
    assert "fails at 6.4" in sc["inconclusive"][0]["reason"]


def test_not_reached_is_neither_failed_nor_passed() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "6.4", ["6.4"]).finish("failed", message="x")
    _scenario(r, "6.5", ["6.5"]).finish("notReached", message="not reached: 6.4 failed")
    _scenario(r, "1.1 static", ["1.1"]).finish("passed")
    _scenario(r, "1.1 runtime", ["1.1"]).finish("notReached", message="not reached")
    s = r.summary()
    assert s["checks"]["6.5"] == "notReached" and s["checks"]["1.1"] == "notReached"
    assert s["notReached"] == ["1.1", "6.5"]  # in the doc's order
    assert s["earliestFailure"]["check"] == "6.4"


def test_a_training_check_the_profile_turns_off_is_skipped_not_unreached() -> None:
    """training: false: the T.x scenarios skip; Step 6 never decided those checks, which its
    evidence says as not reached, and the run still passes on the page's checks."""
    r = RunReport("p.yaml")
    page = [c.id for c in CHECKS]
    _scenario(r, "page", page).finish("passed")
    for check in ("T.1", "T.2", "T.3"):
        _scenario(r, check, [check]).finish(
            "skipped",
            message=f"[{check}] off: the profile's training.checks leave it out",
            details=[CheckResult(check, "notReached", "not reached")],
        )
    s = r.summary()
    assert {s["checks"][c] for c in ("T.1", "T.2", "T.3")} == {"skipped"}, s["checks"]
    assert s["verdict"] == "passed" and s["notReached"] == [] and not r.exit_failed()


def test_a_passed_scenario_is_a_pass_of_every_check_it_names() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "s", ["3.1"]).finish(
        "passed", details=[CheckResult("3.1", "failed", "stale evidence")]
    )
    assert r.check_results()["3.1"].status == "passed"


def test_a_failure_no_check_explains_fails_every_check_of_the_scenario() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "s", ["2.1", "2.2"]).finish(
        "failed",
        message="error in setup: boom",
        details=[CheckResult("2.1", "passed"), CheckResult("2.2", "passed")],
    )
    checks = r.check_results()
    assert checks["2.1"].status == checks["2.2"].status == "failed"
    assert checks["2.1"].message == "error in setup: boom"


def test_interrupted_and_usage_errors() -> None:
    r = RunReport("p.yaml", interrupted=True)
    _scenario(r, "ran", ["0.1"]).finish("passed")
    _scenario(r, "never ran", ["0.2"])
    s = r.summary()
    assert s["verdict"] == "interrupted" and s["checks"]["0.2"] == "notReached"
    assert r.exit_failed()

    u = RunReport("p.yaml", error="usage error: --profile x: no such file")
    s = u.summary()
    assert s["verdict"] == "failed" and set(s["checks"].values()) == {"notReached"}
    assert s["error"].startswith("usage error")


def test_a_run_that_verified_nothing_of_the_profile_is_no_pass() -> None:
    r = RunReport("p.yaml")
    _scenario(r, "neg", ["0.1"], tags=("negative",)).finish("passed")
    s = r.summary()
    assert s["verdict"] == "failed" and set(s["checks"].values()) == {"skipped"}
    assert not r.exit_failed()  # nothing failed either: a selection of self-checks only


def test_the_summary_file_is_redacted_and_complete(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    r = RunReport("p.yaml")
    _scenario(r, "s", ["5.8"]).finish("failed", message=f"found {token} in the run script")
    path = writers.write_summary(r, tmp_path, Redactor())
    text = path.read_text(encoding="utf-8")
    assert token not in text
    data = json.loads(text)
    assert data["earliestFailure"]["check"] == "5.8"
    assert set(data) >= {
        "profile",
        "verdict",
        "checks",
        "earliestFailure",
        "notReached",
        "selfChecks",
        "durations",
        "interrupted",
    }


def test_allure_labels_sort_as_the_page_and_carry_the_check() -> None:
    from rlark_acceptance.run.allure_results import labels
    from rlark_acceptance.run.report import CheckOutcome

    d = dict(labels(CheckOutcome("6.4", "failed")))
    assert d["epic"] == writers.PAGE
    assert d["feature"] == "08 Step 6 确认任务开始运行"
    assert d["story"].startswith("6.4 ") and d["severity"] == "critical"
    assert d["failedCheck"] == "6.4" and d["acceptance"] == "profile"
    sections = [writers.section_label(c.id) for c in CHECKS]
    assert sections == sorted(sections), "a tree sorted by name reads as the page"
    assert dict(labels(CheckOutcome("5.8", "passed")))["severity"] == "critical"
    assert dict(labels(CheckOutcome("2.1", "broken")))["acceptance"] == "self-check"


def test_every_check_has_one_outcome_and_the_counts_add_up_to_the_checks() -> None:
    """One unit for every surface: a check whose own scenario passed while its self-check
    failed is broken; once the profile itself fails, a failed self-check is inconclusive and
    breaks nothing; what no scenario names is not selected; the counts are those outcomes,
    and an interrupt is one entry more."""
    r = RunReport("p.yaml")
    _scenario(r, "p-3.4", ["3.4"]).finish("passed")
    _scenario(r, "s-3.4", ["3.4"], tags=("negative",)).finish("failed", message="not caught")
    shown = r.outcomes()
    assert [c.id for c in ALL_CHECKS] == list(shown)
    assert shown["3.4"].status == "broken" and "not caught" in (shown["3.4"].message or "")
    assert [s.nodeid for s in shown["3.4"].scenarios] == ["p-3.4", "s-3.4"]
    assert r.counts()["broken"] == 1 and r.counts()["passed"] == 0

    _scenario(r, "p-3.7", ["3.7"]).finish(
        "failed",
        step="Then",
        message="check 3.7 is failed",
        details=[CheckResult("3.7", "failed", "bad value", Location("job.yaml", 12))],
    )
    _scenario(r, "p-6.1", ["6.1"]).finish("notReached", message="not reached: 3.7 failed")
    _scenario(r, "s-6.1", ["6.1"], tags=("fault-injection",)).finish("failed", message="x")
    shown = r.outcomes()
    assert shown["3.4"].status == "passed"  # its self-check is inconclusive now
    assert shown["3.7"].status == "failed" and shown["3.7"].location == "job.yaml:12"
    assert shown["3.7"].message == "bad value" and shown["3.7"].remedy
    assert shown["6.1"].status == "notReached"
    assert shown["0.1"].status == "notSelected"
    assert r.summary()["counts"] == {
        "passed": 1,
        "failed": 1,
        "broken": 0,
        "notReached": 1,
        "notSelected": len(ALL_CHECKS) - 3,
        "error": 0,
        "total": len(ALL_CHECKS),
    }
    r.interrupted = True
    assert r.counts()["error"] == 1 and r.counts()["total"] == len(ALL_CHECKS) + 1


def test_a_failed_self_check_of_a_check_not_selected_still_shows() -> None:
    """``-k`` a self-check alone: the profile's check is not selected, and the self-check's
    failure is what its check shows, never a count hidden among those not selected."""
    r = RunReport("p.yaml")
    _scenario(r, "s-6.4", ["6.4"], tags=("negative",)).finish("failed", message="not caught")
    assert r.outcomes()["6.4"].status == "broken"
    assert r.counts()["broken"] == 1 and r.exit_failed()
