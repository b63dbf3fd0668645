"""History by default, as a user meets it: ``pytest features/`` twice on the embedded
default with no option, and the second run compares with the first (B.1's medians,
summary.md's previous run); ``--no-history`` keeps nothing and compares nothing. The runs'
default history is the state folder of the test (``suite_runs``), never the user's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.run.suite_runs import STEP6_ONLY, run_suite, site_copy

pytestmark = pytest.mark.slow


def _kept(state: Path) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((state / "history" / "smoke-ppo-mlp-local").glob("*.json"))
    ]


def test_the_second_run_with_no_option_compares_with_the_first(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    state = tmp_path / "state"  # the runs' RLARK_ACCEPTANCE_STATE (suite_runs._env)
    first = run_suite(site, "-m", STEP6_ONLY)
    assert first.returncode == 0, first.explain()
    b = first.summary["budgets"]
    assert b["history"] == f"file://{(state / 'history').resolve()}" and b["firstRun"], b
    md = (first.reports / "summary.md").read_text(encoding="utf-8")
    assert "No previous run of this profile in the history." in md

    second = run_suite(site, "-m", STEP6_ONLY)
    assert second.returncode == 0, second.explain()
    b = second.summary["budgets"]
    assert b["earlierRuns"] == 1 and not b["firstRun"], b
    assert b["note"] == "compared with the median of the last 1 of 1 runs"
    ray_head = b["stages"]["rayHead"]
    assert ray_head["runs"] == 1
    assert ray_head["median"] == pytest.approx(first.summary["durations"]["rayHead"], abs=0.001)
    md = (second.reports / "summary.md").read_text(encoding="utf-8")
    assert "No previous run" not in md and "## Since the previous run" in md
    assert [k["runId"] for k in _kept(state)] == [first.summary["runId"], second.summary["runId"]]

    off = run_suite(site, "-m", STEP6_ONLY, "--no-history")
    assert off.returncode == 0, off.explain()
    b = off.summary["budgets"]
    assert b["history"] is None and b["earlierRuns"] == 0 and not b["firstRun"], b
    assert "no history kept" in b["note"]
    assert len(_kept(state)) == 2  # nothing added
