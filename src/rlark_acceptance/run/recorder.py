"""The run's record completed once and written once, outside pytest.

The pytest plugin (``fixtures/run_record.py``) forwards what it sees: each scenario's
outcome while the run goes, then at the end how the session ended and the shared Step 6
run. Here that becomes the one ``RunReport`` (``complete``), and every file of the record
is written from it (``write``): ``run-summary.json`` first, then the history, ``summary.md``
and ``junit.xml``. A writer that breaks is said on standard error and the others still
run: a red run whose summary.md cannot be drawn still has its run-summary.json.
"""

from __future__ import annotations

import sys
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from rlark_acceptance.run import report_writers as writers
from rlark_acceptance.run.report import Evidence, RunReport
from rlark_acceptance.secrets import Redactor

JUNIT_FILE = "junit.xml"
# How a session ended, as far as the record cares.
Ending = Literal["finished", "interrupted", "usage error", "internal error"]

T = TypeVar("T")


@dataclass(frozen=True)
class Compared:
    """This run's stages against the profile's budgets and history (B.1), worked out once
    per run: by B.1's scenario when it runs, else at the run's end."""

    budgets: Any  # run.budgets.BudgetReport
    history: Any  # run.history.History, or None: no history kept
    earlier: tuple[Any, ...]  # the profile's earlier runs (run.history.Entry), oldest first
    profile_name: str


def safely(what: str, fn: Callable[[], T]) -> T | None:
    """``fn()``, or None when it raises: said on standard error, never raised, so that one
    part of the record that breaks leaves the others to be written."""
    try:
        return fn()
    except Exception:  # the record must be written even when one writer breaks
        sys.stderr.write(f"rlark-acceptance: writing {what} failed:\n{traceback.format_exc()}")
        return None


def ended(report: RunReport, ending: Ending, *, running: str | None, said: str | None) -> None:
    """How the session ended: an interrupt during the scenario ``running``, or an error
    outside the scenarios (``said``: what pytest said of it)."""
    if ending == "interrupted":
        report.interrupted = True
        report.interrupted_at = running
    elif ending == "usage error":
        report.error = said or "usage error (see the console)"
    elif ending == "internal error":
        report.error = "internal error (see the console)"


def complete(report: RunReport, record: Any, cleanup_failures: Iterable[str]) -> None:
    """Step 6's record (None: the run never got there) and what the clean-ups could not
    remove, into the report: its stage times, outputs, warnings, training and first cause."""
    if record is not None:
        safely("durations", lambda: report.durations.update(record.durations))
        safely("outputs", lambda: _outputs(report, record))
        safely("warnings", lambda: report.warnings.extend(record.warnings))
        safely("training", lambda: _training(report, record))
    for text in cleanup_failures:
        if not any(text in w or w in text for w in report.warnings):
            report.warnings.append(text)


def _outputs(report: RunReport, record: Any) -> None:
    """Where the shared acceptance run's output is, and whether it is still there: a red
    run's is kept to be looked at, a green run's removed (``target.keepOutputs``)."""
    found = record.checkpoint_after_delete or record.checkpoint
    if found is not None or record.outputs_kept or record.outputs_removed:
        report.outputs = {
            "checkpoint": found.location if found is not None else None,
            "steps": list(found.steps) if found is not None else [],
            "kept": record.outputs_kept,
            "removed": record.outputs_removed,
        }


def _training(report: RunReport, record: Any) -> None:
    """What the training checks read, the Worker's first error when the run failed, and
    where its evidence was kept (the diagnostics bundle, of a red run only)."""
    report.training = record.training_summary()
    report.first_cause = record.first_cause_summary()
    bundle = getattr(record, "diagnostics", None)
    report.diagnostics = bundle.summary() if bundle is not None else None


# How much of one file of the diagnostics bundle the Allure report carries: the bundle
# bounds each file already (256 KiB); the report is opened in a browser.
_BUNDLE_FILE_LIMIT = 256 * 1024


def bundle_evidence(record: Any) -> list[Evidence]:
    """A red run's diagnostics bundle as the report's run-wide attachments, each file by
    its name in the bundle (``diagnostics/worker-log.txt``); written redacted already."""
    bundle = getattr(record, "diagnostics", None)
    if bundle is None:
        return []
    out = []
    for name, _size in bundle.files:
        path = Path(bundle.directory) / name
        try:
            with path.open("rb") as f:
                data = f.read(_BUNDLE_FILE_LIMIT)
        except OSError:
            continue  # removed since: the record's diagnostics entry still says where it was
        kind = "json" if name.endswith(".json") else "text"
        out.append(Evidence(f"diagnostics/{name}", kind, data.decode("utf-8", "replace")))
    return out


def write(
    report: RunReport,
    directory: Path,
    redactor: Redactor,
    *,
    compared: Compared | None,
    started: datetime,
    others: Iterable[ET.Element] = (),
) -> str | None:
    """Every file of the record in ``directory``, from ``report`` alone (and, for the
    history and summary.md, the budgets it was compared with). ``others``: the session's
    other testcases (unit tests run beside the scenarios), kept in junit.xml's suite of
    their own. Returns where the run's summary went in the history, if it went there."""
    safely("run-summary.json", lambda: writers.write_summary(report, directory, redactor))
    kept = None
    if compared is not None and compared.history is not None:
        history = compared.history
        data = redactor.redact_strings(report.summary())
        key = safely("the history", lambda: history.append(data, compared.profile_name, started))
        kept = f"{history.describe()}/{key}" if key is not None else None
    safely("summary.md", lambda: _summary_md(report, directory, redactor, compared))
    safely("junit.xml", lambda: _junit(report, directory, redactor, list(others)))
    return kept


def _summary_md(
    report: RunReport, directory: Path, redactor: Redactor, found: Compared | None
) -> None:
    from rlark_acceptance.run import provenance, summary_md

    data = redactor.redact_strings(report.summary())
    chart = None
    if found is not None and found.history is not None:
        drawn = summary_md.trend_chart(
            directory / summary_md.CHART, found.earlier[-found.budgets.last :], data
        )
        chart = drawn.name if drawn is not None else None
    changes = None
    if found is not None and found.earlier:
        changes = provenance.changes(found.earlier[-1].provenance, data.get("provenance") or {})
    text = summary_md.render(data, found.budgets if found else None, changes, chart)
    summary_md.write(directory, redactor.redact(text))


def _junit(
    report: RunReport, directory: Path, redactor: Redactor, others: list[ET.Element]
) -> None:
    path = directory / JUNIT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".xml.tmp")
    tmp.write_text(writers.junit_xml(report, redactor, others), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file


def other_testcases(path: Path) -> list[ET.Element]:
    """The testcases pytest wrote at ``path`` that are not the record's (unit tests run in
    the same session): the record's JUnit replaces that file and keeps them."""
    if not path.is_file():
        return []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return []
    out = []
    for case in root.iter("testcase"):
        names = {p.get("name") for p in case.iter("property")}
        if "acceptance" not in names and case.get("name"):
            out.append(case)
    return out
