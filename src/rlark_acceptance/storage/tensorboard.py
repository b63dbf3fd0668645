"""Verify TensorBoard event files (4.5 / 6.5): well-formed TFRecord framing with CRC32C.

Each record: uint64 length, uint32 masked CRC32C of the length bytes, the data, uint32
masked CRC32C of the data. The first record of an event file is an Event carrying
``file_version: "brain.Event:2"``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from rlark_acceptance.storage.store import Store, StoreError, join_key

MAX_READ = 32 * 1024 * 1024  # larger files: the first MAX_READ bytes are checked


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord uses; pure Python is fast enough for event files."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_tfrecords(data: bytes, complete: bool = True) -> tuple[int, list[str]]:
    """Records found and problems in a TFRecord byte stream.

    ``complete=False`` (only a prefix was read): a record cut off at the end is not a problem.
    """
    pos, records = 0, 0
    while pos < len(data):
        if pos + 12 > len(data):
            return records, [
                f"truncated: {len(data) - pos} stray bytes after record {records}"
            ] * complete
        (length,) = struct.unpack_from("<Q", data, pos)
        (len_crc,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc32c(data[pos : pos + 8]) != len_crc:
            return records, [f"corrupt: record {records} at byte {pos}: length CRC mismatch"]
        end = pos + 12 + length + 4
        if end > len(data):
            if not complete:
                return records, []
            return records, [
                f"truncated: record {records} at byte {pos} needs {length} bytes, "
                f"object has {len(data) - pos - 12}"
            ]
        payload = data[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack_from("<I", data, pos + 12 + length)
        if masked_crc32c(payload) != data_crc:
            return records, [f"corrupt: record {records} at byte {pos}: data CRC mismatch"]
        if records == 0 and b"brain.Event:" not in payload:
            return records, ["not an event file: first record has no brain.Event file_version"]
        records += 1
        pos = end
    return records, []


@dataclass
class EventFilesReport:
    location: str
    files: dict[str, int] = field(default_factory=dict)  # key relative to prefix -> records
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.files) and not self.problems


def verify_event_files(store: Store, prefix: str) -> EventFilesReport:
    """Every ``*tfevents*`` object under ``prefix`` must be well-formed; at least one must exist."""
    prefix = join_key(prefix)
    report = EventFilesReport(location=f"{store.describe().rstrip('/')}/{prefix}".rstrip("/"))
    try:
        objects = store.list(prefix + "/" if prefix else "")
    except StoreError as e:
        report.problems.append(f"cannot list {prefix or '/'}: {e}")
        return report
    events = [o for o in objects if "tfevents" in o.key.rsplit("/", 1)[-1]]
    if not events:
        report.problems.append(f"{prefix or '/'}: no TensorBoard event files")
    for obj in events:
        rel = obj.key[len(prefix) + 1 :] if prefix else obj.key
        try:
            data = store.read(obj.key, 0, min(obj.size, MAX_READ))
        except StoreError as e:
            report.problems.append(f"{rel}: unreadable: {e.code}: {e.detail}")
            continue
        records, problems = check_tfrecords(data, complete=obj.size <= MAX_READ)
        report.files[rel] = records
        report.problems.extend(f"{rel}: {p}" for p in problems)
        if records == 0 and not problems:
            report.problems.append(f"{rel}: no records")
    return report
