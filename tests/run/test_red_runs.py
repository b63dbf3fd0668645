"""The record of red runs, read back from a real ``pytest features/`` on a broken profile.

One run per Step 6 phase (profile mistakes the pre-flight cannot see, so the Job is
submitted), one per pre-flight section, a green one, an interrupted one, a crash in a
fixture and a usage error. Each checks what a release engineer reads: the earliest failing
check and its remedy in ``run-summary.json``, the checks not reached, the JUnit testcase and
the Allure result of the failing check with its scenarios and their evidence, and that
Allure counts what run-summary.json counts.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import junitparser
import pytest

from rlark_acceptance.model.doc_checks import ALL_CHECKS, BY_ID, remedy
from tests.run.suite_runs import (
    AS_IT_IS,
    STEP6_ONLY,
    Site,
    SuiteRun,
    allure_counts_of,
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
    """The check's one result: failed, under its doc section, its message said once (the
    record's), the remedy beside it, and the failing scenario a failed step of it."""
    result = run.allure_check(check)
    assert result["status"] == "failed", result["status"]
    assert result["name"] == f"[{check}] {BY_ID[check].says}", result["name"]
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert ("epic", "在单个 GPU 节点上运行 RLinf") in labels
    section = next(c.section for c in ALL_CHECKS if c.id == check)
    assert any(n == "feature" and v.endswith(section) and v[:2].isdigit() for n, v in labels)
    assert ("acceptance", "profile") in labels and ("failedCheck", check) in labels
    message = result["statusDetails"]["message"]
    assert message.startswith(f"[{check}] "), message
    first = run.summary["earliestFailure"]
    if first and first["check"] == check:
        assert message == f"[{check}] {first['message']}", (message, first)
    needle = json.dumps(message.removeprefix(f"[{check}] "), ensure_ascii=False)[1:-1]
    assert json.dumps(result, ensure_ascii=False).count(needle) == 1, "said more than once"
    assert remedy(check) in result["description"], result["description"]
    assert run.allure_scenario(check, scenario)["status"] == "failed"
    return result


PROFILE_SUITE = "the profile as it is"


def junit_case(run: SuiteRun, check: str, *, failed: bool) -> Any:
    """The JUnit testcase of the profile-as-is scenario for ``check`` (its failure's type is
    the check, or its name starts with it), read as CI reads junit.xml."""
    for suite, case in run.junit_cases():
        if not suite.endswith(PROFILE_SUITE):
            continue
        failures = [r for r in case.result if isinstance(r, junitparser.Failure)]
        named = case.name.startswith((f"[{check}] ", f"[{check}-"))  # [2.1-2.4] names 2.1
        mine = any(f.type == check for f in failures) or named
        if mine and bool(failures) == failed:
            section = next(c.section for c in ALL_CHECKS if c.id == check)
            assert case.classname.endswith(section), case.classname
            return case
    raise AssertionError(f"no {'failed ' if failed else ''}testcase of the profile for {check}")


def junit_failure(run: SuiteRun, check: str) -> str:
    """The failure's message and text; the only failures in junit.xml are the profile's."""
    failed = [
        (suite, case)
        for suite, case in run.junit_cases()
        if any(isinstance(r, junitparser.Failure) for r in case.result)
    ]
    assert all(suite.endswith(PROFILE_SUITE) for suite, _ in failed), [c.name for _, c in failed]
    failure = next(r for r in junit_case(run, check, failed=True).result)
    assert failure.message.startswith(f"[{check}] failed"), failure.message
    return str(failure.message) + (failure.text or "")


# The terminal's word for each count of the record (``counts``), in its closing line.
TERMINAL_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "broken": "broken",
    "notReached": "not reached",
    "notSelected": "not selected",
}


