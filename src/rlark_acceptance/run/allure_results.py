"""The Allure results of a run: one result per check, a pure function of the run report.

Allure's header and tree count results, and the record counts checks
(``RunReport.counts``): so each check is one result, in the page's order, named ``[3.7]
<what the check says>``, and the run's ``error`` entry (an interrupt, a usage error) is one
``[run] …`` result more, ``broken``. A check's status is its outcome's: ``failed``,
``broken`` (its own scenarios passed, a self-check of it failed), ``passed``, and
``skipped`` for ``not reached …`` and ``not selected …`` (the words its message starts
with). The scenarios written for the check are its steps, the profile's first, each with its
evidence as attachments; a failed check's message is said once, in ``statusDetails`` (opening
with ``[check]``: the gate of ``allurerc.mjs`` and the categories read it), its remedy and
``file:line`` in the description.

``results`` returns the files (name → text) and ``write`` puts them in a directory it
empties first; every text goes through the run's ``Redactor``, also those redacted when they
were taken (the redaction knows more values by the end of the run).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import BY_ID
from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.report import (
    CheckOutcome,
    Evidence,
    RunReport,
    ScenarioRecord,
    page_order,
)
from rlark_acceptance.secrets import Redactor

DIRECTORY = "allure-results"
# Allure's status of each outcome (the record's words stay in the message).
STATUS = {
    "passed": "passed",
    "failed": "failed",
    "broken": "broken",
    "notReached": "skipped",
    "notSelected": "skipped",
}
_MIME = {"yaml": ("application/yaml", "yaml"), "json": ("application/json", "json")}
_TEXT = ("text/plain", "txt")
# What ``write`` removes first: the files of Allure results, whoever wrote them.
_OURS = re.compile(r".+-(result|container|globals)\.json|.+-attachment(\..+)?")
_EXTRAS = ("categories.json", "environment.properties", "executor.json")
# The keys of a result whose texts come from the run (a message, a scenario's name, a step).
_READ = frozenset({"name", "message", "trace", "description", "reportName", "buildName"})


@dataclass
class _Files:
    """The results being made: every file, and the ids that name them."""

    run_id: str
    redactor: Redactor
    files: dict[str, str] = field(default_factory=dict)
    said: dict[str, str] = field(default_factory=dict)  # each text's redaction, once

    def uuid(self, *key: str) -> str:
        """Stable for one run (a test reads the same names twice), unique across runs and
        profiles (a release merges them into one directory)."""
        return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "/".join([self.run_id, *key])))

    def attach(self, evidence: Evidence, *key: str) -> dict[str, str]:
        mime, ext = _MIME.get(evidence.kind, _TEXT)
        source = f"{self.uuid('attachment', *key)}-attachment.{ext}"
        self.files[source] = self.redactor.redact(evidence.text)
        return {"name": evidence.name, "source": source, "type": mime}

    def put(self, name: str, data: Any) -> None:
        self.files[name] = json.dumps(self._redacted(data), ensure_ascii=False)

    def _redacted(self, data: Any, key: str = "") -> Any:
        """The texts a reader reads (names, messages, descriptions) redacted; ids, stamps
        and the labels' values (the page's own words) as they are: a scan of every string
        of 46 results costs a second, of these few a tenth of it."""
        if isinstance(data, dict):
            return {k: self._redacted(v, k) for k, v in data.items()}
        if isinstance(data, list):
            return [self._redacted(v, key) for v in data]
        if isinstance(data, str) and key in _READ:
            if data not in self.said:
                self.said[data] = self.redactor.redact(data)
            return self.said[data]
        return data


def results(report: RunReport, redactor: Redactor, doc_url: str | None = None) -> dict[str, str]:
    """Every file of the results directory, by name: a result per check and one for the
    run's error when it has one, their attachments, the run-wide attachments (the shared
    Step 6 run's evidence, ``run-summary.json``), the categories, environment and executor."""
    out = _Files(report.run_id, redactor)
    end = max((_stop(s) for s in report.scenarios.values() if s.started), default=None)
    for outcome in report.outcomes().values():
        result = _check_result(outcome, report, out, doc_url, end)
        out.put(f"{result['uuid']}-result.json", result)
    run_error = _run_result(report, out, end)
    if run_error is not None:
        out.put(f"{run_error['uuid']}-result.json", run_error)
    shared = [
        *report.evidence,
        Evidence(writers.SUMMARY_FILE, "json", writers.summary_text(report, redactor)),
    ]
    attachments = [out.attach(e, "run", str(i)) for i, e in enumerate(shared)]
    out.put(f"{out.uuid('globals')}-globals.json", {"attachments": attachments, "errors": []})
    summary = report.summary()
    out.put("categories.json", writers.allure2_categories())
    env = writers.environment(report.profile, summary)
    out.files["environment.properties"] = redactor.redact(
        "".join(f"{k}={v}\n" for k, v in env.items())
    )
    out.put("executor.json", writers.executor(writers.report_name(summary)))
    return out.files


