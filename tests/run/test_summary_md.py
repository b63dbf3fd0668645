"""summary.md as CI shows it: the verdict, the earliest failure and its remedy, the stages
against budget and history, the changes since the previous run, the chart; the same text in
``$GITHUB_STEP_SUMMARY``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rlark_acceptance.model.budgets import Budgets
from rlark_acceptance.run import summary_md
from rlark_acceptance.run.budgets import evaluate
from rlark_acceptance.run.history import History
from rlark_acceptance.storage import FileStore

SUMMARY: dict[str, Any] = {
    "profile": "profiles/local.yaml",
    "runId": "261201-abcdef",
    "verdict": "failed",
    "earliestFailure": {
        "check": "B.1",
        "message": "rayHead 41.2 s: 6.8× the median of the last 5 runs (6.1 s), budget 20 s",
        "hint": "Release over release: compare …",
    },
    "durations": {"submit": 0.4, "rayHead": 41.2},
    "warnings": ["rayHead 41.2 s: … (over budget and regressed)"],
    "provenance": {"profileName": "smoke", "node": "n2"},
}


def test_the_summary_holds_the_verdict_failure_stages_and_changes() -> None:
    budgets = evaluate(
        SUMMARY["durations"], Budgets({"rayHead": 20}), [{"rayHead": 6.1}] * 5, history="h"
    )
    text = summary_md.render(SUMMARY, budgets, ["node changed (n1 → n2)"], "stage-trend.svg")
    assert text.startswith("# RLark acceptance of `smoke`: NOT ACCEPTED\n")
    assert "**Earliest failure**: [B.1] rayHead 41.2 s: 6.8× the median" in text
    assert "**Remedy**: Release over release" in text
    assert "| rayHead | 41.2 | 20 | 6.1 (5) | 6.8× | over budget, regressed |" in text
    assert "| submit | 0.4 | – | – | – | holds |" in text
    assert "- node changed (n1 → n2)" in text
    assert "- rayHead 41.2 s: … (over budget and regressed)" in text
    assert "![each stage over the last runs](stage-trend.svg)" in text


def test_a_figure_on_a_rounding_edge_reads_the_same_in_the_table_json_and_warning() -> None:
    # 37.4496 s is 37.45 in run-summary.json: a reader of the JSON rounds it to 37.5, and
    # so must the table and the warning (the table once said 37.4).
    budgets = evaluate({"rayHead": 37.4496}, Budgets(), [{"rayHead": 12.6496}] * 3, history="h")
    kept = budgets.as_dict()["stages"]["rayHead"]
    assert (f"{kept['seconds']:.1f}", f"{kept['median']:.1f}") == ("37.5", "12.7")
    text = summary_md.render(SUMMARY, budgets, None, None)
    assert "| rayHead | 37.5 | – | 12.7 (3) | 3.0× | regressed |" in text, text
    assert budgets.warnings() == [
        "rayHead 37.5 s: 3.0× the median of the last 3 runs (12.7 s) (regressed)"
    ]


def test_a_first_run_and_an_unchanged_run_say_so() -> None:
    first = evaluate({"rayHead": 5.0}, Budgets(), [], history="h")
    accepted = dict(SUMMARY, verdict="passed", earliestFailure=None, warnings=[])
    text = summary_md.render(accepted, first, None, None)
    assert ": ACCEPTED\n" in text and "Earliest failure" not in text
    assert "first run of the profile in the history" in text
    assert "No previous run of this profile in the history." in text
    assert "![" not in text
    assert "Nothing changed" in summary_md.render(accepted, first, [], None)


def test_written_and_appended_to_the_step_summary(tmp_path: Path) -> None:
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    path = summary_md.write(tmp_path / "reports", "# one\n", {"GITHUB_STEP_SUMMARY": str(step)})
    summary_md.write(tmp_path / "reports", "# two\n", {"GITHUB_STEP_SUMMARY": str(step)})
    assert path.read_text(encoding="utf-8") == "# two\n"
    assert step.read_text(encoding="utf-8") == "earlier step\n# one\n# two\n"
    summary_md.write(tmp_path / "other", "# three\n", {})
    assert "three" not in step.read_text(encoding="utf-8")


def test_the_chart_draws_each_stage_over_the_runs(tmp_path: Path) -> None:
    history = History(FileStore(tmp_path / "h"))
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    for i in range(3):
        summary = {"runId": f"run-00{i}", "durations": {"rayHead": 6.0 + i, "output": 11.0}}
        history.append(summary, "smoke", t0 + timedelta(minutes=i))
    earlier = history.read("smoke").entries
    path = summary_md.trend_chart(tmp_path / "chart.svg", earlier, SUMMARY)
    assert path is not None
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    text = path.read_text(encoding="utf-8")
    # matplotlib keeps the legend's and the ticks' words as text comments of its paths.
    for word in ("rayHead", "output", "submit", "un-002", "abcdef"):  # ids: their last 6
        assert word in text, word