def assert_one_count(run: SuiteRun) -> dict[str, int]:
    """The terminal's closing line, junit.xml as CI reads it and the Allure results count
    what run-summary.json counts: the checks, each once, and the run's error entry."""
    counts = dict(run.summary["counts"])
    closing = run.output.rstrip().splitlines()[-1]
    said = {w: int(n) for n, w in re.findall(r"(\d+) ([a-z ]+?)(?=,| in )", closing)}
    for key, word in TERMINAL_WORDS.items():
        assert said.pop(word, 0) == counts[key], (key, closing, counts)
    errors = said.pop("interrupted", 0) + said.pop("error", 0)
    assert errors == counts["error"], (closing, counts)
    assert set(said) <= {"warnings", "warning"}, closing
    cases = [c for suite, c in run.junit_cases() if suite.endswith(PROFILE_SUITE)]
    kinds = [type(r).__name__ for c in cases for r in c.result]
    assert len(cases) == counts["total"], (len(cases), counts)
    assert kinds.count("Failure") == counts["failed"], (kinds, counts)
    assert kinds.count("Error") == counts["broken"] + counts["error"], (kinds, counts)
    assert kinds.count("Skipped") == counts["notReached"] + counts["notSelected"], counts
    # Allure: a result per check by status (not reached and not selected are skipped), and
    # one broken result for the run's error.
    assert run.allure_counts() == allure_counts_of(counts), (run.allure_counts(), counts)
    return counts


def assert_rendered_red(run: SuiteRun, check: str) -> Any:
    """What a reader opens: the report rendered the documented way says NOT ACCEPTED at the
    check, and the command's status is the gate's, naming it."""
    rendered = run.render()
    assert rendered.returncode == 1, rendered.output
    assert rendered.title.endswith(f"NOT ACCEPTED at {check}"), rendered.title
    assert f"NOT ACCEPTED at {check}" in rendered.output, rendered.output
    assert rendered.summary.get("status") == "failed", rendered.summary
    # The report's own gate failed, naming the check, its file:line and the record's remedy.
    failed = [g for g in rendered.gate if not g["success"]]
    assert len(failed) == 1 and failed[0]["message"].startswith(f"NOT ACCEPTED at {check}")
    first = run.summary["earliestFailure"]
    if first is not None:
        assert first["hint"] in failed[0]["message"], failed[0]
        assert first.get("location", "") in failed[0]["message"], failed[0]
    return rendered


# -- the training: a run that passes every check of the page and trained garbage -----------


def _run_command_adds(site: Site, override: str) -> None:
    """The same override in the Job's run script and the profile's start command (5.6)."""
    old = "runner.logger.log_path=/mnt/ckpt/logs"
    site.edit(site.job, f"{old}\n", f"{old} {override}\n")
    site.edit(site.profile, f"{old}\n", f"{old} {override}\n")


TRAINING_MISTAKES = [
    # (check, the run command's override, profile lines, in the message, also failed)
    ("T.2", "smoke.nan_from_step=3", {}, "scalars are not finite", "T.3"),
    (
        "T.1",
        "smoke.stall_after_step=2",
        {"  progress: 60": "  progress: 4"},
        "stalled at step 2 of 5",
        None,
    ),
]
TRAINING_SCENARIOS = {
    "T.1": "the run reaches the steps its config asks for",
    "T.2": "the run's metrics are real",
}


@pytest.mark.parametrize(
    ("check", "override", "profile_lines", "text", "also"),
    TRAINING_MISTAKES,
    ids=[m[0] for m in TRAINING_MISTAKES],
)
def test_a_run_that_trained_garbage_is_not_accepted_in_every_form_a_user_reads(
    tmp_path: Path,
    check: str,
    override: str,
    profile_lines: dict[str, str],
    text: str,
    also: str | None,
) -> None:
    """Every check of the page passes; the training check names what went wrong, in the
    record, the terminal, JUnit as CI parses it, Allure and the rendered report."""
    site = site_copy(tmp_path)
    _run_command_adds(site, override)
    for old, new in profile_lines.items():
        site.edit(site.profile, old, new)
    run = run_suite(site, "-m", STEP6_ONLY)

    first = assert_red_at(run, check)
    assert first["scenario"] == TRAINING_SCENARIOS[check]
    assert text in first["message"], first["message"]
    checks = run.summary["checks"]
    assert all(checks[c] == "passed" for c in RUNTIME), checks  # the page saw nothing wrong
    if also is not None:
        assert checks[also] == "failed", checks
    training = run.summary["training"]
    assert training["checks"] == ["T.1", "T.2", "T.3"], training
    result = assert_allure_failure(run, TRAINING_SCENARIOS[check], check)
    assert ("severity", "critical") in {(x["name"], x["value"]) for x in result["labels"]}
    assert remedy(check) in junit_failure(run, check)
    assert_rendered_red(run, check)


# -- T.4: a second submission that does not resume ----------------------------------------

RESUME_SCENARIO = "a second submission resumes from the run's last checkpoint"


