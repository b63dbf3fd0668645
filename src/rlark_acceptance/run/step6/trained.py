"""T.3 the checkpoint is this run's and holds a trained model: every object of it written
after the submission, its tensors finite, and changed between the run's first and last
checkpoint.

Beyond the page: 6.5 passes on a checkpoint that is structurally intact, whatever it holds.
Decided from one reading of the expected location (``ReadTensors``), after 6.5 passed.
"""

from __future__ import annotations

from typing import ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase, ReadTensors
from rlark_acceptance.run.step6.readings import Checkpoints, Weights


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def _weights_text(w: Weights) -> str:
    return f"global_step_{w.step}: {w.tensors} tensors, {_size(w.bytes)}, sha256 {w.digest[:12]}"


class CheckpointTrained(Phase):
    check: ClassVar[str] = CheckId.CHECKPOINT_TRAINED

    def __init__(self, located: Location | Unlocated) -> None:
        self.located = located

    def verdict(self, seen: Observed) -> Decision:
        loc = self.located
        if isinstance(loc, Unlocated):
            return Failed(loc.why)
        if seen.tensors is None:
            return ReadTensors(loc)
        return judge(seen.tensors)


def judge(ck: Checkpoints) -> Passed | Failed:
    if ck.error is not None:
        return Failed(f"{ck.where} could not be read: {ck.error}")
    if ck.stale:
        return Failed(
            f"{len(ck.stale)} objects at {ck.where} were written before this run was submitted "
            f"(an earlier run's): {', '.join(ck.stale[:3])}"
        )
    if ck.first is None or ck.last is None:
        return Failed(f"no global_step_N checkpoint of this run at {ck.where}")
    for w in (ck.first, ck.last):
        if w.problems:
            return Failed(f"global_step_{w.step}: {'; '.join(w.problems[:3])}")
        if w.tensors == 0:
            return Failed(f"global_step_{w.step} holds no model tensors ({w.path})")
        if w.non_finite:
            names = sorted(w.non_finite, key=lambda n: -w.non_finite[n])
            shown = ", ".join(f"{n} ({w.non_finite[n]})" for n in names[:4])
            return Failed(
                f"global_step_{w.step}: {len(w.non_finite)} of {w.tensors} tensors hold NaN or "
                f"infinite values: {shown}"
            )
    if ck.first is ck.last or ck.first.step == ck.last.step:
        return Passed(
            f"{_weights_text(ck.last)}, all finite; the only checkpoint of the run, so whether "
            "training changed the weights is not judged",
            at=ck.at,
        )
    if ck.first.digest == ck.last.digest:
        return Failed(
            f"global_step_{ck.first.step} and global_step_{ck.last.step} hold identical weights "
            f"(sha256 {ck.last.digest[:12]}): training changed nothing"
        )
    return Passed(
        f"{_weights_text(ck.first)} → {_weights_text(ck.last)}: all finite, changed by training",
        at=ck.at,
    )