def write(directory: Path, files: dict[str, str], history: Path | None = None) -> None:
    """The results in ``directory``, none of an earlier run's left; ``history``: an
    earlier rendered report's ``history/`` (Allure 2 reads it from the results)."""
    clean(directory)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    if history is not None and history.is_dir():
        shutil.copytree(history, directory / "history", dirs_exist_ok=True)


def clean(directory: Path) -> None:
    """Remove an earlier run's results from ``directory``: only files of Allure results, so
    a directory given by mistake (``--alluredir .``) keeps everything else."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.iterdir():
        if path.is_file() and (_OURS.fullmatch(path.name) or path.name in _EXTRAS):
            path.unlink()
    shutil.rmtree(directory / "history", ignore_errors=True)


# -- one check ----------------------------------------------------------------------------


def history_id(check: str) -> str:
    """The same for a check in every run, so that Allure's history follows the check."""
    return hashlib.md5(f"rlark-acceptance check {check}".encode()).hexdigest()


def name(check: str) -> str:
    return f"[{check}] {BY_ID[check].says}"


def _check_result(
    o: CheckOutcome, report: RunReport, out: _Files, doc_url: str | None, end: float | None
) -> dict[str, Any]:
    c = o.check
    # From its first scenario's start, as long as its scenarios took together: its
    # self-checks run later in the session, and the span between would read as its cost.
    steps = scenarios_of(o, report)
    ran = [s for s in steps if s.started]
    start = min((s.started or 0.0 for s in ran), default=end)
    stop = None if start is None else start + sum(s.duration for s in ran)
    result: dict[str, Any] = {
        "uuid": out.uuid("check", c),
        "historyId": history_id(c),
        "testCaseId": history_id(c),
        "fullName": f"rlark-acceptance.{c}",
        "name": name(c),
        "status": STATUS[o.status],
        "stage": "finished",
        "description": _description(o, report),
        "labels": [{"name": n, "value": v} for n, v in labels(o)],
        "links": _links(c, doc_url),
        "steps": [_scenario_step(s, o, report, out, start) for s in steps],
        "attachments": [],
        "parameters": [],
    }
    message = _message(o, report)
    if message is not None:
        result["statusDetails"] = {"message": message}
    if start is not None and stop is not None:
        result["start"], result["stop"] = _ms(start), _ms(stop)
    return result


def labels(o: CheckOutcome) -> list[tuple[str, str]]:
    """The tree is the page (epic → numbered doc section → the check); ``acceptance`` says
    whose verdict it is: the profile's, or (a broken check) the harness's self-check."""
    c = o.check
    out = [
        ("epic", writers.PAGE),
        ("feature", writers.section_label(c)),
        ("story", writers.story_label(c)),
        ("severity", writers.severity(c)),
        ("acceptance", "self-check" if o.status == "broken" else "profile"),
        ("parentSuite", writers.PAGE),
        ("suite", writers.section_label(c)),
        ("subSuite", writers.story_label(c)),
        ("framework", "rlark-acceptance"),
    ]
    if o.status == "failed":
        out.append(("failedCheck", c))  # what the quality gate names
    return out


def _links(check: str, doc_url: str | None) -> list[dict[str, str]]:
    link = writers.doc_link(check, doc_url)
    return [] if link is None else [{"name": link[1], "url": link[0], "type": "link"}]


def _message(o: CheckOutcome, report: RunReport) -> str | None:
    """What the check's page says first, once: ``[3.7] <why it failed>``, ``not reached …``."""
    if o.status in ("failed", "broken"):
        return f"[{o.check}] {o.message or o.status}"
    if o.status == "notReached":
        if any(s.nodeid == report.interrupted_at for s in o.scenarios):
            return "not finished: the run was interrupted during this check's scenario"
        said = _opening("not reached", o.message)
        return "not reached: interrupted" if said == "not reached" and report.interrupted else said
    if o.status == "notSelected":
        return _opening("not selected", o.message)
    return None


def _opening(words: str, message: str | None) -> str:
    if not message or message == words:
        return words
    return message if message.startswith(words) else f"{words}: {message}"


def _description(o: CheckOutcome, report: RunReport) -> str:
    """What the check is and, when it failed, the remedy and where: never the message again."""
    check = BY_ID[o.check]
    parts = [f"**{o.check}** ({check.section}): {check.says}"]
    if o.status == "failed":
        first = report.profile_failed_at() == o.check
        parts[0] += " — **the earliest failing check**" if first else ""
        parts.append(f"**{writers.remedy_label(o.message).capitalize()}:** {o.remedy}")
        if o.location:
            parts.append(f"**Where:** `{o.location}`")
    elif o.status == "broken":
        parts.append(
            "The profile's own scenarios passed; a self-check failed: the harness could not "
            "show that it catches this mistake."
        )
    return "\n\n".join(parts)


# -- its scenarios, as steps -----------------------------------------------------------------