def test_a_second_submission_that_does_not_resume_is_not_accepted_in_every_form_a_user_reads(
    tmp_path: Path,
) -> None:
    """The profile turns T.4 on; its run passes every check of the page and T.1-T.3, and
    the second submission, told by runner.resume_dir to resume from global_step_5, starts
    again at step 1: T.4 names it in the record, the terminal, JUnit as CI parses it,
    Allure and the rendered report, with what the second run showed."""
    site = site_copy(tmp_path)
    _run_command_adds(site, "smoke.ignore_resume=true")
    with site.profile.open("a", encoding="utf-8") as f:
        f.write("training:\n  resume: true\n")
    run = run_suite(site, "-m", STEP6_ONLY)

    first = assert_red_at(run, "T.4")
    assert first["scenario"] == RESUME_SCENARIO
    assert first["message"].startswith(
        "the resumed run started at step 1, not 6: runner.resume_dir was not honoured "
        "(│ Global Step:    1/7 │"
    ), first["message"]
    checks = run.summary["checks"]
    assert all(checks[c] == "passed" for c in [*RUNTIME, "T.1", "T.2", "T.3"]), checks
    training = run.summary["training"]
    assert training["checks"] == ["T.1", "T.2", "T.3", "T.4"], training
    resume = training["resume"]
    assert resume["job"].endswith(f"{run.summary['runId']}-resume"), resume
    assert resume["from"]["step"] == 5, resume
    assert resume["from"]["dir"] == "/mnt/ckpt/logs/smoke_ppo_mlp/checkpoints/global_step_5"
    # Decided at its first step, and the second Worker deleted then, long before step 7:
    # `reached` is the highest step the log had shown by then, and the smoke's steps follow
    # each other with no pause, so on a loaded machine one read may bring steps 1 and 2 at
    # once (the verdict is still step 1's).
    assert (resume["target"], resume["started"]) == (7, 1), resume
    assert 1 <= resume["reached"] < 7, resume
    assert resume["said"] is None and resume["weightsAtStart"] is None, resume
    # A red run keeps what it wrote, both submissions' alike, and says where.
    kept = run.summary["outputs"]["kept"]
    assert kept and kept.startswith("s3://"), run.summary["outputs"]
    # The terminal: the failure's line names T.4, with the doc's remedy (assert_red_at).
    assert f"[T.4] {first['message'][:60]}" in run.output, run.output[-3000:]
    result = assert_allure_failure(run, RESUME_SCENARIO, "T.4")
    assert ("severity", "critical") in {(x["name"], x["value"]) for x in result["labels"]}
    assert "Global Step:    1/7" in run.attachment(result, "resumed Worker log (excerpt)")
    text = junit_failure(run, "T.4")
    assert remedy("T.4") in text and "started at step 1, not 6" in text, text
    assert_rendered_red(run, "T.4")


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
    step6 = run.allure_check("6.1")
    assert step6["status"] == "skipped"
    assert step6["statusDetails"]["message"].startswith("not reached"), step6["statusDetails"]
    assert_one_count(run)
    assert remedy(check) in junit_failure(run, check)
    assert_rendered_red(run, check)


# Python reprs of the harness's own values: what a reader of the record must never meet.
REPRS = ("<Verdict.", "PreflightResult(", "AcceptanceRun(", "Workspace(", "Redactor(", "PosixPath(")
PROGRESS = re.compile(r"^(?:features/\S+\.py )?([.FEsxXRi]+) *(?:\[ *\d+%\])?$")


def assert_no_repr(run: SuiteRun) -> None:
    """No file of the record (run-summary.json, summary.md, junit.xml, the Allure results)
    holds a Python repr of the harness's values."""
    for path in sorted(run.reports.rglob("*")):
        if path.is_file() and path.suffix in (".json", ".md", ".xml", ".txt"):
            text = path.read_text(encoding="utf-8", errors="replace")
            found = [r for r in REPRS if r in text]
            assert not found, f"{path.relative_to(run.reports)} holds {found}"


def progress_letters(output: str) -> str:
    """The letters of pytest's progress lines, in the order they were printed."""
    return "".join(m.group(1) for line in output.splitlines() if (m := PROGRESS.match(line)))


