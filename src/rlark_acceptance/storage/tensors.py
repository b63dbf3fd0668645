"""Read the tensors of a checkpoint without torch: counts, non-finite values, a digest.

The weight files RLinf writes are read as raw storages with numpy, in ranged chunks of a
``Store`` (never more than two chunks of a file in memory, never unpickled; a file's small
reads served from the chunk last fetched, so a small file costs one request):

- ``*.safetensors``: the JSON header gives each tensor's dtype, shape and byte span;
- torch zip archives (``*.pt`` / ``*.pth``, e.g. ``full_weights.pt``): ``data.pkl`` is
  walked symbolically (``pickle_scan``) to name each tensor, its storage ``data/<key>``,
  dtype (from the storage class), offset, shape and stride;
- DCP shards (``*.distcp``): every item is a ``torch.save`` archive written at an offset;
  the ``.metadata`` next to it (scanned, not loaded) gives each item's name and span, and
  without it the archives are found by their end-of-central-directory records.

Per tensor: elements, bytes, NaN / +inf / -inf (float dtypes, bf16 and float8 included,
by their exponent bits where numpy has no such dtype) and a SHA-256 of its bytes in
C order. Digests of files and of the checkpoint are built from those in name order, so
two checkpoints with identical weights have the same digest (``compare_tensors``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from rlark_acceptance.storage.pickle_scan import PickleScanError, TensorRef, scan_pickle
from rlark_acceptance.storage.safetensors_check import DTYPE_BITS, check_safetensors
from rlark_acceptance.storage.store import (
    ObjectInfo,
    Store,
    StoreError,
    StoreUnavailable,
    join_key,
    list_for_report,
)
from rlark_acceptance.storage.torchzip import (
    CDH_SIG,
    EOCD_SIG,
    LFH_SIG,
    MAX_DATA_PKL,
    ZIP64_EOCD_SIG,
    ZIP64_LOCATOR_SIG,
    ArchiveSlice,
    ZipCorrupt,
    ZipEntry,
    member_data_span,
    read_central_directory,
    read_member,
)

# Weight files of one checkpoint read at most (sum of their sizes): a larger checkpoint
# is reported, not read, so a check never runs for hours on an unexpected model.
DEFAULT_MAX_BYTES = 64 * 1024**3
CHUNK_BYTES = 8 * 1024 * 1024  # per ranged read; a multiple of every element size
MAX_STRIDED_SPAN = 64 * 1024 * 1024  # a non-contiguous torch view is read whole up to this
MAX_METADATA = 16 * 1024 * 1024

# torch's legacy storage class -> the dtype code used throughout (safetensors' names).
STORAGE_DTYPES = {
    "FloatStorage": "F32",
    "DoubleStorage": "F64",
    "HalfStorage": "F16",
    "BFloat16Storage": "BF16",
    "LongStorage": "I64",
    "IntStorage": "I32",
    "ShortStorage": "I16",
    "CharStorage": "I8",
    "ByteStorage": "U8",
    "BoolStorage": "BOOL",
    "UInt16Storage": "U16",
    "UInt32Storage": "U32",
    "UInt64Storage": "U64",
    "ComplexFloatStorage": "C64",
    "ComplexDoubleStorage": "C128",
    "Float8_e5m2Storage": "F8_E5M2",
    "Float8_e4m3fnStorage": "F8_E4M3",
    "Float8_e8m0fnuStorage": "F8_E8M0",
}
BITS = {**DTYPE_BITS, "C128": 128}

Counts = tuple[int, int, int]  # NaN, +inf, -inf
_NONE: Counts = (0, 0, 0)


def _ieee(np_dtype: str) -> Callable[[bytes], Counts]:
    def count(chunk: bytes) -> Counts:
        a = np.frombuffer(chunk, dtype=np_dtype)
        if np.isfinite(a).all():
            return _NONE
        return int(np.isnan(a).sum()), int(np.isposinf(a).sum()), int(np.isneginf(a).sum())

    return count


def _complex(np_dtype: str) -> Callable[[bytes], Counts]:
    # An element is non-finite when either part is; NaN wins over inf, as numpy's isnan.
    def count(chunk: bytes) -> Counts:
        a = np.frombuffer(chunk, dtype=np_dtype).reshape(-1, 2)
        if np.isfinite(a).all():
            return _NONE
        nan = np.isnan(a).any(axis=1)
        pos = ~nan & np.isposinf(a).any(axis=1)
        neg = ~nan & ~pos & np.isneginf(a).any(axis=1)
        return int(nan.sum()), int(pos.sum()), int(neg.sum())

    return count


def _bits(uint: str, exp: int, mant: int, sign: int) -> Callable[[bytes], Counts]:
    """IEEE-like layouts numpy has no dtype for (bfloat16, float8 e5m2): all exponent bits
    set is inf (mantissa 0) or NaN (mantissa not 0)."""

    def count(chunk: bytes) -> Counts:
        u = np.frombuffer(chunk, dtype=uint)
        special = (u & exp) == exp
        if not special.any():
            return _NONE
        nan = special & ((u & mant) != 0)
        inf = special & ((u & mant) == 0)
        neg = (u & sign) != 0
        return int(nan.sum()), int((inf & ~neg).sum()), int((inf & neg).sum())

    return count


def _nan_pattern(mask: int, value: int) -> Callable[[bytes], Counts]:
    """Formats with NaN but no inf (float8 e4m3fn: S.1111.111; e8m0: 0xFF)."""

    def count(chunk: bytes) -> Counts:
        u = np.frombuffer(chunk, dtype="u1")
        return int(((u & mask) == value).sum()), 0, 0

    return count


COUNTERS: dict[str, Callable[[bytes], Counts]] = {
    "F64": _ieee("<f8"),
    "F32": _ieee("<f4"),
    "F16": _ieee("<f2"),
    "BF16": _bits("<u2", 0x7F80, 0x007F, 0x8000),
    "F8_E5M2": _bits("u1", 0x7C, 0x03, 0x80),
    "F8_E4M3": _nan_pattern(0x7F, 0x7F),
    "F8_E8M0": _nan_pattern(0xFF, 0xFF),
    "C64": _complex("<f4"),
    "C128": _complex("<f8"),
}


@dataclass(frozen=True)
class TensorStats:
    name: str
    dtype: str  # safetensors' dtype codes (F32, BF16, I64...), whatever the file format
    shape: tuple[int, ...]
    elements: int
    nbytes: int
    nan: int
    posinf: int
    neginf: int
    sha256: str  # of the tensor's bytes in C order

    @property
    def non_finite(self) -> int:
        return self.nan + self.posinf + self.neginf


def _digest(lines: Iterator[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
    return h.hexdigest()


def _line(t: TensorStats) -> str:
    return f"{t.name}\0{t.dtype}\0{list(t.shape)}\0{t.sha256}\n"


@dataclass
class FileTensors:
    key: str  # relative to the checkpoint prefix
    format: str  # safetensors | torch-zip | dcp
    tensors: list[TensorStats] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def elements(self) -> int:
        return sum(t.elements for t in self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def non_finite(self) -> int:
        return sum(t.non_finite for t in self.tensors)

    @property
    def digest(self) -> str:
        return _digest(_line(t) for t in sorted(self.tensors, key=lambda t: t.name))


@dataclass
class TensorsReport:
    location: str
    files: list[FileTensors] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # every file's, prefixed with its key
    bytes_read: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.files) and not self.problems

    @property
    def tensors(self) -> int:
        return sum(len(f.tensors) for f in self.files)

    @property
    def elements(self) -> int:
        return sum(f.elements for f in self.files)

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self.files)

    @property
    def non_finite(self) -> int:
        return sum(f.non_finite for f in self.files)

    def by_name(self) -> dict[str, TensorStats]:
        """Every tensor as ``<file>:<tensor name>``."""
        return {f"{f.key}:{t.name}": t for f in self.files for t in f.tensors}

    def non_finite_tensors(self) -> dict[str, TensorStats]:
        return {k: t for k, t in self.by_name().items() if t.non_finite}

    @property
    def digest(self) -> str:
        """SHA-256 over every tensor in (file, name) order: equal for identical weights."""
        return _digest(
            f"{f.key}\0{_line(t)}"
            for f in sorted(self.files, key=lambda f: f.key)
            for t in sorted(f.tensors, key=lambda t: t.name)
        )

    def summary(self) -> str:
        head = (
            f"{self.location}: {self.tensors} tensors in {len(self.files)} files, "
            f"{self.elements} elements, {self.nbytes} bytes, {self.non_finite} non-finite"
        )
        return head + ("; " + "; ".join(self.problems) if self.problems else "")


@dataclass(frozen=True)
class TensorsComparison:
    identical: bool  # same tensors, same bytes, and both reports complete
    changed: list[str]  # ``<file>:<tensor>`` whose dtype, shape or bytes differ
    added: list[str]  # only in ``after``
    removed: list[str]  # only in ``before``
    problems: list[str]  # why the comparison is incomplete (either report's problems)


def compare_tensors(before: TensorsReport, after: TensorsReport) -> TensorsComparison:
    a, b = before.by_name(), after.by_name()
    changed = sorted(
        k for k in a.keys() & b.keys() if (a[k].dtype, a[k].shape, a[k].sha256) != _key(b[k])
    )
    added, removed = sorted(b.keys() - a.keys()), sorted(a.keys() - b.keys())
    problems = [f"before: {p}" for p in before.problems] + [f"after: {p}" for p in after.problems]
    if not a and not b:
        problems.append("no tensors in either checkpoint")
    identical = not (changed or added or removed or problems)
    return TensorsComparison(identical, changed, added, removed, problems)


def _key(t: TensorStats) -> tuple[str, tuple[int, ...], str]:
    return t.dtype, t.shape, t.sha256


class _Unreadable(Exception):
    """A tensor or file that cannot be read as its header says (a problem, not a crash)."""


class _Block:
    """One object of ``store`` as a ``Store`` that serves reads from a kept block: a read the
    block does not hold fetches the ``block``-aligned block around it (a file smaller than
    ``block`` is then fetched once, whole), a read that crosses a block's end is fetched as
    asked. The many small reads of a zip's headers, a pickle and small storages (a DCP
    shard is one ``torch.save`` archive per item) are one request per block, not one each;
    memory stays one block."""

    def __init__(self, store: Store, key: str, size: int, block: int) -> None:
        self.store, self.key, self.size, self.block = store, key, size, block
        self._at, self._data = 0, b""
        self.fetched = 0

    def describe(self) -> str:
        return self.store.describe()

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        return self.store.list(prefix)

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        if key != self.key:
            return self.store.read(key, start, end)
        end = self.size if end is None else min(end, self.size)
        if end <= start:
            return b""
        at, data = self._at, self._data
        if at <= start and end <= at + len(data):
            return data[start - at : end - at]
        at = start - start % self.block
        if end > at + self.block:
            out = self.store.read(key, start, end)
            self.fetched += len(out)
            return out
        self._at, self._data = at, self.store.read(key, at, min(at + self.block, self.size))
        self.fetched += len(self._data)
        return self._data[start - at : end - at]


class _Reader:
    """Ranged, chunked reads of one object, counting the bytes fetched."""

    def __init__(self, store: Store, key: str, chunk: int) -> None:
        self.store, self.key, self.chunk = store, key, chunk
        self.bytes_read = 0

    def read(self, start: int, end: int) -> bytes:
        data = self.store.read(self.key, start, end)
        self.bytes_read += len(data)
        if len(data) != end - start:
            raise _Unreadable(f"truncated: bytes {start}..{end} needed, {len(data)} read")
        return data

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        for pos in range(start, end, self.chunk):
            yield self.read(pos, min(pos + self.chunk, end))


def _stats(
    name: str, dtype: str, shape: tuple[int, ...], chunks: Iterator[bytes], nbytes: int
) -> TensorStats:
    counter = COUNTERS.get(dtype)
    h = hashlib.sha256()
    nan = pos = neg = 0
    for chunk in chunks:
        h.update(chunk)
        if counter is not None:
            n, p, m = counter(chunk)
            nan, pos, neg = nan + n, pos + p, neg + m
    return TensorStats(name, dtype, shape, math.prod(shape), nbytes, nan, pos, neg, h.hexdigest())


# --- safetensors -----------------------------------------------------------------------------


def _safetensors(reader: _Reader, size: int, out: FileTensors) -> None:
    problems, _ = check_safetensors(reader.store, reader.key, size)
    if problems:
        out.problems.extend(problems)
        return
    (n,) = struct.unpack("<Q", reader.read(0, 8))
    header = json.loads(reader.read(8, 8 + n))
    for name, info in sorted(header.items()):
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        out.tensors.append(
            _stats(
                name, info["dtype"], shape, reader.chunks(8 + n + begin, 8 + n + end), end - begin
            )
        )


# --- torch zip archives ----------------------------------------------------------------------


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expect = 1
    for dim, st in zip(reversed(shape), reversed(stride), strict=True):
        if dim != 1 and st != expect:
            return False
        expect *= dim
    return True


def _torch_zip(
    reader: _Reader, size: int, out: FileTensors, name: Callable[[str], str] = str
) -> int:
    """The tensors of one ``torch.save`` archive (whole object or a slice); their count."""
    try:
        entries, _ = read_central_directory(reader.store, reader.key, size)
        pkls = [e for e in entries if e.name.endswith("/data.pkl") and e.name.count("/") == 1]
        if not pkls:
            raise _Unreadable("not a torch archive: no <archive>/data.pkl entry")
        root = pkls[0].name.rsplit("/", 1)[0]
        members = {e.name: e for e in entries}
        if f"{root}/byteorder" in members:
            order = read_member(reader.store, reader.key, members[f"{root}/byteorder"], 16)
            if order.strip() != b"little":
                raise _Unreadable(f"byte order {order.decode(errors='replace')!r} is not little")
        summary = scan_pickle(read_member(reader.store, reader.key, pkls[0], MAX_DATA_PKL))
    except (ZipCorrupt, PickleScanError) as e:
        raise _Unreadable(str(e)) from None
    tensors = summary.tensors()
    for tname, ref in sorted(tensors, key=lambda t: t[0]):
        try:
            out.tensors.append(_torch_tensor(reader, members, root, name(tname), ref))
        except (_Unreadable, ZipCorrupt) as e:
            out.problems.append(f"{name(tname) or '<tensor>'}: {e}")
    return len(tensors)


def _torch_tensor(
    reader: _Reader, members: dict[str, ZipEntry], root: str, tname: str, ref: TensorRef
) -> TensorStats:
    dtype = STORAGE_DTYPES.get(ref.storage_type)
    if dtype is None:
        raise _Unreadable(f"storage type {ref.storage_type} is not known")
    member = members.get(f"{root}/data/{ref.key}")
    if member is None:
        raise _Unreadable(f"storage {root}/data/{ref.key} is missing")
    item = BITS[dtype] // 8
    start, end = member_data_span(reader.store, reader.key, member)
    numel = math.prod(ref.shape)
    if len(ref.shape) != len(ref.stride):
        raise _Unreadable(f"shape {list(ref.shape)} and stride {list(ref.stride)} disagree")
    span = (
        0
        if numel == 0
        else 1 + sum((d - 1) * s for d, s in zip(ref.shape, ref.stride, strict=True))
    )
    if ref.offset < 0 or min(ref.stride, default=0) < 0:
        raise _Unreadable("negative offset or stride")
    first = start + ref.offset * item
    if first + span * item > end:
        raise _Unreadable(
            f"view of {span} elements at {ref.offset} overruns its storage of "
            f"{(end - start) // item} {dtype} elements"
        )
    if _contiguous(ref.shape, ref.stride):
        chunk = reader.chunk - reader.chunk % item
        reader_chunks = (
            reader.read(p, min(p + chunk, first + numel * item))
            for p in range(first, first + numel * item, chunk)
        )
        return _stats(tname, dtype, ref.shape, reader_chunks, numel * item)
    if span * item > MAX_STRIDED_SPAN:
        raise _Unreadable(
            f"non-contiguous view spanning {span * item} bytes, over {MAX_STRIDED_SPAN}: not read"
        )
    raw = np.frombuffer(reader.read(first, first + span * item), dtype=f"V{item}")
    view = np.lib.stride_tricks.as_strided(
        raw, shape=ref.shape, strides=tuple(s * item for s in ref.stride), writeable=False
    )
    return _stats(
        tname, dtype, ref.shape, iter([np.ascontiguousarray(view).tobytes()]), numel * item
    )


# --- DCP shards ------------------------------------------------------------------------------


def _find_archives(reader: _Reader, size: int) -> list[tuple[int, int]]:
    """``(start, length)`` of every zip archive in a shard, found by its end record.

    Offsets inside an embedded archive count from its own start, so the end record leads
    back to it: through the zip64 record torch writes before it (its locator gives the
    record's offset), else through the central directory's size and offset. A candidate
    counts only if a local header sits at the start and a central directory where it says,
    so the signature bytes occurring inside tensor data are not taken for a record.
    """
    found: list[tuple[int, int]] = []
    overlap = len(EOCD_SIG) - 1
    pos = 0
    while pos < size:
        block = reader.read(pos, min(pos + reader.chunk + overlap, size))
        at = block.find(EOCD_SIG)
        # A record starting in the overlap is found again in the next block.
        while 0 <= at < reader.chunk:
            archive = _archive_at(
                reader, pos + at, size, found[-1][0] + found[-1][1] if found else 0
            )
            if archive is not None:
                found.append(archive)
            at = block.find(EOCD_SIG, at + 1)
        pos += reader.chunk
    return found


def _archive_at(reader: _Reader, eocd: int, size: int, floor: int) -> tuple[int, int] | None:
    if eocd + 22 > size:
        return None
    _, disk, _, _, _, cd_size, cd_offset, comment = struct.unpack(
        "<4sHHHHIIH", reader.read(eocd, eocd + 22)
    )
    end = eocd + 22 + comment
    if disk != 0 or end > size:
        return None
    start = eocd - cd_size - cd_offset
    if eocd - floor >= 20 + 56:
        loc = reader.read(eocd - 20, eocd)
        rec_at = eocd - 20 - 56
        if loc[:4] == ZIP64_LOCATOR_SIG and reader.read(rec_at, rec_at + 4) == ZIP64_EOCD_SIG:
            rec = reader.read(rec_at, rec_at + 56)
            (rec_rel,) = struct.unpack_from("<Q", loc, 8)
            (cd_offset,) = struct.unpack_from("<Q", rec, 48)
            start = rec_at - rec_rel
    if start < floor or start + cd_offset >= eocd:
        return None
    if reader.read(start, start + 4) != LFH_SIG:
        return None
    if reader.read(start + cd_offset, start + cd_offset + 4) not in (CDH_SIG, EOCD_SIG):
        return None
    return start, end - start


def _dcp_shard(
    reader: _Reader,
    size: int,
    out: FileTensors,
    items: list[tuple[str, int, int]] | None,
) -> None:
    """Every tensor item of a shard; ``items``: ``(fqn, offset, length)`` from .metadata."""
    if items is None:
        spans = [(f"@{start}", start, length) for start, length in _find_archives(reader, size)]
        if not spans:
            out.problems.append("no torch.save archive found in the shard")
            return
    else:
        spans = items
    seen: dict[str, int] = {}
    for fqn, start, length in spans:
        if start + length > size:
            out.problems.append(
                f"{fqn}: truncated: .metadata places it at {start}..{start + length}, "
                f"shard has {size} bytes"
            )
            continue
        # Several chunks of one tensor (a sharded save) keep apart by their order.
        n = seen[fqn] = seen.get(fqn, -1) + 1
        label = fqn if n == 0 else f"{fqn}#{n}"
        sub = _Reader(
            ArchiveSlice(reader.store, reader.key, start, length), reader.key, reader.chunk
        )
        try:
            _torch_zip(sub, length, out, name=functools.partial(_qualify, label))
        except _Unreadable as e:
            out.problems.append(f"{label}: {e}")
        finally:
            reader.bytes_read += sub.bytes_read


def _qualify(label: str, name: str) -> str:
    return f"{label}.{name}" if name else label


def _dcp_items(
    store: Store, meta_key: str, size: int, shard_name: str, problems: list[str]
) -> list[tuple[str, int, int]] | None:
    if size > MAX_METADATA:
        problems.append(f".metadata of {size} bytes not read: archives found by their headers")
        return None
    try:
        items = scan_pickle(store.read(meta_key)).dcp_items()
    except PickleScanError as e:
        problems.append(f".metadata: corrupt ({e}): archives found by their headers")
        return None
    return sorted(((f, o, n) for f, p, o, n in items if p == shard_name), key=lambda i: i[1])


# --- a checkpoint ----------------------------------------------------------------------------

_WEIGHTS = re.compile(r"\.(safetensors|pt|pth|distcp)$")


def _skipped(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return rel.endswith("/") or (name.startswith(".") and name.endswith(".tmp"))


def read_tensors(
    store: Store,
    prefix: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
    exclude: Callable[[str], bool] | None = None,
) -> TensorsReport:
    """Every tensor of the weight files under ``prefix`` (a checkpoint, e.g.
    ``…/global_step_N/actor``), read in ``chunk_bytes`` ranges; of those ``exclude`` (given
    the key relative to ``prefix``) accepts, none is read, nor counts to ``max_bytes``.

    A corrupt or truncated file is a problem of the report, never an exception; only a
    store that stops answering (``StoreUnavailable``) raises, as nothing is known then.
    """
    if chunk_bytes <= 0 or chunk_bytes % 16:
        raise ValueError(f"chunk_bytes must be a positive multiple of 16, not {chunk_bytes}")
    prefix = join_key(prefix)
    report = TensorsReport(location=f"{store.describe().rstrip('/')}/{prefix}".rstrip("/"))
    objects = list_for_report(store, prefix, report.problems)
    if objects is None:
        return report

    def rel(o: ObjectInfo) -> str:
        return o.key[len(prefix) + 1 :] if prefix else o.key

    weights = [
        o
        for o in objects
        if _WEIGHTS.search(o.key)
        and not _skipped(rel(o))
        and not (exclude is not None and exclude(rel(o)))
    ]
    if not weights:
        report.problems.append(f"{prefix or '/'}: no weight files (*.safetensors, *.pt, *.distcp)")
        return report
    total = sum(o.size for o in weights)
    if total > max_bytes:
        report.problems.append(
            f"{prefix or '/'}: {len(weights)} weight files of {total} bytes, over the limit of "
            f"{max_bytes} bytes: tensors not read"
        )
        return report
    by_key = {o.key: o for o in objects}
    for obj in weights:
        ext = obj.key.rsplit(".", 1)[-1]
        fmt = {"safetensors": "safetensors", "distcp": "dcp"}.get(ext, "torch-zip")
        out = FileTensors(rel(obj), fmt)
        cached = _Block(store, obj.key, obj.size, chunk_bytes)
        reader = _Reader(cached, obj.key, chunk_bytes)
        try:
            if fmt == "safetensors":
                _safetensors(reader, obj.size, out)
            elif fmt == "torch-zip":
                _torch_zip(reader, obj.size, out)
            else:
                meta = by_key.get(join_key(obj.key.rpartition("/")[0], ".metadata"))
                items = None
                if meta is None:
                    out.problems.append("no .metadata next to the shard: archives found by headers")
                else:
                    shard = obj.key.rsplit("/", 1)[-1]
                    items = _dcp_items(store, meta.key, meta.size, shard, out.problems)
                _dcp_shard(reader, obj.size, out, items)
        except StoreUnavailable:
            raise
        except StoreError as e:
            out.problems.append(f"unreadable: {e.code}: {e.detail}")
        except _Unreadable as e:
            out.problems.append(str(e))
        report.bytes_read += cached.fetched
        # A DCP shard may hold only pickled objects (optimizer settings, RNG states).
        if not out.tensors and not out.problems and fmt != "dcp":
            out.problems.append("no tensors")
        report.files.append(out)
        report.problems.extend(f"{out.key}: {p}" for p in out.problems)
    return report