def scenarios_of(o: CheckOutcome, report: RunReport) -> list[ScenarioRecord]:
    """The check's steps: the scenarios written for it, and the profile's scenarios that
    decide it among other checks (the one scenario of 3.1-3.7 decides 3.7 too), in the
    page's order."""
    mine = {s.nodeid for s in o.scenarios}
    more = [s for s in report.of_kind("profile") if o.check in s.checks and s.nodeid not in mine]
    return sorted([*o.scenarios, *more], key=page_order)


def _scenario_step(
    s: ScenarioRecord, o: CheckOutcome, report: RunReport, out: _Files, at: float | None
) -> dict[str, Any]:
    start = s.started if s.started is not None else at
    step: dict[str, Any] = {"name": writers.test_name(s), "stage": "finished"}
    if start is not None:
        step["start"], step["stop"] = _ms(start), _ms(start + (s.duration if s.started else 0))
    status, message, failing = _scenario_status(s, o, report)
    step["status"] = status
    if message:
        step["statusDetails"] = {"message": message}
    if failing is not None:
        step["steps"] = [failing]
    # Its evidence once: at the check whose failure it explains.
    explains = s.failed_check() if s.kind == "profile" else s.own_check
    evidence = s.evidence if explains == o.check else []
    key = (o.check, s.nodeid)
    step["attachments"] = [out.attach(e, *key, str(i)) for i, e in enumerate(evidence)]
    return step


def _scenario_status(
    s: ScenarioRecord, o: CheckOutcome, report: RunReport
) -> tuple[str, str | None, dict[str, Any] | None]:
    """(status, message, the failing step) of one scenario of a check: the profile's by
    what it found of this check, a self-check by its own outcome."""
    if not s.ran:
        if s.nodeid == report.interrupted_at:
            return "skipped", "not finished: the run was interrupted during this scenario", None
        return "skipped", "not reached: interrupted" if report.interrupted else "not reached", None
    found = s.result(o.check) if s.kind == "profile" else None
    status = found.status if found is not None else s.outcome
    if status == "passed":
        return "passed", None, None
    if status == "notReached":
        return "skipped", _opening("not reached", found.message if found else s.message), None
    if status != "failed":
        return "skipped", s.message or status, None
    failed_at = report.profile_failed_at()
    if report.inconclusive(s, failed_at) is not None:
        # Started from a broken profile: proves nothing either way. Its own failure is kept
        # below, for the record.
        said = f"inconclusive: the profile itself fails at {failed_at}"
        return "skipped", said, _failing_step(s, s.message)
    # The check's message is this scenario's finding (or, broken, quotes the self-check's
    # failure): said once, above; another finding of the same check is said here.
    own = found.message if found is not None else s.message
    return "failed", None, _failing_step(s, None if own and own in (o.message or "") else own)


def _failing_step(s: ScenarioRecord, message: str | None) -> dict[str, Any]:
    """The Gherkin step that failed, and what it said when the check's message does not."""
    step: dict[str, Any] = {"name": s.step or "(a step)", "status": "failed", "stage": "finished"}
    if s.started is not None:  # when it failed is not kept: at the scenario's end
        step["start"] = step["stop"] = _ms(_stop(s))
    if message:
        step["statusDetails"] = {"message": message}
    return step


# -- the run's error -------------------------------------------------------------------------


def _run_result(report: RunReport, out: _Files, end: float | None) -> dict[str, Any] | None:
    """An interrupt, a usage error or a crash outside the scenarios: one result, broken."""
    error = report.run_error()
    if error is None:
        return None
    if report.interrupted:
        where = report.interruption() or {}
        place = (
            f"during [{where['check']}] {where['scenario']}"
            if where.get("scenario")
            else "between scenarios"
        )
        step = f", at step {where['step']}" if where.get("step") else ""
        title = f"[run] interrupted {place}"
        message = (
            f"the run was interrupted (SIGINT / SIGTERM) {place}{step}: what never ran is "
            "not reached"
        )
    else:
        title, message = "[run] error", error
    result: dict[str, Any] = {
        "uuid": out.uuid("run"),
        "historyId": history_id("run"),
        "testCaseId": history_id("run"),
        "fullName": "rlark-acceptance.run",
        "name": title,
        "status": "broken",
        "statusDetails": {"message": message},
        "stage": "finished",
        "description": "The run stopped outside the checks' verdicts: the release is not accepted.",
        "labels": [{"name": n, "value": v} for n, v in _run_labels()],
    }
    if end is not None:
        result["start"] = result["stop"] = _ms(end)
    return result


RUN_SECTION = "00 the run"


def _run_labels() -> list[tuple[str, str]]:
    """Its own section, first in the tree; ``acceptance=run``: no check of the profile, so
    the gate counts the checks alone (the one the run stopped in says ``not finished``)."""
    return [
        ("epic", writers.PAGE),
        ("feature", RUN_SECTION),
        ("severity", "critical"),
        ("acceptance", "run"),
        ("parentSuite", writers.PAGE),
        ("suite", RUN_SECTION),
        ("framework", "rlark-acceptance"),
    ]


def _stop(s: ScenarioRecord) -> float:
    return (s.started or 0.0) + s.duration


def _ms(seconds: float) -> int:
    return round(seconds * 1000)