def test_a_red_profile_s_inconclusive_self_checks_are_not_failures_in_any_form(
    tmp_path: Path,
) -> None:
    """Broken at 3.7, the pre-flight scenarios and their self-checks: a self-check that
    fails because the profile itself does is inconclusive in the progress line, the closing
    counts, JUnit as CI reads it and the record, and no file of the record shows a repr."""
    site = site_copy(tmp_path)
    site.edit(site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}")
    run = run_suite(site, "-m", "not runtime")

    assert_red_at(run, "3.7")
    inconclusive = run.summary["selfChecks"].get("inconclusive") or []
    assert inconclusive and run.summary["selfChecks"]["failed"] == [], run.summary["selfChecks"]
    letters = progress_letters(run.output)
    assert letters.count("F") == 1, f"one failure, the profile's, in {letters!r}"
    assert letters.count("i") == len(inconclusive), letters
    counts = assert_one_count(run)
    assert counts["failed"] == 1 and counts["broken"] == 0, counts
    # JUnit: one failure, the profile's check; the inconclusive self-checks fail nothing and
    # say why in their check's output.
    failures = [
        c.name for _, c in run.junit_cases() for r in c.result if isinstance(r, junitparser.Failure)
    ]
    assert failures == [junit_case(run, "3.7", failed=True).name], failures
    said = "\n".join(c.system_out or "" for _, c in run.junit_cases())
    assert said.count("INCONCLUSIVE [") == len(inconclusive), said
    # What the terminal counts "not selected" (Step 6 and the training, left out by -m), the
    # record lists under the same words.
    not_selected = run.summary["notSelected"]
    assert not_selected == [c for c, v in run.summary["checks"].items() if v == "skipped"]
    assert {"6.1", "T.4"} <= set(not_selected), not_selected
    assert f"{len(not_selected)} not selected" in run.output
    assert_no_repr(run)


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
    # (check, mistake, in the message, checks not reached, the field that decides it)
    ("6.2", _unschedulable, "persistentvolumeclaim", ["6.3", "6.4", "6.5"], None),
    ("6.3", _prepare_fails, "exit code", ["6.4", "6.5"], ("job", "source /opt/venv/bin/activate")),
    ("6.5", _output_elsewhere, "ckpts", [], None),
]
STEP6_SCENARIOS = {
    "6.2": "Job 详情中出现一个 Worker 对应的实际 Pod,并位于预期 Node",
    "6.3": "日志显示 Ray Head 已启动,并开始执行运行脚本",
    "6.4": "RLinf 日志出现预先确定的训练进展",
    "6.5": "checkpoint 写入预期的持久化位置,并且可以重新读取",
}


@pytest.mark.parametrize(
    ("check", "mistake", "text", "not_reached", "decided_by"),
    STEP6_MISTAKES,
    ids=[m[0] for m in STEP6_MISTAKES],
)
def test_a_step6_phase_fails_with_its_cause_and_later_phases_are_not_reached(
    tmp_path: Path,
    check: str,
    mistake: Any,
    text: str,
    not_reached: list[str],
    decided_by: tuple[str, str] | None,
) -> None:
    site = site_copy(tmp_path)
    mistake(site)
    run = run_suite(site, "-m", STEP6_ONLY)

    first = assert_red_at(run, check)
    assert first["scenario"] == STEP6_SCENARIOS[check]
    assert text in first["message"], first["message"]
    if decided_by is None:
        assert "location" not in first, "no one field decides this failure"
    else:
        file = site.job if decided_by[0] == "job" else site.profile
        line = file.read_text(encoding="utf-8").splitlines().index(f"      {decided_by[1]}") + 1
        assert first["location"] == f"{file}:{line}", first.get("location")
        assert f"({file}:{line})" in run.output, "the terminal does not say where"
    for c in not_reached:
        assert run.summary["checks"][c] == "notReached", run.summary["checks"]
    assert run.summary["checks"]["6.1"] == "passed"
    assert [c for c in RUNTIME if run.summary["checks"][c] == "failed"] == [check]

    result = assert_allure_failure(run, STEP6_SCENARIOS[check], check)
    assert ("severity", "critical") in {(x["name"], x["value"]) for x in result["labels"]}
    assert run.attachment(result, "Worker log (excerpt)")
    assert '"phases"' in run.attachment(result, "Pods and events")
    assert "kind: Job" in run.attachment(result, "Job YAML")
    assert_one_count(run)
    assert remedy(check) in junit_failure(run, check)
    assert_rendered_red(run, check)


