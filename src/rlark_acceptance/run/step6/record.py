"""What one submission showed, phase by phase, with the evidence that explains it.

The surface read by the steps and the run-record plugin: ``phases`` (check → ``PhaseResult``),
``earliest_failure``, ``pods``, ``events``, ``durations``, ``log_excerpt()``, ``checkpoint``,
``checkpoint_after_delete``, ``ref``, ``diagnostics`` (a red run's bundle: ``summary()``,
``line()``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from rlark_acceptance.adapters.base import Event, JobRef, PodStatus
from rlark_acceptance.model.doc_checks import BY_ID, STEP6_SECTION, CheckId
from rlark_acceptance.model.job import Job
from rlark_acceptance.storage import CheckpointReport

if TYPE_CHECKING:
    from rlark_acceptance.rlinf.failures import Cause
    from rlark_acceptance.run.step6.readings import Checkpoints, Scalars

Status = Literal["passed", "failed", "skipped"]


class KeptEvidence(Protocol):
    """What the record keeps of a red run's diagnostics bundle (``diagnostics.Bundle``, which
    writes it from this record: hence a shape here, not an import)."""

    @property
    def directory(self) -> Path: ...

    @property
    def files(self) -> tuple[tuple[str, int], ...]: ...

    def summary(self) -> dict[str, Any]: ...

    def line(self) -> str: ...


# Step 6's checks in the order a reader troubleshoots them: the printed config (1.1, 1.2)
# is read between the run script's start (6.3) and the first signal (6.4).
ORDER = (
    CheckId.JOB_LISTED,
    CheckId.ONE_POD_ON_NODE,
    CheckId.RAY_HEAD_STARTED,
    CheckId.LOADED_NUM_NODES_IS_ONE,
    CheckId.VALIDATED_CONFIG_KEPT,
    CheckId.PROGRESS_LOGGED,
    CheckId.OUTPUT_PERSISTED,
    CheckId.STEPS_ADVANCE,
    CheckId.METRICS_REAL,
    CheckId.CHECKPOINT_TRAINED,
    CheckId.RESUMES,
)
# The page's phases, awaited by every run: its Step 6 checks, in that order; the training
# checks a run awaits are its own (``RunRecord.training``: the profile's ``training.checks``).
PHASES = tuple(c for c in ORDER if BY_ID[c].section == STEP6_SECTION)


def never_reached_after(failed_at: str, check: str) -> bool:
    """Whether a Step 6 run that fails at ``failed_at`` never decides ``check``: a page's
    phase ends the run, and ``check`` comes after it. (A training check's failure does not
    end the run: the later ones are still read.)

    >>> never_reached_after(CheckId.PROGRESS_LOGGED, CheckId.STEPS_ADVANCE)
    True
    >>> never_reached_after(CheckId.PROGRESS_LOGGED, CheckId.ONE_POD_ON_NODE)
    False
    >>> never_reached_after(CheckId.STEPS_ADVANCE, CheckId.METRICS_REAL)
    False
    """
    return failed_at in PHASES and check in ORDER and ORDER.index(check) > ORDER.index(failed_at)


@dataclass
class PhaseResult:
    check: str
    status: Status
    message: str
    at: float | None = None  # seconds since submission


class LogTail:
    """What the record keeps of the Worker's log, whatever its size: its first lines (Ray's
    start-up, the printed config) and its last ones (what explains how it ended), with the
    count of every line seen. The log itself stays on the target."""

    HEAD = 200
    TAIL = 400
    # The window kept around the run's first cause, wherever in the log it is: lines before
    # it (the traceback that led there), and after it (the knock-ons and the exit).
    BEFORE = 40
    AFTER = 80

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=self.TAIL)
        self.count = 0
        self.window: list[str] = []
        self.window_from: int | None = None  # the 0-based log line of ``window[0]``
        self.cause_line: int | None = None  # the line the window is around

    def extend(self, lines: Sequence[str]) -> None:
        if self.cause_line is not None:  # the lines after the cause, up to ``AFTER``
            self.window.extend(lines[: max(0, self.cause_line + self.AFTER + 1 - self.count)])
        self.count += len(lines)
        room = self.HEAD - len(self.head)
        if room > 0:
            self.head.extend(lines[:room])
            lines = lines[room:]
        self.tail.extend(lines)

    def line(self, index: int) -> str | None:
        """Log line ``index`` (0-based) if it is still kept, at the head or in the tail."""
        if 0 <= index < len(self.head):
            return self.head[index]
        start = self.count - len(self.tail)
        return self.tail[index - start] if start <= index < self.count else None

    def around(self, cause: int) -> None:
        """Keep the window around log line ``cause`` (the first cause, once the reading
        named it): the lines before it still kept, the ones after as they come."""
        if cause == self.cause_line:
            return
        self.cause_line = cause
        start = max(0, cause - self.BEFORE)
        end = min(self.count, cause + self.AFTER + 1)
        while start < end and self.line(start) is None:
            start += 1  # read past already (a traceback longer than the tail)
        self.window_from = start
        self.window = [line for i in range(start, end) if (line := self.line(i)) is not None]

    @property
    def omitted(self) -> int:
        """Lines seen but kept neither at the head nor in the tail."""
        return self.count - len(self.head) - len(self.tail)

    @property
    def last(self) -> str | None:
        if self.tail:
            return self.tail[-1]
        return self.head[-1] if self.head else None

    def __iter__(self) -> Iterator[str]:
        yield from self.head
        yield from self.tail

    def __bool__(self) -> bool:
        return self.count > 0


@dataclass
class Resumed:
    """T.4's second submission: the checkpoint it was told to resume from, the steps it was
    to reach, and what it showed (its own record: its log, its first error)."""

    step: int  # the first run's last checkpoint, global_step_<step>
    resume_dir: str  # that folder's path in the Worker (runner.resume_dir)
    target: int  # the steps it was to reach (runner.max_epochs / max_steps)
    record: RunRecord  # the second submission's own: its Job, log, Pods
    checkpoint_digest: str | None = None  # the model weights of global_step_<step>
    started: int | None = None  # the step it started at, as its log showed it
    reached: int | None = None  # the highest step its log showed
    said: str | None = None  # the line in which it said it resumed (RLinf's)
    weights_at_start: str | None = None  # the digest of its weights as loaded, if printed

    def summary(self) -> dict[str, Any]:
        return {
            "job": str(self.record.job.name),
            "from": {"step": self.step, "dir": self.resume_dir, "sha256": self.checkpoint_digest},
            "target": self.target,
            "started": self.started,
            "reached": self.reached,
            "said": self.said,
            "weightsAtStart": self.weights_at_start,
        }


@dataclass
class RunRecord:
    """What one submission showed, phase by phase, with the evidence to explain it."""

    job: Job  # as submitted: named for its run (``run_id.for_run``)
    ref: JobRef | None = None
    run_id: str | None = None
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    log: LogTail = field(default_factory=LogTail)
    pods: list[PodStatus] = field(default_factory=list)
    # The Worker's Pod as the observation last saw it: its node and image ID once the Job
    # is deleted and ``pods``, listed at the end, is empty.
    worker: PodStatus | None = None
    events: list[Event] = field(default_factory=list)
    printed_config: dict[str, Any] | None = None
    checkpoint: CheckpointReport | None = None
    checkpoint_after_delete: CheckpointReport | None = None
    durations: dict[str, float] = field(default_factory=dict)
    # Seconds from when the state showed a passing verdict (the signal line's arrival, say)
    # to the verdict, by check.
    lags: dict[str, float] = field(default_factory=dict)
    fault_at: float | None = None  # seconds after submission when the Worker showed the fault
    # The run's own outputs at the persistent location: where they were kept (a failing
    # run, or ``target.keepOutputs: always``), or how many objects were removed.
    outputs_kept: str | None = None
    outputs_removed: int = 0
    interrupted: bool = False  # SIGINT / SIGTERM ended the run; what was submitted is gone
    # The training checks this run awaits (T.1-T.4, those the profile keeps on), what they
    # read, and the run's first error as the log showed it.
    training: tuple[str, ...] = ()
    resumed: Resumed | None = None  # T.4's second submission, once it was made
    submitted_at: datetime | None = None  # the wall clock at submission
    scalars: Scalars | None = None
    checkpoints: Checkpoints | None = None
    step: int | None = None  # the highest step the log showed (T.1), and the total it printed
    step_total: int | None = None
    first_cause: Cause | None = None  # the first error the Worker's log showed
    # What the record warns of without a check failing: a clean-up the target refused,
    # lines of the Worker's log the target rotated away unread.
    warnings: list[str] = field(default_factory=list)
    worker_left: str | None = None  # why the Worker could not be deleted (then still there)
    # Why the Job's Pods could not be listed for the record at the end (``pods`` then says
    # nothing: an empty list is no proof that the Worker is gone).
    pods_unread: str | None = None
    # A red run's diagnostics bundle, once written (``diagnostics.Bundle``): where, what.
    diagnostics: KeptEvidence | None = None

    def __repr__(self) -> str:  # the log and the Job may hold secrets: reprs reach reports
        phases = {c: p.status for c, p in self.phases.items()}
        return f"RunRecord({self.job.name!r}, phases={phases})"

    @property
    def signal_lag(self) -> float | None:
        """Seconds from the first signal line's arrival to 6.4 passing."""
        return self.lags.get(CheckId.PROGRESS_LOGGED)

    def status(self, check: str) -> Status:
        return self.phases[check].status if check in self.phases else "skipped"

    @property
    def expected(self) -> tuple[str, ...]:
        """Every check this run decides: the page's phases, then its training checks."""
        return PHASES + self.training

    @property
    def passed(self) -> bool:
        checks = self.expected
        return all(self.status(c) == "passed" for c in checks) and self.earliest_failure is None

    @property
    def earliest_failure(self) -> PhaseResult | None:
        for check in ORDER:
            p = self.phases.get(check)
            if p and p.status == "failed":
                return p
        return None

    def log_excerpt(self, lines: int = 40) -> str:
        """The log's last ``lines`` lines, saying how many came before them."""
        if not self.log:
            return "(no log lines)"
        kept = list(self.log)
        shown = kept[-lines:]
        before = self.log.count - len(shown)
        head = [f"({before} earlier lines of {self.log.count} not shown)"] if before else []
        return "\n".join(head + shown)

    def training_summary(self) -> dict[str, Any] | None:
        """What the training checks read, for the record (run-summary.json ``training``)."""
        if not self.training:
            return None
        out: dict[str, Any] = {"checks": list(self.training)}
        if self.step is not None:
            out["steps"] = {"reached": self.step, "printedTotal": self.step_total}
        sc = self.scalars
        if sc is not None:
            bad = sc.non_finite()
            out["scalars"] = {
                "location": sc.where,
                "files": sc.files,
                "tags": len(sc.series),
                "values": sum(len(v) for v in sc.series.values()),
                "nonFinite": {tag: step for tag, step in sorted(bad.items())},
            }
        ck = self.checkpoints
        if ck is not None:
            out["checkpoints"] = {
                "location": ck.where,
                "steps": list(ck.steps),
                **{
                    name: {
                        "step": w.step,
                        "tensors": w.tensors,
                        "bytes": w.bytes,
                        "sha256": w.digest,
                        "nonFinite": dict(w.non_finite),
                    }
                    for name, w in (("first", ck.first), ("last", ck.last))
                    if w is not None
                },
                "olderThanTheRun": list(ck.stale[:20]),
            }
        if self.resumed is not None:
            out["resume"] = self.resumed.summary()
        return out

    def first_cause_summary(self) -> dict[str, Any] | None:
        """The Worker's first error, for the record of a run that did not pass: the first
        run's, else (T.4 failed) its second submission's, saying so."""
        c, run = self.first_cause, None
        if c is None and self.resumed is not None and self.status(CheckId.RESUMES) == "failed":
            c, run = self.resumed.record.first_cause, str(self.resumed.record.job.name)
        if c is None or self.passed:
            return None
        out: dict[str, Any] = {"logLine": c.line + 1, "quote": c.quote, "actor": c.actor}
        if run is not None:
            out["job"] = run  # the second submission's log, not the first's
        if c.kind is not None:
            out |= {"class": c.kind.id, "title": c.kind.title, "remedy": c.kind.remedy}
        if c.knock_ons:
            out["knockOns"] = c.knock_ons
        if c.mount_path:
            out["path"] = c.mount_path
        return out
