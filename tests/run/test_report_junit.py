"""The record as the other tools read it, on the model alone: JUnit through a JUnit consumer
(junitparser) and the schema CI reads, the Allure tree's labels and names, the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import junitparser

from rlark_acceptance.model.doc_checks import ALL_CHECKS, remedy
from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.report import RunReport, ScenarioRecord, kind_of
from rlark_acceptance.secrets import Redactor
from tests.run.junit_schema import problems


def _add(
    r: RunReport,
    nodeid: str,
    checks: list[str],
    *,
    tags: tuple[str, ...] = (),
    line: int = 1,
    primary: str | None = None,
) -> ScenarioRecord:
    s = r.add(ScenarioRecord(nodeid, f"scenario {nodeid}", "f", checks, kind_of(tags)))
    s.primary = primary
    s.position = ("features/x.feature", line)
    return s


def _junit(r: RunReport, tmp_path: Path) -> tuple[Path, junitparser.JUnitXml]:
    path = tmp_path / "junit.xml"
    path.write_text(writers.junit_xml(r, Redactor()), encoding="utf-8")
    assert problems(path) == [], problems(path)
    return path, junitparser.JUnitXml.fromfile(str(path))


def _cases(xml: junitparser.JUnitXml) -> list[tuple[str, str, junitparser.TestCase]]:
    return [(suite.name, case.name, case) for suite in xml for case in suite]


def _red_profile() -> RunReport:
    """A profile that fails at 6.3 after 6.1 passed; a self-check that started from it fails
    too (inconclusive), another passes; 6.4 was not reached."""
    r = RunReport("p.yaml")
    _add(r, "s-inconclusive", ["6.3"], tags=("fault-injection",), line=1).finish(
        "failed", message="expected 6.4 to fail"
    )
    _add(r, "p-6.4", ["6.4"], line=30).finish("notReached", message="not reached: 6.3 failed")
    _add(r, "p-6.3", ["6.3"], line=20).finish(
        "failed", step="Then the Ray head starts", message="the Ray head never started: exit 3"
    )
    _add(r, "p-6.1", ["6.1"], line=10).finish("passed")
    _add(r, "s-passes", ["6.1", "2.1"], tags=("negative",), primary="6.1").finish("passed")
    return r


def _results(case: junitparser.TestCase) -> list[Any]:
    return [r for r in case.result if isinstance(r, junitparser.Failure | junitparser.Error)]


def test_a_red_profile_is_one_testcase_per_check_in_the_page_order(tmp_path: Path) -> None:
    """The unit CI counts is the check: one testcase each, in the page's order, the counts
    those of the record; the one failure is the profile's, with its cause and remedy; an
    inconclusive self-check fails nothing and says why in its check's output."""
    r = _red_profile()
    _, xml = _junit(r, tmp_path)
    cases = _cases(xml)
    names = [name for _, name, _ in cases]
    assert names == [writers.check_name(c.id) for c in ALL_CHECKS], "not the page's checks"
    failures = [(n, x) for _, n, c in cases for x in _results(c)]
    assert [n for n, _ in failures] == [writers.check_name("6.3")], failures
    message = failures[0][1].message
    assert message.startswith("[6.3] failed (the earliest failing check): the Ray head never")
    assert remedy("6.3") in message
    by_name = {n: c for _, n, c in cases}
    (skipped,) = by_name[writers.check_name("6.4")].result
    assert isinstance(skipped, junitparser.Skipped) and skipped.message == "not reached: 6.3 failed"
    out = by_name[writers.check_name("6.3")].system_out or ""
    assert "FAILED [6.3] scenario p-6.3" in out, out
    assert (
        "INCONCLUSIVE [6.3|self-check] scenario s-inconclusive: the profile as it is fails" in out
    )
    assert "PASSED [6.1|self-check] scenario s-passes" in (
        by_name[writers.check_name("6.1")].system_out or ""
    )
    counts = r.counts()
    suite = next(iter(xml))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
        counts["total"],
        counts["failed"],
        counts["broken"] + counts["error"],
        counts["notReached"] + counts["notSelected"],
    )


