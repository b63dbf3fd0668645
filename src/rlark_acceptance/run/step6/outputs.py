"""What a run leaves at the persistent location: removed after a passing run, kept (and named
in the record) after a failing one, unless the profile says otherwise.

``target.keepOutputs`` (additive to the profile contract): ``onFailure`` (the default),
``always`` (never remove), ``never`` (remove after every run). Only objects this run wrote
are touched: everything listed at the location before submission, unchanged, stays.
"""

from __future__ import annotations

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.model.profile import KEEP_OUTPUTS, KeepOutputs
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.run.step6.record import RunRecord
from rlark_acceptance.storage import ObjectNotFound, Removable, StoreError

# KEEP_OUTPUTS / KeepOutputs: the profile's (checked when it is loaded), named here where the
# run reads them.
__all__ = ["KEEP_OUTPUTS", "KeepOutputs", "settle_outputs"]


def settle_outputs(
    adapter: Adapter,
    rec: RunRecord,
    loc: Location | Unlocated,
    policy: KeepOutputs,
    *,
    worker_deleted: bool,
) -> bool:
    """Remove or keep what this run wrote under ``loc``; never hides the run's verdict.

    A Worker not deleted yet (``worker_deleted``) is deleted first: still writing, it would
    write them again. True when what this run wrote should go and could not go now (the
    Worker could not be deleted, the store refused): the run's journal is then left to the
    next run of the location, which removes them (``journal.Journal.hand_on``)."""
    if isinstance(loc, Unlocated) or loc.baseline is None:
        return False  # no location, or its earlier content is unknown: touch nothing
    try:
        try:
            now = loc.store.list(loc.prefix + "/" if loc.prefix else "")
        except ObjectNotFound:
            now = []
        baseline = loc.baseline
        written = [o.key for o in now if baseline.get(o.key) != (o.size, o.modified)]
        if not written:
            return False
        keep = policy == "always" or (policy == "onFailure" and not rec.passed)
        if keep or not isinstance(loc.store, Removable):
            rec.outputs_kept = f"{loc.where} ({len(written)} objects written by this run)"
            return False
        if rec.ref is not None and not worker_deleted:
            try:
                adapter.delete(rec.ref)
            except Exception as exc:  # refused, unreachable, or any adapter's failure
                rec.worker_left = rec.worker_left or f"the Worker could not be deleted: {exc}"
        if rec.worker_left is not None:
            rec.outputs_kept = (
                f"{loc.where} ({len(written)} objects written by this run; kept: the Worker "
                "could not be deleted and may still write; the next run of this location "
                "removes them)"
            )
            return True
        loc.store.delete(written)
        rec.outputs_removed = len(written)
    except StoreError as exc:
        rec.outputs_kept = f"{loc.where} (not removed: {exc}; the next run of it tries again)"
        return True
    return False