def test_the_whole_suite_on_a_profile_whose_first_signal_never_appears(tmp_path: Path) -> None:
    """Self-checks start from the broken profile too: they never steal the verdict."""
    site = site_copy(tmp_path)
    signal = r"firstSignal: 'Global Step:.*\b[1-9]\d*/\d+'"
    site.edit(site.profile, signal, r"firstSignal: 'Epoch \d+ done'")
    run = run_suite(site)

    first = assert_red_at(run, "6.4")
    assert first["scenario"] == STEP6_SCENARIOS["6.4"]
    # 6.5, and the training checks after the page's, wait on a first signal that never came.
    assert run.summary["notReached"] == ["6.5", "T.1", "T.2", "T.3", "B.1"]
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
    # Those that break a check after 6.4 (6.5, the training's) are not submitted: their copy
    # would fail at 6.4 too. Those at 6.3 and 6.4 are, and their own run says why they fail.
    after = [e for e in self_checks["inconclusive"] if e["check"] in ("6.5", "T.1", "T.2", "T.3")]
    assert after, self_checks["inconclusive"]
    moot = "not submitted: the profile as it is fails at 6.4, before "
    for entry in after:
        assert entry["message"].startswith(moot + entry["check"]), entry
    for entry in self_checks["inconclusive"]:
        if entry["check"] in ("6.3", "6.4"):
            assert not entry["message"].startswith("not submitted"), entry
    categories = run.reports / "allure-results" / "categories.json"
    assert "Step 6" in categories.read_text(encoding="utf-8")

    # One field decides it: the pattern, at its line of the profile; and the message quotes
    # the progress the Worker did print.
    line = (
        site.profile.read_text(encoding="utf-8")
        .splitlines()
        .index(r"  firstSignal: 'Epoch \d+ done'")
    )
    assert first["location"] == f"{site.profile}:{line + 1}", first
    hint = "the last progress-like line was: '│ Global Step:    5/5 │"  # the smoke's last step
    assert hint in first["message"], first["message"]

    # The terminal: the profile's failure, the one failure it counts; the inconclusive
    # self-checks are said as such, and counted in no check.
    tail = run.output[run.output.rindex("short test summary info") :]
    failed_lines = [x for x in tail.splitlines() if x.startswith("FAILED")]
    assert len(failed_lines) == 1 and "(self-check)" not in failed_lines[0], tail
    assert assert_one_count(run)["failed"] == 1
    assert "INCONCLUSIVE [" in run.output
    letters = progress_letters(run.output)
    assert letters.count("F") == 1, f"one failure, the profile's, in {letters!r}"
    assert letters.count("i") == len(self_checks["inconclusive"]), letters
    assert_no_repr(run)
    assert "Traceback" not in run.output and "_pytest" not in run.output, "a check's traceback"

    # JUnit: the one failure is 6.4's; each inconclusive self-check says so in the output of
    # the check it is written for, which it does not fail.
    assert remedy("6.4") in junit_failure(run, "6.4")
    said = [
        line
        for _, case in run.junit_cases()
        for line in (case.system_out or "").splitlines()
        if line.startswith("INCONCLUSIVE ")
    ]
    assert len(said) == len(self_checks["inconclusive"]), said
    assert all("the profile as it is fails at 6.4" in line for line in said), said

    # Allure: an inconclusive self-check is a skipped step of its check, saying why, and
    # breaks nothing; the one failed result is the profile's check.
    names = {e["scenario"] for e in self_checks["inconclusive"]}
    seen = [
        step
        for result in run.allure_results()
        for step in result.get("steps", [])
        if step["name"].split("] ", 1)[-1] in names
    ]
    assert len(seen) >= len(names), (len(seen), names)
    for step in seen:
        assert step["status"] == "skipped", (step["name"], step["status"])
        said = step["statusDetails"]["message"]
        assert said == "inconclusive: the profile itself fails at 6.4", said
    rendered = assert_rendered_red(run, "6.4")
    failed = [t for t in rendered.test_results() if t["status"] in ("failed", "broken")]
    assert [t["name"] for t in failed] == [f"[6.4] {BY_ID['6.4'].says}"]


# -- green, interrupted, a crash, a usage error -------------------------------------------


