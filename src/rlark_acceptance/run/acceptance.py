"""One acceptance run: the pre-flight, then (only if it passes) Step 6 on the target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.preflight.entry import PreflightResult, preflight_profile
from rlark_acceptance.run import progress
from rlark_acceptance.run.step6 import (
    Interrupted,
    PhaseResult,
    Progress,
    RunRecord,
    confirm_running,
)
from rlark_acceptance.secrets import Redactor


@dataclass
class AcceptanceRun:
    preflight: PreflightResult
    record: RunRecord | None  # None: stopped at the pre-flight, nothing submitted

    def __repr__(self) -> str:  # allure stores step arguments' reprs: compact, no inputs
        return f"AcceptanceRun({self.preflight!r}, {self.record!r})"

    @property
    def submitted(self) -> bool:
        return self.record is not None and self.record.ref is not None


def manifest_of(job: Job) -> str:
    """The Job YAML as submitted: the document the console showed, unchanged."""
    return yaml.safe_dump(job.doc.data, sort_keys=False, allow_unicode=True)


def submit_and_confirm(
    adapter: Adapter,
    profile: Profile,
    pre: PreflightResult,
    *,
    on_phase: Callable[[PhaseResult], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    delete_after: bool = True,
    run_id: str | None = None,
) -> RunRecord:
    """Step 6 for the Job the pre-flight read, whatever the pre-flight said, as run
    ``run_id`` (a new one by default)."""
    assert pre.job is not None, "the profile yields no Job YAML"
    validated: dict[str, Any] | None = None
    if pre.validated is not None:
        validated = pre.validated.config.resolved()
    try:
        return confirm_running(
            adapter,
            pre.job,
            manifest_of(pre.job),
            profile,
            validated_config=validated,
            on_phase=on_phase,
            on_progress=on_progress or progress.emit,
            delete_after=delete_after,
            run_id=run_id,
        )
    finally:
        progress.emit(None)


def accept(
    profile: Profile,
    adapter: Adapter,
    *,
    on_phase: Callable[[PhaseResult], None] | None = None,
    run_id: str | None = None,
    redactor: Redactor | None = None,
) -> AcceptanceRun:
    """What a release engineer runs: nothing is submitted unless the pre-flight passes.

    ``redactor`` is the run's (the session's, in the suite): the pre-flight's scans fill it.
    On SIGINT / SIGTERM, ``Interrupted`` carries this run (``.run``) up to the caller.
    """
    pre = preflight_profile(profile, redactor=redactor)
    if pre.verdict != "pass":
        return AcceptanceRun(pre, None)
    try:
        rec = submit_and_confirm(adapter, profile, pre, on_phase=on_phase, run_id=run_id)
        return AcceptanceRun(pre, rec)
    except Interrupted as exc:
        exc.run = AcceptanceRun(pre, exc.record)
        raise
