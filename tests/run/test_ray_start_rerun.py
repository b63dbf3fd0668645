"""A suite run that a test repeats: only one whose earliest failure is 6.3 for Ray's own
start timeout, never a run red for anything else, and never silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.run.suite_runs import (
    RAY_START_TIMED_OUT,
    SuiteRun,
    again_if_ray_start_timed_out,
    ray_start_timed_out,
)

# The earliest failure as the record wrote it in a CI run where the Worker's head gave up.
RAY_GAVE_UP = {
    "check": "6.3",
    "scenario": "日志显示 Ray Head 已启动,并开始执行运行脚本",
    "step": "Then the logs show the Ray head started and then the run script began",
    "message": f"the Worker ended before its Ray head started: 'Exception: {RAY_START_TIMED_OUT}."
    " This could happen because some of the raylet failed to startup or the GCS has become"
    " overloaded.'",
}


def _run(
    tmp: Path, code: int, first: dict[str, Any] | None, self_failed: list[Any] | None = None
) -> SuiteRun:
    reports = tmp / "reports"
    reports.mkdir(exist_ok=True)
    (reports / "run-summary.json").write_text("{}", encoding="utf-8")
    summary = {"earliestFailure": first, "selfChecks": {"passed": 3, "failed": self_failed or []}}
    return SuiteRun(code, "", reports, 1.0, summary)


# A self-check that expects 6.4 red, whose own run was red at 6.3 on Ray's start instead.
SELF_CHECK_ON_RAY = {
    "check": "6.4",
    "scenario": "the first signal never appears",
    "message": "the earliest failure is 6.3, not 6.4: 6.3 failed: the Worker ended before its"
    f" Ray head started: 'Exception: {RAY_START_TIMED_OUT}.'",
}


@pytest.mark.parametrize(
    ("code", "first", "again"),
    [
        (1, RAY_GAVE_UP, True),
        (0, None, False),
        (1, RAY_GAVE_UP | {"check": "T.4"}, True),
        (1, RAY_GAVE_UP | {"message": "the Worker ended: exit 1 (ray start: bad flag)"}, False),
        (1, None, False),
    ],
    ids=["ray-gave-up", "green", "resumed-ray-gave-up", "other-cause", "no-failure"],
)
def test_only_a_run_red_for_rays_start_timeout_is_run_again(
    tmp_path: Path, code: int, first: dict[str, Any] | None, again: bool
) -> None:
    assert ray_start_timed_out(_run(tmp_path, code, first)) is again


def test_a_self_check_whose_own_run_met_the_ray_start_timeout_is_run_again(
    tmp_path: Path,
) -> None:
    assert ray_start_timed_out(_run(tmp_path, 1, None, [SELF_CHECK_ON_RAY]))
    other = SELF_CHECK_ON_RAY | {"message": "the earliest failure is 6.5, not 6.4"}
    assert not ray_start_timed_out(_run(tmp_path, 1, None, [other]))


def test_the_second_run_is_the_answer_and_the_first_is_kept_and_said(tmp_path: Path) -> None:
    runs = [_run(tmp_path, 1, RAY_GAVE_UP)]
    calls = []

    def once() -> SuiteRun:
        calls.append(1)
        if len(calls) == 1:
            return runs[0]
        return _run(tmp_path, 1, {"check": "6.4", "message": "the first signal never appeared"})

    with pytest.warns(UserWarning, match="timed out during startup") as said:
        run = again_if_ray_start_timed_out(once)
    assert len(calls) == 2 and run.summary["earliestFailure"]["check"] == "6.4"
    kept = tmp_path / "reports-ray-start-timeout-1"
    assert str(kept) in str(said[0].message)
    assert (kept / "run-summary.json").is_file()


def test_a_run_red_for_its_own_fault_is_not_run_again(tmp_path: Path) -> None:
    calls = []

    def once() -> SuiteRun:
        calls.append(1)
        return _run(tmp_path, 1, {"check": "4.2", "message": "the run script names no config"})

    run = again_if_ray_start_timed_out(once)
    assert len(calls) == 1 and run.summary["earliestFailure"]["check"] == "4.2"
    assert not (tmp_path / "reports-ray-start-timeout-1").exists()
