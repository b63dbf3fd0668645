"""The record completed and written once, outside pytest (``run/recorder.py``): on reports
built by hand, in milliseconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import junitparser
import pytest

from rlark_acceptance.model.budgets import Budgets
from rlark_acceptance.model.doc_checks import ALL_CHECKS
from rlark_acceptance.run import recorder
from rlark_acceptance.run.budgets import evaluate
from rlark_acceptance.run.history import open_history
from rlark_acceptance.run.report import RunReport, ScenarioRecord
from rlark_acceptance.secrets import Redactor

STARTED = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def _red() -> RunReport:
    r = RunReport("p.yaml")
    r.add(ScenarioRecord("p-6.1", "listed", "Step 6", ["6.1"], "profile")).finish("passed")
    r.add(ScenarioRecord("p-6.3", "ray head", "Step 6", ["6.3"], "profile")).finish(
        "failed", step="Then the Ray head starts", message="the Ray head never started"
    )
    return r


def test_every_file_of_the_record_says_the_same_counts(tmp_path: Path) -> None:
    report = _red()
    recorder.write(report, tmp_path, Redactor(), compared=None, started=STARTED)
    summary = json.loads((tmp_path / "run-summary.json").read_text(encoding="utf-8"))
    counts = summary["counts"]
    assert counts["failed"] == 1 and counts["total"] == len(ALL_CHECKS), counts
    (suite,) = junitparser.JUnitXml.fromfile(str(tmp_path / recorder.JUNIT_FILE))
    assert (suite.tests, suite.failures) == (counts["total"], counts["failed"])
    assert "**Earliest failure**: [6.3]" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_a_writer_that_breaks_leaves_the_others_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """summary.md cannot be written (a folder holds its name): run-summary.json and junit.xml
    are written all the same, and what broke is said."""
    (tmp_path / "summary.md").mkdir()
    recorder.write(_red(), tmp_path, Redactor(), compared=None, started=STARTED)
    assert (tmp_path / "run-summary.json").is_file() and (tmp_path / "junit.xml").is_file()
    assert "rlark-acceptance: writing summary.md failed" in capsys.readouterr().err


def test_the_run_goes_into_the_history_it_was_compared_with(tmp_path: Path) -> None:
    history = open_history(str(tmp_path / "history"), tmp_path)
    budgets = evaluate({"submit": 1.0}, Budgets(), [], last=5, ratio=2.0, strict=False)
    compared = recorder.Compared(budgets, history, (), "p")
    key = recorder.write(
        _red(), tmp_path / "reports", Redactor(), compared=compared, started=STARTED
    )
    assert key is not None and key.startswith(history.describe())
    (kept,) = history.read("p").entries
    assert (
        kept.summary["earliestFailure"]["check"] == "6.3" and kept.summary["counts"]["failed"] == 1
    )


@pytest.mark.parametrize(
    ("ending", "interrupted", "error"),
    [
        ("finished", False, None),
        ("interrupted", True, None),
        ("usage error", False, "usage error: --profile x: no such file"),
        ("internal error", False, "internal error (see the console)"),
    ],
)
def test_how_the_session_ended_is_the_record_s(
    ending: recorder.Ending, interrupted: bool, error: str | None
) -> None:
    r = _red()
    recorder.ended(r, ending, running="p-6.3", said="usage error: --profile x: no such file")
    assert (r.interrupted, r.error) == (interrupted, error)
    assert r.counts()["error"] == (0 if ending == "finished" else 1)
    assert r.interrupted_at == ("p-6.3" if interrupted else None)


def test_what_a_clean_up_left_is_a_warning_once() -> None:
    r = _red()
    r.warnings.append("clean-up: Job rlinf-x could not be deleted: timeout")
    recorder.complete(r, None, ["Job rlinf-x could not be deleted", "Pod y is still there"])
    assert r.warnings == [
        "clean-up: Job rlinf-x could not be deleted: timeout",
        "Pod y is still there",
    ]
