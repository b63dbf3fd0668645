"""6.5 checkpoint 写入预期的持久化位置,并且可以重新读取: an intact checkpoint at the expected
location, readable again after the Worker is gone.

Object storage has no portable watch, so the location is listed again every
``STORE_RELIST_SECONDS`` while the Worker runs, and once more when its Pod is terminal (a
target reports that only once the Worker's files are flushed to their mounts). Failed at
once when the location lies under no mount, when it could not be listed before submission
(an earlier run's checkpoint could then pass for this one's), when the store does not answer
after its bounded retries, or when the Worker ended without an intact checkpoint; by the
deadline ``timeouts.output`` otherwise.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.adapters.base import Adapter, CleanupRefused, TargetUnreachable
from rlark_acceptance.model.job import Job, mount_for
from rlark_acceptance.run.step6.run import pod_over, unreachable_text
from rlark_acceptance.storage import CheckpointReport, Store, StoreError, snapshot
from rlark_acceptance.storage import verify_checkpoints as _verify

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import PhaseFailed, Step6Run

STORE_RELIST_SECONDS = 1.0
Listing = dict[str, tuple[int, float | None]]


def output_store(adapter: Adapter, job: Job, container_path: str) -> tuple[Store, str] | None:
    """The store holding ``container_path`` and the key prefix inside it."""
    worker = job.worker
    if worker is None:
        return None
    mount = mount_for(container_path, worker.mounts)
    if mount is None or not mount.container_path:
        return None
    rel = posixpath.relpath(container_path, mount.container_path)
    return adapter.store_for(job, mount), "" if rel == "." else rel


@dataclass
class Location:
    """Where a path of the Worker is read back, and what was there before submission."""

    store: Store
    prefix: str
    baseline: Listing | None = None
    baseline_error: str | None = None

    @property
    def where(self) -> str:
        return f"{self.store.describe()}/{self.prefix}".rstrip("/")


@dataclass(frozen=True)
class Unlocated:
    """Why a path of the Worker has no place to be read back from: 6.5's cause, once the run
    gets there (a value, so that no caller can take it for a location)."""

    why: str


Located = Location | Unlocated


def locate(adapter: Adapter, job: Job, path: object, *, known: Located | None = None) -> Located:
    """The location of ``path`` with its listing before submission, or why there is none.

    Taken before submitting: what is already there belongs to earlier runs. A store that
    ``known`` found not answering a moment ago is not asked again.
    """
    if not isinstance(path, str) or not path:
        return Unlocated("no expected output location was prepared")
    try:
        found = output_store(adapter, job, path)
    except Exception as exc:  # a plugin adapter's store may raise anything: 6.5's cause
        return Unlocated(f"{path} cannot be read back: {exc}")
    if found is None:
        return Unlocated(f"{path} lies under no mount: nothing there persists")
    loc = Location(*found)
    if (
        isinstance(known, Location)
        and known.baseline_error is not None
        and known.store.describe() == loc.store.describe()
    ):
        loc.baseline_error = known.baseline_error
        return loc
    try:
        loc.baseline = snapshot(loc.store, loc.prefix)
    except StoreError as exc:
        loc.baseline_error = (
            f"{loc.where} could not be listed before submission, so this run's output cannot "
            f"be told from an earlier run's: {exc}"
        )
    return loc


class Output:
    check: ClassVar[str] = "6.5"
    timeout_key: ClassVar[str] = "output"

    def __init__(self, located: Located, *, delete_after: bool = True) -> None:
        self.located = located
        self.delete_after = delete_after

    def verify(self, run: Step6Run, loc: Location, when: str) -> CheckpointReport:
        try:
            return _verify(loc.store, loc.prefix, baseline=loc.baseline)
        except StoreError as exc:
            raise run.fail("6.5", f"{loc.where} could not be read {when}: {exc}") from None

    def run(self, run: Step6Run) -> None:
        loc = self.located
        if isinstance(loc, Unlocated):
            raise run.fail("6.5", loc.why)
        if loc.baseline_error is not None:
            raise run.fail("6.5", loc.baseline_error)
        rec = run.rec
        timeout = run.timeouts[self.timeout_key]
        deadline = run.clock() + timeout
        over = pod_over(run.pod)
        while True:
            report = self.verify(run, loc, "while the Worker ran")
            if report.ok or over:
                break
            if run.clock() >= deadline:
                raise self._timeout(run, loc, timeout, report)
            # Wait for the Worker to change, or a short relist interval, whichever comes first.
            until = min(deadline, run.clock() + STORE_RELIST_SECONDS)
            while not over and run.clock() < until:
                item = run.next(until - run.clock())
                if item is None:
                    break
                if item.kind == "pod" and pod_over(run.pod):
                    over = True
                    rec.fault_at = run.since(item.at)
            run.progress(self.check, self.timeout_key, timeout - (deadline - run.clock()))
        rec.checkpoint = report
        if not report.ok:
            raise run.fail(
                "6.5",
                f"the Worker ended and {loc.where} holds no intact checkpoint: {report.summary()}",
            )
        rec.durations["output"] = run.since()
        if self.delete_after:
            assert rec.ref is not None
            try:
                run.adapter.delete(rec.ref)
            except TargetUnreachable as exc:
                raise run.fail(
                    "6.5",
                    "the Worker could not be deleted to read the checkpoint again: "
                    + unreachable_text(exc),
                ) from None
            except CleanupRefused as exc:
                # The target refused the clean-up, not the Worker its outputs: the verdict
                # stands, and the record warns of what is left.
                rec.worker_left = f"the Worker could not be deleted: {exc}"
                rec.warnings.append(rec.worker_left)
                run.done(
                    "6.5",
                    "passed",
                    f"{loc.where}: global_step_{report.latest_step} intact "
                    f"({', '.join(report.formats)}); not read again after the Worker was "
                    "gone: it could not be deleted (see the record's warnings)",
                )
                return
            run.worker_deleted = True
            again = self.verify(run, loc, "after the Worker was deleted")
            rec.checkpoint_after_delete = again
            if not again.ok:
                raise run.fail(
                    "6.5",
                    f"{loc.where} is no longer readable after the Worker was deleted: "
                    f"{again.summary()}",
                )
        run.done(
            "6.5",
            "passed",
            f"{loc.where}: global_step_{report.latest_step} intact ({', '.join(report.formats)}), "
            "readable again after the Worker was gone"
            if self.delete_after
            else "",
        )

    def _timeout(
        self, run: Step6Run, loc: Location, timeout: float, report: CheckpointReport
    ) -> PhaseFailed:
        return run.fail(
            "6.5",
            f"no intact checkpoint at {loc.store.describe()}/{loc.prefix} after "
            f"{timeout:.0f} s (timeouts.output): {report.summary()}",
        )
