"""6.5 checkpoint 写入预期的持久化位置,并且可以重新读取: an intact checkpoint at the expected
location, readable again after the Worker is gone.

Object storage has no portable watch, so the location is read again (a probe) every
``STORE_RELIST_SECONDS`` while the Worker runs, and once more when its Pod is over (a
target reports that only once the Worker's files are flushed to their mounts: the end of
its log alone decides nothing here). Then the Worker is deleted (a probe) and the location
read once more. Failed at once when the location lies under no mount, when it could not be
listed before submission (an earlier run's checkpoint could then pass for this one's), when
the store does not answer after its bounded retries, or when the Worker ended without an
intact checkpoint; by the deadline ``timeouts.output`` otherwise.
"""

from __future__ import annotations

from typing import ClassVar

from rlark_acceptance.adapters.base import TargetUnreachable
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.rlinf.failures import HARNESS_REMOVED, OUTPUTS_REMOVED
from rlark_acceptance.run.step6.location import Location, Unlocated
from rlark_acceptance.run.step6.observed import Observed, pod_over, unreachable_text
from rlark_acceptance.run.step6.phase import (
    Decision,
    DeleteWorker,
    Failed,
    Passed,
    Phase,
    ReadOutputs,
)
from rlark_acceptance.run.step6.readings import store_error
from rlark_acceptance.storage import CheckpointReport

STORE_RELIST_SECONDS = 1.0


def _intact(loc: Location, report: CheckpointReport) -> str:
    return f"{loc.where}: global_step_{report.latest_step} intact ({', '.join(report.formats)})"


class Output(Phase):
    check: ClassVar[str] = CheckId.OUTPUT_PERSISTED
    bound: ClassVar[Bound | None] = Bound.OUTPUT

    def __init__(self, located: Location | Unlocated, *, delete_after: bool = True) -> None:
        self.located = located
        self.delete_after = delete_after

    def verdict(self, seen: Observed) -> Decision:
        loc = self.located
        if isinstance(loc, Unlocated):
            return Failed(loc.why)
        if loc.baseline_error is not None:
            return Failed(loc.baseline_error)
        read = seen.outputs
        if read is None:
            return ReadOutputs(loc)
        if read.error is not None:
            return Failed(
                f"{loc.where} could not be read while the Worker ran: {store_error(read.error)}"
            )
        report = read.report
        assert report is not None
        if not report.ok:
            over_at = seen.pod_over_at if pod_over(seen.pod) else None
            if over_at is not None and read.at >= over_at:
                return Failed(
                    f"the Worker ended and {loc.where} holds no intact checkpoint: "
                    f"{report.summary()}",
                    at=over_at,
                )
            stale = seen.now - read.at >= STORE_RELIST_SECONDS
            return ReadOutputs(loc) if over_at is not None or stale else None
        if not self.delete_after:
            return Passed(_intact(loc, report), at=read.at)
        return self._after_delete(seen, loc, report, read.at)

    def _after_delete(
        self, seen: Observed, loc: Location, report: CheckpointReport, ok_at: float
    ) -> Decision:
        if seen.deleted is False:
            return DeleteWorker()
        if isinstance(seen.deleted, TargetUnreachable):
            return Failed(
                "the Worker could not be deleted to read the checkpoint again: "
                + unreachable_text(seen.deleted)
            )
        if seen.deleted is not True:
            # The target refused the clean-up, not the Worker its outputs: the verdict
            # stands, and the record warns of what is left.
            return Passed(
                f"{_intact(loc, report)}; not read again after the Worker was gone: it could "
                "not be deleted (see the record's warnings)",
                at=ok_at,
            )
        again = seen.outputs_again
        if again is None:
            return ReadOutputs(loc, again=True)
        if again.error is not None:
            return Failed(
                f"{loc.where} could not be read after the Worker was deleted: "
                f"{store_error(again.error)}"
            )
        assert again.report is not None
        if not again.report.ok:
            # It was there, intact, while the Worker ran: whatever took it, RLinf wrote it
            # where the page says. Named for what removed it, never for the RLinf config.
            by = (
                f"removed by the harness itself [{HARNESS_REMOVED.id}]: {again.removed_by}"
                if again.removed_by is not None
                else "removed by the Worker on its way out or by another writer of the "
                f"location, not by this harness [{OUTPUTS_REMOVED.id}]"
            )
            return Failed(
                f"{loc.where} is no longer readable after the Worker was deleted "
                f"({again.report.summary()}); it was intact before: {by}"
            )
        return Passed(f"{_intact(loc, report)}, readable again after the Worker was gone", at=ok_at)

    def over(self, seen: Observed) -> str | None:
        return None  # decided by the Pod's end (the files flushed), not the log's

    def timed_out(self, seen: Observed, seconds: float) -> str:
        loc = self.located
        assert isinstance(loc, Location)
        report = seen.outputs.report if seen.outputs is not None else None
        summary = report.summary() if report is not None else "not read"
        return (
            f"no intact checkpoint at {loc.store.describe()}/{loc.prefix} after "
            f"{seconds:.0f} s ({Bound.OUTPUT.key}): {summary}"
        )
