"""Structural check of a torch zip archive (``torch.save`` output, e.g. ``full_weights.pt``).

Reads only the end-of-central-directory record, the central directory and ``data.pkl``
(plus, under a size bound, members to CRC-check): never the whole file, never unpickled.
A truncated upload loses the central directory at the end, so it cannot pass.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from rlark_acceptance.storage.pickle_scan import PickleScanError, scan_pickle
from rlark_acceptance.storage.store import ObjectInfo, ObjectNotFound, Store

EOCD_SIG = b"PK\x05\x06"
ZIP64_LOCATOR_SIG = b"PK\x06\x07"
ZIP64_EOCD_SIG = b"PK\x06\x06"
CDH_SIG = b"PK\x01\x02"
LFH_SIG = b"PK\x03\x04"
EOCD_MAX = 22 + 0xFFFF  # fixed part + longest comment
MAX_CENTRAL_DIR = 64 * 1024 * 1024
MAX_DATA_PKL = 64 * 1024 * 1024

# Bytes per element of torch's storage classes, for data/<key> size checks.
STORAGE_ITEMSIZE = {
    "FloatStorage": 4,
    "DoubleStorage": 8,
    "HalfStorage": 2,
    "BFloat16Storage": 2,
    "LongStorage": 8,
    "IntStorage": 4,
    "ShortStorage": 2,
    "CharStorage": 1,
    "ByteStorage": 1,
    "BoolStorage": 1,
    "ComplexFloatStorage": 8,
    "ComplexDoubleStorage": 16,
    "UntypedStorage": 1,
}


@dataclass
class ZipEntry:
    name: str
    method: int
    crc: int
    comp_size: int
    size: int
    header_offset: int


class ZipCorrupt(ValueError):
    pass


def _find_eocd(store: Store, key: str, size: int) -> tuple[int, bytes]:
    if size < 22:
        raise ZipCorrupt(f"truncated or not a zip archive: {size} bytes")
    tail_start = max(0, size - EOCD_MAX)
    tail = store.read(key, tail_start, size)
    at = tail.rfind(EOCD_SIG)
    while at >= 0:
        comment_len = struct.unpack_from("<H", tail, at + 20)[0] if at + 22 <= len(tail) else -1
        if at + 22 + comment_len == len(tail):
            return tail_start + at, tail
        at = tail.rfind(EOCD_SIG, 0, at)
    raise ZipCorrupt(
        "truncated or not a zip archive: no end-of-central-directory record "
        f"in the last {len(tail)} bytes"
    )


def read_central_directory(store: Store, key: str, size: int) -> tuple[list[ZipEntry], int]:
    """Entries of the archive and the offset where its central directory starts."""
    eocd_at, tail = _find_eocd(store, key, size)
    rel = eocd_at - (size - len(tail))
    _, disk, _, _, count, cd_size, cd_offset, _ = struct.unpack_from("<4sHHHHIIH", tail, rel)
    cd_end_limit = eocd_at
    if disk != 0:
        raise ZipCorrupt("multi-disk zip archives are not torch archives")
    if 0xFFFF in (count,) or 0xFFFFFFFF in (cd_size, cd_offset):
        # zip64: the locator sits right before the EOCD and points at the zip64 record.
        loc_at = eocd_at - 20
        loc = store.read(key, loc_at, eocd_at) if loc_at >= 0 else b""
        if len(loc) != 20 or loc[:4] != ZIP64_LOCATOR_SIG:
            raise ZipCorrupt("zip64 fields without a zip64 end-of-central-directory locator")
        (rec_at,) = struct.unpack_from("<Q", loc, 8)
        if rec_at + 56 > loc_at:
            raise ZipCorrupt(f"zip64 record offset {rec_at} is beyond the archive")
        rec = store.read(key, rec_at, rec_at + 56)
        if rec[:4] != ZIP64_EOCD_SIG:
            raise ZipCorrupt("zip64 end-of-central-directory record not found")
        count, _, cd_size, cd_offset = struct.unpack_from("<QQQQ", rec, 24)
        cd_end_limit = rec_at
    if cd_offset + cd_size > cd_end_limit:
        raise ZipCorrupt(
            f"truncated: central directory at {cd_offset} (+{cd_size} bytes) "
            f"overruns its end record at {cd_end_limit}"
        )
    if cd_size > MAX_CENTRAL_DIR:
        raise ZipCorrupt(f"central directory of {cd_size} bytes is not plausible")
    entries = _parse_central_directory(store.read(key, cd_offset, cd_offset + cd_size))
    if len(entries) != count:
        raise ZipCorrupt(f"end record says {count} entries, central directory has {len(entries)}")
    return entries, cd_offset


def _parse_central_directory(cd: bytes) -> list[ZipEntry]:
    entries: list[ZipEntry] = []
    pos = 0
    while pos < len(cd):
        if cd[pos : pos + 4] != CDH_SIG or pos + 46 > len(cd):
            raise ZipCorrupt(f"corrupt central directory at entry {len(entries)}")
        (method, _, _, crc, csize, usize, nlen, xlen, clen) = struct.unpack_from(
            "<HHHIIIHHH", cd, pos + 10
        )
        (offset,) = struct.unpack_from("<I", cd, pos + 42)
        name = cd[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        extra = cd[pos + 46 + nlen : pos + 46 + nlen + xlen]
        usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
        entries.append(ZipEntry(name, method, crc, csize, usize, offset))
        pos += 46 + nlen + xlen + clen
    return entries


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    """Replace 0xFFFFFFFF fields by their 64-bit values from the zip64 extra field."""
    i = 0
    while i + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, i)
        if tag == 0x0001:
            vals = iter(struct.unpack_from(f"<{length // 8}Q", extra, i + 4))
            if usize == 0xFFFFFFFF:
                usize = next(vals)
            if csize == 0xFFFFFFFF:
                csize = next(vals)
            if offset == 0xFFFFFFFF:
                offset = next(vals)
            break
        i += 4 + length
    return usize, csize, offset


def read_member(store: Store, key: str, entry: ZipEntry, limit: int) -> bytes:
    """One member's uncompressed bytes, CRC-checked."""
    head = store.read(key, entry.header_offset, entry.header_offset + 30)
    if len(head) < 30 or head[:4] != LFH_SIG:
        raise ZipCorrupt(f"{entry.name}: no local header at {entry.header_offset}")
    nlen, xlen = struct.unpack_from("<HH", head, 26)
    start = entry.header_offset + 30 + nlen + xlen
    raw = store.read(key, start, start + entry.comp_size)
    if len(raw) != entry.comp_size:
        raise ZipCorrupt(f"truncated: {entry.name} has {len(raw)} of {entry.comp_size} bytes")
    if entry.method == 8:
        data = zlib.decompressobj(-15).decompress(raw, limit + 1)
    elif entry.method == 0:
        data = raw
    else:
        raise ZipCorrupt(f"{entry.name}: unsupported compression method {entry.method}")
    if len(data) != entry.size or zlib.crc32(data) != entry.crc:
        raise ZipCorrupt(f"corrupt: {entry.name} fails its CRC-32 check")
    return data


