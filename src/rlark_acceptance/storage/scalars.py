"""Read the TensorBoard scalars of a run's event files back from a ``Store``.

Records are read by TensorBoard's own loader (``RawEventFileLoader``, which needs no
TensorFlow) from a local copy of each file, downloaded in ranged chunks and bounded by
``max_bytes``. Both kinds of scalar are read: ``simple_value`` (tensorboardX, torch's
SummaryWriter, RLinf's) and a one-element float ``tensor`` (``tf.summary.scalar``, the
``scalars`` plugin). The loader stops quietly at a truncated or corrupt record; where it
stopped short of the end is told from the bytes its records covered, and reported.

``non_finite`` names the tags holding NaN or inf and the first step of each; ``aggregate``
reduces a tag's values as an expectation does (``min`` / ``max`` / ``mean`` of the last k).
"""

from __future__ import annotations

import math
import os
import struct
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlark_acceptance.storage.checkpoint import written_since
from rlark_acceptance.storage.store import (
    Store,
    StoreError,
    StoreUnavailable,
    join_key,
    list_for_report,
)

DEFAULT_MAX_BYTES = 256 * 1024 * 1024  # per event file; beyond it, the first bytes only
CHUNK_BYTES = 8 * 1024 * 1024
RECORD_OVERHEAD = 16  # uint64 length, uint32 CRC of it, uint32 CRC of the data


@dataclass
class ScalarsReport:
    location: str
    # tag -> (step, value), ascending by step (a stable sort: equal steps keep file order).
    scalars: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)  # key relative to prefix -> events read
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.scalars) and not self.problems

    @property
    def tags(self) -> list[str]:
        return sorted(self.scalars)

    def values(self, tag: str) -> list[float]:
        return [v for _, v in self.scalars.get(tag, [])]

    def steps(self, tag: str) -> list[int]:
        return [s for s, _ in self.scalars.get(tag, [])]


@dataclass(frozen=True)
class NonFinite:
    tag: str
    first_step: int
    first_value: float  # nan, inf or -inf
    count: int  # values of the tag that are not finite


def non_finite(report: ScalarsReport) -> list[NonFinite]:
    """Tags holding NaN or ±inf, by tag, with the first step (in step order) that does."""
    out = []
    for tag in report.tags:
        bad = [(s, v) for s, v in report.scalars[tag] if not math.isfinite(v)]
        if bad:
            out.append(NonFinite(tag, bad[0][0], bad[0][1], len(bad)))
    return out


How = Literal["min", "max", "mean"]


def aggregate(values: Sequence[float], how: How, last_k: int | None = None) -> float:
    """``min`` / ``max`` / ``mean`` of ``values`` (of the last ``last_k`` only, if given).

    Any NaN makes the result NaN, whatever ``how``: Python's ``min`` / ``max`` would return
    a NaN or skip it depending on its position, and an expectation must not pass on either.
    """
    if last_k is not None:
        if last_k <= 0:
            raise ValueError(f"last_k must be positive, not {last_k}")
        values = values[-last_k:]
    if not values:
        raise ValueError("no values to aggregate")
    if any(math.isnan(v) for v in values):
        return math.nan
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    if how == "mean":
        return math.fsum(values) / len(values)
    raise ValueError(f"how must be min, max or mean, not {how!r}")


