"""Step 6 in the page's order: the output location read before submitting, then each phase in
turn on the engine, then the evidence and what the run leaves behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.adapters.clock import clock_of
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.model.training import TRAINING_IDS
from rlark_acceptance.run.step6.diagnostics import clear_earlier
from rlark_acceptance.run.step6.engine import Engine, PhaseFailed, Progress
from rlark_acceptance.run.step6.first_signal import FirstSignal
from rlark_acceptance.run.step6.journal import Journal, identity, open_journal, sweep_dead_runs
from rlark_acceptance.run.step6.listed import Listed
from rlark_acceptance.run.step6.location import Location, Unlocated, locate, output_store
from rlark_acceptance.run.step6.metrics import MetricsReal
from rlark_acceptance.run.step6.output import Output
from rlark_acceptance.run.step6.phase import Phase
from rlark_acceptance.run.step6.plan import Step6Plan
from rlark_acceptance.run.step6.printed_config import AsValidated, OneNode
from rlark_acceptance.run.step6.ray_head import RayHead
from rlark_acceptance.run.step6.record import PhaseResult, RunRecord
from rlark_acceptance.run.step6.resume import resume
from rlark_acceptance.run.step6.run_id import output_mount
from rlark_acceptance.run.step6.scheduled import Scheduled
from rlark_acceptance.run.step6.steps import StepsAdvance
from rlark_acceptance.run.step6.trained import CheckpointTrained
from rlark_acceptance.secrets import Redactor

if TYPE_CHECKING:
    from rlark_acceptance.run.outcome import AcceptanceRun


class Interrupted(KeyboardInterrupt):
    """SIGINT / SIGTERM ended Step 6 (what was submitted is removed); carries the record."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__("the acceptance run was interrupted")
        self.record = record
        self.run: AcceptanceRun | None = None  # set by ``accept``, which has the pre-flight


def phases(
    plan: Step6Plan, expected: Location | Unlocated, events: Location | Unlocated | None = None
) -> tuple[list[Phase], list[Phase]]:
    """The phases awaited, and those read along the way.

    The page's order, with the training checks where what they need is there: the steps
    (T.1) and the scalars (T.2) before 6.5 deletes the Worker (a run stopped at its first
    checkpoint proves nothing of its last step), the checkpoint's tensors (T.3) after it.
    T.4 is no phase of this submission: a second one, made after these (``resume``).
    """
    t = plan.training
    awaited: list[Phase] = [Listed(plan.manifest), Scheduled(plan.expected_node), RayHead()]
    awaited.append(FirstSignal())
    after = CheckId.PROGRESS_LOGGED
    if t is not None and t.on(CheckId.STEPS_ADVANCE):
        awaited.append(StepsAdvance(t.target, plan.timeouts[Bound.PROGRESS]))
        after = CheckId.STEPS_ADVANCE
    if t is not None and t.on(CheckId.METRICS_REAL):
        located = events if events is not None else Unlocated("no TensorBoard location")
        grace = plan.timeouts[Bound.PROGRESS]
        awaited.append(MetricsReal(located, t.expect, after=after, grace=grace))
    awaited.append(Output(expected, delete_after=plan.delete_after))
    if t is not None and t.on(CheckId.CHECKPOINT_TRAINED):
        awaited.append(CheckpointTrained(expected))
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
    clock: Callable[[], float] | None = None,
    diagnostics: Path | None = None,
    redactor: Redactor | None = None,
) -> RunRecord:
    """Submit ``plan.job`` and run Step 6; never raises for what the target does wrong.

    ``diagnostics``: the folder a red run's diagnostics bundle goes to (an earlier run's
    bundle there is removed first), redacted by ``redactor`` (the run's); None: none.
    Raises ``Interrupted`` (a KeyboardInterrupt) with the record so far on SIGINT / SIGTERM.
    """
    clock = clock_of(adapter).monotonic if clock is None else clock  # the adapter's
    if diagnostics is not None:
        clear_earlier(diagnostics)  # the folder says this run's story, or none
    where = Outputs.before_submission(adapter, plan)
    awaited, along = phases(plan, where.expected, where.events)
    training = tuple(p.check for p in awaited if p.check in TRAINING_IDS)
    resumes = plan.training is not None and plan.training.on(CheckId.RESUMES)
    if resumes:
        training += (CheckId.RESUMES,)  # after the others: a second submission of its own
    engine = Engine(
        adapter,
        RunRecord(job=plan.job, run_id=plan.run_id, training=training),
        plan.timeouts,
        signal=plan.signal,
        steps=plan.training.step_pattern if plan.training is not None else None,
        read_along=along,
        clock=clock,
        on_phase=on_phase,
        on_progress=on_progress,
        diagnostics=diagnostics,
        redactor=redactor,
    )
    rec = engine.rec
    interrupt: KeyboardInterrupt | None = None
    try:
        for phase in awaited:
            try:
                engine.run(phase)
            except PhaseFailed:
                # A training check that failed leaves the page's checks after it to judge
                # (a run that stalled may still have written its checkpoint); a page check
                # that failed ends the run, as the page's troubleshooting order says.
                if phase.check not in TRAINING_IDS:
                    raise
        if resumes:
            # 6.5 passed: the first run's checkpoint is there, its Worker deleted.
            assert isinstance(where.expected, Location)
            if engine.stream is not None:
                engine.stream.close()
                engine.stream = None
            resume(adapter, plan, engine, where.expected, clock=clock, on_progress=on_progress)
    except PhaseFailed:
        pass
    except KeyboardInterrupt as exc:
        engine.interrupted()
        interrupt = exc
    finally:
        if engine.stream is not None:
            engine.stream.close()  # a Worker that prints on after its verdict costs nothing
    _finish(engine, plan, where)
    if interrupt is not None:
        raise Interrupted(rec) from interrupt
    return rec


