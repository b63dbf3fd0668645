"""Structural check of a ``.safetensors`` object from its header alone (two ranged reads).

Layout: 8-byte little-endian header length N, N bytes of JSON, then the tensor data.
The file is complete only if its size is exactly ``8 + N + end of the last tensor``.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from rlark_acceptance.storage.store import Store

# Header cap of the safetensors format itself (100 MB): larger means corrupt.
MAX_HEADER = 100 * 1000 * 1000

# Bits per element; sub-byte float types exist since safetensors 0.6.
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}


def check_safetensors(store: Store, key: str, size: int) -> tuple[list[str], int]:
    """Problems found (without the key) and the number of tensors in the header."""
    if size < 8:
        return [f"truncated: {size} bytes, a safetensors file has at least 8"], 0
    (n,) = struct.unpack("<Q", store.read(key, 0, 8))
    if n > MAX_HEADER:
        return [f"corrupt: header length {n} is not plausible"], 0
    if 8 + n > size:
        return [f"truncated: header says {n} header bytes, object has {size - 8}"], 0
    try:
        header = json.loads(store.read(key, 8, 8 + n).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return [f"corrupt: header is not JSON ({e})"], 0
    if not isinstance(header, dict):
        return ["corrupt: header is not a JSON object"], 0
    problems, spans = _tensor_spans(header)
    if problems:
        return problems, len(spans)
    if not spans:
        return ["no tensors in the header"], 0
    # Offsets must tile the data area without holes or overlaps, as the format requires.
    spans.sort()
    expect = 0
    for begin, end, name in spans:
        if begin != expect:
            what = "overlaps the previous tensor" if begin < expect else "leaves a gap"
            return [f"corrupt: tensor {name!r} starts at {begin}, {what} (expected {expect})"], 0
        expect = end
    data_size = size - 8 - n
    if expect > data_size:
        return [f"truncated: header says {expect} data bytes, object has {data_size}"], len(spans)
    if expect < data_size:
        return [f"corrupt: {data_size - expect} bytes after the last tensor"], len(spans)
    return [], len(spans)


def _tensor_spans(header: dict[str, Any]) -> tuple[list[str], list[tuple[int, int, str]]]:
    problems: list[str] = []
    spans: list[tuple[int, int, str]] = []
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                problems.append("corrupt: __metadata__ is not a map of strings")
            continue
        if not isinstance(info, dict):
            problems.append(f"corrupt: tensor {name!r} has no descriptor")
            continue
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            problems.append(f"corrupt: tensor {name!r} has unknown dtype {dtype!r}")
            continue
        if not (isinstance(shape, list) and all(_nonneg_int(d) for d in shape)):
            problems.append(f"corrupt: tensor {name!r} has invalid shape {shape!r}")
            continue
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(_nonneg_int(o) for o in offsets)
            and offsets[0] <= offsets[1]
        ):
            problems.append(f"corrupt: tensor {name!r} has invalid data_offsets {offsets!r}")
            continue
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8 or bits // 8 != offsets[1] - offsets[0]:
            problems.append(
                f"corrupt: tensor {name!r} is {dtype}{shape} ({bits / 8:g} bytes) "
                f"but data_offsets span {offsets[1] - offsets[0]} bytes"
            )
            continue
        spans.append((offsets[0], offsets[1], name))
    return problems, spans


def _nonneg_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0
