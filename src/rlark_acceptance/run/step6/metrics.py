"""T.2 the metrics are real: the run's TensorBoard events hold scalars, every value finite, and
the profile's expectations (``training.expect``) hold.

Beyond the page: a GPU or driver that turns the loss into NaN, or an environment worker that
yields no trajectories, passes every check of the page. The events are read from the store
(the profile's ``training.tensorboard``, else the config's ``<runner.logger.log_path>/
tensorboard``, else the Job's ``tensorboard.logDir``) at once after the steps were decided,
then again every few seconds until they cover the last step the log showed or the Worker is
over (a writer flushes its events when it closes); a Worker that does not get there within
``timeouts.progress`` is judged on what it wrote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.model.training import Expectation
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase, ReadScalars
from rlark_acceptance.run.step6.readings import Scalars

# How often the scalars are read again while they do not cover the run yet: four times as
# long as the last reading took (TensorBoard's loader checks each record in pure Python, a
# few MB take seconds: the reader must not take a core from the run it watches), within
# these bounds. A smoke run's events are read in a tenth of a second: every half second.
SCALARS_RELIST_FACTOR = 4.0
SCALARS_RELIST_MIN_SECONDS = 0.5
SCALARS_RELIST_MAX_SECONDS = 10.0


def relist_after(reading: Scalars) -> float:
    paced = SCALARS_RELIST_FACTOR * reading.took
    return min(SCALARS_RELIST_MAX_SECONDS, max(SCALARS_RELIST_MIN_SECONDS, paced))


def aggregate(values: Sequence[float], how: str) -> float:
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return math.fsum(values) / len(values)


def unmet(expect: Expectation, scalars: Scalars) -> str | None:
    """Why ``expect`` does not hold on ``scalars``; None when it does."""
    values = [v for _, v in scalars.series.get(expect.tag, [])]
    if not values:
        known = ", ".join(sorted(scalars.series)[:8]) or "none"
        return f"{expect.tag} was not logged (tags: {known}) [{expect.where}]"
    if expect.last:
        values = values[-expect.last :]
    got = aggregate(values, expect.agg)
    low = expect.above is not None and not got > expect.above
    high = expect.below is not None and not got < expect.below
    if low or high:
        return f"{expect.text()} does not hold: {got:g} [{expect.where}]"
    return None


class MetricsReal(Phase):
    check: ClassVar[str] = CheckId.METRICS_REAL
    bound: ClassVar[Bound | None] = Bound.TRAINING

    def __init__(
        self,
        located: Location | Unlocated,
        expect: Sequence[Expectation],
        *,
        after: str,
        grace: float,
    ) -> None:
        self.located = located
        self.expect = tuple(expect)
        self.after = after  # the check decided before this one: the grace counts from it
        self.grace = grace

    def verdict(self, seen: Observed) -> Decision:
        loc = self.located
        if isinstance(loc, Unlocated):
            return Failed(f"the run's TensorBoard events cannot be read: {loc.why}")
        if loc.baseline_error is not None:
            return Failed(loc.baseline_error)  # an earlier run's events could pass for these
        sc = seen.scalars
        if sc is None:
            return ReadScalars(loc)
        if sc.error is None and not self.complete(seen, sc):
            # A writer flushes its events when it closes (or every couple of minutes): read
            # again until they cover the last step the log showed, the Worker is over, or
            # ``timeouts.progress`` passed after the steps were decided.
            decided = seen.decided.get(self.after, seen.now)
            if seen.now - decided < self.grace:
                # At once when the Worker ended after the last reading (its writer closed and
                # flushed): no need to wait out the interval for what is now complete.
                over_at = seen.pod_over_at if seen.pod_over_at is not None else seen.over_at
                ended = over_at is not None and sc.at < over_at
                due = ended or seen.now - sc.at >= relist_after(sc)
                return ReadScalars(loc) if due else None
        return self.judge(sc, over=seen.worker_over())

    def complete(self, seen: Observed, sc: Scalars) -> bool:
        """The reading holds all the run will write: it was taken once the Worker was over,
        or covers the last step its log showed, or no more steps are coming (T.1 failed)."""
        over_at = seen.pod_over_at if seen.pod_over_at is not None else seen.over_at
        if over_at is not None and sc.at >= over_at:
            return True
        if self.after in seen.failed:
            return True
        last = seen.steps.step
        written = max((step for v in sc.series.values() for step, _ in v), default=None)
        return last is not None and written is not None and written >= last

    def judge(self, scalars: Scalars, *, over: bool) -> Passed | Failed:
        if scalars.error is not None:
            return Failed(f"{scalars.where} could not be read: {scalars.error}")
        if not scalars.series:
            why = "; ".join(scalars.problems[:3]) or "no event files"
            unflushed = "" if over else " (the Worker had not ended: its events may be unflushed)"
            return Failed(
                f"the run logged no TensorBoard scalars at {scalars.where}: {why}{unflushed}"
            )
        bad = scalars.non_finite()
        if bad:
            shown = ", ".join(f"{tag} from step {step}" for tag, step in sorted(bad.items())[:6])
            more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
            return Failed(
                f"{len(bad)} of {len(scalars.series)} scalars are not finite: {shown}{more}"
            )
        for expect in self.expect:
            unheld = unmet(expect, scalars)
            if unheld is not None:
                return Failed(unheld)
        points = sum(len(v) for v in scalars.series.values())
        steps = [s for v in scalars.series.values() for s, _ in v]
        held = f"; {len(self.expect)} expectations hold" if self.expect else ""
        return Passed(
            f"{len(scalars.series)} scalars, {points} values at steps {min(steps)}–{max(steps)}, "
            f"all finite ({scalars.where}){held}",
            at=scalars.at,
        )

    def over(self, seen: Observed) -> str | None:
        return None  # the end of the Worker is what it waits for, then it reads

    def timed_out(self, seen: Observed, seconds: float) -> str:
        return f"the run's scalars were not read within {seconds:.0f} s ({Bound.TRAINING.key})"
