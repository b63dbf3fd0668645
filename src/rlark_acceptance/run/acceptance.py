"""One acceptance run: the pre-flight, then (only if it passes) Step 6 on the target."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rlark_acceptance.adapters.base import Adapter, Describes
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.preflight.entry import PreflightResult, preflight_profile
from rlark_acceptance.run import progress
from rlark_acceptance.run.outcome import AcceptanceRun
from rlark_acceptance.run.step6 import (
    Interrupted,
    PhaseResult,
    Progress,
    RunRecord,
    confirm_running,
    manifest_of,
    plan_for,
)
from rlark_acceptance.secrets import Redactor

__all__ = ["AcceptanceRun", "accept", "manifest_of", "submit_and_confirm"]


def submit_and_confirm(
    adapter: Adapter,
    pre: PreflightResult,
    *,
    on_phase: Callable[[PhaseResult], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    delete_after: bool = True,
    run_id: str | None = None,
    resume: bool = False,
    diagnostics: Path | None = None,
    redactor: Redactor | None = None,
) -> RunRecord:
    """Step 6 for the Job the pre-flight read, whatever the pre-flight said, as run
    ``run_id`` (a new one by default); ``resume``: T.4 on, whatever the profile says;
    ``diagnostics``: where a red run's bundle goes, redacted by ``redactor``."""
    plan = plan_for(pre, run_id=run_id, delete_after=delete_after, resume=resume)
    try:
        return confirm_running(
            adapter,
            plan,
            on_phase=on_phase,
            on_progress=on_progress or progress.emit,
            diagnostics=diagnostics,
            redactor=redactor,
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
    resume: bool = False,
    diagnostics: Path | None = None,
) -> AcceptanceRun:
    """What a release engineer runs: nothing is submitted unless the pre-flight passes.

    ``redactor`` is the run's (the session's, in the suite): the pre-flight's scans fill it.
    ``resume``: T.4 on, whatever the profile says (its scenario was selected by its tag).
    ``diagnostics``: the folder a red run's diagnostics bundle goes to (None: none).
    On SIGINT / SIGTERM, ``Interrupted`` carries this run (``.run``) up to the caller.
    """
    started = time.time()
    pre = preflight_profile(profile, redactor=redactor)
    at = (started, time.time())
    if pre.verdict != "pass":
        return AcceptanceRun(pre, None, preflight_at=at)
    try:
        rec = submit_and_confirm(
            adapter,
            pre,
            on_phase=on_phase,
            run_id=run_id,
            resume=resume,
            diagnostics=diagnostics,
            redactor=redactor,
        )
    except Interrupted as exc:
        exc.run = AcceptanceRun(pre, exc.record, preflight_at=at)
        raise
    return AcceptanceRun(pre, rec, describe(adapter, rec), preflight_at=at)


def describe(adapter: Adapter, rec: RunRecord) -> dict[str, str]:
    """What the target says the submitted Worker ran on and with, where its adapter can
    say (``Describes``); nothing for a run that submitted nothing."""
    if rec.ref is None or not isinstance(adapter, Describes):
        return {}
    return adapter.describe(rec.ref, [*rec.pods, *([rec.worker] if rec.worker else [])])
