"""Step 6 in the page's order: submit, then each phase in turn; evidence collected at the end."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlark_acceptance.adapters.base import LOG_LOST, Adapter, Event
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.run.step6.first_signal import FirstSignal
from rlark_acceptance.run.step6.journal import identity, open_journal, sweep_dead_runs
from rlark_acceptance.run.step6.listed import Listed
from rlark_acceptance.run.step6.output import Located, Location, Output, locate, output_store
from rlark_acceptance.run.step6.outputs import keep_outputs_policy, output_root, settle_outputs
from rlark_acceptance.run.step6.ray_head import RayHead
from rlark_acceptance.run.step6.record import PHASES, PhaseResult, RunRecord
from rlark_acceptance.run.step6.run import PhaseFailed, Progress, Step6Run
from rlark_acceptance.run.step6.run_id import for_run, new_run_id, output_mount
from rlark_acceptance.run.step6.scheduled import Scheduled

if TYPE_CHECKING:
    from rlark_acceptance.run.acceptance import AcceptanceRun


class Interrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM ended Step 6 (what was submitted is removed); carries the record."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__("the acceptance run was interrupted")
        self.record = record
        self.run: AcceptanceRun | None = None  # set by ``accept``, which has the pre-flight


def confirm_running(
    adapter: Adapter,
    job: Job,
    manifest: str,
    profile: Profile,
    *,
    validated_config: dict[str, Any] | None = None,
    on_phase: Callable[[PhaseResult], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    delete_after: bool = True,
    clock: Callable[[], float] = time.monotonic,
    run_id: str | None = None,
) -> RunRecord:
    """Submit ``job`` as run ``run_id`` (a new one by default: ``run_id.for_run``) and run
    Step 6; never raises for what the target does wrong.

    Raises ``Interrupted`` (a KeyboardInterrupt) with the record so far on SIGINT / SIGTERM.
    """
    ri = profile.run_info
    signal = re.compile(str(ri.first_signal)) if ri.first_signal else None
    policy = keep_outputs_policy(profile)
    run_id = run_id or new_run_id()
    user_job = job
    job, manifest = for_run(user_job, manifest, run_id, output_root(profile))
    runs_own = _runs_own(adapter, user_job, output_root(profile))
    # Located, and listed, before submitting: what is there already is not this run's.
    located = locate(adapter, job, ri.expected_output)
    outputs = _outputs(adapter, job, profile, runs_own, located)
    shared = runs_own[1] if runs_own is not None else None
    if (
        delete_after
        and isinstance(outputs, Location)
        and sweep_dead_runs(
            outputs,
            shared=shared,
            locate_run=lambda dead: _outputs(
                adapter, for_run(user_job, "", dead, output_root(profile))[0], profile, runs_own
            ),
        )
    ):
        # A killed run's objects were removed: what is there before this run changed.
        located = locate(adapter, job, ri.expected_output)
        outputs = _outputs(adapter, job, profile, runs_own, located)
    # Held until the outputs are settled: if this run is killed outright, the next one
    # removes what it wrote.
    journaled = delete_after and policy != "always" and isinstance(outputs, Location)
    journal = (
        open_journal(outputs, run_id=run_id, shared=shared)
        if journaled and isinstance(outputs, Location)
        else None
    )
    run = Step6Run(
        adapter,
        RunRecord(job=job, run_id=run_id),
        profile.timeouts,
        signal=signal,
        validated=validated_config,
        clock=clock,
        on_phase=on_phase,
        on_progress=on_progress,
    )
    rec = run.rec
    interrupt: KeyboardInterrupt | None = None
    try:
        Listed(manifest).run(run)
        assert rec.ref is not None
        run.stream = adapter.observe(rec.ref)
        for phase in (Scheduled(ri.expected_node), RayHead(), FirstSignal()):
            run.wait(phase)
        Output(located, delete_after=delete_after).run(run)
    except PhaseFailed:
        pass
    except KeyboardInterrupt as exc:
        rec.interrupted, interrupt = True, exc
    finally:
        if run.stream is not None:
            run.stream.close()  # a Worker that prints on after its verdict costs nothing
        lost = [e for e in rec.events if e.reason == LOG_LOST]
        if rec.ref is not None:
            rec.pods = _safe(lambda: adapter.pods(rec.ref), [])  # type: ignore[arg-type]
            rec.events = _safe(lambda: adapter.events(rec.ref), []) + lost  # type: ignore[arg-type]
    _log_lost(rec, lost)
    for check in PHASES:
        if check not in rec.phases:
            failed = rec.earliest_failure
            why = f"not reached: {failed.check} failed" if failed else "not reached"
            if rec.interrupted:
                why = "not reached: the run was interrupted"
            rec.phases[check] = PhaseResult(check, "skipped", why)
    try:
        if delete_after:
            settle_outputs(run, outputs, policy)
    finally:
        if journal is not None:
            journal.close()
    if interrupt is not None:
        raise Interrupted(rec) from interrupt
    return rec


def _log_lost(rec: RunRecord, lost: list[Event]) -> None:
    """Lines of the Worker's log the target rotated away unread: a warning of the record,
    and the reason a check read from the log was not reached (the printed config may have
    been among them)."""
    if not lost:
        return
    more = f" ({len(lost) - 1} more such gaps)" if len(lost) > 1 else ""
    rec.warnings.append(f"{LOG_LOST}: {lost[0].message}{more}")
    if rec.printed_config is None and not rec.interrupted:
        why = (
            f"not reached: the config RLinf printed at start-up was not read; the target "
            f"rotated lines of the Worker's log away before they were read ({LOG_LOST}, "
            "see the record's warnings)"
        )
        for check in ("1.1", "1.2"):
            rec.phases.setdefault(check, PhaseResult(check, "skipped", why))


def _runs_own(adapter: Adapter, job: Job, root: object) -> tuple[str, str] | None:
    """When the run's outputs go to a location of its own: the mount's path in the Worker
    and the identity of the profile's location it lies under."""
    mount = output_mount(job, root)
    if mount is None or not mount.container_path:
        return None
    try:
        found = output_store(adapter, job, mount.container_path)
    except Exception:  # 6.5 names the cause once the run gets there
        return None
    return (mount.container_path, identity(Location(*found))) if found else None


def _outputs(
    adapter: Adapter,
    job: Job,
    profile: Profile,
    runs_own: tuple[str, str] | None,
    known: Located | None = None,
) -> Located:
    """What the run may remove afterwards: all of its own location (everything the Worker
    wrote to that mount, directory markers included), else what it wrote under the output
    folder."""
    where = runs_own[0] if runs_own is not None else output_root(profile)
    return locate(adapter, job, where, known=known)


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:  # evidence collection must never hide the original verdict
        return default
