"""What one submission showed, phase by phase, with the evidence that explains it.

The surface read by the steps and the run-record plugin: ``phases`` (check → ``PhaseResult``),
``earliest_failure``, ``pods``, ``events``, ``durations``, ``log_excerpt()``, ``checkpoint``,
``checkpoint_after_delete``, ``ref``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rlark_acceptance.adapters.base import Event, JobRef, PodStatus
from rlark_acceptance.model.job import Job
from rlark_acceptance.storage import CheckpointReport

Status = Literal["passed", "failed", "skipped"]

# Step 6's checks in the order a reader troubleshoots them: the printed config (1.1, 1.2)
# is read between the run script's start (6.3) and the first signal (6.4).
ORDER = ("6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5")
PHASES = ("6.1", "6.2", "6.3", "6.4", "6.5")


@dataclass
class PhaseResult:
    check: str
    status: Status
    message: str
    at: float | None = None  # seconds since submission


@dataclass
class RunRecord:
    """What one submission showed, phase by phase, with the evidence to explain it."""

    job: Job
    ref: JobRef | None = None
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    pods: list[PodStatus] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    printed_config: dict[str, Any] | None = None
    checkpoint: CheckpointReport | None = None
    checkpoint_after_delete: CheckpointReport | None = None
    durations: dict[str, float] = field(default_factory=dict)
    signal_lag: float | None = None  # seconds from the signal line's arrival to 6.4 passing
    fault_at: float | None = None  # seconds after submission when the Worker showed the fault
    # The run's own outputs at the persistent location: where they were kept (a failing
    # run, or ``target.keepOutputs: always``), or how many objects were removed.
    outputs_kept: str | None = None
    outputs_removed: int = 0
    interrupted: bool = False  # SIGINT / SIGTERM ended the run; what was submitted is gone
    # What the record warns of without a check failing: a clean-up the target refused.
    warnings: list[str] = field(default_factory=list)
    worker_left: str | None = None  # why the Worker could not be deleted (then still there)

    def __repr__(self) -> str:  # the log and the Job may hold secrets: reprs reach reports
        phases = {c: p.status for c, p in self.phases.items()}
        return f"RunRecord({self.job.name!r}, phases={phases})"

    def status(self, check: str) -> Status:
        return self.phases[check].status if check in self.phases else "skipped"

    @property
    def passed(self) -> bool:
        return all(self.status(c) == "passed" for c in PHASES) and self.earliest_failure is None

    @property
    def earliest_failure(self) -> PhaseResult | None:
        for check in ORDER:
            p = self.phases.get(check)
            if p and p.status == "failed":
                return p
        return None

    def log_excerpt(self, around: int | None = None, lines: int = 40) -> str:
        if not self.log:
            return "(no log lines)"
        end = len(self.log) if around is None else min(len(self.log), around + lines // 2)
        return "\n".join(self.log[max(0, end - lines) : end])