def _finish(engine: Engine, plan: Step6Plan, where: Outputs) -> None:
    """The record's last words (``Engine.finish``), then the journal held on the outputs
    closed, or handed to the next run when what this run wrote could not be removed."""
    left = False
    try:
        left = engine.finish(where.outputs if plan.delete_after else None, plan.keep_outputs)
    finally:
        if where.journal is not None:
            if left:
                where.journal.hand_on()
            else:
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
    events: Location | Unlocated | None = None  # the run's TensorBoard events (T.2)

    @classmethod
    def before_submission(cls, adapter: Adapter, plan: Step6Plan) -> Outputs:
        runs_own = _runs_own(adapter, plan.exported, plan.output_root)
        shared = runs_own[1] if runs_own is not None else None

        own = runs_own[0] if runs_own is not None else plan.output_root
        # Under the run's own prefix (its new run id) nothing of an earlier run can be.
        fresh = runs_own is not None
        expected_fresh = fresh and _under(plan.expected_output, str(own))

        def written(
            job: Job, run_id: str, known: Location | Unlocated | None = None
        ) -> Location | Unlocated:
            loc = locate(adapter, job, own, known=known, fresh=fresh)
            if fresh and isinstance(loc, Location):
                loc.owner = run_id  # the mount's prefix the harness gave that run alone
            return loc

        def located(job: Job) -> tuple[Location | Unlocated, Location | Unlocated]:
            expected = locate(adapter, job, plan.expected_output, fresh=expected_fresh)
            return expected, written(job, plan.run_id, expected)

        expected, outputs = located(plan.job)
        if (
            plan.delete_after
            and shared is not None
            and sweep_dead_runs(
                shared, lambda dead: written(plan.job_of(dead), dead), by=plan.run_id
            )
        ):
            # A killed run's objects were removed: what is there before this run changed.
            expected, outputs = located(plan.job)
        journal = None
        # Journalled only at a location of its own: elsewhere nothing is ever removed.
        if (
            plan.delete_after
            and plan.keep_outputs != "always"
            and isinstance(outputs, Location)
            and shared is not None
        ):
            journal = open_journal(outputs, run_id=plan.run_id, shared=shared)
        events = None
        t = plan.training
        if t is not None and t.on(CheckId.METRICS_REAL):
            events = (
                locate(adapter, plan.job, t.tensorboard, known=expected)
                if t.tensorboard
                else Unlocated(
                    t.no_events
                    or "no TensorBoard location: set runner.logger.log_path, the Job's "
                    "tensorboard.logDir or the profile's training.tensorboard"
                )
            )
        return cls(expected, outputs, journal, events)


def _under(path: object, folder: str) -> bool:
    return isinstance(path, str) and (path == folder or path.startswith(folder.rstrip("/") + "/"))


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
