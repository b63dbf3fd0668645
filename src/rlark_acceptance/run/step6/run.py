"""The run object: the shared state of one Step 6, and the loop every awaited phase waits in.

A phase waits on the target's observation stream under its own deadline
(``timeouts.<key>``). Each happening (a Pod change, a log line, an Event, the end of the log)
updates the shared state first; then the phase decides: passed, failed, or keep waiting.
When the Worker can print nothing more (its log ended, or its Pod is terminal, or stuck for
good), the phase that is waiting fails at once with the Pod's cause instead of running into
its deadline. Time comes from ``clock``, so a scripted stream can drive every transition in
milliseconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from rlark_acceptance.adapters.base import (
    FATAL_REASONS,
    Adapter,
    Event,
    Happening,
    PodStatus,
    TargetUnreachable,
)
from rlark_acceptance.run.step6.log import LogReader
from rlark_acceptance.run.step6.record import PhaseResult, RunRecord, Status

# After the Worker's log ended, how long to wait for the Pod status that carries the exit code.
SETTLE_SECONDS = 10.0
# After a terminal Pod, how long its log stream may still deliver lines in flight before the
# phase is decided without them (a stream that never closes must not hold the verdict).
TAIL_GRACE_SECONDS = 1.0
# How often a waiting phase reports progress (elapsed time, Pod state, latest log line).
PROGRESS_SECONDS = 1.0

# The Pod is bound to its node but its container could not be created (a volume that does not
# mount, a missing Secret): the Worker's start (6.3) failed, not the scheduling (6.2).
CONTAINER_START_FAILURES = frozenset(
    {"CreateContainerError", "CreateContainerConfigError", "RunContainerError"}
)


class PhaseFailed(Exception):
    """A phase went red; its result is in the record already."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


class Stream(Protocol):
    """What the run reads from the target: ``Observation`` or a scripted stand-in."""

    def next(self, timeout: float) -> Happening | None: ...

    def close(self) -> None:
        """The run reads no more: what is still queued, and what comes, is dropped."""
        ...


@dataclass(frozen=True)
class Progress:
    """One tick of a waiting phase, for a live display."""

    check: str
    timeout_key: str
    elapsed: float
    timeout: float
    pod: str
    last_line: str | None


class Awaited(Protocol):
    """A phase decided by what the Worker shows: its check, its timeout, its verdict."""

    check: ClassVar[str]
    timeout_key: ClassVar[str]

    def verdict(self, run: Step6Run) -> tuple[Status, str] | None:
        """``("passed" | "failed", message)`` once the state decides it, else None."""
        ...

    def over(self, run: Step6Run) -> str:
        """Why the phase failed when the Worker can print nothing more."""
        ...


def pod_over(pod: PodStatus | None) -> bool:
    """The Pod can run the Worker no further: terminal, a terminated container, or stuck."""
    return pod is not None and (
        pod.terminal or pod.exit_code is not None or pod.reason in FATAL_REASONS
    )


def unreachable_text(cause: TargetUnreachable) -> str:
    return f"{cause}; {cause.left}" if cause.left else str(cause)


def pod_text(pod: PodStatus | None) -> str:
    if pod is None:
        return "no Pod status"
    parts = [f"pod {pod.name} {pod.phase}"]
    if pod.reason:
        parts.append(pod.reason)
    if pod.exit_code is not None:
        parts.append(f"exit code {pod.exit_code}")
    if pod.message:
        parts.append(pod.message)
    return ", ".join(parts)


