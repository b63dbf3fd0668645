"""The Allure writer of the run record: evidence on a failed test, the session's extras.

Labels, categories and names come from ``report_writers``; this module talks to Allure's
API (``allure.attach``, ``allure.global_attach``) and writes the files Allure reads next to
the results (``categories.json``, ``environment.properties``, ``executor.json``). Every body
goes through the run's ``Redactor``, passed in by the caller.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import time
import uuid as uuidlib
from collections.abc import Iterator
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
from rlark_acceptance.run.report import RunReport, ScenarioRecord
from rlark_acceptance.secrets import Redactor

_TYPES = {
    "yaml": allure.attachment_type.YAML,
    "json": allure.attachment_type.JSON,
    "text": allure.attachment_type.TEXT,
}


def attach(body: str, name: str, kind: str, redactor: Redactor) -> None:
    allure.attach(redactor.redact(body), name, _TYPES[kind])


def attach_evidence(seen: dict[str, Any], redactor: Redactor) -> None:
    """What explains a failure, from the values the scenario's steps produced: the Job YAML
    (the user's file, so finding lines match), the pre-flight findings, the effective RLinf
    config, the Worker log excerpt (and T.4's second Worker's), the Pods and events."""
    run = seen.get("fault_run") or seen.get("run")
    pre = seen.get("preflight") or getattr(run, "preflight", None)
    if pre is not None:
        job = job_yaml(pre)
        if job is not None:
            attach(job, "Job YAML", "yaml", redactor)
        attach(findings_json(pre), "pre-flight findings", "json", redactor)
        effective = effective_config_json(pre)
        if effective is not None:
            attach(effective, "effective RLinf config", "json", redactor)
    elif seen.get("workspace") is not None:
        path = seen["workspace"].root / "job.yaml"
        if path.is_file():
            attach(path.read_text(encoding="utf-8"), "Job YAML", "yaml", redactor)
    if run is not None and getattr(run, "record", None) is not None:
        attach(run.record.log_excerpt(), "Worker log (excerpt)", "text", redactor)
        # T.4's second submission: its own Worker's log.
        resumed = getattr(run.record, "resumed", None)
        if resumed is not None:
            excerpt = resumed.record.log_excerpt()
            attach(excerpt, "resumed Worker log (excerpt)", "text", redactor)
        dump = pods_and_events_json(run)
        if dump is not None:
            attach(dump, "Pods and events", "json", redactor)


def describe_failure(
    check: str, message: str | None, feature_text: str, plugins: Any, redactor: Redactor
) -> None:
    """The failed check, its evidence and the doc's remedy first; the test listed under the
    check that failed only (not under its neighbours in the scenario that passed), unless
    that check sits in another section than the scenario's own (it stays where it is)."""
    allure.dynamic.description(writers.description(feature_text, check, message, redactor))
    keep = writers.story_label(check)
    with _current_result(plugins) as result:
        if result is None:
            return
        stories = {x.value for x in result.labels if x.name == "story"}
        if keep in stories:
            result.labels = [x for x in result.labels if x.name != "story" or x.value == keep]


@contextlib.contextmanager
def _current_result(plugins: Any) -> Iterator[Any]:
    """The Allure result allure-pytest-bdd is writing now (None outside a scenario)."""
    for plugin in plugins.get_plugins():
        lifecycle = getattr(plugin, "lifecycle", None)
        if type(plugin).__name__ == "PytestBDDListener" and lifecycle is not None:
            with lifecycle.update_test_case() as result:
                yield result
                return
    yield None


def shared_run_evidence(run: Any, redactor: Redactor) -> None:
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
            allure.global_attach(redactor.redact(body), name=name, attachment_type=_TYPES[kind])


def write_extras(
    path: Path, report: RunReport, reports_dir: Path, run: Any, redactor: Redactor
) -> None:
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
        redactor.redact("".join(f"{k}={v}\n" for k, v in env.items())), encoding="utf-8"
    )
    (path / "executor.json").write_text(
        json.dumps(writers.executor(name), ensure_ascii=False), encoding="utf-8"
    )
    allure.global_attach(
        writers.summary_text(report, redactor),
        name=writers.SUMMARY_FILE,
        attachment_type=_TYPES["json"],
    )
    if run is not None:
        shared_run_evidence(run, redactor)
    history = reports_dir / "allure-report" / "history"
    if history.is_dir():
        shutil.copytree(history, path / "history", dirs_exist_ok=True)


# -- the results as the record reads them ----------------------------------------------------


