"""Writers of the run record: ``run-summary.json``, JUnit, Allure's vocabulary, the terminal.

Each format is a function of the model (``run/report.py``); adding a format touches only
this module. Every string that leaves the process goes through the run's ``Redactor``
(``rlark_acceptance.secrets``): what the run's scans found, what each text reveals and the
values of secret-named environment variables.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import ALL_CHECKS, BUDGETS, BY_ID, CheckId, earliest
from rlark_acceptance.model.training import OPT_IN, TRAINING_IDS
from rlark_acceptance.rlinf.failures import class_in
from rlark_acceptance.run.report import (
    CheckOutcome,
    CheckResult,
    Kind,
    RunReport,
    ScenarioRecord,
)
from rlark_acceptance.run.report import hint as remedy
from rlark_acceptance.secrets import Redactor

# writers.remedy: the remedy of a failure, as every writer says it (the doc's, or that of the
# class of the Worker's first error when it is one RLinf users meet).
__all__ = ["remedy"]

PAGE = "在单个 GPU 节点上运行 RLinf"
SUMMARY_FILE = "run-summary.json"

# Sections in the page's order, numbered so that every tree sorted by name reads as the page.
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(c.section for c in ALL_CHECKS))


def run_redactor() -> Redactor:
    """The redaction of one run of the suite: its scans' values and the credentials of the
    process's environment (read at each redaction: the session exports the test services')."""
    return Redactor(environ=os.environ)


# -- run-summary.json --------------------------------------------------------------------


def summary_text(report: RunReport, redactor: Redactor) -> str:
    data = redactor.redact_strings(report.summary())
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_summary(report: RunReport, directory: Path, redactor: Redactor) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SUMMARY_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(summary_text(report, redactor), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a record
    return path


# -- doc vocabulary ----------------------------------------------------------------------


def primary_check(checks: Iterable[str]) -> str | None:
    return earliest(list(checks))


def same_section(checks: Iterable[str], primary: str) -> list[str]:
    """The checks of a scenario that sit in its own check's section (the tree's stories): a
    Step 6 scenario that also names 2.1 is listed under 6.1 only."""
    return [c for c in checks if c in BY_ID and BY_ID[c].section == BY_ID[primary].section]


def test_name(s: ScenarioRecord) -> str:
    """What every test tab lists: the checks first. ``[6.3] …`` for the profile's scenario
    (``[3.1-3.7] …`` for one that names several checks of a section), ``[6.3|self-check] …``
    for the others, so that sorted by name (Allure's tree) the profile's own scenario comes
    first within its check ("]" and "-" sort before "|")."""
    mine = same_section(s.checks, s.own_check) if s.own_check in BY_ID else [s.own_check]
    ids = mine[0] if len(mine) < 2 else f"{mine[0]}-{mine[-1]}"  # [3.1-3.7]: one section's
    tag = ids if s.kind == "profile" else f"{ids}|self-check"
    return f"[{tag}] {s.name}"


def section_label(check: str) -> str:
    section = BY_ID[check].section
    return f"{SECTIONS.index(section) + 1:02d} {section}"


def story_label(check: str) -> str:
    return f"{check} {BY_ID[check].says}"


def severity(check: str) -> str:
    """Step 6 and secrets are what a release cannot ship with."""
    if BY_ID[check].kind == "runtime" or check in (CheckId.ENV_NOT_SENSITIVE, CheckId.NO_SECRETS):
        return "critical"
    return "normal"


def doc_anchor(check: str) -> str:
    return "check-" + check.replace(".", "-").lower()


def remedy_label(message: str | None) -> str:
    return "the doc's remedy" if class_in(message or "") is None else "remedy"


def remedy_line(check: str, message: str | None = None) -> str:
    return f"[{check}] {remedy_label(message)}: {remedy(check, message)}"


def step_message(text: str) -> str:
    """A failed step's message as the step wrote it: pytest appends to a failed ``assert``'s
    message its own explanation (``assert <Verdict.FAIL: 'fail'> == 'pass'`` and ``where``
    lines), made of its operands' Python reprs; the record keeps the message alone. An
    ``assert`` without a message keeps the explanation: it is all there is."""
    head, glue, _ = text.partition("\nassert ")
    return head.rstrip() if glue and head.strip() else text


# -- JUnit --------------------------------------------------------------------------------


def junit_classname(checks: Iterable[str], feature: str, primary: str | None = None) -> str:
    first = primary or primary_check(checks)
    return section_label(first) if first else feature


def junit_properties(checks: Iterable[str], kind: Kind) -> list[tuple[str, str]]:
    return [("check", c) for c in checks] + [("acceptance", kind)]


def check_name(check: str) -> str:
    """A check as every surface names it: ``[3.7] <what the page requires>``."""
    return f"[{check}] {BY_ID[check].says}" if check in BY_ID else f"[{check}]"


def junit_xml(report: RunReport, redactor: Redactor, others: Iterable[Any] = ()) -> str:
    """The record as CI test tabs read it (the JUnit schema Jenkins and GitLab read): one
    testcase per check, the unit of every count of the run (``RunReport.counts``).

    One suite for the profile as it is, its testcases the checks in the page's order, each
    named ``[check] what the page requires`` under its doc section: a failed check is
    ``<failure>`` with its cause, ``file:line`` and remedy; a check whose self-check failed
    is ``<error>`` (the harness could not show it catches that mistake); one not reached or
    not selected is ``<skipped>`` with why. The scenarios written for a check (its own, then
    its self-checks, an inconclusive one saying so) are its ``system-out``. An interrupt, a
    usage error or a crash outside the scenarios is one ``<error>`` testcase more saying so
    and where. ``others`` are the session's other testcases (unit tests), kept as pytest
    wrote them in a suite of their own.
    """
    import xml.etree.ElementTree as ET
    from datetime import UTC, datetime

    data = report.summary()
    first = data["earliestFailure"]
    failed_at = first["check"] if first else None
    root = ET.Element("testsuites", name="rlark-acceptance: " + PAGE)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")

    def suite(name: str) -> ET.Element:
        return ET.SubElement(root, "testsuite", name=name, timestamp=stamp, hostname="localhost")

    profile = suite(report_name(data) + " — the profile as it is")
    props = ET.SubElement(profile, "properties")
    warnings = [str(w) for w in data.get("warnings") or []]
    for k, v in (
        ("profile", data["profile"]),
        ("verdict", data["verdict"]),
        ("earliestFailure", failed_at or "none"),
        *(("count." + k, str(n)) for k, n in data["counts"].items()),
        *((("diagnostics", data["diagnostics"]["dir"]),) if data.get("diagnostics") else ()),
        *(("warning", w) for w in warnings),
        *provenance_pairs(data),
    ):
        ET.SubElement(props, "property", name=k, value=redactor.redact(str(v)))
    run_error = _run_error(report, data)
    if run_error is not None:
        tc = ET.SubElement(profile, "testcase", classname="rlark-acceptance", name=run_error[0])
        ET.SubElement(tc, "error", message=redactor.redact(run_error[1]), type=run_error[2])
    for outcome in report.outcomes().values():
        tc = ET.SubElement(
            profile,
            "testcase",
            classname=section_label(outcome.check),
            name=check_name(outcome.check),
            time=f"{sum(x.duration for x in outcome.scenarios):.3f}",
        )
        for tag, attrs, text in _junit_outcome(outcome, failed_at):
            ET.SubElement(tc, tag, attrs).text = redactor.redact(text) if text else None
        lines = [_scenario_line(report, x, outcome.check, failed_at) for x in outcome.scenarios]
        if lines:
            ET.SubElement(tc, "system-out").text = redactor.redact("\n".join(lines) + "\n")
    if warnings:
        # What the record warns of (lines that may be missing, a stage that regressed, what
        # a clean-up left) beside the verdict: a CI page that shows the suite's output shows
        # them, and a consumer reads them as the suite's ``warning`` properties.
        out = ET.SubElement(profile, "system-out")
        out.text = redactor.redact("".join(f"warning: {w}\n" for w in warnings))
    extra = list(others)
    if extra:
        rest = suite("other tests")
        rest.extend(extra)
    for element in root.iter("testsuite"):
        _count(element)
    _count(root, suites=True)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _run_error(report: RunReport, data: dict[str, Any]) -> tuple[str, str, str] | None:
    """(testcase name, message, type) of what stopped the run outside a check's verdict."""
    if report.interrupted:
        where = data.get("interruptedAt") or {}
        s = report.scenarios.get(report.interrupted_at or "")
        place = f"during {test_name(s)}" if s is not None else "between scenarios"
        step = f", at step {where['step']}" if where.get("step") else ""
        return (
            f"[run] interrupted {place}",
            f"the run was interrupted (SIGINT / SIGTERM) {place}{step}; what never ran is "
            "not reached: the release is not accepted",
            "interrupted",
        )
    if report.error:
        return ("[run] error", f"{report.error}: the release is not accepted", "error")
    return None


def _junit_outcome(
    outcome: CheckOutcome, failed_at: str | None
) -> list[tuple[str, dict[str, str], str | None]]:
    check = outcome.check
    if outcome.status == "passed":
        return []
    if outcome.status in ("notReached", "notSelected"):
        return [("skipped", {"message": outcome.message or "not reached"}, None)]
    if outcome.status == "broken":
        message = f"[{check}] {outcome.message}"
        return [("error", {"message": message, "type": "self-check"}, outcome.message)]
    cause = outcome.message or "failed"
    mine = next(
        (x for x in outcome.scenarios if x.kind == "profile" and x.outcome == "failed"), None
    )
    first = " (the earliest failing check)" if check == failed_at else ""
    message = f"[{check}] failed{first}: {cause} → {remedy(check, cause)}"
    body = [
        f"at: {outcome.location}" if outcome.location else "",
        f"step: {mine.step}" if mine is not None and mine.step else "",
        cause,
        remedy_line(check, cause),
    ]
    return [("failure", {"message": message, "type": check}, "\n".join(b for b in body if b))]


def _scenario_line(report: RunReport, s: ScenarioRecord, check: str, failed_at: str | None) -> str:
    """One scenario of a check, as its testcase's output lists it: a scenario of the profile
    that decides several checks, by what it found of this one."""
    if not s.ran:
        word = "NOT FINISHED" if s.nodeid == report.interrupted_at else "NOT REACHED"
        return f"{word} {test_name(s)}"
    reason = report.inconclusive(s, failed_at)
    if reason is not None:
        return f"INCONCLUSIVE {test_name(s)}: {reason}"
    result = s.result(check) if s.kind == "profile" else CheckResult(check, s.outcome, s.message)
    word = {"passed": "PASSED", "failed": "FAILED", "notReached": "NOT REACHED"}.get(
        result.status, "SKIPPED"
    )
    said = f": {result.message}" if result.message and result.status != "passed" else ""
    return f"{word} {test_name(s)}{said}"


def _count(element: Any, *, suites: bool = False) -> None:
    cases = list(element.iter("testcase"))
    counts = {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
    }
    time = sum(float(c.get("time") or 0) for c in cases)
    for k, v in counts.items():
        if suites and k == "skipped":
            continue  # the schema's testsuites has no skipped count
        element.set(k, str(v))
    element.set("time", f"{time:.3f}")


# -- Allure --------------------------------------------------------------------------------


def doc_link(check: str, base: str | None) -> tuple[str, str] | None:
    """(url, name) of the doc section, when the doc's address is known."""
    if not base:
        return None
    return f"{base}#{doc_anchor(check)}", f"doc: {BY_ID[check].section}"


def allure2_categories() -> list[dict[str, Any]]:
    """Allure 2's categories.json: one per doc section, matched on the ``[check]`` prefix
    every failure message carries."""
    out = []
    for i, section in enumerate(SECTIONS, 1):
        ids = "|".join(re.escape(c.id) for c in ALL_CHECKS if c.section == section)
        out.append(
            {
                "name": f"{i:02d} not accepted: {section}",
                "matchedStatuses": ["failed", "broken"],
                "messageRegex": rf"(?s).*\[({ids})\].*",
            }
        )
    return out


def executor(report_name: str, build: str | None = None) -> dict[str, Any]:
    ci = os.environ.get("CI")
    return {
        "name": "rlark-acceptance" + (" (CI)" if ci else ""),
        "type": "ci" if ci else "local",
        "reportName": report_name,
        "buildName": build or report_name,
    }


def environment(profile: str, summary: dict[str, Any]) -> dict[str, str]:
    import platform

    warnings = [str(w) for w in summary.get("warnings") or []]
    return {
        "profile": profile,
        "verdict": str(summary["verdict"]),
        "earliestFailure": (summary["earliestFailure"] or {}).get("check") or "none",
        # On the report's overview, beside the verdict (Allure's environment widget).
        "warnings": str(len(warnings)),
        **{f"warning.{i}": " ".join(w.split()) for i, w in enumerate(warnings, 1)},
        **dict(provenance_pairs(summary)),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def provenance_pairs(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """What the run ran with, as ``provenance.<key>`` pairs (JUnit's suite properties,
    Allure's environment): the keys the run knows, in the record's order."""
    found = summary.get("provenance") or {}
    return [(f"provenance.{k}", str(v)) for k, v in found.items() if v is not None]


def report_name(summary: dict[str, Any]) -> str:
    verdict = summary["verdict"]
    word = {"passed": "ACCEPTED", "interrupted": "INTERRUPTED"}.get(verdict, "NOT ACCEPTED")
    first = summary.get("earliestFailure") or summary.get("interruptedAt") or {}
    tail = f" at {first['check']}" if first.get("check") else ""
    return f"RLark acceptance: {PAGE} — {word}{tail}"


# -- the terminal ---------------------------------------------------------------------------


def terminal_lines(data: dict[str, Any], path: Path) -> list[str]:
    """The record as the run's last lines: verdict, earliest failure and remedy, the rest."""
    counts = {
        s: sum(1 for v in data["checks"].values() if v == s)
        for s in ("passed", "failed", "notReached", "skipped")
    }
    # An opt-in training check not selected (T.4) is no training check of this run.
    training = [
        c
        for c in data["checks"]
        if c in TRAINING_IDS and not (c in OPT_IN and data["checks"][c] == "skipped")
    ]
    beyond = set(TRAINING_IDS) | {c.id for c in BUDGETS}
    page = [c for c in data["checks"] if c not in beyond]
    passed_page = sum(1 for c in page if data["checks"][c] == "passed")
    passed_training = sum(1 for c in training if data["checks"][c] == "passed")
    budgets = [data["checks"].get(c.id, "skipped") for c in BUDGETS]
    out = [
        f"verdict: {data['verdict']}  checks: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['notReached']} not reached, "
        f"{counts['skipped']} not selected (the page's {passed_page}/{len(page)}, the "
        f"training's {passed_training}/{len(training)} passed; budgets {', '.join(budgets)})"
        f"  ({path})"
    ]
    if data.get("runId"):
        out.append(f"run id: {data['runId']}")
    if data.get("error"):
        out.append(f"error: {data['error']}")
    where = data.get("interruptedAt")
    if where:
        place = f"during [{where['check']}] {where['scenario']}" if where["scenario"] else ""
        step = f" (step: {where['step']})" if where.get("step") else ""
        out.append(f"interrupted {place or 'between scenarios'}{step}")
    e = data["earliestFailure"]
    if e:
        where = f" ({e['location']})" if e.get("location") else ""
        out += [f"earliest failing check: {e['check']}{where} — {e['message']}", f"  → {e['hint']}"]
    cause = data.get("firstCause")
    if cause:
        kind = f" [{cause['class']}: {cause['title']}]" if cause.get("class") else ""
        out.append(
            f"the Worker's first error{kind} (log line {cause['logLine']}): {cause['quote']}"
        )
    bundle = data.get("diagnostics")
    if bundle:
        files = bundle.get("files") or {}
        out.append(
            f"diagnostics: {bundle['dir']} ({len(files)} files, {bundle.get('bytes', 0)} bytes;"
            f" {bundle.get('index', 'index.json')} lists them)"
        )
    if data["notReached"]:
        out.append("not reached: " + ", ".join(data["notReached"]))
    self_checks = data["selfChecks"]
    for entry in self_checks["failed"]:
        out += [
            f"self-check failed: [{entry['check']}|self-check] {entry['scenario']}",
            f"  {entry['message']}",
        ]
    inconclusive = self_checks.get("inconclusive") or []
    if inconclusive:
        at = e["check"] if e else "?"
        out.append(
            f"self-checks inconclusive: {len(inconclusive)} (not failures: the profile itself "
            f"fails at {at}, and they start from it)"
        )
        out += [f"  INCONCLUSIVE [{x['check']}|self-check] {x['scenario']}" for x in inconclusive]
    not_applicable = self_checks.get("notApplicable") or []
    if not_applicable:
        out.append(
            f"self-checks not applicable to this profile: {len(not_applicable)} (not passes: "
            "they break the training through the smoke workload, which it does not run)"
        )
        out += [f"  N/A [{x['check']}|self-check] {x['scenario']}" for x in not_applicable]
    for warning in data.get("warnings") or []:
        out.append(f"warning: {warning}")
    if data["durations"]:
        out.append("durations: " + ", ".join(f"{k} {v:.1f}s" for k, v in data["durations"].items()))
    return out
