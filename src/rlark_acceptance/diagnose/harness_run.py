"""``diagnose RUN_ID``: a harness run named by its run id, read from its record in a reports
folder: its ``run-summary.json`` (the verdict, the failing check) and, for a red run, its
diagnostics bundle (``run.step6.diagnostics``): the Worker log as the bundle kept it, read
again by Step 6's own reading at its own line numbers, with what the Pod, its events and its
node said before the Worker was deleted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.base import Event
from rlark_acceptance.diagnose.diagnosis import Diagnosis, diagnose_stretches, with_pod
from rlark_acceptance.diagnose.pod import PodSide, findings, log_to_read, node_side
from rlark_acceptance.model.errors import InputError

# A run id as the record names it (``run_id.new_run_id``): UTC yymmddHHMMSS, 6 hex.
RUN_ID = re.compile(r"^\d{12}-[0-9a-f]{6}$")
SUMMARY = "run-summary.json"
BUNDLE = "diagnostics"


def is_run_id(text: str) -> bool:
    return RUN_ID.match(text) is not None


@dataclass(frozen=True)
class RunSide:
    """What the run's record says: its verdict, the check it failed at and why, and where
    its bundle is (None: it wrote none)."""

    run_id: str
    reports: Path
    verdict: str | None
    check: str | None
    message: str | None
    bundle: Path | None
    files: dict[str, int]

    @property
    def red(self) -> bool:
        return self.verdict not in (None, "passed")

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "reportsDir": str(self.reports),
            "verdict": self.verdict,
            "check": self.check,
            "message": self.message,
            "bundle": str(self.bundle) if self.bundle is not None else None,
            "files": self.files,
        }


def from_run(run_id: str, reports: Path) -> tuple[Diagnosis, RunSide]:
    """The diagnosis of run ``run_id`` from its record in ``reports``."""
    # Imported here: Step 6's package takes a second and a half to import, which a log
    # file's diagnosis never needs.
    from rlark_acceptance.run.step6.diagnostics import INDEX, WRITTEN_BY

    summary = _read_json(reports / SUMMARY)
    index = _read_json(reports / BUNDLE / INDEX)
    ours = summary is not None and summary.get("runId") == run_id
    bundled = (
        index is not None and index.get("writtenBy") == WRITTEN_BY and index.get("runId") == run_id
    )
    if not ours and not bundled:
        last = summary.get("runId") if summary is not None else None
        there = f"the record there is run {last}'s" if last else "no run record there"
        raise InputError(f"run {run_id}", f"not found in {reports} ({there}): give --reports-dir")
    first = (summary or {}).get("earliestFailure") if ours else None
    verdict = (summary or {}).get("verdict") if ours else "failed"
    check = first.get("check") if isinstance(first, dict) else None
    message = first.get("message") if isinstance(first, dict) else None
    if not ours and index is not None:  # the bundle only: its own words
        check, message = str(index.get("why", "")).split(" ")[0] or None, index.get("failure")
    side = RunSide(
        run_id,
        reports,
        verdict,
        check,
        message,
        reports / BUNDLE if bundled else None,
        dict(index.get("files") or {}) if bundled and index is not None else {},
    )
    if not bundled or index is None:
        return diagnose_stretches(()), side
    return _from_bundle(reports / BUNDLE, index), side


def _from_bundle(folder: Path, index: dict[str, Any]) -> Diagnosis:
    from rlark_acceptance.run.step6.diagnostics import INDEX, excerpt_lines

    log = index.get("log") or {}
    segments = log.get("segments") or []
    text = _read_text(folder / "worker-log.txt") if segments else ""
    try:
        stretches = excerpt_lines(text, segments)
    except (KeyError, TypeError, ValueError):
        raise InputError(str(folder / INDEX), "its log segments are not a bundle's") from None
    found = diagnose_stretches(stretches, int(log.get("lines") or 0))
    pod = _read_json(folder / "pod.json")
    if pod is None or "spec" not in pod:
        return found
    return with_pod(found, _pod_side(folder, pod, str(index.get("pod") or "")))


def _pod_side(folder: Path, pod: dict[str, Any], name: str) -> PodSide:
    from rlark_acceptance.adapters.kubernetes.stream import pod_status

    status = pod_status(pod)
    raw = _read_json(folder / "events.json", list) or []
    events = tuple(
        Event(
            str(e.get("involved", "")),
            str(e.get("reason", "")),
            str(e.get("message", "")),
            str(e.get("type", "Normal")),
            str(e.get("source", "")),
            float(e.get("time") or 0.0),
        )
        for e in raw
        if isinstance(e, dict)
    )
    warnings = tuple(e for e in events if e.type == "Warning")
    node = _read_json(folder / "node.json")
    chosen, previous = log_to_read(pod, None)
    return PodSide(
        name or status.name,
        str((pod.get("metadata") or {}).get("namespace") or ""),
        status,
        warnings,
        tuple(findings(pod, status, warnings)),
        chosen,
        previous,
        node_side(str(node.get("name")), {"status": node}) if node is not None else None,
    )


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(str(path), f"cannot be read: {e.strerror or e}") from None


def _read_json(path: Path, kind: type = dict) -> Any:
    """The JSON at ``path`` if it is there and of ``kind``; None if absent; one line (exit
    2) if it is there and not JSON."""
    if not path.is_file():
        return None
    try:
        data = json.loads(_read_text(path))
    except ValueError as e:
        raise InputError(str(path), f"is not JSON: {e}") from None
    return data if isinstance(data, kind) else None
