"""What Step 6 has seen of its Worker so far: the state every phase decides from.

The engine alone changes it: with each happening of the target's observation (a Pod
change, log lines, an Event, the end of the log, the target lost) and with the answer to
each probe a phase asked for (the submission, the Job list, the Pods, a reading of the
output location, the Worker's deletion). Times are the engine's clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import assert_never

from rlark_acceptance.adapters.base import (
    DISRUPTION_REASONS,
    FATAL_REASONS,
    RUNTIME_LOST_REASONS,
    CleanupRefused,
    Event,
    EventSeen,
    Happening,
    JobRef,
    LogEnded,
    LogLines,
    PodChanged,
    PodStatus,
    SubmitRejected,
    TargetLost,
    TargetUnreachable,
)
from rlark_acceptance.rlinf.failures import CONTAINER_RUNTIME_LOST, WORKER_DISRUPTED, Cause
from rlark_acceptance.run.step6.log import LogReader, StepCounter
from rlark_acceptance.run.step6.readings import Checkpoints, Scalars
from rlark_acceptance.run.step6.record import LogTail
from rlark_acceptance.storage import CheckpointReport, StoreError


def pod_over(pod: PodStatus | None) -> bool:
    """The Pod can run the Worker no further: terminal, a terminated container, or stuck."""
    return pod is not None and (
        pod.terminal or pod.exit_code is not None or pod.reason in FATAL_REASONS
    )


def pod_text(pod: PodStatus | None) -> str:
    if pod is None:
        return "no Pod status"
    parts = [f"pod {pod.name} {pod.phase}"]
    # The cluster's doing, not RLinf's: tagged, so the remedy is the cluster's.
    if pod.reason in DISRUPTION_REASONS:
        parts.append(f"{pod.reason} [{WORKER_DISRUPTED.id}]")
    elif pod.reason in RUNTIME_LOST_REASONS and pod.terminal:
        parts.append(f"{pod.reason} [{CONTAINER_RUNTIME_LOST.id}]")
    elif pod.reason:
        parts.append(pod.reason)
    if pod.exit_code is not None:
        parts.append(f"exit code {pod.exit_code}")
    if pod.message:
        parts.append(pod.message)
    return ", ".join(parts)


def cause_text(cause: Cause) -> str:
    """The run's first error as a failure quotes it: its class (the remedy follows from it,
    ``run.report``) and its line, with the actor that printed it."""
    kind = f" [{cause.kind.id}: {cause.kind.title}]" if cause.kind is not None else ""
    actor = f" in {cause.actor}" if cause.actor else ""
    return f'its first error{kind}{actor} (log line {cause.line + 1}): "{cause.quote}"'


def unreachable_text(cause: TargetUnreachable) -> str:
    return f"{cause}; {cause.left}" if cause.left else str(cause)


@dataclass(frozen=True)
class Reading:
    """One listing of the output location, and its verdict on the checkpoints there."""

    at: float
    report: CheckpointReport | None = None
    error: StoreError | None = None
    removed_by: str | None = None  # the harness's own removal that reached the location


class Observed:
    """The Worker as last seen, what its log showed, and the answers to the probes."""

    def __init__(
        self,
        t0: float,
        signal: re.Pattern[str] | None,
        tail: LogTail,
        steps: re.Pattern[str] | None = None,
        *,
        resume: bool = False,
    ) -> None:
        self.t0 = t0
        self.now = t0  # when the phases decide (the engine's clock)
        self.happened_at = t0  # when the latest happening happened
        self.pod: PodStatus | None = None
        self.ended = False  # the Worker's log stream ended
        self.pod_over_at: float | None = None  # when its Pod could run it no further
        self.over_at: float | None = None  # when the Worker's state made the outcome certain
        self.warning: Event | None = None  # the latest Warning Event (FailedMount...)
        self.lost: TargetUnreachable | None = None  # the target stopped answering
        self.log = LogReader(signal, steps, resume=resume)
        self.decided: dict[str, float] = {}  # when each phase was decided (the engine's clock)
        self.failed: set[str] = set()  # the phases that failed
        # When the last line read was written (the target's stamps), and when it was read.
        self.written: float | None = None
        self.read_at: float | None = None
        self.log_at: float | None = None  # when the latest log lines were read
        self.tail = tail  # what the record keeps of the log
        # --- the answers to the probes (None: not asked yet)
        self.ref: JobRef | None = None
        self.refused: SubmitRejected | TargetUnreachable | None = None
        self.listed: list[str] | TargetUnreachable | None = None
        self.pods: list[PodStatus] | Exception | None = None
        self.outputs: Reading | None = None  # the latest reading while the Worker runs
        self.deleted: CleanupRefused | TargetUnreachable | bool = False
        self.outputs_again: Reading | None = None  # the reading after the Worker was deleted
        self.submitted: datetime | None = None  # the wall clock at submission (T.3)
        self.scalars: Scalars | None = None  # T.2: the run's TensorBoard scalars
        self.tensors: Checkpoints | None = None  # T.3: its first and last checkpoint

    def since(self, at: float) -> float:
        return at - self.t0

    def take(self, item: Happening) -> None:
        self.happened_at = item.at
        match item:
            case PodChanged(pod=pod):
                self.pod = pod
                if pod_over(pod):
                    self.pod_over_at = self.pod_over_at or item.at
                    self.over_at = self.over_at or item.at
            case EventSeen(event=event):
                if event.type == "Warning":
                    self.warning = event
            case LogLines(lines=lines, written=written):
                self.log_at = item.at
                if written is not None:
                    self.written, self.read_at = written, item.at
                first = self.tail.count
                self.tail.extend(lines)
                self.log.feed_lines(lines, first, item.at)
                cause = self.log.cause.cause
                if cause is not None:
                    self.tail.around(cause.line)
            case LogEnded():
                self.ended = True
                self.over_at = self.over_at or item.at
            case TargetLost(cause=cause):
                self.lost = self.lost or cause
            case _:
                assert_never(item)

    @property
    def steps(self) -> StepCounter:
        return self.log.steps

    def worker_over(self) -> bool:
        """The Worker can print nothing more: its log ended, or its Pod is over."""
        return self.ended or pod_over(self.pod)

    def pod_text(self) -> str:
        text = pod_text(self.pod)
        died = self.pod is not None and self.pod.exit_code not in (None, 0)
        cause = self.log.cause.cause
        if died and cause is not None:
            text += f"; {cause_text(cause)}"
        elif died and self.log.last_error:
            text += f'; its last error line: "{self.log.last_error}"'
        w = self.warning
        if w is not None and w.message not in text:
            text += f"; last warning: {w.reason}: {w.message}"
        return text