def _scalar(value: Any) -> float | None:
    """The float of one ``Summary.Value`` if it is a scalar, else ``None``."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        return None
    plugin = value.metadata.plugin_data.plugin_name
    if plugin not in ("scalars", ""):
        return None
    from tensorboard.util import tensor_util

    try:
        array = tensor_util.make_ndarray(value.tensor)
    except (TypeError, ValueError):
        return None
    if array.size != 1 or array.dtype.kind not in "fiu":
        return None
    return float(array.reshape(()).item())


def _download(store: Store, key: str, length: int, path: Path) -> int:
    written = 0
    with path.open("wb") as f:
        for start in range(0, length, CHUNK_BYTES):
            data = store.read(key, start, min(start + CHUNK_BYTES, length))
            f.write(data)
            written += len(data)
            if len(data) < min(CHUNK_BYTES, length - start):
                break  # the object is shorter than listed: read what there is
    return written


def _stopped_short(path: Path, at: int, have: int, complete: bool) -> str | None:
    """Why the loader's records end at byte ``at`` of the ``have`` downloaded, if it matters."""
    if at >= have:
        return None
    with path.open("rb") as f:
        f.seek(at)
        head = f.read(12)
    length = struct.unpack_from("<Q", head)[0] if len(head) >= 8 else None
    cut = length is None or at + RECORD_OVERHEAD + length > have
    if cut and not complete:
        return None  # the rest of the record lies past the bytes read: see the size problem
    if cut:
        return f"truncated: record at byte {at} is incomplete ({have - at} bytes left)"
    return (
        f"corrupt: record at byte {at} fails its CRC check; the {have - at} bytes from it not read"
    )


def read_scalars(
    store: Store,
    prefix: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    since: Mapping[str, tuple[int, float | None]] | None = None,
) -> ScalarsReport:
    """Every scalar of the ``*tfevents*`` objects under ``prefix``, files in key order;
    ``since``: a listing taken earlier (key → size, modified), whose unchanged objects are
    not this run's and are left out.

    Unreadable, truncated or corrupt files are problems of the report, never exceptions
    (scalars before the damage are kept); only a store that stops answering raises
    (``StoreUnavailable``), as nothing is known then.
    """
    from google.protobuf.message import DecodeError
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2

    prefix = join_key(prefix)
    report = ScalarsReport(location=f"{store.describe().rstrip('/')}/{prefix}".rstrip("/"))
    objects = list_for_report(store, prefix, report.problems)
    if objects is None:
        return report
    events = [o for o in written_since(objects, since) if "tfevents" in o.key.rsplit("/", 1)[-1]]
    if not events:
        report.problems.append(f"{prefix or '/'}: no TensorBoard event files")
        return report
    points: dict[str, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="rlark-events-") as tmp:
        for obj in events:
            rel = obj.key[len(prefix) + 1 :] if prefix else obj.key
            path = Path(tmp, "events")
            want = min(obj.size, max_bytes)
            try:
                have = _download(store, obj.key, want, path)
            except StoreUnavailable:
                raise
            except StoreError as e:
                report.problems.append(f"{rel}: unreadable: {e.code}: {e.detail}")
                continue
            if obj.size > max_bytes:
                report.problems.append(
                    f"{rel}: {obj.size} bytes, over the limit of {max_bytes}: "
                    "scalars of the first bytes only"
                )
            read, covered, first = 0, 0, True
            for raw in RawEventFileLoader(os.fspath(path)).Load():
                covered += RECORD_OVERHEAD + len(raw)
                try:
                    event = event_pb2.Event.FromString(raw)
                except DecodeError:
                    report.problems.append(f"{rel}: corrupt: event {read} is not an Event proto")
                    break
                if first and not event.file_version.startswith("brain.Event:"):
                    report.problems.append(f"{rel}: not an event file: no brain.Event version")
                    break
                first = False
                read += 1
                for value in event.summary.value:
                    scalar = _scalar(value)
                    if scalar is not None:
                        points.setdefault(value.tag, []).append((event.step, scalar))
            else:
                why = _stopped_short(path, covered, have, complete=have < want or have == obj.size)
                if why:
                    report.problems.append(f"{rel}: {why}")
                elif read == 0:
                    report.problems.append(f"{rel}: no events")
            report.files[rel] = read
            path.unlink(missing_ok=True)
    report.scalars = {tag: sorted(p, key=lambda sv: sv[0]) for tag, p in sorted(points.items())}
    if not report.scalars and report.files:
        report.problems.append(f"{prefix or '/'}: no scalars in {len(report.files)} event files")
    return report
