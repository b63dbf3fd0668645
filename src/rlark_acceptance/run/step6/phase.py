"""The one shape of a Step 6 phase: a check whose verdict is a function of what was observed.

``verdict(seen)`` reads the ``Observed`` state and returns ``Passed`` / ``Failed`` (with
the time the state showed it, when that is not the moment of deciding), ``None`` (keep
waiting) or a probe: a look at the world the phase needs before it can decide (the
submission, the Job list, the Pods, the output location, the Worker's deletion). It does
no I/O and writes nothing: the engine (``engine.py``) performs the probe, puts the answer
into the state and asks again; it alone waits, keeps the clock and writes the record.

A phase is *awaited* (``bound`` set: the run waits for it, in the page's order, until
``timeouts.<bound>``), *immediate* (``bound`` None: decided from probes alone, 6.1) or
*read along* (listed in ``READ_ALONG`` by the run: decided whenever the state shows it,
while the awaited ones wait: 1.1 / 1.2 from the printed config).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6.location import Location
from rlark_acceptance.run.step6.observed import Observed

# The Pod is bound to its node but its container could not be created (a volume that does not
# mount, a missing Secret): the Worker's start (6.3) failed, not the scheduling (6.2).
CONTAINER_START_FAILURES = frozenset(
    {"CreateContainerError", "CreateContainerConfigError", "RunContainerError"}
)


@dataclass(frozen=True)
class Passed:
    message: str
    at: float | None = None  # when the state showed it (the engine's clock); None: now


@dataclass(frozen=True)
class Failed:
    message: str
    at: float | None = None  # when the Worker showed the fault; None: when it was over


# --- probes: what a phase asks the engine to look at -------------------------------------
@dataclass(frozen=True)
class Submit:
    manifest: str


@dataclass(frozen=True)
class ListJobs:
    pass


@dataclass(frozen=True)
class ListPods:
    pass


@dataclass(frozen=True)
class ReadOutputs:
    """List ``loc`` and verify its checkpoints; ``again``: after the Worker was deleted."""

    loc: Location
    again: bool = False


@dataclass(frozen=True)
class DeleteWorker:
    pass


@dataclass(frozen=True)
class ReadScalars:
    """Read the TensorBoard scalars under ``loc`` (T.2)."""

    loc: Location


@dataclass(frozen=True)
class ReadTensors:
    """Read the tensors of the first and the last checkpoint under ``loc`` (T.3)."""

    loc: Location


Probe = Submit | ListJobs | ListPods | ReadOutputs | DeleteWorker | ReadScalars | ReadTensors
Decision = Passed | Failed | Probe | None


class Phase:
    """A check of Step 6. Subclasses set ``check`` (and ``bound`` if awaited) and define
    ``verdict``; ``over`` and ``timed_out`` say why it failed when nothing more can come."""

    check: ClassVar[str]
    bound: ClassVar[Bound | None] = None

    def verdict(self, seen: Observed) -> Decision:
        raise NotImplementedError

    def over(self, seen: Observed) -> str | None:
        """Why the phase failed when the Worker can print nothing more; None when the end
        of its log does not decide this phase (it keeps waiting)."""
        return f"the Worker ended: {seen.pod_text()}"

    def timed_out(self, seen: Observed, seconds: float) -> str:
        """Why the phase failed at its deadline."""
        assert self.bound is not None
        return f"nothing after {seconds:.0f} s ({self.bound.key}); {seen.pod_text()}"
