"""Per-check results and evidence from what a scenario produced: a pre-flight or a run.

A scenario that asserts "checks 3.1 … 3.7 pass" fails as a whole; the run record needs to
know that 3.7 failed, with which finding and where, and that 3.1 passed. A Step 6 scenario
that never got its phase needs ``notReached``, with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import CheckId, earliest
from rlark_acceptance.model.findings import Location, Severity
from rlark_acceptance.model.training import TRAINING_IDS
from rlark_acceptance.preflight.entry import PreflightResult, sorted_findings
from rlark_acceptance.run.outcome import AcceptanceRun
from rlark_acceptance.run.report import CheckResult, Evidence
from rlark_acceptance.run.step6.log import is_script_output
from rlark_acceptance.run.step6.plan import manifest_of
from rlark_acceptance.secrets import Redactor

NOT_REACHED = "not reached"  # how a step says its check was never reached (a skip reason)
# How a step says a training check is off (``training:`` of the profile): skipped, not failed.
TRAINING_OFF = "off: the profile's training.checks leave it out"
# ... and the opt-in one, which no default run makes (a second submission of its own).
RESUME_OFF = (
    "off: opt-in (a second submission); the profile's training.resume: true turns it on, "
    "as does selecting its scenario by its tag (-m resume)"
)


def off_reason(check: str) -> str:
    """Why a training check the run does not decide is skipped."""
    return RESUME_OFF if check == CheckId.RESUMES else TRAINING_OFF


def preflight_results(pre: PreflightResult, checks: list[str]) -> list[CheckResult]:
    out = []
    for check in checks:
        status = pre.outcome.status(check)
        errors = [
            f for f in sorted_findings(pre.findings) if f.check == check and f.severity == "error"
        ]
        if status == "failed" and errors:
            located = next((f.location for f in errors if f.location is not None), None)
            out.append(
                CheckResult(
                    check,
                    "failed",
                    # "code — message": as "code: message", a code such as
                    # secret-huggingface-token reads as a secret's name to the redaction,
                    # and the variable's name (HF_TOKEN) went with the "value".
                    "; ".join(f"{f.code} — {f.message}" for f in errors),
                    located,
                )
            )
        elif status == "passed":
            out.append(CheckResult(check, "passed"))
    return out


def run_results(run: AcceptanceRun, checks: list[str]) -> list[CheckResult]:
    """Step 6's phases (and 1.1 / 1.2 read back from the Worker) as check results."""
    if run.record is None:
        why = preflight_stop(run.preflight)
        return [CheckResult(c, "notReached", why) for c in checks]
    out = []
    for check in checks:
        p = run.record.phases.get(check)
        if check in TRAINING_IDS and check not in run.record.training:
            out.append(CheckResult(check, "skipped", off_reason(check)))  # the profile's choice
        elif p is None or p.status not in ("passed", "failed"):  # skipped / not reached
            failed = run.record.earliest_failure
            why = f"{NOT_REACHED}: {failed.check} failed" if failed else NOT_REACHED
            out.append(CheckResult(check, "notReached", p.message if p else why))
        elif p.status == "failed":
            out.append(CheckResult(check, "failed", p.message, runtime_location(run, check)))
        else:
            out.append(CheckResult(check, "passed", p.message))
    return out


def runtime_location(run: AcceptanceRun, check: str) -> Location | None:
    """``file:line`` of the one field that decides a runtime failure, where one does.

    6.4: the profile's ``runInfo.firstSignal`` (the pattern the logs never showed). 6.3,
    when the Worker exited with an error before Ray printed anything: the Job's prepare
    script, the only thing that runs before ``ray start``.
    """
    pre, rec = run.preflight, run.record
    if rec is None:
        return None
    if check == CheckId.PROGRESS_LOGGED and pre.profile is not None:
        return pre.profile.loc("runInfo", "firstSignal")
    role = pre.job.worker if pre.job is not None else None
    if check != CheckId.RAY_HEAD_STARTED or role is None or not role.prepare_script:
        return None
    exited = any(p.exit_code not in (None, 0) for p in rec.pods)
    ray_spoke = any(line.strip() and not is_script_output(line) for line in rec.log)
    if not exited or ray_spoke:
        return None
    return role.doc.text_loc("spec", "roles", role.index, "prepareScript")