class Step6Run:
    """The shared state of one submission: the record, the Pod as last seen, the log read."""

    def __init__(
        self,
        adapter: Adapter,
        record: RunRecord,
        timeouts: dict[str, float],
        *,
        signal: re.Pattern[str] | None,
        validated: dict[str, Any] | None,
        clock: Callable[[], float] = time.monotonic,
        on_phase: Callable[[PhaseResult], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.adapter = adapter
        self.rec = record
        self.timeouts = timeouts
        self.clock = clock
        self.on_phase = on_phase
        self.on_progress = on_progress
        self.t0 = clock()
        self.stream: Stream | None = None
        self.pod: PodStatus | None = None
        self.ended = False  # the Worker's log stream ended
        self.over_at: float | None = None  # when the Worker's state made the outcome certain
        self.now = self.t0  # when the latest happening happened
        self.warning: Event | None = None  # the latest Warning Event (FailedMount...)
        self.worker_deleted = False
        self.lost: TargetUnreachable | None = None  # the target stopped answering
        self.log = LogReader(self, signal, validated)

    # --- results ------------------------------------------------------------------------
    def since(self, at: float | None = None) -> float:
        return (self.clock() if at is None else at) - self.t0

    def done(self, check: str, status: Status, message: str, at: float | None = None) -> None:
        self.rec.phases[check] = PhaseResult(check, status, message, self.since(at))
        if self.on_phase:
            self.on_phase(self.rec.phases[check])

    def fail(self, check: str, message: str) -> PhaseFailed:
        self.done(check, "failed", message)
        return PhaseFailed(check, message)

    # --- what happened ------------------------------------------------------------------
    def take(self, item: Happening) -> None:
        self.now = item.at
        if item.kind == "pod" and item.pod is not None:
            self.pod = item.pod
            if pod_over(item.pod):
                self.over_at = self.over_at or item.at
        elif item.kind == "event" and item.event is not None:
            self.rec.events.append(item.event)
            if item.event.type == "Warning":
                self.warning = item.event
        elif item.kind == "log":
            lines = item.log_lines
            first = self.rec.log.count
            self.rec.log.extend(lines)
            self.log.feed_lines(lines, first, item.at)
        elif item.kind == "end":
            self.ended = True
            self.over_at = self.over_at or item.at
        elif item.kind == "lost" and item.lost is not None:
            self.lost = self.lost or item.lost

    def worker_over(self) -> bool:
        """The Worker can print nothing more: its log ended, or its Pod is over."""
        return self.ended or pod_over(self.pod)

    def pod_text(self) -> str:
        text = pod_text(self.pod)
        died = self.pod is not None and self.pod.exit_code not in (None, 0)
        if died and self.log.last_error:
            text += f'; its last error line: "{self.log.last_error}"'
        w = self.warning
        if w is not None and w.message not in text:
            text += f"; last warning: {w.reason}: {w.message}"
        return text

    # --- waiting ------------------------------------------------------------------------
    def next(self, timeout: float) -> Happening | None:
        assert self.stream is not None, "observe() first"
        item = self.stream.next(max(0.0, timeout))
        if item is not None:
            self.take(item)
        return item

    def wait(self, phase: Awaited) -> None:
        """Wait until ``phase`` passes (recorded) or fails (recorded, ``PhaseFailed``)."""
        timeout = self.timeouts[phase.timeout_key]
        start = self.clock()
        deadline = start + timeout
        ticked = start
        while True:
            verdict = phase.verdict(self)
            if verdict is None and self.lost is not None:
                # Not the Worker's fault: what stopped answering is named, and what may be left.
                self.rec.fault_at = self.since(self.now)
                raise self.fail(phase.check, unreachable_text(self.lost))
            if verdict is None and self.worker_over():
                self.settle()
                verdict = phase.verdict(self)  # lines that were still in flight
                if verdict is None:
                    self.rec.fault_at = self.since(self.over_at)
                    raise self.fail(phase.check, phase.over(self))
            if verdict is not None:
                status, message = verdict
                if status != "passed":
                    if self.over_at is not None:
                        self.rec.fault_at = self.since(self.over_at)
                    raise self.fail(phase.check, message)
                self.done(phase.check, "passed", message)
                return
            now = self.clock()
            if now >= deadline:
                if phase.check == "6.4":  # say what the Worker printed instead
                    from rlark_acceptance.run.step6.first_signal import progress_hint

                    hint = progress_hint(self.rec.log)
                else:
                    hint = ""
                raise self.fail(
                    phase.check,
                    f"nothing after {timeout:.0f} s (timeouts.{phase.timeout_key}); "
                    f"{self.pod_text()}{hint}",
                )
            self.next(min(deadline - now, PROGRESS_SECONDS))
            if self.on_progress is not None and self.clock() - ticked >= PROGRESS_SECONDS:
                ticked = self.clock()
                self.progress(phase.check, phase.timeout_key, ticked - start)

    def progress(self, check: str, timeout_key: str, elapsed: float) -> None:
        if self.on_progress is not None:
            last = self.rec.log.last
            self.on_progress(
                Progress(
                    check,
                    timeout_key,
                    elapsed,
                    self.timeouts[timeout_key],
                    pod_text(self.pod),
                    last,
                )
            )

    def settle(self) -> None:
        """The Worker is over: collect what is still in flight before deciding.

        After the end of the log, the Pod's final status (it carries the exit code); after a
        terminal Pod whose log is still open, the lines in flight, for a short grace only.
        """
        settle_until = self.clock() + SETTLE_SECONDS
        tail_until = self.clock() + TAIL_GRACE_SECONDS
        while True:
            pod = self.pod
            final = pod_over(pod)
            if final and self.ended:
                return
            if final:
                assert pod is not None
                ran = pod.terminal or pod.exit_code is not None
                until = tail_until if ran else self.clock()  # never started: no log to wait for
            else:
                until = settle_until
            left = until - self.clock()
            if left <= 0:
                return
            if self.next(left) is None and self.clock() >= until:
                return