def complete_results(
    path: Path, report: RunReport, uuids: dict[str, str], redactor: Redactor
) -> None:
    """Make the Allure results say what run-summary.json says, once the run is over.

    Every scenario is named ``[check] …`` as in JUnit; a self-check that is inconclusive
    (the profile itself fails) is ``skipped`` with that reason, normal severity and no remedy
    of its own (allure-pytest-bdd wrote it ``failed`` before the profile's failure was
    known); a scenario that has no result (it never started: the run was interrupted, or its
    setup failed) gets one, so the tree holds every scenario of the run.
    """
    failed_at = report.profile_failed_at()
    files: dict[str, Path] = {}  # result uuid → its file (named by another uuid)
    for file in path.glob("*-result.json"):
        try:
            files[str(json.loads(file.read_text(encoding="utf-8")).get("uuid"))] = file
        except (OSError, ValueError, AttributeError):
            continue
    for rec in report.in_page_order():
        found = files.get(uuids.get(rec.nodeid) or "")
        if found is not None:
            file = found
            data = json.loads(file.read_text(encoding="utf-8"))
        else:
            data = _new_result(rec, report, redactor)
            file = path / f"{data['uuid']}-result.json"
        data["name"] = writers.test_name(rec)
        _readable(data)
        check = rec.failed_check()
        if check is not None and rec.kind == "profile":
            # What the quality gate names, and the first words of the failure a reader sees.
            data.setdefault("labels", []).append({"name": "failedCheck", "value": check})
            details = data.setdefault("statusDetails", {})
            cause = rec.result(check).message or rec.message or ""
            details["message"] = redactor.redact(f"[{check}] {cause}")
        reason = report.inconclusive(rec, failed_at)
        if reason is not None and failed_at is not None:
            _inconclusive(data, rec, failed_at, reason, redactor)
        tmp = file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, file)


def _readable(result: dict[str, Any]) -> None:
    """No Python repr where the report's reader looks. allure-pytest-bdd lists every argument
    of a step's function as a parameter of the step, the fixtures it takes among them, by
    their repr (``preflight: PreflightResult(verdict=<Verdict.FAIL: 'fail'>, findings=2)``):
    only the values a step's text gives (a string, a number, ``None``) stay. A failed
    ``assert``'s message keeps the step's own words, without pytest's explanation of its
    operands (``writers.step_message``); the trace stays, for a crash of the harness."""
    for item in [result, *_steps(result)]:
        params = item.get("parameters")
        if isinstance(params, list):
            item["parameters"] = [p for p in params if _literal(p.get("value"))]
        details = item.get("statusDetails")
        if isinstance(details, dict) and isinstance(details.get("message"), str):
            details["message"] = writers.step_message(details["message"])


def _steps(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for step in item.get("steps") or []:
        if isinstance(step, dict):
            yield step
            yield from _steps(step)


def _literal(value: object) -> bool:
    """Whether a parameter's value, as Allure wrote it (``repr``), is a plain literal."""
    if not isinstance(value, str):
        return False
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _inconclusive(
    data: dict[str, Any], rec: ScenarioRecord, failed_at: str, reason: str, redactor: Redactor
) -> None:
    message = f"inconclusive: the profile itself fails at {failed_at}"
    data["status"] = "skipped"
    data["statusDetails"] = {
        "message": message,
        "trace": redactor.redact(f"{reason}\n\nits own failure: {rec.message or ''}"),
    }
    data["labels"] = [
        {"name": "severity", "value": "minor"} if x.get("name") == "severity" else x
        for x in data.get("labels", [])
    ]
    data["description"] = redactor.redact(
        f"**Inconclusive self-check** ({rec.own_check}): {reason}.\n\n"
        f"Troubleshoot the profile at **{failed_at}** first, then run again.\n\n"
        f"Its own failure, for the record:\n\n{writers.quoted(rec.message or '')}"
    )


def _new_result(rec: ScenarioRecord, report: RunReport, redactor: Redactor) -> dict[str, Any]:
    """A result for a scenario allure-pytest-bdd never started."""
    from allure_commons.utils import md5

    if rec.ran and rec.outcome == "failed":
        status, message = "broken", rec.message or "failed before its first step"
    elif rec.nodeid == report.interrupted_at:
        status, message = "broken", "interrupted: the run was stopped during this scenario"
    elif not rec.ran:
        status = "skipped"
        message = "not reached: interrupted" if report.interrupted else "not reached"
    elif rec.outcome == "passed":
        status, message = "passed", "passed"
    else:
        status, message = "skipped", rec.message or rec.outcome
    full_name = f"{os.path.normpath(rec.position[0] or rec.feature)}:{rec.name}"
    now = int(time.time() * 1000)
    own = writers.allure_labels(rec.checks, rec.kind, rec.own_check)
    labels = [{"name": n, "value": v} for n, v in own]
    labels.append({"name": "framework", "value": "pytest-bdd"})
    return {
        "uuid": str(uuidlib.uuid4()),
        "name": writers.test_name(rec),
        "fullName": full_name,
        "testCaseId": md5(full_name),
        "historyId": f"{md5(full_name)}.{md5()}",
        "status": status,
        "statusDetails": {"message": redactor.redact(message)},
        "stage": "finished",
        "start": now,
        "stop": now,
        "labels": labels,
        "description": redactor.redact(message),
    }
