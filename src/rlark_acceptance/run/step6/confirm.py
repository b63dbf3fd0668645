"""Step 6 in the page's order: the output location read before submitting, then each phase in
turn on the engine, then the evidence and what the run leaves behind."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlark_acceptance.adapters.base import LOG_LOST, Adapter, Event, PodStatus
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.job import Job
from rlark_acceptance.run.step6.engine import Engine, PhaseFailed, Progress
from rlark_acceptance.run.step6.first_signal import FirstSignal
from rlark_acceptance.run.step6.journal import Journal, identity, open_journal, sweep_dead_runs
from rlark_acceptance.run.step6.listed import Listed
from rlark_acceptance.run.step6.location import Location, Unlocated, locate, output_store
from rlark_acceptance.run.step6.output import Output
from rlark_acceptance.run.step6.outputs import settle_outputs
from rlark_acceptance.run.step6.phase import Phase
from rlark_acceptance.run.step6.plan import Step6Plan
from rlark_acceptance.run.step6.printed_config import AsValidated, OneNode
from rlark_acceptance.run.step6.ray_head import RayHead
from rlark_acceptance.run.step6.record import PHASES, PhaseResult, RunRecord
from rlark_acceptance.run.step6.run_id import output_mount
from rlark_acceptance.run.step6.scheduled import Scheduled

if TYPE_CHECKING:
    from rlark_acceptance.run.outcome import AcceptanceRun


class Interrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM ended Step 6 (what was submitted is removed); carries the record."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__("the acceptance run was interrupted")
        self.record = record
        self.run: AcceptanceRun | None = None  # set by ``accept``, which has the pre-flight


def phases(plan: Step6Plan, expected: Location | Unlocated) -> tuple[list[Phase], list[Phase]]:
    """The phases awaited in the page's order, and those read along the way."""
    awaited: list[Phase] = [
        Listed(plan.manifest),
        Scheduled(plan.expected_node),
        RayHead(),
        FirstSignal(),
        Output(expected, delete_after=plan.delete_after),
    ]
    along: list[Phase] = [OneNode()]
    if plan.validated is not None:
        along.append(AsValidated(plan.validated))
    return awaited, along


def confirm_running(
    adapter: Adapter,
    plan: Step6Plan,
    *,
    on_phase: Callable[[PhaseResult], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RunRecord:
    """Submit ``plan.job`` and run Step 6; never raises for what the target does wrong.

    Raises ``Interrupted`` (a KeyboardInterrupt) with the record so far on SIGINT / SIGTERM.
    """
    where = Outputs.before_submission(adapter, plan)
    awaited, along = phases(plan, where.expected)
    engine = Engine(
        adapter,
        RunRecord(job=plan.job, run_id=plan.run_id),
        plan.timeouts,
        signal=plan.signal,
        read_along=along,
        clock=clock,
        on_phase=on_phase,
        on_progress=on_progress,
    )
    rec = engine.rec
    interrupt: KeyboardInterrupt | None = None
    try:
        for phase in awaited:
            engine.run(phase)
    except PhaseFailed:
        pass
    except KeyboardInterrupt as exc:
        rec.interrupted, interrupt = True, exc
    finally:
        if engine.stream is not None:
            engine.stream.close()  # a Worker that prints on after its verdict costs nothing
    _finish(adapter, engine, plan, where)
    if interrupt is not None:
        raise Interrupted(rec) from interrupt
    return rec


def _finish(adapter: Adapter, engine: Engine, plan: Step6Plan, where: Outputs) -> None:
    """The evidence into the record, what was not reached said so, the outputs settled."""
    rec = engine.rec
    lost = [e for e in rec.events if e.reason == LOG_LOST]
    if rec.ref is not None:
        rec.pods, rec.events = _evidence(adapter, rec, lost)
    _log_lost(rec, lost)
    _not_reached(rec)
    try:
        if plan.delete_after:
            settle_outputs(
                adapter, rec, where.outputs, plan.keep_outputs, worker_deleted=engine.worker_deleted
            )
    finally:
        if where.journal is not None:
            where.journal.close()


@dataclass
class Outputs:
    """The expected location (6.5) and what the run may remove afterwards, both listed
    before submitting (what is there already is not this run's), and the journal held on
    them until the outputs are settled (if this run is killed outright, the next one removes
    what it wrote)."""

    expected: Location | Unlocated
    outputs: Location | Unlocated
    journal: Journal | None = field(default=None)

    @classmethod
    def before_submission(cls, adapter: Adapter, plan: Step6Plan) -> Outputs:
        runs_own = _runs_own(adapter, plan.exported, plan.output_root)
        shared = runs_own[1] if runs_own is not None else None

        own = runs_own[0] if runs_own is not None else plan.output_root

        def written(job: Job, known: Location | Unlocated | None = None) -> Location | Unlocated:
            return locate(adapter, job, own, known=known)

        def located(job: Job) -> tuple[Location | Unlocated, Location | Unlocated]:
            expected = locate(adapter, job, plan.expected_output)
            return expected, written(job, expected)

        expected, outputs = located(plan.job)
        if (
            plan.delete_after
            and isinstance(outputs, Location)
            and sweep_dead_runs(
                outputs, shared=shared, locate_run=lambda dead: written(plan.job_of(dead))
            )
        ):
            # A killed run's objects were removed: what is there before this run changed.
            expected, outputs = located(plan.job)
        journal = None
        if plan.delete_after and plan.keep_outputs != "always" and isinstance(outputs, Location):
            journal = open_journal(outputs, run_id=plan.run_id, shared=shared)
        return cls(expected, outputs, journal)


def _runs_own(adapter: Adapter, job: Job, root: object) -> tuple[str, str] | None:
    """When the run's outputs go to a location of its own: the mount's path in the Worker
    and the identity of the profile's location it lies under."""
    mount = output_mount(job, root)
    if mount is None or not mount.container_path:
        return None
    try:
        found = output_store(adapter, job, mount.container_path)
    except Exception:  # any adapter's failure to name the store: 6.5 names it (``locate``)
        return None
    return (mount.container_path, identity(Location(*found))) if found else None


def _evidence(
    adapter: Adapter, rec: RunRecord, lost: list[Event]
) -> tuple[list[PodStatus], list[Event]]:
    """The Job's Pods and Events as the target has them now, for the record. A target that
    cannot say is a warning of the record: it never hides the verdict."""
    assert rec.ref is not None
    pods, events = rec.pods, rec.events
    try:
        pods = adapter.pods(rec.ref)
    except Exception as exc:  # any adapter's failure: the verdict stands, the record says so
        rec.pods_unread = f"the Worker's Pods could not be read for the record: {exc}"
        rec.warnings.append(rec.pods_unread)
        pods = []
    try:
        events = adapter.events(rec.ref) + lost
    except Exception as exc:  # as above; the Events seen while the run watched are kept
        rec.warnings.append(f"the Job's Events could not be read for the record: {exc}")
    return pods, events


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
        for check in (CheckId.LOADED_NUM_NODES_IS_ONE, CheckId.VALIDATED_CONFIG_KEPT):
            rec.phases.setdefault(check, PhaseResult(check, "skipped", why))


def _not_reached(rec: RunRecord) -> None:
    for check in PHASES:
        if check not in rec.phases:
            failed = rec.earliest_failure
            why = f"not reached: {failed.check} failed" if failed else "not reached"
            if rec.interrupted:
                why = "not reached: the run was interrupted"
            rec.phases[check] = PhaseResult(check, "skipped", why)
