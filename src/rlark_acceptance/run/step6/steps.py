"""T.1 the steps advance: the run reaches the steps its validated config asks for, and never
goes ``timeouts.progress`` without a new one.

Beyond the page: 6.4 passes on the first step, so a run that stalls after it, or dies at step
3 of 100, passes every check of the page. The step is read from the log as RLinf prints it
(``training.stepPattern``: group 1 the step, group 2 the total when the line has one); the
steps to reach are the profile's ``training.steps``, else the validated config's
(``runner.max_epochs`` capped by ``runner.max_steps``, overrides included), else the total
the run itself prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase


def config_steps(config: dict[str, Any] | None) -> int | None:
    """The steps RLinf's runners train: ``runner.max_epochs``, capped by
    ``runner.max_steps`` when that is not negative (RLinf's ``max_steps`` property)."""
    runner = (config or {}).get("runner")
    if not isinstance(runner, dict):
        return None
    epochs, cap = runner.get("max_epochs"), runner.get("max_steps", -1)
    if not isinstance(epochs, int) or isinstance(epochs, bool):
        return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None
    if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 0:
        return min(epochs, cap)
    return epochs


@dataclass(frozen=True)
class StepsTarget:
    """The steps to reach and where that number comes from (quoted in the verdict)."""

    steps: int | None
    source: str


class StepsAdvance(Phase):
    check: ClassVar[str] = CheckId.STEPS_ADVANCE
    bound: ClassVar[Bound | None] = Bound.TRAINING

    def __init__(self, target: StepsTarget, stall_seconds: float) -> None:
        self.target = target
        self.stall = stall_seconds

    def _of(self, seen: Observed) -> tuple[int | None, str]:
        steps = self.target.steps
        if steps is None and seen.steps.total is not None:
            return seen.steps.total, "the total the run printed"
        return steps, self.target.source

    def _at(self, seen: Observed) -> str:
        steps, _ = self._of(seen)
        step = seen.steps.step
        return f"step {step if step is not None else 'none'} of {steps if steps else '?'}"

    def verdict(self, seen: Observed) -> Decision:
        counter = seen.steps
        steps, source = self._of(seen)
        if counter.step is not None and steps is not None and counter.step >= steps:
            return Passed(
                f"step {counter.step} of {steps} ({source}) reached: {counter.line}",
                at=counter.at,
            )
        pod = seen.pod
        if steps is None and counter.step is not None and pod is not None and pod.exit_code == 0:
            # No count to hold it to (none in the config, the profile or the log): a run that
            # stepped and ended well reached what it was asked for, as far as anyone can tell.
            return Passed(
                f"step {counter.step} reached and the run ended with exit code 0 (no step count "
                "known: set training.steps to hold it to one): " + (counter.line or ""),
                at=counter.at,
            )
        since = counter.at if counter.at is not None else seen.decided.get(CheckId.PROGRESS_LOGGED)
        return stalled(seen, since, self.stall, self._at(seen))

    def over(self, seen: Observed) -> str:
        _, source = self._of(seen)
        if seen.steps.step is None:
            return (
                f"the Worker ended and its log showed no step (/{seen.steps.pattern.pattern}/, "
                f"training.stepPattern): {seen.pod_text()}"
            )
        return f"the Worker ended at {self._at(seen)} ({source}): {seen.pod_text()}"

    def timed_out(self, seen: Observed, seconds: float) -> str:
        return f"{self._at(seen)} after {seconds:.0f} s ({Bound.TRAINING.key}); {seen.pod_text()}"


def stalled(
    seen: Observed, since: float | None, stall: float, where: str, run: str = ""
) -> Failed | None:
    """Failed once ``stall`` seconds passed with no new step since ``since`` (its last
    step, or when stepping began); ``run``: which run, when not the first (T.4's)."""
    if since is None or seen.now - since < stall:
        return None
    return Failed(
        f"{run}stalled at {where}: no new step for {stall:.0f} s ({Bound.PROGRESS.key}); "
        f"{seen.pod_text()}",
        at=since + stall,
    )
