"""The profile's ``training:`` (docs/contract.md §2): the checks of the training itself,
beyond the page (T.1 the steps advance, T.2 the metrics are real, T.3 the checkpoint is this
run's and trained, T.4 a second submission resumes from it), and what the profile expects of
them.

T.1-T.3 are on by default: a platform release that turns the loss into NaN or stalls the
run after its first step passes every check of the page. ``training: false`` (or
``checks: []``) turns them off for a workload that does not train. T.4 costs a second
submission, so it is opt-in: ``resume: true`` (or T.4 in ``checks``) turns it on, as does
selecting its scenario by its tag (``-m resume``).

    training:
      checks: [T.1, T.2, T.3]        # the default; a subset runs only those
      resume: true                   # T.4 on; or {steps: 3}: the steps past the checkpoint
      steps: 5                       # T.1: the steps to reach (default: the validated config's)
      stepPattern: 'Global Step:\\s*(\\d+)/(\\d+)'   # T.1: group 1 the step, group 2 the total
      tensorboard: /mnt/ckpt/logs/tensorboard     # T.2: where the events are (a Worker path)
      expect:                        # T.2, as NeMo-RL's functional tests state them
        - {tag: rollout/reward, last: 3, agg: mean, above: 0}
        - {tag: time/step, agg: max, below: 30}
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from rlark_acceptance.model.doc_checks import TRAINING, CheckId
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import refuse_unknown
from rlark_acceptance.model.yamlsrc import YamlDoc

Aggregate = Literal["min", "max", "mean"]

# RLinf's step counters: the embodied runner's metric table (``│ Global Step:    2/5 │``)
# and the tqdm bar of its reasoning / agent / SFT runners (``Global Step:  40%|██ | 2/5``).
DEFAULT_STEP_PATTERN: Final = r"Global Step:?\s*(?:\d+%\|[^|]*\|\s*)?(\d+)\s*/\s*(\d+)"

# Every training check a profile may name; those on unless it says otherwise; the steps the
# second submission of T.4 trains past the checkpoint it resumes from, unless it says.
TRAINING_IDS: Final = tuple(c.id for c in TRAINING)
OPT_IN: Final = (CheckId.RESUMES,)
DEFAULT_CHECKS: Final = tuple(c for c in TRAINING_IDS if c not in OPT_IN)
DEFAULT_RESUME_STEPS: Final = 2


@dataclass(frozen=True)
class Expectation:
    """One bound on a scalar: ``agg`` over its ``last`` values (all when None) is above
    ``above`` and below ``below`` (strictly)."""

    tag: str
    agg: Aggregate = "mean"
    last: int | None = None
    above: float | None = None
    below: float | None = None
    where: str = ""  # the profile's file:line

    def text(self) -> str:
        over = f"the last {self.last}" if self.last else "all"
        bounds = []
        if self.above is not None:
            bounds.append(f"> {self.above:g}")
        if self.below is not None:
            bounds.append(f"< {self.below:g}")
        return f"{self.agg} of {over} {self.tag} {' and '.join(bounds)}"


@dataclass(frozen=True)
class TrainingSpec:
    checks: frozenset[str] = frozenset(DEFAULT_CHECKS)
    steps: int | None = None
    step_pattern: re.Pattern[str] = field(default=re.compile(DEFAULT_STEP_PATTERN))
    tensorboard: str | None = None
    expect: tuple[Expectation, ...] = ()
    resume_steps: int = DEFAULT_RESUME_STEPS  # T.4: the second submission's steps past N

    def on(self, check: str) -> bool:
        return check in self.checks


OFF: Final = TrainingSpec(checks=frozenset())

_KEYS = ("checks", "steps", "stepPattern", "tensorboard", "expect", "resume")
_EXPECT_KEYS = ("tag", "agg", "last", "above", "below")
_RESUME_KEYS = ("steps",)


def parse_training(doc: YamlDoc) -> TrainingSpec:
    """``training:`` over the defaults; each mistake is one line at its ``file:line``."""
    raw = doc.data.get("training")
    if raw is None or raw is True:
        return TrainingSpec()
    if raw is False:
        return OFF
    if not isinstance(raw, dict):
        raise InputError(str(doc.loc("training")), "training must be a mapping, true or false")
    refuse_unknown(doc, "training", raw, _KEYS)
    checks = _checks(doc, raw.get("checks", list(DEFAULT_CHECKS)))
    resume, resume_steps = _resume(doc, raw.get("resume"))
    if resume is False and CheckId.RESUMES in checks:
        raise InputError(
            str(doc.loc("training", "resume")),
            f"training.resume is false, but training.checks names {CheckId.RESUMES}",
        )
    return TrainingSpec(
        checks=checks | {CheckId.RESUMES} if resume else checks,
        steps=_positive_int(doc, raw.get("steps"), "steps"),
        step_pattern=_pattern(doc, raw.get("stepPattern")),
        tensorboard=_container_path(doc, raw.get("tensorboard")),
        expect=_expectations(doc, raw.get("expect", [])),
        resume_steps=resume_steps,
    )


def _resume(doc: YamlDoc, value: Any) -> tuple[bool | None, int]:
    """``resume: true | false | {steps: k}``: whether T.4 is on (None: not said), and the
    steps its second submission trains past the checkpoint."""
    if value is None or isinstance(value, bool):
        return value, DEFAULT_RESUME_STEPS
    if not isinstance(value, dict):
        raise InputError(
            str(doc.loc("training", "resume")),
            "training.resume must be true, false or {steps: N}",
        )
    refuse_unknown(doc, ("training", "resume"), value, _RESUME_KEYS)
    steps = value.get("steps", DEFAULT_RESUME_STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError(
            str(doc.loc("training", "resume", "steps")),
            "training.resume.steps must be a positive whole number",
        )
    return True, steps


def _checks(doc: YamlDoc, value: Any) -> frozenset[str]:
    if not isinstance(value, list):
        raise InputError(str(doc.loc("training", "checks")), "training.checks must be a list")
    for i, item in enumerate(value):
        if item not in TRAINING_IDS:
            raise InputError(
                str(doc.loc("training", "checks", i)),
                f"training.checks: {item!r} is not a training check: one of "
                f"{', '.join(TRAINING_IDS)}",
            )
    return frozenset(value)


def _positive_int(doc: YamlDoc, value: Any, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(
            str(doc.loc("training", key)), f"training.{key} must be a positive whole number"
        )
    return value


def _pattern(doc: YamlDoc, value: Any) -> re.Pattern[str]:
    if value is None:
        return re.compile(DEFAULT_STEP_PATTERN)
    where = str(doc.loc("training", "stepPattern"))
    if not isinstance(value, str):
        raise InputError(where, "training.stepPattern must be a regex")
    try:
        pattern = re.compile(value)
    except re.error as exc:
        raise InputError(where, f"training.stepPattern is not a regex: {exc}") from None
    if pattern.groups < 1:
        raise InputError(where, "training.stepPattern needs a group for the step: (\\d+)")
    return pattern


def _container_path(doc: YamlDoc, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/"):
        raise InputError(
            str(doc.loc("training", "tensorboard")),
            "training.tensorboard must be an absolute path in the Worker",
        )
    return value


def _expectations(doc: YamlDoc, value: Any) -> tuple[Expectation, ...]:
    if not isinstance(value, list):
        raise InputError(str(doc.loc("training", "expect")), "training.expect must be a list")
    return tuple(_expectation(doc, item, i) for i, item in enumerate(value))


def _expectation(doc: YamlDoc, item: Any, i: int) -> Expectation:
    where = str(doc.loc("training", "expect", i))
    if not isinstance(item, dict):
        raise InputError(where, "training.expect: each entry is {tag, agg, last, above, below}")
    refuse_unknown(doc, ("training", "expect", i), item, _EXPECT_KEYS, what="an expect setting")
    tag, agg = item.get("tag"), item.get("agg", "mean")
    if not isinstance(tag, str) or not tag:
        raise InputError(where, "training.expect: tag must name a scalar")
    if agg not in ("min", "max", "mean"):
        raise InputError(where, "training.expect: agg must be min, max or mean")
    last = item.get("last")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise InputError(where, "training.expect: last must be a positive whole number")
    bounds = {}
    for key in ("above", "below"):
        v = item.get(key)
        bad = v is not None and (
            isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
        )
        if bad:
            raise InputError(where, f"training.expect: {key} must be a finite number")
        bounds[key] = None if v is None else float(v)
    if bounds["above"] is None and bounds["below"] is None:
        raise InputError(where, "training.expect: give a bound (above, below or both)")
    return Expectation(tag, agg, last, bounds["above"], bounds["below"], where)


__all__ = [
    "DEFAULT_CHECKS",
    "DEFAULT_RESUME_STEPS",
    "DEFAULT_STEP_PATTERN",
    "OFF",
    "OPT_IN",
    "TRAINING_IDS",
    "Expectation",
    "TrainingSpec",
    "parse_training",
]
