"""The record of red runs, read back from a real ``pytest features/`` on a broken profile.

One run per Step 6 phase (profile mistakes the pre-flight cannot see, so the Job is
submitted), one per pre-flight section, a green one, an interrupted one, a crash in a
fixture and a usage error. Each checks what a release engineer reads: the earliest failing
check and its remedy in ``run-summary.json``, the checks not reached, the JUnit testcase and
the Allure result of the failing scenario with its evidence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.doc_checks import CHECKS, remedy
from tests.run.suite_runs import (
    AS_IT_IS,
    STEP6_ONLY,
    Site,
    SuiteRun,
    run_suite,
    run_suite_interrupted,
    site_copy,
)

pytestmark = pytest.mark.slow

RUNTIME = ["6.1", "6.2", "6.3", "6.4", "6.5"]


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    """The S3 server runs for the whole module, so each suite run reuses it."""
    yield


def assert_red_at(run: SuiteRun, check: str) -> dict[str, Any]:
    s = run.summary
    assert run.returncode == 1, run.explain()
    assert s["verdict"] == "failed", s
    first = s["earliestFailure"]
    assert first is not None and first["check"] == check, (first, run.explain())
    assert first["hint"] == remedy(check)
    assert first["message"], first
    assert check in run.output and remedy(check) in run.output, "the terminal names neither"
    return dict(first)


def assert_allure_failure(run: SuiteRun, scenario: str, check: str) -> dict[str, Any]:
    result = run.allure_result(scenario)
    assert result["status"] == "failed", result["status"]
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert ("epic", "在单个 GPU 节点上运行 RLinf") in labels
    section = next(c.section for c in CHECKS if c.id == check)
    assert any(n == "feature" and v.endswith(section) and v[:2].isdigit() for n, v in labels)
    assert any(n == "story" and v.startswith(f"{check} ") for n, v in labels)
    assert ("acceptance", "profile") in labels
    assert remedy(check) in result["description"], result["description"]
    return result


def junit_case(run: SuiteRun, check: str, *, failed: bool) -> Any:
    """The JUnit testcase of the profile-as-is scenario that names ``check``."""
    for case in run.junit.iter("testcase"):
        props = {(p.get("name"), p.get("value")) for p in case.iter("property")}
        mine = {("check", check), ("acceptance", "profile")} <= props
        if mine and (case.find("failure") is not None) == failed:
            section = next(c.section for c in CHECKS if c.id == check)
            assert case.get("classname", "").endswith(section), case.get("classname")
            return case
    raise AssertionError(f"no {'failed ' if failed else ''}testcase with the property {check}")


def junit_failure(run: SuiteRun, check: str) -> str:
    failure = junit_case(run, check, failed=True).find("failure")
    assert failure is not None
    return str(failure.get("message", "")) + (failure.text or "")


# -- the pre-flight: one broken section each, Step 6 never starts -------------------------

PREFLIGHT_MISTAKES = [
    # (doc section, file, text, replacement, check, the profile-as-is scenario that fails)
    (
        "§0",
        "job",
        "runner.logger.log_path=/mnt/ckpt/logs\n",
        "runner.logger.log_path=/mnt/ckpt/logs cluster.num_nodes=2\n",
        "0.1",
        "最终生效的 cluster.num_nodes 为 1",
    ),
    (
        "Prepare",
        "profile",
        "  image: rlark-acceptance/smoke:0.1.0",
        "  image: rlark-acceptance/smoke:latest",
        "P.1",
        "the default profile's run information is complete",
    ),
    (
        "Step 1",
        "both",
        "runner.logger.log_path=/mnt/ckpt/logs\n",
        "runner.logger.log_path=/mnt/ckpt/logs actor.model.hidden_dim=64\n",
        "1.2",
        "本次实际加载的 RLinf 配置 is the validated one",
    ),
    (
        "Step 2",
        "job",
        "name: rlinf-smoke-ppo-mlp",
        "name: RLinf_Smoke",
        "2.1",
        "the default Job has one Header role named worker",
    ),
    (
        "Step 3",
        "job",
        "containerPath: /mnt/ckpt}",
        "containerPath: /mnt/ckpt, readOnly: true}",
        "3.7",
        "the default Worker is configured as the page says",
    ),
    (
        "Step 4",
        "job",
        "crossClusterNetwork: none",
        "crossClusterNetwork: dc-east",
        "4.2",
        "the default run command is the validated one",
    ),
    (
        "Step 5",
        "job",
        "    image: rlark-acceptance/smoke:0.1.0",
        "    image: rlark-acceptance/smoke:0.1.1",
        "5.6",
        "the default YAML preview matches the table",
    ),
]


@pytest.mark.parametrize(
    ("section", "where", "old", "new", "check", "scenario"),
    PREFLIGHT_MISTAKES,
    ids=[m[0] for m in PREFLIGHT_MISTAKES],
)
def test_a_preflight_mistake_is_the_earliest_failure_and_step6_is_not_reached(
    tmp_path: Path, section: str, where: str, old: str, new: str, check: str, scenario: str
) -> None:
    site = site_copy(tmp_path)
    if where in ("profile", "both"):
        line, path = site.edit(site.profile, old, new), site.profile
    if where in ("job", "both"):
        line, path = site.edit(site.job, old, new), site.job
    run = run_suite(site, "-m", AS_IT_IS)

    first = assert_red_at(run, check)
    assert first["scenario"] == scenario
    assert first["location"] == f"{path}:{line}", "not the line in the user's own file"
    assert run.summary["checks"][check] == "failed"
    for c in RUNTIME:
        assert run.summary["checks"][c] == "notReached", (c, run.summary["checks"])
    assert set(RUNTIME) <= set(run.summary["notReached"])
    assert run.summary["selfChecks"] == {"passed": 0, "failed": []}

    result = assert_allure_failure(run, scenario, check)
    assert new.strip() in run.attachment(result, "Job YAML") or where == "profile"
    assert f'"check": "{check}"' in run.attachment(result, "pre-flight findings")
    step6 = run.allure_result("任务列表中出现本次 Job")
    assert step6["status"] == "skipped" and "not reached" in step6["statusDetails"]["message"]
    assert remedy(check) in junit_failure(run, check)


# -- Step 6: a profile mistake the pre-flight cannot see, one per phase ------------------


def _unschedulable(site: Site) -> None:
    # The models volume as a claim that does not exist on the target.
    site.edit(
        site.job,
        "{name: models, type: hostPath, hostPath: models,",
        "{name: models, type: pvc, claimName: models,",
    )


def _prepare_fails(site: Site) -> None:
    # An activation that exists in the team's image but not in this one.
    old, new = "export PYTHONUNBUFFERED=1", "source /opt/venv/bin/activate"
    site.edit(site.job, f"      {old}", f"      {new}")
    site.edit(site.profile, f"prepareCommand: {old}", f"prepareCommand: {new}")


def _output_elsewhere(site: Site) -> None:
    # The output location the team wrote down is not where RLinf saves.
    site.edit(site.profile, "smoke_ppo_mlp/checkpoints", "smoke_ppo_mlp/ckpts")


STEP6_MISTAKES = [
    ("6.2", _unschedulable, "persistentvolumeclaim", ["6.3", "6.4", "6.5"]),
    ("6.3", _prepare_fails, "exit code", ["6.4", "6.5"]),
    ("6.5", _output_elsewhere, "ckpts", []),
]
STEP6_SCENARIOS = {
    "6.2": "Job 详情中出现一个 Worker 对应的实际 Pod,并位于预期 Node",
    "6.3": "日志显示 Ray Head 已启动,并开始执行运行脚本",
    "6.4": "RLinf 日志出现预先确定的训练进展",
    "6.5": "checkpoint 写入预期的持久化位置,并且可以重新读取",
}


@pytest.mark.parametrize(
    ("check", "mistake", "text", "not_reached"), STEP6_MISTAKES, ids=[m[0] for m in STEP6_MISTAKES]
)
def test_a_step6_phase_fails_with_its_cause_and_later_phases_are_not_reached(
    tmp_path: Path, check: str, mistake: Any, text: str, not_reached: list[str]
) -> None:
    site = site_copy(tmp_path)
    mistake(site)
    run = run_suite(site, "-m", STEP6_ONLY)

    first = assert_red_at(run, check)
    assert first["scenario"] == STEP6_SCENARIOS[check]
    assert text in first["message"], first["message"]
    assert "location" not in first  # a runtime failure, not a finding
    for c in not_reached:
        assert run.summary["checks"][c] == "notReached", run.summary["checks"]
    assert run.summary["checks"]["6.1"] == "passed"
    assert [c for c in RUNTIME if run.summary["checks"][c] == "failed"] == [check]

    result = assert_allure_failure(run, STEP6_SCENARIOS[check], check)
    assert ("severity", "critical") in {(x["name"], x["value"]) for x in result["labels"]}
    assert run.attachment(result, "Worker log (excerpt)")
    assert '"phases"' in run.attachment(result, "Pods and events")
    assert "kind: Job" in run.attachment(result, "Job YAML")
    assert remedy(check) in junit_failure(run, check)


def test_the_whole_suite_on_a_profile_whose_first_signal_never_appears(tmp_path: Path) -> None:
    """Self-checks start from the broken profile too: they never steal the verdict."""
    site = site_copy(tmp_path)
    signal = r"firstSignal: 'Global Step:.*\b[1-9]\d*/\d+'"
    site.edit(site.profile, signal, r"firstSignal: 'Epoch \d+ done'")
    run = run_suite(site)

    first = assert_red_at(run, "6.4")
    assert first["scenario"] == STEP6_SCENARIOS["6.4"]
    assert run.summary["notReached"] == ["6.5"]
    # A red run keeps what it wrote, and the record says where.
    kept = run.summary["outputs"]["kept"]
    assert kept and kept.startswith("s3://"), run.summary["outputs"]
    failed = [c for c, s in run.summary["checks"].items() if s == "failed"]
    assert failed == ["6.4"], run.summary["checks"]
    self_checks = run.summary["selfChecks"]
    assert self_checks["passed"] > 50 and self_checks["failed"] == []
    assert self_checks["inconclusive"], "the self-checks that needed 6.4 say why they failed"
    for entry in self_checks["inconclusive"]:
        assert "fails at 6.4" in entry["reason"]
    categories = run.reports / "allure-results" / "categories.json"
    assert "Step 6" in categories.read_text(encoding="utf-8")


# -- green, interrupted, a crash, a usage error -------------------------------------------


def test_a_green_run_passes_every_check(tmp_path: Path) -> None:
    run = run_suite(site_copy(tmp_path), "-m", AS_IT_IS)
    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None
    assert set(s["checks"].values()) == {"passed"}, s["checks"]
    assert s["notReached"] == [] and s["interrupted"] is False
    assert {"submit", "scheduled", "rayHead", "firstSignal", "output"} <= set(s["durations"])
    assert s["outputs"]["checkpoint"] and s["outputs"]["steps"], s.get("outputs")
    # A green run's outputs are removed from the persistent location (target.keepOutputs).
    assert s["outputs"]["kept"] is None and s["outputs"]["removed"] > 0, s["outputs"]
    assert "verdict: passed" in run.output
    assert junit_case(run, "2.1", failed=False).get("classname", "").startswith("04 Step 2")


def test_ctrl_c_during_step6_leaves_an_interrupted_record(tmp_path: Path) -> None:
    run = run_suite_interrupted(site_copy(tmp_path), "任务列表中出现本次", "-m", STEP6_ONLY)
    s = run.summary
    assert run.returncode == 2, run.explain()
    assert s["verdict"] == "interrupted" and s["interrupted"] is True
    assert s["earliestFailure"] is None
    assert all(s["checks"][c] == "notReached" for c in RUNTIME), s["checks"]
    assert run.junit.tag in ("testsuites", "testsuite"), "no junit.xml after Ctrl-C"
    assert "verdict: interrupted" in run.output


def test_a_crash_in_a_fixture_is_recorded_at_the_first_check_it_stopped(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    site.edit(site.profile, "adapter: local", "adapter: no-such-adapter")
    run = run_suite(site, "-m", STEP6_ONLY)
    first = assert_red_at(run, "6.1")
    assert first["step"] == "(setup)", first
    assert "no-such-adapter" in first["message"], first["message"]
    assert set(run.summary["notReached"]) >= {"6.2", "6.3", "6.4", "6.5"}, run.summary


def test_a_usage_error_replaces_a_stale_green_record(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "run-summary.json").write_text('{"verdict": "passed"}', encoding="utf-8")
    site.profile.unlink()
    run = run_suite(site, "-m", STEP6_ONLY)
    s = run.summary
    assert run.returncode == 4, run.explain()
    assert s["verdict"] == "failed" and "no such file" in s["error"], s
    assert set(s["checks"].values()) == {"notReached"}