def preflight_stop(pre: PreflightResult) -> str:
    """Why nothing was submitted: the pre-flight's earliest failing check."""
    failed = [f.check for f in pre.findings if f.severity == Severity.ERROR]
    first = earliest(failed)
    return (
        f"{NOT_REACHED}: the pre-flight failed at check {first}, nothing was submitted"
        if first
        else f"{NOT_REACHED}: the pre-flight did not pass, nothing was submitted"
    )


def job_yaml(pre: PreflightResult) -> str | None:
    """The Job YAML as the user wrote it (their file, so finding lines match), else rendered."""
    if pre.job is None:
        return None
    path = Path(str(pre.job.doc.path))
    if path.is_file():
        return path.read_text(encoding="utf-8", errors="replace")
    return manifest_of(pre.job)


def findings_json(pre: PreflightResult) -> str:
    return json.dumps(pre.to_json(), indent=2, ensure_ascii=False)


def effective_config_json(pre: PreflightResult) -> str | None:
    if pre.rlinf is None:
        return None
    return json.dumps(pre.rlinf.config.resolved(), indent=2, ensure_ascii=False, default=str)


def pods_and_events_json(run: AcceptanceRun) -> str | None:
    rec = run.record
    if rec is None:
        return None
    failure = rec.earliest_failure
    dump: dict[str, Any] = {
        "earliestFailure": failure.__dict__ if failure else None,
        "phases": {c: p.__dict__ for c, p in rec.phases.items()},
        "pods": [p.__dict__ for p in rec.pods],
        "events": [e.__dict__ for e in rec.events],
    }
    return json.dumps(dump, indent=2, ensure_ascii=False, default=str)


# -- the texts a report shows beside a failure ----------------------------------------------


def scenario_evidence(seen: dict[str, Any], redactor: Redactor) -> list[Evidence]:
    """What explains a scenario's failure, from the values its steps produced: the Job YAML
    (the user's file, so finding lines match), the pre-flight findings, the effective RLinf
    config, the Worker log excerpt (and T.4's second Worker's), the Pods and events."""
    run = seen.get("fault_run") or seen.get("run")
    pre = seen.get("preflight") or getattr(run, "preflight", None)
    out: list[tuple[str | None, str, str]] = []
    if pre is not None:
        out += [
            (job_yaml(pre), "Job YAML", "yaml"),
            (findings_json(pre), "pre-flight findings", "json"),
            (effective_config_json(pre), "effective RLinf config", "json"),
        ]
    elif seen.get("workspace") is not None:
        path = seen["workspace"].root / "job.yaml"
        if path.is_file():
            out.append((path.read_text(encoding="utf-8"), "Job YAML", "yaml"))
    record = getattr(run, "record", None)
    if run is not None and record is not None:
        out.append((record.log_excerpt(), "Worker log (excerpt)", "text"))
        resumed = getattr(record, "resumed", None)  # T.4's second submission: its own log
        if resumed is not None:
            out.append((resumed.record.log_excerpt(), "resumed Worker log (excerpt)", "text"))
        out.append((pods_and_events_json(run), "Pods and events", "json"))
    return _redacted(out, redactor)


def run_evidence(run: AcceptanceRun, redactor: Redactor) -> list[Evidence]:
    """The one submission every Step 6 scenario shares is the run's, not scenario 6.1's:
    its Job YAML, Worker log and Pods / events belong to the whole run."""
    record = run.record
    return _redacted(
        [
            (job_yaml(run.preflight), "Step 6: the submitted Job YAML", "yaml"),
            (
                record.log_excerpt() if record is not None else None,
                "Step 6: Worker log (excerpt)",
                "text",
            ),
            (pods_and_events_json(run), "Step 6: Pods and events", "json"),
        ],
        redactor,
    )


def _redacted(parts: list[tuple[str | None, str, str]], redactor: Redactor) -> list[Evidence]:
    return [Evidence(name, kind, redactor.redact(body)) for body, name, kind in parts if body]