def test_an_interrupted_run_is_not_green_and_says_where(tmp_path: Path) -> None:
    r = RunReport("p.yaml", interrupted=True)
    _add(r, "p-6.1", ["6.1"], line=10).finish("passed")
    running = _add(r, "p-6.2", ["6.2"], line=20)
    running.step = "Then exactly one Pod runs the Worker"
    _add(r, "p-6.3", ["6.3"], line=30)
    r.interrupted_at = running.nodeid
    _, xml = _junit(r, tmp_path)
    cases = {name: c for _, name, c in _cases(xml)}
    assert "" not in cases and len(cases) == r.counts()["total"]
    errors = [
        (n, x) for n, c in cases.items() for x in c.result if isinstance(x, junitparser.Error)
    ]
    assert len(errors) == 1
    name, error = errors[0]
    assert name == "[run] interrupted during [6.2] scenario p-6.2"
    assert (
        "interrupted" in error.message and "Then exactly one Pod runs the Worker" in error.message
    )
    check = writers.check_name
    assert cases[check("6.3")].result[0].message == "not reached: interrupted"
    assert "interrupted during this check" in cases[check("6.2")].result[0].message
    assert cases[check("6.1")].is_passed
    total = xml
    total.update_statistics()
    assert total.errors == 1 and total.failures == 0


def test_a_usage_error_is_an_error_testcase(tmp_path: Path) -> None:
    r = RunReport("p.yaml", error="usage error: --profile x: no such file")
    _add(r, "p-6.1", ["6.1"])
    _, xml = _junit(r, tmp_path)
    errors = [
        c for _, _, c in _cases(xml) if any(isinstance(x, junitparser.Error) for x in c.result)
    ]
    assert [c.name for c in errors] == ["[run] error"]


def test_a_failed_self_check_of_a_green_profile_is_an_error_of_its_check(tmp_path: Path) -> None:
    """The profile's own scenario passed; its self-check failed: the check is no failure of
    the platform but the harness could not show it catches that mistake (an ``<error>``,
    Allure's broken), counted once."""
    r = RunReport("p.yaml")
    _add(r, "p", ["0.1"]).finish("passed")
    _add(r, "neg", ["0.1"], tags=("negative",)).finish("failed", message="not caught")
    _, xml = _junit(r, tmp_path)
    found = [(n, type(x).__name__, x.message) for _, n, c in _cases(xml) for x in _results(c)]
    assert found == [
        (writers.check_name("0.1"), "Error", "[0.1] self-check failed: scenario neg: not caught")
    ]
    assert r.counts()["broken"] == 1


def test_names_sort_the_profile_first_within_a_check() -> None:
    r = RunReport("p.yaml")
    mine = _add(r, "zzz", ["6.3"])
    other = _add(r, "aaa", ["6.3"], tags=("negative",))
    assert sorted([writers.test_name(other), writers.test_name(mine)])[0] == writers.test_name(mine)
    assert [s.nodeid for s in r.in_page_order()] == ["zzz", "aaa"]


def test_the_32_remedy_fits_a_selection_of_zero_and_of_several_nodes() -> None:
    none = (
        "the node selection hits 0 ready, schedulable nodes (none); the Worker cannot be scheduled"
    )
    several = "the node selection hits 3 ready, schedulable nodes (a, b, c); several Workers ..."
    assert "narrow" not in remedy("3.2", none) and "no ready, schedulable node" in remedy(
        "3.2", none
    )
    assert "narrow the node selection" in remedy("3.2", several)
    assert remedy("3.2") == remedy("3.2", several)
    r = RunReport("p.yaml")
    _add(r, "p", ["3.2"]).finish("failed", message=none)
    assert r.summary()["earliestFailure"]["hint"] == remedy("3.2", none)


def test_the_terminal_lists_inconclusive_self_checks_and_where_a_run_stopped() -> None:
    data = _red_profile().summary()
    lines = writers.terminal_lines(data, Path("run-summary.json"))
    assert any(line.startswith("earliest failing check: 6.3") for line in lines)
    assert "  INCONCLUSIVE [6.3|self-check] scenario s-inconclusive" in lines
    assert not any(line.startswith("self-check failed") for line in lines)

    r = RunReport("p.yaml", interrupted=True)
    s = _add(r, "p-6.2", ["6.2"])
    s.step = "Then a Pod"
    r.interrupted_at = s.nodeid
    lines = writers.terminal_lines(r.summary(), Path("run-summary.json"))
    assert "interrupted during [6.2] scenario p-6.2 (step: Then a Pod)" in lines


def test_the_terminal_counts_an_opt_in_check_not_selected_apart_from_the_training() -> None:
    """A default run selects no scenario of T.4 (opt-in): the training's line counts the
    three it ran, T.4 among those not selected."""
    from rlark_acceptance.model.doc_checks import ALL_CHECKS

    r = RunReport("p.yaml")
    _add(r, "all", [c.id for c in ALL_CHECKS if c.id != "T.4"]).finish("passed")
    (line, *_) = writers.terminal_lines(r.summary(), Path("run-summary.json"))
    assert "1 not selected (the page's 41/41, the training's 3/3 passed" in line, line
    _add(r, "resume", ["T.4"]).finish("failed", message="the resumed run started at step 1")
    (line, *_) = writers.terminal_lines(r.summary(), Path("run-summary.json"))
    assert "0 not selected (the page's 41/41, the training's 3/4 passed" in line, line


