"""The self-checks' submissions side by side (fixtures/side_by_side.py), run as a user runs
the suite: each scenario still gets the verdict of the Job its own Givens describe, green or
red, in the terminal and in JUnit; an interrupt leaves no Worker behind."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import junitparser
import pytest

from fixtures.side_by_side import SUBMIT_STEP, replay, state_of
from tests.processes import pids_with_environ
from tests.run.suite_runs import (
    ROOT,
    Site,
    SuiteRun,
    _env,
    features_command,
    output_until,
    run_suite,
    site_copy,
)

pytestmark = pytest.mark.slow

FEATURES = Path(__file__).resolve().parents[2] / "features"
PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "local.yaml"

# Three self-checks that submit: one reads the first signal's absence (a Ray head and the
# smoke workload), two end before Ray starts.
THREE = "first_signal_never_appears or prepare_script_fails or dies_before_ray"
SIGNAL = "firstSignal: 'Global Step:.*\\b[1-9]\\d*/\\d+'"


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def _marked(site: Site, tmp: Path) -> str:
    """A variable every Worker of this site's runs carries, to find its processes by."""
    mark = f"RLARK_SIDE_BY_SIDE_TEST={tmp.name}"
    site.edit(
        site.profile,
        "prepareCommand: export PYTHONUNBUFFERED=1",
        f"prepareCommand: export PYTHONUNBUFFERED=1 {mark}",
    )
    site.edit(site.job, "export PYTHONUNBUFFERED=1", f"export PYTHONUNBUFFERED=1 {mark}")
    return mark


def _cases(run: SuiteRun) -> dict[str, Any]:
    return {c.name: c for _, c in run.junit_cases()}


def test_every_submitting_self_check_is_replayed_the_same_wherever_it_is_built(
    tmp_path: Path,
) -> None:
    """Each scenario that submits with SUBMIT_STEP can be made ahead: a replay of its Givens
    changes the profile's copy, and builds the same Job in two places."""
    from pytest_bdd.parser import FeatureParser

    import steps.job_steps
    import steps.profile_steps  # noqa: F401

    made: list[str] = []
    own: list[str] = []
    for path in sorted(FEATURES.glob("*.feature")):
        feature = FeatureParser(str(FEATURES), path.name).parse()
        for template in feature.scenarios.values():
            scenario = template.render({})
            if not any(s.type == "when" and s.name == SUBMIT_STEP for s in scenario.steps):
                continue
            here = replay(scenario, PROFILE, tmp_path / f"{len(made) + len(own)}a")
            there = replay(scenario, PROFILE, tmp_path / f"{len(made) + len(own)}b")
            assert here is not None and there is not None, scenario.name
            assert here.changed, f"{scenario.name}: its Givens changed nothing"
            (made if state_of(here) == state_of(there) else own).append(scenario.name)
    assert own == [], own
    assert len(made) == 13, made


def test_side_by_side_each_scenario_has_its_own_jobs_verdict_green_or_red(tmp_path: Path) -> None:
    """Three self-checks at once on a site whose first signal is a line the Worker prints
    before any step: the one that expects 6.4 red goes red in its own scenario (the terminal
    and JUnit say what it got), the two that fail before Ray stay green."""
    site = site_copy(tmp_path)
    site.edit(site.profile, SIGNAL, "firstSignal: 'Attached to Ray head'")
    run = run_suite(site, "-k", THREE, "--self-checks-at-once", "3")

    assert run.returncode == 1, run.explain()
    assert "self-checks: 3 submissions side by side, 3 at once" in run.output, run.explain()
    assert "self-checks side by side: 3 of 3 submissions made ahead" in run.output
    # JUnit counts checks: the red self-check is an error of 6.4's testcase (the harness
    # could not show it catches that mistake), the green ones say so in their checks' output.
    cases = _cases(run)
    (error,) = [r for c in cases.values() for r in c.result if isinstance(r, junitparser.Error)]
    assert "the first signal never appears" in (error.message or ""), error.message
    assert "the earliest failure is" in (error.message or "") + (error.text or "")
    said = [x for c in cases.values() for x in (c.system_out or "").splitlines()]
    others = [x for x in said if "prepare script fails" in x or "dies before" in x]
    assert len(others) == 2 and all(x.startswith("PASSED [") for x in others), others
    s = run.summary
    assert s["verdict"] == "failed" and s["earliestFailure"] is None, s
    (red,) = s["selfChecks"]["failed"]
    assert red["check"] == "6.4" and "never appears" in red["scenario"], red
    assert s["selfChecks"]["passed"] == 2, s["selfChecks"]


