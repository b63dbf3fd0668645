"""The profile's ``timeouts:`` (docs/contract.md §2): how long each Step 6 phase may wait.

One frozen value, its defaults the contract's; a phase names its bound by a ``Bound``
(the key the profile writes), never by a free string, so a misspelt bound cannot run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import refuse_unknown
from rlark_acceptance.model.yamlsrc import YamlDoc


class Bound(Enum):
    """One key of ``timeouts:``; its value is the key as the profile writes it."""

    SCHEDULED = "scheduled"  # 6.2: the Worker's Pod on its node
    RAY_HEAD = "rayHead"  # 6.3: Ray's start-up and the run script's first line
    FIRST_SIGNAL = "firstSignal"  # 6.4: the profile's first-signal regex in the log
    OUTPUT = "output"  # 6.5: an intact checkpoint at the expected location
    TRAINING = "training"  # T.1: the run reaches the steps its config asks for (T.4: resumed)
    # Not a phase: how long the run may go without a new step before T.1 calls it stalled
    # (and, after its last step, how long the Worker may take to end before T.2 reads).
    PROGRESS = "progress"
    # Not a phase: how long the target's API server may stay unreachable before the phase
    # waited for fails naming it (an API server restart takes seconds).
    API_SERVER = "apiServer"

    @property
    def key(self) -> str:
        """``timeouts.<key>``, as messages name it."""
        return f"timeouts.{self.value}"


@dataclass(frozen=True)
class Timeouts:
    """Seconds per bound; a field per ``Bound`` (its name in lower case)."""

    scheduled: float = 300.0
    ray_head: float = 600.0
    first_signal: float = 1800.0
    output: float = 3600.0
    training: float = 7200.0
    progress: float = 600.0
    api_server: float = 30.0

    def __getitem__(self, bound: Bound) -> float:
        return float(getattr(self, bound.name.lower()))

    @classmethod
    def every(cls, seconds: float) -> Timeouts:
        """Every bound ``seconds`` (tests bound a whole run so)."""
        return cls(**{f.name: seconds for f in fields(cls)})


_BY_KEY = {b.value: b for b in Bound}


def parse_timeouts(doc: YamlDoc, raw: dict[str, Any]) -> Timeouts:
    """``raw`` (the profile's ``timeouts:`` mapping) over the defaults; an unknown key or a
    value that is not positive seconds names its line."""
    refuse_unknown(doc, "timeouts", raw, _BY_KEY, what="a timeout")
    seconds: dict[str, float] = {}
    for key, value in raw.items():
        bound = _BY_KEY[key]
        bad = not isinstance(value, int | float) or isinstance(value, bool)
        if bad or not math.isfinite(value) or value <= 0:
            raise InputError(str(doc.loc("timeouts", key)), f"{bound.key} must be positive seconds")
        seconds[bound.name.lower()] = float(value)
    return Timeouts(**seconds)
