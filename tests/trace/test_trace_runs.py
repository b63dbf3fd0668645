"""The suite run as a user runs it with a collector named: each run sends one trace to a
real OpenTelemetry Collector (testenv/otelcol), read back from what the collector wrote.
A green run under a pipeline's ``TRACEPARENT`` joins that trace; a run red at 6.4 shows
where: its phases up to 6.4 decided, 6.4 failed with the record's message, what came after
it not reached, and the self-checks' own submissions beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.run.suite_runs import run_suite, site_copy

pytestmark = pytest.mark.slow

PIPELINE_TRACE = "0af7651916cd43dd8448eb211c80319c"
PIPELINE_SPAN = "b7ad6b7169203331"


def _tree(spans: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The trace's root (the run) and each span's children, by span id, in start order."""
    ids = {s["spanId"] for s in spans}
    roots = [s for s in spans if s.get("parentSpanId") not in ids]
    assert len(roots) == 1, [s["name"] for s in roots]
    children: dict[str, list[dict[str, Any]]] = {}
    for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"])):
        children.setdefault(s.get("parentSpanId", ""), []).append(s)
    return roots[0], children


def _names(children: dict[str, list[dict[str, Any]]], span: dict[str, Any]) -> list[str]:
    return [c["name"] for c in children.get(span["spanId"], [])]


def _within(child: dict[str, Any], parent: dict[str, Any]) -> bool:
    return int(parent["startTimeUnixNano"]) <= int(child["startTimeUnixNano"]) and int(
        child["endTimeUnixNano"]
    ) <= int(parent["endTimeUnixNano"])


def test_a_green_run_sends_one_trace_that_joins_the_pipelines(
    tmp_path: Path, otel_collector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otel_collector.endpoint)
    monkeypatch.setenv("TRACEPARENT", f"00-{PIPELINE_TRACE}-{PIPELINE_SPAN}-01")
    site = site_copy(tmp_path)
    run = run_suite(site)
    s = run.summary
    assert run.returncode == 0 and s["verdict"] == "passed", run.explain()
    assert s["trace"]["traceId"] == PIPELINE_TRACE and s["trace"]["error"] is None, s["trace"]
    assert f"trace: {s['trace']['spans']} spans exported, trace id {PIPELINE_TRACE}" in run.output

    spans = otel_collector.spans(PIPELINE_TRACE)
    assert len(spans) == s["trace"]["spans"]
    root, children = _tree(spans)
    assert root["parentSpanId"] == PIPELINE_SPAN  # under the pipeline's own span
    assert root["name"] == "rlark-acceptance smoke-ppo-mlp-local"
    assert root["resource"]["service.name"] == "rlark-acceptance"
    assert root["attributes"]["test.suite.run.status"] == "success"
    assert root["attributes"]["cicd.pipeline.task.run.result"] == "success"
    assert root["attributes"]["rlark.run_id"] == s["runId"]
    top = _names(children, root)
    assert top[0] == "pre-flight" and top[1] == "Step 6" and top[-1] == "the run record", top
    # Every self-check that made a submission of its own, each with its phases.
    self_checks = [c for c in children[root["spanId"]] if c["name"].startswith("self-check ")]
    assert len(self_checks) >= 5, top
    for c in self_checks:
        assert c["attributes"]["test.case.result.status"] == "pass"
        assert children.get(c["spanId"]), f"{c['name']}: no phase"
    (step6,) = [c for c in children[root["spanId"]] if c["name"] == "Step 6"]
    phases = {c["name"]: c for c in children[step6["spanId"]]}
    assert set(phases) == {"6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5", "training checks"}
    for check in ("6.1", "6.2", "6.3", "6.4", "6.5"):
        assert phases[check]["attributes"]["rlark.check.id"] == check
        assert phases[check]["attributes"]["test.case.result.status"] == "pass"
        assert s["checks"][check] == "passed"
        assert _within(phases[check], step6)
    training = {c["name"]: c for c in children[phases["training checks"]["spanId"]]}
    assert {k: v["attributes"]["rlark.check.verdict"] for k, v in training.items()} == {
        "T.1": "passed",
        "T.2": "passed",
        "T.3": "passed",
        "T.4": "skipped",
    }
    # The record's stage times are the spans': rayHead is 6.3's end since the submission.
    ray_head = (int(phases["6.3"]["endTimeUnixNano"]) - int(step6["startTimeUnixNano"])) / 1e9
    assert ray_head == pytest.approx(s["durations"]["rayHead"], abs=0.05)
    assert all(_within(c, root) for c in spans if c is not root)


def test_a_run_red_at_6_4_shows_where_in_its_trace(
    tmp_path: Path, otel_collector: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otel_collector.endpoint)
    monkeypatch.delenv("TRACEPARENT", raising=False)
    site = site_copy(tmp_path)
    signal = r"firstSignal: 'Global Step:.*\b[1-9]\d*/\d+'"
    site.edit(site.profile, signal, r"firstSignal: 'Epoch \d+ done'")
    run = run_suite(site)
    s = run.summary
    assert run.returncode == 1 and s["earliestFailure"]["check"] == "6.4", run.explain()

    root, children = _tree(otel_collector.spans(s["trace"]["traceId"]))
    assert root["status"]["code"] == 2  # ERROR
    assert root["status"]["message"].startswith("6.4: ")
    assert root["attributes"]["test.suite.run.status"] == "failure"
    assert root["attributes"]["rlark.earliest_failure.check"] == "6.4"
    (step6,) = [c for c in children[root["spanId"]] if c["name"] == "Step 6"]
    phases = {c["name"]: c for c in children[step6["spanId"]]}
    verdicts = {
        k: v["attributes"]["rlark.check.verdict"]
        for k, v in phases.items()
        if k != "training checks"
    }
    before = ("6.1", "6.2", "6.3", "1.1", "1.2")  # the printed config is read at 6.3
    assert verdicts == dict.fromkeys(before, "passed") | {"6.4": "failed", "6.5": "notReached"}
    failed = phases["6.4"]
    assert (
        failed["status"]["code"] == 2
        and failed["status"]["message"] == s["earliestFailure"]["message"]
    )
    assert failed["attributes"]["test.case.result.status"] == "fail"
    # Not reached: no length, where Step 6 stopped.
    assert phases["6.5"]["startTimeUnixNano"] == phases["6.5"]["endTimeUnixNano"]
    assert "test.case.result.status" not in phases["6.5"]["attributes"]
    # The self-checks submitted are those of the checks up to 6.4 (a later one's copy would
    # fail at 6.4 too): each in the trace with its own run.
    self_checks = [c for c in children[root["spanId"]] if c["name"].startswith("self-check ")]
    broken = {c["attributes"].get("rlark.check.id") for c in self_checks}
    assert "6.4" in broken and broken <= {"6.1", "6.2", "6.3", "6.4"}, broken
