"""B.1: each Step 6 stage against its budget and the median of the profile's last runs.

A stage is *over budget* when it took longer than the profile's ``budgets:`` allow, and
*regressed* when it took more than ``ratio`` times the median of the same stage over the
last ``last`` runs of the profile in the history. Either is a warning of the record; under
the strict policy it fails B.1. A first run (nothing in the history) is no regression.

>>> r = evaluate({"rayHead": 41.2}, Budgets({"rayHead": 20}), [{"rayHead": 6.1}] * 5)
>>> r.failing()[0].text()
'rayHead 41.2 s: 6.8× the median of the last 5 runs (6.1 s), budget 20 s'
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlark_acceptance.model.budgets import DEFAULT_LAST, DEFAULT_RATIO, STAGES, Budgets

# A stage must also be this much slower than the median to have regressed: the sub-second
# stages (submit, scheduled) double on a busy machine without anything being wrong.
MIN_SLOWER_S = 1.0


@dataclass(frozen=True)
class Stage:
    """One stage of this run, with what it is compared with."""

    stage: str
    seconds: float
    budget: float | None
    median: float | None  # of the last ``runs`` runs that reached the stage
    runs: int
    limit: float  # the ratio to the median that is a regression

    @property
    def ratio(self) -> float | None:
        if self.median is None or self.median <= 0:
            return None
        return self.seconds / self.median

    @property
    def over_budget(self) -> bool:
        return self.budget is not None and self.seconds > self.budget

    @property
    def regressed(self) -> bool:
        if self.ratio is None or self.median is None:
            return False
        return self.ratio > self.limit and self.seconds - self.median >= MIN_SLOWER_S

    @property
    def holds(self) -> bool:
        return not (self.over_budget or self.regressed)

    def text(self) -> str:
        """``rayHead 41.2 s: 6.8× the median of the last 5 runs (6.1 s), budget 20 s``."""
        parts = []
        if self.ratio is not None and self.median is not None:
            runs = "run" if self.runs == 1 else f"{self.runs} runs"
            parts.append(f"{self.ratio:.1f}× the median of the last {runs} ({self.median:.1f} s)")
        elif self.median is not None:
            parts.append(f"the median of the last runs is {self.median:.1f} s")
        if self.budget is not None:
            parts.append(f"budget {self.budget:g} s")
        tail = ", ".join(parts) if parts else "no budget, no earlier run"
        return f"{self.stage} {self.seconds:.1f} s: {tail}"

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {
            "seconds": round(self.seconds, 3),
            "budget": self.budget,
            "median": None if self.median is None else round(self.median, 3),
            "runs": self.runs,
            "ratio": None if ratio is None else round(ratio, 2),
            "overBudget": self.over_budget,
            "regressed": self.regressed,
        }


@dataclass(frozen=True)
class BudgetReport:
    stages: tuple[Stage, ...]
    strict: bool
    earlier: int  # the runs of the profile the history holds (before this one)
    last: int
    limit: float
    history: str | None  # where the history is, or None: no history kept

    def failing(self) -> list[Stage]:
        return [s for s in self.stages if not s.holds]

    @property
    def first_run(self) -> bool:
        return self.history is not None and self.earlier == 0

    def warnings(self) -> list[str]:
        """One named warning per stage that does not hold."""
        out = []
        for s in self.failing():
            what = " and ".join(
                w for w, on in (("over budget", s.over_budget), ("regressed", s.regressed)) if on
            )
            out.append(f"{s.text()} ({what})")
        return out

    def failed(self) -> bool:
        """B.1 fails: the strict policy and a stage that does not hold."""
        return self.strict and bool(self.failing())

    def message(self) -> str:
        return "; ".join(s.text() for s in self.failing())

    def note(self) -> str:
        if self.history is None:
            return "no history kept (--no-history or the profile's history: false): budgets only"
        if self.first_run:
            return "first run of the profile in the history: no earlier run to compare with"
        runs = min(self.earlier, self.last)
        return f"compared with the median of the last {runs} of {self.earlier} runs"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": "strict" if self.strict else "warn",
            "history": self.history,
            "earlierRuns": self.earlier,
            "last": self.last,
            "ratio": self.limit,
            "firstRun": self.first_run,
            "note": self.note(),
            "stages": {s.stage: s.as_dict() for s in self.stages},
            "failing": [s.text() for s in self.failing()],
        }


def _seconds(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def enough(durations: Mapping[str, float], last: int) -> Callable[[Sequence[Any]], bool]:
    """Whether the earlier runs read so far (history entries, newest first) give every
    stage of ``durations`` its ``last`` runs that reached it, as ``evaluate`` takes them,
    and the previous run (what changed since): no older run needs to be read."""

    def met(found: Sequence[Any]) -> bool:
        return bool(found) and all(
            sum(1 for e in found if _seconds(e.durations.get(stage))) >= last for stage in durations
        )

    return met


def evaluate(
    durations: Mapping[str, float],
    budgets: Budgets,
    earlier: Sequence[Mapping[str, Any]],
    *,
    last: int = DEFAULT_LAST,
    ratio: float = DEFAULT_RATIO,
    strict: bool | None = None,
    history: str | None = None,
    count: int | None = None,
) -> BudgetReport:
    """``earlier``: the durations of the profile's earlier runs, oldest first (at least
    the newest that ``enough`` asks for). ``strict`` None: the profile's ``budgets.strict``.
    ``history``: where they were read (None: none). ``count``: the runs the history holds,
    when more than were read."""
    stages = []
    for stage in [s for s in STAGES if s in durations] + sorted(set(durations) - set(STAGES)):
        seen = [float(d[stage]) for d in earlier if _seconds(d.get(stage))][-last:]
        # To the millisecond, as run-summary.json keeps them: every form shows the same
        # figure (37.4496 s would be 37.45 in the JSON, and 37.4 in the summary's table).
        stages.append(
            Stage(
                stage,
                round(float(durations[stage]), 3),
                budgets.seconds.get(stage),
                round(statistics.median(seen), 3) if seen else None,
                len(seen),
                ratio,
            )
        )
    return BudgetReport(
        tuple(stages),
        budgets.strict if strict is None else strict,
        len(earlier) if count is None else count,
        last,
        ratio,
        history,
    )


__all__ = ["BudgetReport", "Stage", "evaluate"]
