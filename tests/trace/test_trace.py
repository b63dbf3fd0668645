"""The trace worked out of a run's record (a pure function), the collector it goes to (off
unless named), and the plugin that costs a run nothing when it is off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.run.step6.record import ORDER
from rlark_acceptance.trace import (
    Preflight,
    SelfCheck,
    Submission,
    Timeline,
    endpoint_of,
    export,
    pipeline_of,
    run_tree,
)

T = 1_800_000_000.0  # the session's start, seconds since the epoch
ROOT = Path(__file__).resolve().parents[2]


def _red_at_6_4() -> tuple[dict[str, Any], Timeline]:
    checks = {c: "notReached" for c in ORDER} | {
        "6.1": "passed",
        "6.2": "passed",
        "6.3": "passed",
        "1.1": "passed",
        "1.2": "passed",
        "6.4": "failed",
        "T.4": "skipped",
    }
    summary = {
        "profile": "profiles/site.yaml",
        "runId": "261207120000-abcdef",
        "verdict": "failed",
        "checks": checks,
        "earliestFailure": {"check": "6.4", "message": "the Worker ended without the first signal"},
        "provenance": {"profileName": "site"},
    }
    phases = {
        "6.1": ("passed", 0.2),
        "6.2": ("passed", 0.9),
        "6.3": ("passed", 8.0),
        "1.1": ("passed", 8.0),
        "1.2": ("passed", 8.0),
        "6.4": ("failed", 30.0),
    }
    times = Timeline(
        started=T,
        finished=T + 60,
        preflight=Preflight(T + 1, T + 1.5, True),
        submission=Submission(T + 2, phases),
        self_checks=(
            SelfCheck(
                "Ray head never starts", "6.3", True, Submission(T + 3, {"6.3": ("failed", 12.0)})
            ),
        ),
        record=(T + 50, T + 52),
    )
    return summary, times


def test_a_run_red_at_6_4_is_a_tree_of_its_phases_up_to_the_failure() -> None:
    summary, times = _red_at_6_4()
    root = run_tree(summary, times, ORDER)
    assert root.name == "rlark-acceptance site"
    assert root.error == "6.4: the Worker ended without the first signal"
    assert root.attributes["test.suite.run.status"] == "failure"
    assert root.attributes["cicd.pipeline.task.run.result"] == "failure"
    assert [c.name for c in root.children] == [
        "pre-flight",
        "Step 6",
        "self-check Ray head never starts",
        "the run record",
    ]
    step6 = root.children[1]
    assert (step6.start, step6.end) == (T + 2, T + 32)
    assert step6.error == "the Worker ended without the first signal"
    shown = [
        (
            c.name,
            round(c.start - T, 3),
            round(c.end - T, 3),
            c.attributes.get("rlark.check.verdict"),
        )
        for c in step6.children
    ]
    assert shown[:6] == [
        ("6.1", 2.0, 2.2, "passed"),
        ("6.2", 2.2, 2.9, "passed"),
        ("6.3", 2.9, 10.0, "passed"),
        ("1.1", 10.0, 10.0, "passed"),
        ("1.2", 10.0, 10.0, "passed"),
        ("6.4", 10.0, 32.0, "failed"),
    ]
    # After it, what was never reached: no length, where Step 6 stopped.
    assert ("6.5", 32.0, 32.0, "notReached") in shown
    four = step6.children[5]
    assert four.attributes["test.case.result.status"] == "fail"
    assert str(four.attributes["test.case.name"]).startswith("6.4 ")
    assert four.error == "the Worker ended without the first signal"
    training = step6.children[-1]
    assert training.name == "training checks"
    assert {c.name: c.attributes["rlark.check.verdict"] for c in training.children} == {
        "T.1": "notReached",
        "T.2": "notReached",
        "T.3": "notReached",
        "T.4": "skipped",
    }
    own = root.children[2]
    assert own.attributes == {
        "test.case.name": "Ray head never starts",
        "test.case.result.status": "pass",
        "rlark.check.id": "6.3",
    }
    assert [(c.name, round(c.end - c.start, 3)) for c in own.children] == [("6.3", 12.0)]


def test_a_run_that_stopped_at_the_preflight_has_no_step_6() -> None:
    summary = {
        "runId": "r",
        "verdict": "failed",
        "checks": {"3.7": "failed"},
        "earliestFailure": {"check": "3.7", "message": "output-read-only"},
        "profile": "p.yaml",
    }
    root = run_tree(summary, Timeline(T, T + 5, Preflight(T + 1, T + 2, False)), ORDER)
    assert [c.name for c in root.children] == ["pre-flight"]
    assert root.children[0].error == "output-read-only"
    assert root.children[0].attributes == {"rlark.preflight.verdict": "failed"}


def test_a_ci_job_names_its_pipeline_on_the_run() -> None:
    summary, times = _red_at_6_4()
    github = {"GITHUB_WORKFLOW": "nightly", "GITHUB_RUN_ID": "4711"}
    root = run_tree(summary, times, ORDER, pipeline_of(github))
    assert root.attributes["cicd.pipeline.name"] == "nightly"
    assert root.attributes["cicd.pipeline.run.id"] == "4711"
    assert pipeline_of({"CI_PIPELINE_ID": "9"}) == {"cicd.pipeline.run.id": "9"}
    assert pipeline_of({}) == {}


def test_an_interrupted_run_is_aborted_in_the_conventions_words() -> None:
    summary, times = _red_at_6_4()
    root = run_tree(summary | {"interrupted": True}, times, ORDER)
    assert root.attributes["test.suite.run.status"] == "aborted"
    assert root.attributes["cicd.pipeline.task.run.result"] == "cancellation"


@pytest.mark.parametrize(
    ("env", "profile", "expected"),
    [
        ({}, None, None),
        ({}, "http://collector:4318", "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, None, "http://c:4318/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
            "http://p:4318",
            "http://c:4318/v1/traces",
        ),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:9/t"}, None, "http://c:9/t"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, None, None),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
            None,
            None,
        ),
    ],
)
def test_a_collector_is_named_as_opentelemetry_names_it(
    env: dict[str, str], profile: str | None, expected: str | None
) -> None:
    assert endpoint_of(env, profile) == expected


def test_a_collector_that_is_not_there_is_one_line_never_an_exception(unused_port: int) -> None:
    summary, times = _red_at_6_4()
    done = export(
        run_tree(summary, times, ORDER), f"http://127.0.0.1:{unused_port}/v1/traces", timeout=2
    )
    assert done.error is not None and done.spans == 18
    assert done.line.startswith("trace: not exported (")


def test_with_no_collector_named_the_plugin_joins_no_session() -> None:
    """Off: no recorder registered, the SDK never imported."""
    probe = (
        "import sys, pytest\n"
        "class Seen:\n"
        "    def pytest_sessionfinish(self, session):\n"
        "        pm = session.config.pluginmanager\n"
        "        print('recorder', pm.has_plugin('rlark-acceptance-trace'))\n"
        "        print('sdk', 'opentelemetry.sdk' in sys.modules)\n"
        "pytest.main(['--collect-only', '-q', 'features/test_doc_checks.py',\n"
        "             '-p', 'no:cacheprovider'], plugins=[Seen()])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "recorder False" in out and "sdk False" in out, out[-2000:]
    on = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env | {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "recorder True" in on, on[-2000:]


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _doc(tmp_path: Path, text: str) -> tuple[Path, Any]:
    from rlark_acceptance.model.yamlsrc import load_yaml

    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + text + "\n", encoding="utf-8")
    return path, load_yaml(path)


def test_the_profile_names_a_collector(tmp_path: Path) -> None:
    from rlark_acceptance.model.tracing import TraceSpec, parse_trace

    assert parse_trace(_doc(tmp_path, "trace: http://c:4318")[1]) == TraceSpec("http://c:4318")
    assert parse_trace(_doc(tmp_path, "trace: {endpoint: https://c}")[1]) == TraceSpec("https://c")
    assert parse_trace(_doc(tmp_path, "timeouts: {}")[1]) == TraceSpec()


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("trace: grpc://c:4317", 2, "not an http(s) URL of a collector"),
        ("trace:\n  endpoint: http://me:key@c:4318", 3, "from OTEL_EXPORTER_OTLP_HEADERS"),
        ("trace: {endpont: http://c}", 2, "trace.endpont is not a setting of trace"),
        ("trace: [http://c]", 2, "trace is a collector's URL"),
    ],
)
def test_each_mistake_in_trace_is_one_line_at_its_place(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    from rlark_acceptance.model.errors import InputError
    from rlark_acceptance.model.tracing import parse_trace

    path, doc = _doc(tmp_path, text)
    with pytest.raises(InputError) as caught:
        parse_trace(doc)
    assert caught.value.where == f"{path}:{line}", str(caught.value)
    assert says in str(caught.value)
    assert "key@" not in str(caught.value)  # the credential is never repeated
