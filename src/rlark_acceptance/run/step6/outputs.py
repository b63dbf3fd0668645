"""What a run leaves at the persistent location: removed after a passing run, kept (and named
in the record) after a failing one, unless the profile says otherwise.

``target.keepOutputs`` (additive to the profile contract): ``onFailure`` (the default),
``always`` (never remove), ``never`` (remove after every run). Only objects this run wrote
are touched: everything listed at the location before submission, unchanged, stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlark_acceptance.adapters.base import CleanupRefused, TargetUnreachable
from rlark_acceptance.model.profile import KEEP_OUTPUTS, KeepOutputs, Profile
from rlark_acceptance.storage import ObjectNotFound, Removable, StoreError

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.output import Location
    from rlark_acceptance.run.step6.run import Step6Run

# KEEP_OUTPUTS / KeepOutputs: the profile's, named here where the run reads them.
__all__ = ["KEEP_OUTPUTS", "KeepOutputs", "keep_outputs_policy", "output_root", "settle_outputs"]


def keep_outputs_policy(profile: Profile) -> KeepOutputs:
    """``target.keepOutputs`` of the profile (checked when the profile was loaded)."""
    return profile.target.keep_outputs


def output_root(profile: Profile) -> object:
    """The folder the run writes under: ``runInfo.paths.output``, else the checkpoints'."""
    ri = profile.run_info
    return ri.paths.get("output") or ri.paths.get("checkpoint") or ri.expected_output


def settle_outputs(run: Step6Run, loc: Location | str, policy: KeepOutputs) -> None:
    """Remove or keep what this run wrote under ``loc``; never hides the run's verdict."""
    rec = run.rec
    if isinstance(loc, str) or loc.baseline is None:
        return  # no location, or its earlier content is unknown: touch nothing
    try:
        try:
            now = loc.store.list(loc.prefix + "/" if loc.prefix else "")
        except ObjectNotFound:
            now = []
        baseline = loc.baseline
        written = [o.key for o in now if baseline.get(o.key) != (o.size, o.modified)]
        if not written:
            return
        keep = policy == "always" or (policy == "onFailure" and not rec.passed)
        if keep or not isinstance(loc.store, Removable):
            rec.outputs_kept = f"{loc.where} ({len(written)} objects written by this run)"
            return
        if rec.ref is not None and not run.worker_deleted:
            try:  # a Worker still writing would write them again
                run.adapter.delete(rec.ref)
            except (CleanupRefused, TargetUnreachable) as exc:
                rec.worker_left = rec.worker_left or f"the Worker could not be deleted: {exc}"
            else:
                run.worker_deleted = True
        if rec.worker_left is not None:
            rec.outputs_kept = (
                f"{loc.where} ({len(written)} objects written by this run; kept: the Worker "
                "could not be deleted and may still write)"
            )
            return
        loc.store.delete(written)
        rec.outputs_removed = len(written)
    except StoreError as exc:
        rec.outputs_kept = f"{loc.where} (not removed: {exc})"
