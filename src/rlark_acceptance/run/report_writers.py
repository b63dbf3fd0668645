"""Writers of the run record: ``run-summary.json``, JUnit properties and Allure metadata.

Each format is a function of the model (``run/report.py``); adding a format touches only
this module. Every string that leaves the process goes through the one redaction
(``preflight.secrets.redact``) plus the values of secret-named environment variables.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlark_acceptance.model.doc_checks import BY_ID, CHECKS, earliest, remedy
from rlark_acceptance.preflight.secrets import redact
from rlark_acceptance.run.report import Kind, RunReport

PAGE = "在单个 GPU 节点上运行 RLinf"
SUMMARY_FILE = "run-summary.json"
_SECRET_ENV = re.compile(r"(SECRET|TOKEN|PASSWORD|PASSWD|KEY)", re.I)

# Sections in the page's order, numbered so that every tree sorted by name reads as the page.
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(c.section for c in CHECKS))


def scrub(text: str) -> str:
    """Redact detected secrets and the values of secret-named environment variables."""
    known = [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 6]
    return redact(text, extra_values=known)


def scrubbed(data: Any) -> Any:
    """``data`` with every string redacted (keys included)."""
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, dict):
        return {scrubbed(k): scrubbed(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [scrubbed(v) for v in data]
    return data


# -- run-summary.json --------------------------------------------------------------------


def summary_text(report: RunReport) -> str:
    return json.dumps(scrubbed(report.summary()), indent=2, ensure_ascii=False) + "\n"


def write_summary(report: RunReport, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SUMMARY_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(summary_text(report), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a record
    return path


# -- doc vocabulary ----------------------------------------------------------------------


def primary_check(checks: Iterable[str]) -> str | None:
    return earliest(list(checks))


def section_label(check: str) -> str:
    section = BY_ID[check].section
    return f"{SECTIONS.index(section) + 1:02d} {section}"


def story_label(check: str) -> str:
    return f"{check} {BY_ID[check].says}"


def severity(check: str) -> str:
    """Step 6 and secrets are what a release cannot ship with."""
    if BY_ID[check].kind == "runtime" or check in ("3.6", "5.8"):
        return "critical"
    return "normal"


def doc_anchor(check: str) -> str:
    return "check-" + check.replace(".", "-").lower()


def remedy_line(check: str) -> str:
    return f"[{check}] the doc's remedy: {remedy(check)}"


# -- JUnit --------------------------------------------------------------------------------


def junit_classname(checks: Iterable[str], feature: str) -> str:
    first = primary_check(checks)
    return section_label(first) if first else feature


def junit_properties(checks: Iterable[str], kind: Kind) -> list[tuple[str, str]]:
    return [("check", c) for c in checks] + [("acceptance", kind)]


# -- Allure --------------------------------------------------------------------------------


def allure_labels(checks: list[str], kind: Kind) -> list[tuple[str, str]]:
    """epic = the page, feature = the doc section (numbered), story = each check."""
    first = primary_check(checks)
    if first is None:
        return []
    labels = [
        ("epic", PAGE),
        ("feature", section_label(first)),
        *(("story", story_label(c)) for c in checks),
        ("severity", max((severity(c) for c in checks), key=("normal", "critical").index)),
        ("acceptance", kind),
        (
            "parentSuite",
            "the profile as it is" if kind == "profile" else "self-checks (changed copies)",
        ),
        ("suite", section_label(first)),
        ("subSuite", story_label(first)),
    ]
    if kind == "self-check":
        labels.append(("tag", "self-check"))
    return labels


def doc_link(check: str, base: str | None) -> tuple[str, str] | None:
    """(url, name) of the doc section, when the doc's address is known."""
    if not base:
        return None
    return f"{base}#{doc_anchor(check)}", f"doc: {BY_ID[check].section}"


def description(feature_text: str, check: str, message: str | None) -> str:
    """Markdown a reader sees first: what failed, the doc's remedy, then the feature."""
    parts = [f"**{check} failed** ({BY_ID[check].section}): {BY_ID[check].says}"]
    if message:
        lines = message.strip().replace("; ", "\n").splitlines()
        parts.append("\n".join(f"> {line}  " for line in lines))  # wraps, unlike a code block
    parts.append(f"**The doc's remedy:** {remedy(check)}")
    if feature_text:
        parts.append(feature_text)
    return scrub("\n\n".join(parts))


def allure2_categories() -> list[dict[str, Any]]:
    """Allure 2's categories.json: one per doc section, matched on the ``[check]`` prefix
    every failure message carries."""
    out = []
    for i, section in enumerate(SECTIONS, 1):
        ids = "|".join(re.escape(c.id) for c in CHECKS if c.section == section)
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

    return {
        "profile": profile,
        "verdict": str(summary["verdict"]),
        "earliestFailure": (summary["earliestFailure"] or {}).get("check") or "none",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def report_name(summary: dict[str, Any]) -> str:
    verdict = summary["verdict"]
    word = {"passed": "ACCEPTED", "interrupted": "INTERRUPTED"}.get(verdict, "NOT ACCEPTED")
    first = summary.get("earliestFailure")
    tail = f" at {first['check']}" if first else ""
    return f"RLark acceptance: {PAGE} — {word}{tail}"


# -- the terminal ---------------------------------------------------------------------------


def terminal_lines(data: dict[str, Any], path: Path) -> list[str]:
    """The record as the run's last lines: verdict, earliest failure and remedy, the rest."""
    counts = {
        s: sum(1 for v in data["checks"].values() if v == s)
        for s in ("passed", "failed", "notReached", "skipped")
    }
    out = [
        f"verdict: {data['verdict']}  checks: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['notReached']} not reached, "
        f"{counts['skipped']} not selected  ({path})"
    ]
    if data.get("error"):
        out.append(f"error: {data['error']}")
    e = data["earliestFailure"]
    if e:
        where = f" ({e['location']})" if e.get("location") else ""
        out += [f"earliest failing check: {e['check']}{where} — {e['message']}", f"  → {e['hint']}"]
    if data["notReached"]:
        out.append("not reached: " + ", ".join(data["notReached"]))
    self_checks = data["selfChecks"]
    for entry in self_checks["failed"]:
        out += [f"self-check failed: {entry['check']} {entry['scenario']}", f"  {entry['message']}"]
    if self_checks.get("inconclusive"):
        out.append(
            f"self-checks inconclusive: {len(self_checks['inconclusive'])} (the profile itself "
            "fails; see selfChecks.inconclusive)"
        )
    for warning in data.get("warnings") or []:
        out.append(f"warning: {warning}")
    if data["durations"]:
        out.append("durations: " + ", ".join(f"{k} {v:.1f}s" for k, v in data["durations"].items()))
    return out
