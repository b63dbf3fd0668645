"""Step 6 in the page's order: submit, then each phase in turn; evidence collected at the end."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.run.step6.first_signal import FirstSignal
from rlark_acceptance.run.step6.journal import open_journal, sweep_dead_runs
from rlark_acceptance.run.step6.listed import Listed
from rlark_acceptance.run.step6.output import Location, Output, locate
from rlark_acceptance.run.step6.outputs import keep_outputs_policy, output_root, settle_outputs
from rlark_acceptance.run.step6.ray_head import RayHead
from rlark_acceptance.run.step6.record import PHASES, PhaseResult, RunRecord
from rlark_acceptance.run.step6.run import PhaseFailed, Progress, Step6Run
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
) -> RunRecord:
    """Submit ``job`` and run Step 6; never raises for what the target does wrong.

    Raises ``Interrupted`` (a KeyboardInterrupt) with the record so far on SIGINT / SIGTERM.
    """
    ri = profile.run_info
    signal = re.compile(str(ri.first_signal)) if ri.first_signal else None
    policy = keep_outputs_policy(profile)
    # Located, and listed, before submitting: what is there already is not this run's.
    located = locate(adapter, job, ri.expected_output)
    outputs = locate(adapter, job, output_root(profile), known=located)
    if delete_after and isinstance(outputs, Location) and sweep_dead_runs(outputs):
        # A killed run's objects were removed: what is there before this run changed.
        located = locate(adapter, job, ri.expected_output)
        outputs = locate(adapter, job, output_root(profile), known=located)
    # Held until the outputs are settled: if this run is killed outright, the next one
    # removes what it wrote.
    journaled = delete_after and policy != "always" and isinstance(outputs, Location)
    journal = open_journal(outputs) if journaled and isinstance(outputs, Location) else None
    run = Step6Run(
        adapter,
        RunRecord(job=job),
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
        if rec.ref is not None:
            rec.pods = _safe(lambda: adapter.pods(rec.ref), [])  # type: ignore[arg-type]
            rec.events = _safe(lambda: adapter.events(rec.ref), [])  # type: ignore[arg-type]
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


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:  # evidence collection must never hide the original verdict
        return default