def test_a_planted_hf_token_keeps_its_name_in_the_record(tmp_path: Path) -> None:
    """The pre-flight names the variable; the record's redaction must not take the name
    away with the value (``secret-huggingface-token: ***`` said neither)."""
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.evidence import preflight_results
    from tests.fake_secrets import FakeSecrets
    from tests.run.suite_runs import site_copy

    token = FakeSecrets(seed=13).format_tokens()["huggingface-token"]
    site = site_copy(tmp_path)
    old = '    - {name: TOKENIZERS_PARALLELISM, value: "false"}'
    site.edit(site.job, old, f'{old}\n    - {{name: HF_TOKEN, value: "{token}"}}')
    pre = preflight_profile(site.profile)
    (result,) = [r for r in preflight_results(pre, ["3.6"]) if r.status == "failed"]
    shown = writers.run_redactor().redact(result.message or "")
    assert shown == pre.redactor.redact(result.message or "")
    assert "HF_TOKEN" in shown and "secret-huggingface-token" in shown, shown
    assert token not in shown and "***" not in shown, shown


def test_the_64_message_quotes_the_last_progress_like_line() -> None:
    from rlark_acceptance.run.step6.first_signal import last_progress_like, progress_hint

    log = [
        "2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Ray runtime started.",
        "loading the model",
        "Global Step:  40%|████      | 2/5",
        "epoch 3 done, loss 0.12",
        "saving",
    ]
    assert last_progress_like(log) == "epoch 3 done, loss 0.12"
    assert last_progress_like(log[:3]) == "Global Step:  40%|████      | 2/5"
    assert progress_hint(["loading the model"]) == "; the run script printed no progress-like line"


def test_the_report_command_on_a_directory_without_results_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    command = Path(sys.executable).with_name("rlark-acceptance")
    done = subprocess.run(
        [str(command), "report", "--reports-dir", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "allure-results: no Allure results" in done.stderr
    assert not (tmp_path / "nowhere").exists(), "a failed rendering created the directory"


def test_the_records_warnings_are_the_profile_suites_properties_and_output(
    tmp_path: Path,
) -> None:
    """A green run that warns (lines that may be missing, a stage that regressed) is green in
    JUnit too, and says so where a CI consumer reads a suite: its ``warning`` properties and
    its output; the Allure environment (the report's overview) lists them."""
    r = RunReport("p.yaml")
    _add(r, "p-6.1", ["6.1"]).finish("passed")
    r.warnings += [
        "LogRotated: the kubelet rotated the Worker's log before it was read: lines written "
        "between 12:00:01 and 12:00:09 (8 s) may be missing",
        "B.1: rayHead 41.2 s: 6.8× the median of the last 5 runs (6.1 s) (regressed)",
    ]
    _, xml = _junit(r, tmp_path)
    (suite,) = [s for s in xml if "the profile as it is" in s.name]
    warned = [p.value for p in suite.properties() if p.name == "warning"]
    assert warned == r.warnings
    out = suite._elem.find("system-out")  # junitparser reads a suite's output no other way
    assert out is not None and out.text == "".join(f"warning: {w}\n" for w in r.warnings)
    assert not [case for case in suite if _results(case)]
    env = writers.environment("p.yaml", r.summary())
    assert env["warnings"] == "2" and env["warning.2"] == r.warnings[1]
    assert env["warning.1"].startswith("LogRotated: ") and "\n" not in env["warning.1"]
    # None: no property, no output.
    quiet = RunReport("p.yaml")
    _add(quiet, "p-6.1", ["6.1"]).finish("passed")
    _, xml = _junit(quiet, tmp_path)
    (suite,) = [s for s in xml if "the profile as it is" in s.name]
    assert not [p for p in suite.properties() if p.name == "warning"]
    assert suite._elem.find("system-out") is None


def test_a_failed_step_is_recorded_in_its_own_words_without_pytest_s_reprs() -> None:
    """pytest appends to an ``assert``'s message its explanation, the operands' reprs: the
    record keeps the step's message; an ``assert`` without one keeps what there is."""
    said = (
        "verdict fail:\n    3.7 error output-read-only job.yaml:31: read-only mount\n"
        "assert <Verdict.FAIL: 'fail'> == 'pass'\n  \n  - pass\n  + fail"
    )
    assert writers.step_message(said) == (
        "verdict fail:\n    3.7 error output-read-only job.yaml:31: read-only mount"
    )
    bare = "assert <Verdict.FAIL: 'fail'> == 'pass'\n  - pass"
    assert writers.step_message(bare) == bare
    assert writers.step_message("no signal within 120 s") == "no signal within 120 s"
