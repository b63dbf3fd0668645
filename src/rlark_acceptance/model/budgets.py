"""The profile's ``budgets:`` and ``history:`` (docs/contract.md §2): release over release.

``budgets:`` bounds each Step 6 stage of the record's ``durations`` (seconds since the
submission), apart from ``timeouts:``: a timeout ends a phase that never comes, a budget
says how long a stage that came may take before the run is called slow. ``history:`` is
where each run's summary is kept, so that a stage is also compared with the median of the
profile's last runs: by default a folder of the user's state (``run.history``), ``false``
for none::

    budgets: {rayHead: 20, firstSignal: 60}      # seconds; strict: true makes B.1 fail
    history: ../acceptance-history               # relative to the profile, or s3://b/prefix
    history: {path: s3://bucket/history, last: 5, ratio: 2.0, keep: 200, keepDays: 365}
    history: false                               # no history kept, nothing compared
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import refuse_unknown
from rlark_acceptance.model.paths import expanded
from rlark_acceptance.model.yamlsrc import YamlDoc

# The Step 6 stages of the record's ``durations``, in the order a run reaches them.
STAGES: Final = ("submit", "scheduled", "rayHead", "firstSignal", "training", "output")
# The keys of ``budgets:``: a stage's seconds, or whether B.1 fails on them.
BUDGET_KEYS: Final = (*STAGES, "strict")
DEFAULT_LAST: Final = 5
DEFAULT_RATIO: Final = 2.0


@dataclass(frozen=True)
class Budgets:
    """Seconds per stage; ``strict``: over budget or regressed fails B.1 (else a warning)."""

    seconds: dict[str, float] = field(default_factory=dict)
    strict: bool = False


@dataclass(frozen=True)
class HistorySpec:
    """Where the runs' summaries are kept (None: the default, the user's state folder), how
    many of the last ones a stage's median is taken over, what ratio to it is a regression,
    and what the history keeps of the profile's runs (``keep`` the newest, none older than
    ``keep_days``; None: the location's default policy). ``off``: ``history: false``."""

    path: str | None = None
    last: int = DEFAULT_LAST
    ratio: float = DEFAULT_RATIO
    keep: int | None = None
    keep_days: float | None = None
    off: bool = False


def _positive(doc: YamlDoc, value: Any, *keys: str) -> float:
    bad = not isinstance(value, int | float) or isinstance(value, bool)
    if bad or not math.isfinite(value) or value <= 0:
        raise InputError(str(doc.loc(*keys)), f"{'.'.join(keys)} must be positive seconds")
    return float(value)


def parse_budgets(doc: YamlDoc) -> Budgets:
    raw = doc.data.get("budgets")
    if raw is None:
        return Budgets()
    if not isinstance(raw, dict):
        raise InputError(str(doc.loc("budgets")), "budgets must be a mapping of stage: seconds")
    refuse_unknown(doc, "budgets", raw, BUDGET_KEYS, what="a stage (or strict)")
    seconds: dict[str, float] = {}
    strict = False
    for key, value in raw.items():
        if key == "strict":
            if not isinstance(value, bool):
                raise InputError(
                    str(doc.loc("budgets", key)), "budgets.strict must be true or false"
                )
            strict = value
            continue
        seconds[str(key)] = _positive(doc, value, "budgets", str(key))
    return Budgets(seconds, strict)


_HISTORY_KEYS = ("path", "last", "ratio", "keep", "keepDays")


def parse_history(doc: YamlDoc) -> HistorySpec:
    """``history:`` as a location, ``false``, or ``{path, last, ratio, keep, keepDays}``; the
    path as written, ``~`` and ``$VAR`` expanded (it is resolved against the profile's folder
    where it is read)."""
    raw = doc.data.get("history")
    if raw is None:
        return HistorySpec()
    if raw is False:
        return HistorySpec(off=True)
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict):
        raise InputError(
            str(doc.loc("history")),
            "history must be a path, false, or {path, last, ratio, keep, keepDays}",
        )
    refuse_unknown(doc, "history", raw, _HISTORY_KEYS)
    path = raw.get("path")
    at = str(doc.loc("history", "path"))
    if path is not None and (not isinstance(path, str) or not path.strip()):
        raise InputError(at, "history.path must be a path or s3://")
    if path is not None:  # ~ and $VAR as a shell would; relative still to the profile
        path = expanded(path, lambda why: InputError(at, f"history.path {why}"))
    last = raw.get("last", DEFAULT_LAST)
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise InputError(
            str(doc.loc("history", "last")), "history.last must be a positive whole number"
        )
    ratio = raw.get("ratio", DEFAULT_RATIO)
    bad = isinstance(ratio, bool) or not isinstance(ratio, int | float)
    if bad or not math.isfinite(ratio) or ratio <= 1:
        raise InputError(str(doc.loc("history", "ratio")), "history.ratio must be a number above 1")
    keep = raw.get("keep")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise InputError(
            str(doc.loc("history", "keep")), "history.keep must be a positive whole number"
        )
    days = raw.get("keepDays")
    bad = isinstance(days, bool) or not isinstance(days, int | float)
    if days is not None and (bad or not math.isfinite(days) or days <= 0):
        raise InputError(
            str(doc.loc("history", "keepDays")), "history.keepDays must be a positive number"
        )
    return HistorySpec(path, last, float(ratio), keep, None if days is None else float(days))


__all__ = [
    "DEFAULT_LAST",
    "DEFAULT_RATIO",
    "STAGES",
    "Budgets",
    "HistorySpec",
    "parse_budgets",
    "parse_history",
]
