"""Verify the checkpoints an RLinf run wrote (6.5): ``<checkpoints>/global_step_N/actor/...``.

Recognised weight formats, all checked structurally and never unpickled:
- safetensors files (``*.safetensors``; sharded sets via ``*.safetensors.index.json``),
- torch zip archives (``*.pt`` / ``*.pth``, e.g. ``model_state_dict/full_weights.pt``),
- torch distributed checkpoints (a ``dcp_checkpoint/`` dir: ``.metadata`` and ``*.distcp``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rlark_acceptance.storage.pickle_scan import PickleScanError, scan_pickle
from rlark_acceptance.storage.safetensors_check import check_safetensors
from rlark_acceptance.storage.store import (
    ObjectInfo,
    ObjectNotFound,
    Store,
    StoreError,
    StoreUnavailable,
    join_key,
)
from rlark_acceptance.storage.torchzip import check_torch_zip

STEP_RE = re.compile(r"^global_step_(\d+)$")
MAX_METADATA_SCAN = 16 * 1024 * 1024


@dataclass
class CheckpointReport:
    location: str
    steps: list[int] = field(default_factory=list)  # every global_step_N found, ascending
    checked_steps: list[int] = field(default_factory=list)
    files_checked: list[str] = field(default_factory=list)  # keys relative to the prefix
    formats: list[str] = field(default_factory=list)  # safetensors | torch-zip | dcp
    problems: list[str] = field(default_factory=list)
    stale: int = 0  # objects left out because they predate the run (see ``baseline``)

    @property
    def latest_step(self) -> int | None:
        return self.steps[-1] if self.steps else None

    @property
    def ok(self) -> bool:
        return bool(self.checked_steps) and not self.problems

    def summary(self) -> str:
        if self.ok:
            checked = ", ".join(f"global_step_{s}" for s in self.checked_steps)
            return (
                f"{self.location}: steps {self.steps}; {checked} intact "
                f"({len(self.files_checked)} files: {', '.join(self.formats)})"
            )
        return f"{self.location}: " + "; ".join(self.problems or ["nothing checked"])


def _is_temp(rel: str) -> bool:
    # An atomic writer's in-flight file (".name.XXXX.tmp") is not part of the checkpoint yet;
    # a key ending in "/" is a directory marker (s3fs and consoles create them), not a file.
    name = rel.rsplit("/", 1)[-1]
    return rel.endswith("/") or (name.startswith(".") and name.endswith(".tmp"))


def snapshot(store: Store, checkpoints_prefix: str) -> dict[str, tuple[int, float | None]]:
    """What is at the location now, to be told apart from what a run writes later.

    Only "not found" means nothing there; any other ``StoreError`` is raised: a listing that
    failed must never let an earlier run's checkpoint pass for the next one's.
    """
    prefix = join_key(checkpoints_prefix)
    try:
        return {o.key: (o.size, o.modified) for o in store.list(prefix + "/" if prefix else "")}
    except ObjectNotFound:
        return {}


def written_since(
    objects: Iterable[ObjectInfo], before: Mapping[str, tuple[int, float | None]] | None
) -> list[ObjectInfo]:
    """The ``objects`` that a ``snapshot`` taken ``before`` did not hold as they are now:
    new, or written again since (None: nothing was known before, so every one)."""
    known = before or {}
    return [o for o in objects if known.get(o.key) != (o.size, o.modified)]


def verify_checkpoints(
    store: Store,
    checkpoints_prefix: str,
    *,
    all_steps: bool = False,
    baseline: Mapping[str, tuple[int, float | None]] | None = None,
) -> CheckpointReport:
    """Check the newest ``global_step_N/actor`` (every step with ``all_steps``) under the prefix.

    ``baseline`` is a listing taken before the run (``snapshot``): objects still exactly as
    they were then belong to an earlier run and are left out, so an old checkpoint at the
    same location can never pass for this run's.

    A listing that fails for any reason but "not found" raises its ``StoreError``, and so does
    a store that stops answering while files are read (``StoreUnavailable``): what is there
    is then unknown, which is not a problem of the checkpoint.
    """
    prefix = join_key(checkpoints_prefix)
    report = CheckpointReport(location=f"{store.describe().rstrip('/')}/{prefix}".rstrip("/"))
    try:
        objects = store.list(prefix + "/" if prefix else "")
    except ObjectNotFound:
        objects = []
    if not objects:
        report.problems.append(f"{prefix or '/'}: no checkpoints (empty or missing)")
        return report
    by_step: dict[int, list[ObjectInfo]] = defaultdict(list)
    for obj in objects:
        rel = obj.key[len(prefix) + 1 :] if prefix else obj.key
        first, _, rest = rel.partition("/")
        m = STEP_RE.match(first)
        if baseline is not None and baseline.get(obj.key) == (obj.size, obj.modified):
            report.stale += 1
            continue
        if m and rest and not _is_temp(rel):
            by_step[int(m.group(1))].append(ObjectInfo(rel, obj.size))
    report.steps = sorted(by_step)
    if not report.steps:
        older = f" ({report.stale} objects from before this run)" if report.stale else ""
        report.problems.append(f"{prefix or '/'}: no global_step_N directories{older}")
        return report
    for step in report.steps if all_steps else report.steps[-1:]:
        report.checked_steps.append(step)
        _check_step(store, prefix, step, by_step[step], report)
    report.formats = sorted(set(report.formats))
    return report


def _check_step(
    store: Store, prefix: str, step: int, files: list[ObjectInfo], report: CheckpointReport
) -> None:
    actor_dir = f"global_step_{step}/actor/"
    actor = [f for f in files if f.key.startswith(actor_dir)]
    if not actor:
        report.problems.append(f"global_step_{step}: no actor/ directory")
        return
    found = 0

    def problem(rel: str, what: str) -> None:
        report.problems.append(f"{rel}: {what}")

    for f in actor:
        full = join_key(prefix, f.key)
        try:
            if f.key.endswith(".safetensors"):
                found += 1
                probs, _ = check_safetensors(store, full, f.size)
                report.formats.append("safetensors")
            elif f.key.endswith((".pt", ".pth")):
                found += 1
                probs, _ = check_torch_zip(store, full, f.size)
                report.formats.append("torch-zip")
            elif f.key.endswith(".safetensors.index.json"):
                probs = _check_index(store, full, f.key, {a.key for a in actor})
            else:
                continue
        except StoreUnavailable:
            raise
        except StoreError as e:
            probs = [f"unreadable: {e.code}: {e.detail}"]
        report.files_checked.append(f.key)
        for p in probs:
            problem(f.key, p)
    for dcp_dir in sorted({d for f in actor if (d := _dcp_dir(f.key)) is not None}):
        found += 1
        report.formats.append("dcp")
        _check_dcp(
            store, prefix, dcp_dir, [f for f in actor if f.key.startswith(dcp_dir + "/")], report
        )
    if not found:
        problem(
            actor_dir.rstrip("/"),
            "no recognisable weights (*.safetensors, torch .pt archive or dcp_checkpoint/)",
        )


def _dcp_dir(rel: str) -> str | None:
    parent, _, name = rel.rpartition("/")
    if name == ".metadata" or name.endswith(".distcp"):
        return parent
    return None


def _check_dcp(
    store: Store, prefix: str, dcp_dir: str, files: list[ObjectInfo], report: CheckpointReport
) -> None:
    meta = next((f for f in files if f.key == f"{dcp_dir}/.metadata"), None)
    shards = [f for f in files if f.key.endswith(".distcp")]
    report.files_checked.extend(f.key for f in files if f is meta or f in shards)
    if meta is None:
        report.problems.append(f"{dcp_dir}: no .metadata file (DCP checkpoint incomplete)")
    elif meta.size == 0:
        report.problems.append(f"{meta.key}: empty")
    elif meta.size <= MAX_METADATA_SCAN:
        # torch writes .metadata with pickle; check the stream without loading it.
        try:
            data = store.read(join_key(prefix, meta.key))
            if data[:1] == b"\x80":
                extents = scan_pickle(data).dcp_extents()
                report.problems.extend(_short_shards(dcp_dir, extents, shards))
        except StoreUnavailable:
            raise
        except StoreError as e:
            report.problems.append(f"{meta.key}: unreadable: {e.code}: {e.detail}")
        except PickleScanError as e:
            report.problems.append(f"{meta.key}: corrupt: {e}")
    if not shards:
        report.problems.append(f"{dcp_dir}: no *.distcp shard")
    for s in shards:
        if s.size == 0:
            report.problems.append(f"{s.key}: empty shard")


def _short_shards(
    dcp_dir: str, extents: list[tuple[str, int]], shards: list[ObjectInfo]
) -> list[str]:
    """Shards the .metadata names that are missing or shorter than the tensors it puts in them
    (a truncated upload: every byte of a DCP shard belongs to some tensor)."""
    size = {f.key.rsplit("/", 1)[-1]: f.size for f in shards}
    need: dict[str, int] = {}
    for path, end in extents:
        need[path] = max(need.get(path, 0), end)
    out = []
    for path, end in sorted(need.items()):
        if path not in size:
            out.append(f"{dcp_dir}/{path}: named by .metadata but missing")
        elif size[path] < end:
            out.append(f"{dcp_dir}/{path}: {size[path]} bytes, .metadata places {end} (truncated)")
    return out


def _check_index(store: Store, full: str, rel: str, present: set[str]) -> list[str]:
    """A sharded safetensors index must name shards that exist next to it."""
    try:
        index = json.loads(store.read(full))
        shards = set(index["weight_map"].values())
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return [f"corrupt index: {e}"]
    base = rel.rpartition("/")[0]
    return [
        f"names shard {s} which is missing" for s in sorted(shards) if f"{base}/{s}" not in present
    ]