def member_data_span(store: Store, key: str, entry: ZipEntry) -> tuple[int, int]:
    """``[start, end)`` of a stored (uncompressed) member's bytes in the archive, from its
    local header: torch writes storages stored, so a tensor is read in place, in ranges."""
    if entry.method != 0:
        raise ZipCorrupt(f"{entry.name}: compressed (method {entry.method}), not a torch storage")
    head = store.read(key, entry.header_offset, entry.header_offset + 30)
    if len(head) < 30 or head[:4] != LFH_SIG:
        raise ZipCorrupt(f"{entry.name}: no local header at {entry.header_offset}")
    nlen, xlen = struct.unpack_from("<HH", head, 26)
    start = entry.header_offset + 30 + nlen + xlen
    return start, start + entry.size


class ArchiveSlice:
    """The bytes ``[start, start + size)`` of one object, as a ``Store`` holding only ``key``:
    a zip archive embedded in a larger file (each tensor of a DCP ``.distcp`` shard is a
    ``torch.save`` archive written at an offset, its own offsets counted from its start)."""

    def __init__(self, store: Store, key: str, start: int, size: int) -> None:
        self.store, self.key, self.start, self.size = store, key, start, size

    def describe(self) -> str:
        return f"{self.store.describe()}/{self.key}@{self.start}"

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        return [ObjectInfo(self.key, self.size)] if self.key.startswith(prefix) else []

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        if key != self.key:
            raise ObjectNotFound(key)
        end = self.size if end is None else min(end, self.size)
        if end <= start:
            return b""
        return self.store.read(self.key, self.start + start, self.start + end)


def check_torch_zip(
    store: Store, key: str, size: int, crc_limit: int = 8 * 1024 * 1024
) -> tuple[list[str], int]:
    """Problems found (without the key) and the number of entries.

    Members up to ``crc_limit`` bytes in total are read and CRC-checked; larger ones are
    checked for layout only (their spans must fit between their neighbours).
    """
    try:
        entries, cd_offset = read_central_directory(store, key, size)
    except ZipCorrupt as e:
        return [str(e)], 0
    problems: list[str] = []
    # Every member's local header + data must end before the next one starts.
    ordered = sorted(entries, key=lambda e: e.header_offset)
    for cur, nxt in zip(ordered, [*ordered[1:], None], strict=True):
        limit = nxt.header_offset if nxt else cd_offset
        if cur.header_offset + 30 + len(cur.name.encode()) + cur.comp_size > limit:
            problems.append(f"corrupt: member {cur.name} overruns the next record at {limit}")
    pkls = [e for e in entries if e.name.endswith("/data.pkl") and e.name.count("/") == 1]
    if not pkls:
        return [*problems, "not a torch archive: no <archive>/data.pkl entry"], len(entries)
    pkl = pkls[0]
    root = pkl.name.rsplit("/", 1)[0]
    members = {e.name: e for e in entries}
    if pkl.size > MAX_DATA_PKL:
        return [*problems, f"data.pkl of {pkl.size} bytes is not plausible"], len(entries)
    try:
        summary = scan_pickle(read_member(store, key, pkl, MAX_DATA_PKL))
    except (ZipCorrupt, PickleScanError) as e:
        return [*problems, f"{pkl.name}: {e}"], len(entries)
    for skey, stype, numel in summary.storages():
        member = members.get(f"{root}/data/{skey}")
        if member is None:
            problems.append(
                f"data.pkl references storage {skey!r} but {root}/data/{skey} is missing"
            )
        elif stype in STORAGE_ITEMSIZE and member.size != numel * STORAGE_ITEMSIZE[stype]:
            problems.append(
                f"{member.name}: {member.size} bytes, data.pkl says {numel} x {stype} "
                f"({numel * STORAGE_ITEMSIZE[stype]} bytes)"
            )
    budget = crc_limit
    for member in ordered:
        if member is pkl or member.size > budget:
            continue
        budget -= member.size
        try:
            read_member(store, key, member, member.size)
        except ZipCorrupt as err:
            problems.append(str(err))
    return problems, len(entries)
