"""The release record: every profile's verdict read back from its own run record.

- ``release-summary.json`` (docs/contract.md §6): the release verdict, then per profile its
  verdict, its earliest failing check with the doc's remedy and ``location``, the checks not
  reached, the Step 6 durations, its run id and where its record is;
- the terminal's table, profile × doc section, each cell the earliest failing check of that
  section, then each profile not accepted with its failure and remedy;
- ``junit.xml``: one testsuite per profile holding its testcases (both of its own suites),
  as CI test tabs read it.

Nothing here looks inside a profile's session: only at what its record says, so a record a
runner fetched back from a cluster reads the same.
"""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import BY_ID, ORDER
from rlark_acceptance.release.release_file import ListedProfile, ReleaseFile
from rlark_acceptance.release.runner import ProfileOutcome
from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.secrets import Redactor

RELEASE_FILE = "release-summary.json"
JUNIT_FILE = "junit.xml"


@dataclass(frozen=True)
class ProfileResult:
    listed: ListedProfile
    outcome: ProfileOutcome
    summary: dict[str, Any] | None  # its run-summary.json; None: no (readable) record


def read_result(listed: ListedProfile, outcome: ProfileOutcome) -> ProfileResult:
    path = outcome.record_dir / writers.SUMMARY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    return ProfileResult(listed, outcome, data if isinstance(data, dict) else None)


def _stamp(epoch: float) -> str:
    """ISO 8601 in UTC, to the millisecond: ``2026-12-01T13:17:05.123Z``."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def profile_verdict(r: ProfileResult) -> str:
    """passed | failed | interrupted (its run's verdict), error (a usage error or crash of
    its session), noRecord (the session left no run-summary.json), notStarted."""
    if r.summary is None:
        problem = r.outcome.problem or ""
        return "notStarted" if problem.startswith("not started") else "noRecord"
    if r.summary.get("error"):
        return "error"
    return str(r.summary.get("verdict") or "noRecord")


def accepted(r: ProfileResult) -> bool:
    """Its run passed and its session agreed (exit 0: no failing self-check either)."""
    return profile_verdict(r) == "passed" and r.outcome.exit_status == 0


def sections(summary: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per doc section: its status and the check to start at (failed first, else the
    earliest not reached), in the page's order."""
    out: dict[str, dict[str, Any]] = {}
    checks: dict[str, str] = (summary or {}).get("checks") or {}
    for section in writers.SECTIONS:
        ids = sorted(
            (c for c in checks if c in BY_ID and BY_ID[c].section == section),
            key=lambda c: ORDER[c],
        )
        statuses = [checks[c] for c in ids]
        label = writers.section_label(ids[0]) if ids else _label_of(section)
        for status in ("failed", "notReached"):
            if status in statuses:
                out[label] = {"status": status, "check": ids[statuses.index(status)]}
                break
        else:
            if "passed" in statuses:
                out[label] = {"status": "passed", "check": None}
            else:
                out[label] = {"status": "skipped", "check": None}
    return out


def _label_of(section: str) -> str:
    return f"{writers.SECTIONS.index(section) + 1:02d} {section}"


def _profile_entry(r: ProfileResult, reports: Path) -> dict[str, Any]:
    s = r.summary or {}
    failed_selfs = (s.get("selfChecks") or {}).get("failed") or []
    entry: dict[str, Any] = {
        "name": r.listed.name,
        "profile": r.listed.shown,
        "listedAt": r.listed.listed_at,
        "verdict": profile_verdict(r),
        "accepted": accepted(r),
        "runId": s.get("runId"),
        "earliestFailure": s.get("earliestFailure"),
        "notReached": s.get("notReached") or [],
        "selfChecksFailed": [f"[{x['check']}|self-check] {x['scenario']}" for x in failed_selfs],
        "sections": sections(r.summary),
        "durations": s.get("durations") or {},
        "startedAt": _stamp(r.outcome.started),
        "elapsed": round(r.outcome.elapsed, 3),
        "exitStatus": r.outcome.exit_status,
        "record": _relative(r.outcome.record_dir, reports),
    }
    for key in ("interruptedAt", "error", "warnings"):
        if s.get(key):
            entry[key] = s[key]
    if r.outcome.problem:
        entry["problem"] = r.outcome.problem
    return entry


def _relative(path: Path, base: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(base.resolve())) + "/"
    return str(path) + "/"


def release_summary(
    release: ReleaseFile,
    results: list[ProfileResult],
    redactor: Redactor,
    *,
    reports: Path,
    started: float,
    elapsed: float,
    interrupted: bool,
    jobs: int,
    runner: str,
) -> dict[str, Any]:
    entries = [_profile_entry(r, reports) for r in results]
    good = sum(1 for e in entries if e["accepted"])
    verdict = (
        "interrupted" if interrupted else "accepted" if good == len(entries) else "notAccepted"
    )
    data: dict[str, Any] = {
        "release": release.name,
        "releaseFile": str(release.path) if release.path else None,
        "verdict": verdict,
        "accepted": good,
        "total": len(entries),
        "line": "",
        "startedAt": _stamp(started),
        "elapsed": round(elapsed, 3),
        "jobs": jobs,
        "runner": runner,
        "profiles": entries,
    }
    data["line"] = verdict_line(data)
    return redactor.redact_strings(data)


