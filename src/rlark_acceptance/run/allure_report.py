"""The Allure writer of the run record: evidence on a failed test, the session's extras.

Labels, categories and names come from ``report_writers``; this module talks to Allure's
API (``allure.attach``, ``allure.global_attach``) and writes the files Allure reads next to
the results (``categories.json``, ``environment.properties``, ``executor.json``). Every body
goes through the redaction.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import allure

from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.evidence import (
    effective_config_json,
    findings_json,
    job_yaml,
    pods_and_events_json,
)
from rlark_acceptance.run.report import RunReport

_TYPES = {
    "yaml": allure.attachment_type.YAML,
    "json": allure.attachment_type.JSON,
    "text": allure.attachment_type.TEXT,
}


def attach(body: str, name: str, kind: str) -> None:
    allure.attach(writers.scrub(body), name, _TYPES[kind])


def attach_evidence(seen: dict[str, Any]) -> None:
    """What explains a failure, from the values the scenario's steps produced: the Job YAML
    (the user's file, so finding lines match), the pre-flight findings, the effective RLinf
    config, the Worker log excerpt, the Pods and events."""
    run = seen.get("fault_run") or seen.get("run")
    pre = seen.get("preflight") or getattr(run, "preflight", None)
    if pre is not None:
        job = job_yaml(pre)
        if job is not None:
            attach(job, "Job YAML", "yaml")
        attach(findings_json(pre), "pre-flight findings", "json")
        effective = effective_config_json(pre)
        if effective is not None:
            attach(effective, "effective RLinf config", "json")
    elif seen.get("workspace") is not None:
        path = seen["workspace"].root / "job.yaml"
        if path.is_file():
            attach(path.read_text(encoding="utf-8"), "Job YAML", "yaml")
    if run is not None and getattr(run, "record", None) is not None:
        attach(run.record.log_excerpt(), "Worker log (excerpt)", "text")
        dump = pods_and_events_json(run)
        if dump is not None:
            attach(dump, "Pods and events", "json")


def describe_failure(check: str, message: str | None, feature_text: str, plugins: Any) -> None:
    """The failed check, its evidence and the doc's remedy first; the test listed under the
    check that failed only (not under its neighbours in the scenario that passed)."""
    allure.dynamic.description(writers.description(feature_text, check, message))
    keep = writers.story_label(check)
    for plugin in plugins.get_plugins():
        lifecycle = getattr(plugin, "lifecycle", None)
        if type(plugin).__name__ != "PytestBDDListener" or lifecycle is None:
            continue
        with lifecycle.update_test_case() as result:
            if result is not None:
                labels = result.labels
                result.labels = [x for x in labels if x.name != "story" or x.value == keep]


def shared_run_evidence(run: Any) -> None:
    """The one submission every Step 6 scenario shares is the run's, not scenario 6.1's:
    its Job YAML, Worker log and Pods / events are global attachments."""
    parts = [
        (job_yaml(run.preflight), "Step 6: the submitted Job YAML", "yaml"),
        (
            run.record.log_excerpt() if run.record is not None else None,
            "Step 6: Worker log (excerpt)",
            "text",
        ),
        (pods_and_events_json(run), "Step 6: Pods and events", "json"),
    ]
    for body, name, kind in parts:
        if body:
            allure.global_attach(writers.scrub(body), name=name, attachment_type=_TYPES[kind])


def write_extras(path: Path, report: RunReport, reports_dir: Path, run: Any) -> None:
    """Categories (Allure 2), environment, executor, the summary as a global attachment, the
    shared run's evidence, and the previous Allure 2 report's history."""
    path.mkdir(parents=True, exist_ok=True)
    summary = report.summary()
    name = writers.report_name(summary)
    (path / "categories.json").write_text(
        json.dumps(writers.allure2_categories(), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    env = writers.environment(report.profile, summary)
    (path / "environment.properties").write_text(
        writers.scrub("".join(f"{k}={v}\n" for k, v in env.items())), encoding="utf-8"
    )
    (path / "executor.json").write_text(
        json.dumps(writers.executor(name), ensure_ascii=False), encoding="utf-8"
    )
    allure.global_attach(
        writers.summary_text(report), name=writers.SUMMARY_FILE, attachment_type=_TYPES["json"]
    )
    if run is not None:
        shared_run_evidence(run)
    history = reports_dir / "allure-report" / "history"
    if history.is_dir():
        shutil.copytree(history, path / "history", dirs_exist_ok=True)
