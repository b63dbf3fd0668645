"""Where a path of the Worker is read back (the store of the mount it lies under, and the
key prefix in it), with what was there before submission: what 6.5 reads and what a run
removes afterwards."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.model.job import Job, mount_for
from rlark_acceptance.rlinf.failures import MOUNT_IO_ERROR
from rlark_acceptance.storage import Store, StoreError, StoreUnavailable, snapshot

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
    # The run whose own location this is (its run id appended to the mount's prefix by the
    # harness): the only kind of location where what appeared is provably that run's.
    # None: a location shared with other writers, where the harness removes nothing.
    owner: str | None = None

    @property
    def where(self) -> str:
        return f"{self.store.describe()}/{self.prefix}".rstrip("/")

    @property
    def identity(self) -> str:
        """The location across runs and processes: the store's endpoint (two S3 servers may
        hold buckets of the same name) and the path in it."""
        return f"{getattr(self.store, 'endpoint', '') or ''} {self.where}".strip()


@dataclass(frozen=True)
class Unlocated:
    """A path that cannot be read back, and why (6.5's cause once the run gets there)."""

    why: str


def locate(
    adapter: Adapter,
    job: Job,
    path: object,
    *,
    known: Location | Unlocated | None = None,
    fresh: bool = False,
) -> Location | Unlocated:
    """The location of ``path`` with its listing before submission, or why there is none.

    Taken before submitting: what is already there belongs to earlier runs. A store that
    ``known`` found not answering a moment ago is not asked again. ``fresh``: the location
    is under this run's own prefix (its run id, new): nothing of an earlier run can be
    there, so a listing that fails is an empty one, and the store is judged by what the
    Worker and 6.5 meet (a store down for a moment at submission fails no check).
    """
    if not isinstance(path, str) or not path:
        return Unlocated("no expected output location was prepared")
    try:
        found = output_store(adapter, job, path)
    except Exception as exc:  # any adapter's failure to name the store: 6.5's cause
        return Unlocated(f"{path} cannot be read back: {exc}")
    if found is None:
        return Unlocated(f"{path} lies under no mount: nothing there persists")
    loc = Location(*found)
    if (
        not fresh
        and isinstance(known, Location)
        and known.baseline_error is not None
        and known.store.describe() == loc.store.describe()
    ):
        loc.baseline_error = known.baseline_error
        return loc
    try:
        loc.baseline = snapshot(loc.store, loc.prefix)
    except StoreError as exc:
        if fresh:
            loc.baseline = {}
            return loc
        # A store that does not answer is named as such (its remedy is the store's, not the
        # profile's), as when it stops answering the Worker later.
        down = (
            f"the store ({loc.store.describe()}) does not answer [{MOUNT_IO_ERROR.id}]: "
            if isinstance(exc, StoreUnavailable)
            else ""
        )
        loc.baseline_error = (
            f"{down}{loc.where} could not be listed before submission, so this run's output "
            f"cannot be told from an earlier run's: {exc}"
        )
    return loc