def test_the_self_checks_start_as_soon_as_the_profiles_own_run_is_made(tmp_path: Path) -> None:
    """The profile's own run is made alone; the self-checks' submissions start right after
    it, beside the scenarios still to come that only read its record, not after the last."""
    site = site_copy(tmp_path)
    own_first, own_later = "test_任务列表中出现本次_job", "test_the_runs_metrics_are_real"
    run = run_suite(
        site,
        "-v",
        "-k",
        f"{own_first} or {own_later} or prepare_script_fails or dies_before_ray",
        "--self-checks-at-once",
        "3",
    )

    assert run.returncode == 0, run.explain()
    out = run.output
    started = out.find("self-checks: 2 submissions side by side")
    assert started != -1, run.explain()
    assert out.index(f"::{own_first}") < started < out.index(f"::{own_later}"), out
    assert "self-checks side by side: 2 of 2 submissions made ahead" in out, run.explain()
    assert run.summary["verdict"] == "passed", run.summary


def interrupted_in_step6(tmp_path: Path, *again_after: float) -> tuple[str, dict[str, Any]]:
    """The three self-checks' suite, side by side, sent SIGINT (Ctrl-C) once the profile's
    own run waits for 6.4, and again after each of ``again_after`` seconds: it ended
    interrupted, exit 2, no process of any of its Workers left (and one was running at the
    first signal). Its output and run-summary.json."""
    site = site_copy(tmp_path)
    mark = _marked(site, tmp_path)
    reports = tmp_path / "reports"
    command = features_command(
        site.profile, reports, ["-v", "-k", THREE, "--self-checks-at-once", "3"]
    )
    env = _env() | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    seen = output_until(proc, "Step 6 waits for 6.4", time.monotonic() + 300)
    running = pids_with_environ(mark)
    proc.send_signal(signal.SIGINT)
    for seconds in again_after:
        time.sleep(seconds)
        proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    output = (seen + rest).decode(errors="replace")
    assert running, f"no Worker of the site's runs was running at the interrupt:\n{output[-3000:]}"
    assert proc.returncode == 2, f"exit {proc.returncode}\n{output[-3000:]}"
    left = pids_with_environ(mark)
    assert left == [], f"Workers were left: {left}"
    summary = json.loads((reports / "run-summary.json").read_text(encoding="utf-8"))
    assert summary["verdict"] == "interrupted" and summary["interrupted"] is True, summary
    return output, summary


@pytest.mark.parametrize("gap", [0.2, 1.5])
def test_ctrl_c_twice_still_removes_every_worker_and_writes_the_record(
    tmp_path: Path, gap: float
) -> None:
    """Ctrl-C, and Ctrl-C again ``gap`` seconds later (a user pressing it twice: 0.2 s lands
    while the Workers are removed, 1.5 s while the record is written): the second cuts
    neither short, and ends nothing on a traceback."""
    output, _ = interrupted_in_step6(tmp_path, gap)
    assert "Traceback" not in output, output[-3000:]


def test_an_interrupt_while_self_checks_run_side_by_side_leaves_no_worker(tmp_path: Path) -> None:
    """Ctrl-C once the runs are made ahead: the suite ends interrupted and no process of
    any of its Workers is left."""
    output, summary = interrupted_in_step6(tmp_path)
    assert "side by side" in output
    assert "never appears" in (summary["interruptedAt"] or {}).get("scenario", ""), summary