def _failed_at(e: dict[str, Any]) -> str:
    first = e.get("earliestFailure")
    if first:
        return f"fails at {first['check']}"
    if e["verdict"] == "interrupted":
        at = (e.get("interruptedAt") or {}).get("check")
        return f"interrupted at {at}" if at else "interrupted"
    if e["selfChecksFailed"]:
        return f"a self-check fails ({e['selfChecksFailed'][0]})"
    if e["notReached"]:
        return f"not reached from {e['notReached'][0]}"
    return {
        "error": "its run stopped with an error",
        "noRecord": "left no record",
        "notStarted": "not started",
    }.get(e["verdict"], "not accepted")


def verdict_line(data: dict[str, Any]) -> str:
    word = {"accepted": "ACCEPTED", "interrupted": "INTERRUPTED"}.get(
        data["verdict"], "NOT ACCEPTED"
    )
    head = f"release {data['release']}: {word} on {data['accepted']} of {data['total']}"
    bad = [f"{e['name']} {_failed_at(e)}" for e in data["profiles"] if not e["accepted"]]
    return head + (": " + "; ".join(bad) if bad else "")


def write_summary(data: dict[str, Any], reports: Path) -> Path:
    path = reports / RELEASE_FILE
    reports.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# -- the terminal --------------------------------------------------------------------------

# The record's sections, in order: the page's, then the training's (T) and the stages' (B).
_COLUMNS = ("§0", "info", "S1", "S2", "S3", "S4", "S5", "S6", "T", "B")


def _cell(section: dict[str, Any]) -> str:
    status, check = section["status"], section["check"]
    return {"failed": f"FAIL {check}", "notReached": f"n/r {check}", "passed": "ok"}.get(
        status, "-"
    )


def table_lines(data: dict[str, Any]) -> list[str]:
    """profile × doc section: each cell the section's earliest failure (``FAIL 6.2``), the
    check it was not reached from (``n/r 6.3``), ``ok``, or ``-`` (not selected)."""
    head = ["profile", "verdict", *_COLUMNS]
    rows = [head]
    for e in data["profiles"]:
        cells = [_cell(s) for s in e["sections"].values()]
        word = "ACCEPTED" if e["accepted"] else e["verdict"]
        rows.append([e["name"], word, *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    out.append(
        "sections: "
        + ", ".join(f"{c} = {label}" for c, label in zip(_COLUMNS, writers.SECTIONS, strict=True))
    )
    return out


def terminal_lines(data: dict[str, Any], path: Path) -> list[str]:
    out = table_lines(data)
    for e in data["profiles"]:
        if e["accepted"]:
            continue
        first = e.get("earliestFailure")
        out.append(f"{e['name']}: {e['verdict']}, {_failed_at(e)}  (record: {e['record']})")
        if first:
            where = f" ({first['location']})" if first.get("location") else ""
            out += [f"  {first['check']}{where} — {first['message']}", f"  → {first['hint']}"]
        for line in e["selfChecksFailed"]:
            out.append(f"  self-check failed: {line}")
        for key in ("error", "problem"):
            if e.get(key):
                out.append(f"  {key}: {e[key]}")
    out += [data["line"], f"release record: {path}"]
    return out


# -- JUnit ---------------------------------------------------------------------------------


def junit_xml(data: dict[str, Any], reports: Path, redactor: Redactor) -> str:
    """One testsuite per profile, named by it, holding the testcases of its own record (the
    profile as it is, then its self-checks); a profile without a record is one ``<error>``
    testcase saying why."""
    from rlark_acceptance.run.report_writers import _count

    root = ET.Element("testsuites", name=f"rlark-acceptance release: {data['release']}")
    for e in data["profiles"]:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=e["name"],
            timestamp=e["startedAt"][:19],  # the schema's: no fraction, no zone
            hostname="localhost",
        )
        props = ET.SubElement(suite, "properties")
        first = (e.get("earliestFailure") or {}).get("check") or "none"
        for k, v in (
            ("profile", e["profile"]),
            ("verdict", e["verdict"]),
            ("accepted", str(e["accepted"]).lower()),
            ("earliestFailure", first),
            ("runId", e.get("runId") or "none"),
            ("record", e["record"]),
            *(("warning", w) for w in e.get("warnings") or []),
        ):
            ET.SubElement(props, "property", name=k, value=redactor.redact(str(v)))
        cases = _cases(reports / e["record"] / JUNIT_FILE)
        if cases is None:
            tc = ET.SubElement(
                suite,
                "testcase",
                classname="rlark-acceptance release",
                name=f"[release] {e['name']}: no run record",
            )
            why = e.get("problem") or f"no {JUNIT_FILE} in {e['record']}"
            ET.SubElement(tc, "error", message=redactor.redact(why), type=e["verdict"])
        else:
            suite.extend(cases)
        _count(suite)
    _count(root, suites=True)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cases(path: Path) -> list[ET.Element] | None:
    """The profile's testcases, as its run wrote them (not a session's other tests)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    out = []
    for suite in root.iter("testsuite"):
        if suite.get("name") == "other tests":
            continue
        out += list(suite.iter("testcase"))
    return out


def write_junit(data: dict[str, Any], reports: Path, redactor: Redactor) -> Path:
    path = reports / JUNIT_FILE
    tmp = path.with_suffix(".xml.tmp")
    tmp.write_text(junit_xml(data, reports, redactor), encoding="utf-8")
    tmp.replace(path)
    return path