def test_green_then_red_then_interrupted_in_one_reports_dir(tmp_path: Path) -> None:
    """Three runs into the same reports directory, each rendered the documented way: every
    page a reader opens says what that run's run-summary.json says, nothing of an earlier
    report survives, the history grows."""
    site = site_copy(tmp_path)

    # Green.
    run = run_suite(site, "-m", AS_IT_IS)
    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None
    # Every check passed but T.4, opt-in: no scenario of it was selected.
    assert s["checks"].pop("T.4") == "skipped" and set(s["checks"].values()) == {"passed"}, s
    assert s["notReached"] == [] and s["interrupted"] is False
    assert {"submit", "scheduled", "rayHead", "firstSignal", "output"} <= set(s["durations"])
    assert s["outputs"]["checkpoint"] and s["outputs"]["steps"], s.get("outputs")
    # A green run's outputs are removed from the persistent location (target.keepOutputs).
    assert s["outputs"]["kept"] is None and s["outputs"]["removed"] > 0, s["outputs"]
    assert "verdict: passed" in run.output
    assert junit_case(run, "2.1", failed=False).classname.startswith("04 Step 2")
    red = [c.name for _, c in run.junit_cases() if c.result and not c.is_skipped]
    assert not red, f"a green run reads red: {red}"
    assert assert_one_count(run) == {
        **{k: 0 for k in ("failed", "broken", "notReached", "error")},
        "passed": len(ALL_CHECKS) - 1,
        "notSelected": 1,
        "total": len(ALL_CHECKS),
    }
    green = run.render()
    assert green.returncode == 0, green.output
    assert green.title.endswith("— ACCEPTED"), green.title
    assert green.gate and all(g["success"] for g in green.gate), green.gate
    history = run.reports / "allure-history.jsonl"
    assert len(history.read_text(encoding="utf-8").splitlines()) == 1

    # Red, at a pre-flight check, in the same directory.
    site.edit(site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}")
    run = run_suite(site, "-m", AS_IT_IS)
    assert_red_at(run, "3.7")
    assert assert_one_count(run)["failed"] == 1
    before = time.time()
    red = assert_rendered_red(run, "3.7")
    assert "ACCEPTED" not in red.title.replace("NOT ACCEPTED", "")
    for page in red.report.rglob("*"):
        assert page.stat().st_mtime >= before - 1, f"{page} survived from an earlier report"
    # What a reader opens names this run only (the history and trend data name the earlier).
    for page in [red.report / "index.html", red.report / "summary.json"]:
        text = page.read_text(encoding="utf-8")
        assert "NOT ACCEPTED at 3.7" in text and "— ACCEPTED" not in text, page
    assert len(history.read_text(encoding="utf-8").splitlines()) == 2, "the history was reset"

    # Interrupted (Ctrl-C in Step 6), in the same directory again.
    site.edit(site.job, "containerPath: /mnt/ckpt, readOnly: true}", "containerPath: /mnt/ckpt}")
    run = run_suite_interrupted(site, "任务列表中出现本次", "-m", STEP6_ONLY)
    s = run.summary
    assert run.returncode == 2, run.explain()
    assert s["verdict"] == "interrupted" and s["interrupted"] is True
    assert s["earliestFailure"] is None
    assert all(s["checks"][c] == "notReached" for c in RUNTIME), s["checks"]
    assert s["interruptedAt"]["check"] == "6.1", s.get("interruptedAt")
    assert "verdict: interrupted" in run.output
    assert "interrupted during [6.1]" in run.output
    assert assert_one_count(run)["error"] == 1
    cases = run.junit_cases()
    assert all(c.name for _, c in cases), "a testcase without a name"
    errors = [
        (c.name, r.message) for _, c in cases for r in c.result if isinstance(r, junitparser.Error)
    ]
    assert len(errors) == 1 and errors[0][0].startswith("[run] interrupted during [6.1]"), errors
    assert not [c for _, c in cases if any(isinstance(r, junitparser.Failure) for r in c.result)]
    passed = [c.name for _, c in cases if c.is_passed]
    assert not passed, f"an interrupted Step 6 reads green: {passed}"
    skipped = {r.message for _, c in cases for r in c.result if isinstance(r, junitparser.Skipped)}
    assert "not reached: interrupted" in skipped, skipped
    broken = [r["name"] for r in run.allure_results() if r["status"] == "broken"]
    assert len(broken) == 1 and broken[0].startswith("[run] interrupted during [6.1]"), broken
    rendered = run.render()
    assert rendered.returncode == 1, rendered.output
    assert rendered.title.endswith("INTERRUPTED at 6.1"), rendered.title
    assert "NOT ACCEPTED at 6.1" in rendered.output, rendered.output
    assert [g["success"] for g in rendered.gate] == [False], rendered.gate
    assert len(history.read_text(encoding="utf-8").splitlines()) == 3


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
