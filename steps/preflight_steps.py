"""The pre-flight as a user sees it: its verdict and its findings (§0–§5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import parsers, then, when

from fixtures.workspace import Workspace
from rlark_acceptance.model.doc_checks import CheckId, remedy
from rlark_acceptance.model.findings import Finding, Severity
from rlark_acceptance.preflight.entry import PreflightResult, preflight_files, preflight_profile
from rlark_acceptance.secrets import Redactor


@when("the pre-flight runs", target_fixture="preflight")
def run_preflight(workspace: Workspace, redactor: Redactor) -> PreflightResult:
    return preflight_profile(workspace.write(), redactor=redactor)


@when("the pre-flight classifies it", target_fixture="preflight")
def classify(example_config: Path, redactor: Redactor) -> PreflightResult:
    return preflight_files(example_config, redactor=redactor)


def _explain(result: PreflightResult) -> str:
    return (
        "\n".join(
            f"  {f.check} {f.severity} {f.code} {f.location}: {f.message}" for f in result.findings
        )
        or "  (no findings)"
    )


@then(parsers.re(r"checks? (?P<ids>[\w.]+(?:, [\w.]+)*) pass(?:es)?$"))
def checks_pass(preflight: PreflightResult, ids: str) -> None:
    for check in ids.split(", "):
        status = preflight.outcome.status(check)
        if status != "passed":  # the findings are the explanation: no traceback to read
            why = f"[{check}] check {check} is {status}:\n{_explain(preflight)}"
            pytest.fail(f"{why}\n→ {remedy(check)}", pytrace=False)


_WHERE = {
    "the run script": "job",
    "the Job YAML": "job",
    "the RLinf config": "config",
    "the profile": "profile",
}


def _matching(
    preflight: PreflightResult, check: str, severity: Severity, code: str | None = None
) -> list[Finding]:
    return [
        f
        for f in preflight.findings
        if f.check == check and f.severity == severity and (code is None or f.code == code)
    ]


def _assert_location(finding: Finding, where: str, workspace: Workspace) -> None:
    assert finding.location is not None and finding.location.line, (
        f"{finding.code} has no file:line ({finding.location})"
    )
    files = {
        "job": "job.yaml",
        "config": workspace.config_file.name if workspace.config_file else "?",
        "profile": "profile.yaml",
    }
    expected = files[_WHERE[where]]
    assert Path(finding.location.file).name == expected, (
        f"{finding.code} is located at {finding.location}, expected {expected}"
    )
    if where == "the run script":
        assert workspace.job is not None
        text = (workspace.root / "job.yaml").read_text().splitlines()
        line = text[finding.location.line - 1]
        assert "runScript" in line or "python" in line or "bash" in line, (
            f"{finding.location} is not on the run script: {line!r}"
        )


@then(
    parsers.re(
        r'check (?P<check>[\w.]+) fails with "(?P<code>[\w-]+)"'
        r"(?: at (?P<where>the run script|the Job YAML|the RLinf config|the profile))?$"
    )
)
def check_fails_with(
    preflight: PreflightResult,
    request: pytest.FixtureRequest,
    check: str,
    code: str,
    where: str | None,
) -> None:
    found = _matching(preflight, check, Severity.ERROR, code)
    assert found, f"no {code} error for check {check}:\n{_explain(preflight)}"
    assert preflight.outcome.status(check) == "failed"
    if where:
        _assert_location(found[0], where, request.getfixturevalue("workspace"))


@then(parsers.parse("check {check} fails at the Job YAML"))
def check_fails_at_job(preflight: PreflightResult, workspace: Workspace, check: str) -> None:
    found = _matching(preflight, check, Severity.ERROR)
    assert found, f"no error for check {check}:\n{_explain(preflight)}"
    _assert_location(found[0], "the Job YAML", workspace)


@then(parsers.parse('check {check} fails naming "{name}" at the Job YAML'))
def check_fails_naming(
    preflight: PreflightResult, workspace: Workspace, check: str, name: str
) -> None:
    found = [f for f in _matching(preflight, check, Severity.ERROR) if name in f.message]
    assert found, f"no error for check {check} naming {name}:\n{_explain(preflight)}"
    _assert_location(found[0], "the Job YAML", workspace)


@then(parsers.parse('check {check} warns with "{code}"'))
def check_warns(preflight: PreflightResult, check: str, code: str) -> None:
    assert _matching(preflight, check, Severity.WARNING, code), (
        f"no {code} warning for check {check}:\n{_explain(preflight)}"
    )


@then(parsers.re(r'the verdict is "(?P<verdict>\w+)"(?: naming "(?P<reasons>[^"]+)")?$'))
def verdict_is(preflight: PreflightResult, verdict: str, reasons: str | None) -> None:
    assert preflight.verdict == verdict, f"verdict {preflight.verdict}:\n{_explain(preflight)}"
    if reasons:
        redirect = [f for f in preflight.findings if f.code == "redirect-multi-node"]
        assert redirect and all(r in redirect[0].message for r in reasons.split(", ")), (
            f"the redirect does not name {reasons}:\n{_explain(preflight)}"
        )


@then(parsers.parse('the verdict is not "{verdict}"'))
def verdict_is_not(preflight: PreflightResult, verdict: str) -> None:
    assert preflight.verdict != verdict, f"verdict {preflight.verdict}:\n{_explain(preflight)}"


@then("no finding shows the secret")
def no_secret_shown(preflight: PreflightResult, workspace: Workspace) -> None:
    assert workspace.secrets, "the scenario planted no secret"
    text = json.dumps(preflight.to_json(), ensure_ascii=False)
    for secret in workspace.secrets:
        assert secret not in text, "a finding shows the secret value"
        assert secret[:12] not in text, "a finding shows part of the secret value"


def _rlinf(preflight: PreflightResult) -> dict[str, Any]:
    data = preflight.to_json()["rlinf"]
    assert data is not None
    return data


@then(parsers.parse("its effective num_nodes is {n:d}"))
def effective_nodes(preflight: PreflightResult, n: int) -> None:
    assert _rlinf(preflight)["numNodes"] == n


@then(parsers.parse("it is classified as a single-node job needing {gpus} GPUs"))
def single_node(preflight: PreflightResult, gpus: str) -> None:
    r = _rlinf(preflight)
    assert r["singleNode"] is True and r["redirectReasons"] == [], r
    if gpus == "all":
        assert r["gpusAll"] is True and r["gpusRequired"] is None, r
    else:
        assert r["gpusAll"] is False and r["gpusRequired"] == int(gpus), r
    assert preflight.outcome.status(CheckId.MULTI_NODE_REDIRECT) == "passed"


@then(parsers.parse('it is redirected naming "{reasons}"'))
def redirected(preflight: PreflightResult, reasons: str) -> None:
    r = _rlinf(preflight)
    assert preflight.verdict == "redirect"
    assert r["singleNode"] is False
    assert r["redirectReasons"] == reasons.split(", "), r["redirectReasons"]


@then("it is a real-robot job blocked until safety is confirmed")
def real_robot(preflight: PreflightResult) -> None:
    assert _rlinf(preflight)["realRobot"] is True
    assert _matching(preflight, CheckId.REAL_ROBOT_SAFETY, Severity.ERROR, "real-robot-unconfirmed")
