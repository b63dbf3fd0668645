"""Checkpoint and event-file readers (6.5) against files built here, through ``FileStore``.

Over ~400 lines: each format (safetensors, torch zip, DCP, TensorBoard) is built byte by byte
here with its corruptions, beside the reader's verdict on it.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import zipfile
from pathlib import Path

import pytest

from rlark_acceptance.storage import (
    FileStore,
    ObjectInfo,
    ObjectNotFound,
    StoreError,
    verify_checkpoints,
    written_since,
)
from rlark_acceptance.storage.pickle_scan import PickleScanError, scan_pickle
from rlark_acceptance.storage.tensorboard import (
    check_tfrecords,
    crc32c,
    masked_crc32c,
    verify_event_files,
)

CKPT = "logs/exp/checkpoints"
WEIGHTS = "actor/model_state_dict/full_weights.safetensors"


# --- builders ---------------------------------------------------------------------------


def safetensors_bytes(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """A safetensors file written by hand from the spec (so the reader is tested, not a lib)."""
    header: dict[str, object] = {"__metadata__": {"format": "np"}}
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)  # the format pads the header to 8 bytes with spaces
    return struct.pack("<Q", len(blob)) + blob + data


GOOD = safetensors_bytes(
    {"w": ("F32", [2, 3], bytes(24)), "b": ("F32", [3], bytes(12)), "step": ("I64", [1], bytes(8))}
)


def put(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def step_file(root: Path, step: int, rel: str = WEIGHTS, data: bytes = GOOD) -> Path:
    return put(root, f"{CKPT}/global_step_{step}/{rel}", data)


class FloatStorage:
    """Pickled by reference only (``GLOBAL 'test_checkpoint FloatStorage'``), as torch's is."""


class _TorchLikePickler(pickle.Pickler):
    """Emits torch's persistent ids ``('storage', type, key, location, numel)`` for arrays."""

    def persistent_id(self, obj: object) -> object:
        if isinstance(obj, _Storage):
            return ("storage", FloatStorage, obj.key, "cpu", obj.numel)
        return None


class _Storage:
    def __init__(self, key: str, numel: int) -> None:
        self.key, self.numel = key, numel


def torch_zip(
    storages: dict[str, bytes] | None = None,
    numel: dict[str, int] | None = None,
    plain: bool = False,
    with_pkl: bool = True,
) -> bytes:
    """A torch-shaped zip: ``archive/data.pkl`` plus ``archive/data/<key>`` members (stored)."""
    storages = {"0": bytes(range(16))} if storages is None else storages
    if plain:
        pkl = pickle.dumps({"weight": [1.0, 2.0], "step": 3})
    else:
        buf = io.BytesIO()
        refs = {k: _Storage(k, (numel or {}).get(k, len(v) // 4)) for k, v in storages.items()}
        _TorchLikePickler(buf, protocol=2).dump({"state_dict": refs})
        pkl = buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        if with_pkl:
            zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", b"little")
        for key, raw in storages.items():
            zf.writestr(f"archive/data/{key}", raw)
        zf.writestr("archive/version", b"3\n")
    return out.getvalue()


def to_zip64_eocd(blob: bytes) -> bytes:
    """Rewrite the end records the way a zip64 writer does: zip64 record + locator + EOCD."""
    at = blob.rfind(b"PK\x05\x06")
    _, _, _, n_disk, n, cd_size, cd_off, _ = struct.unpack_from("<4sHHHHIIH", blob, at)
    rec = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, n_disk, n, cd_size, cd_off)
    loc = struct.pack("<4sIQI", b"PK\x06\x07", 0, at, 1)
    eocd = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return blob[:at] + rec + loc + eocd


def tfrecord(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return (
        length
        + struct.pack("<I", masked_crc32c(length))
        + payload
        + struct.pack("<I", masked_crc32c(payload))
    )


# --- FileStore ---------------------------------------------------------------------------


def test_filestore_lists_recursively_with_prefix_and_reads_ranges(tmp_path: Path) -> None:
    put(tmp_path, "a/b/c.bin", b"0123456789")
    put(tmp_path, "a/bx.bin", b"x")
    put(tmp_path, "z.bin", b"")
    store = FileStore(tmp_path)
    assert [o.key for o in store.list("a/b")] == ["a/b/c.bin", "a/bx.bin"]  # S3-style prefix
    assert [o.key for o in store.list("a/b/")] == ["a/b/c.bin"]
    assert [(o.key, o.size) for o in store.list("")][-1] == ("z.bin", 0)
    assert store.list("missing/") == []
    assert store.read("a/b/c.bin", 2, 5) == b"234"
    assert store.read("a/b/c.bin", 8) == b"89"
    with pytest.raises(ObjectNotFound) as e:
        store.read("a/nope")
    assert e.value.code == "NoSuchKey"
    with pytest.raises(StoreError):
        store.read("../outside")


# --- safetensors -------------------------------------------------------------------------


def test_good_checkpoint_lists_steps_and_checks_newest(tmp_path: Path) -> None:
    for step in (2, 4, 10):
        step_file(tmp_path, step)
    step_file(tmp_path, 10, "actor/optim_state_dict/optim.safetensors")
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok, report.problems
    assert report.steps == [2, 4, 10]  # numeric order, not string order
    assert report.latest_step == 10
    assert report.checked_steps == [10]
    assert report.files_checked == [
        "global_step_10/actor/model_state_dict/full_weights.safetensors",
        "global_step_10/actor/optim_state_dict/optim.safetensors",
    ]
    assert report.formats == ["safetensors"]
    assert report.location == f"{FileStore(tmp_path).describe()}/{CKPT}"
    assert "global_step_10 intact" in report.summary()


def test_library_written_safetensors_pass(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    st = pytest.importorskip("safetensors.numpy")
    data = st.save({"a": np.ones((3, 5), np.float32), "b": np.arange(7, dtype=np.int64)})
    step_file(tmp_path, 1, data=data)
    assert verify_checkpoints(FileStore(tmp_path), CKPT).ok


def test_truncated_safetensors_names_file_and_sizes(tmp_path: Path) -> None:
    step_file(tmp_path, 4, data=GOOD[:-10])
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert not report.ok
    header_len = struct.unpack("<Q", GOOD[:8])[0]
    assert report.problems == [
        f"global_step_4/{WEIGHTS}: truncated: header says 44 data bytes, "
        f"object has {len(GOOD) - 10 - 8 - header_len}"
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (GOOD[:5], "truncated: 5 bytes"),
        (GOOD[:40], "truncated: header says"),
        (struct.pack("<Q", 2**40) + b"{}", "corrupt: header length"),
        (struct.pack("<Q", 4) + b"nope", "corrupt: header is not JSON"),
        (struct.pack("<Q", 2) + b"[]", "corrupt: header is not a JSON object"),
        (GOOD + b"extra", "corrupt: 5 bytes after the last tensor"),
        (safetensors_bytes({}), "no tensors in the header"),
        (safetensors_bytes({"x": ("Q9", [1], bytes(4))}), "unknown dtype 'Q9'"),
        (safetensors_bytes({"x": ("F32", [2], bytes(4))}), "but data_offsets span 4 bytes"),
        (safetensors_bytes({"x": ("F32", [-1], bytes(4))}), "invalid shape"),
    ],
)
def test_corrupt_safetensors(tmp_path: Path, data: bytes, expected: str) -> None:
    step_file(tmp_path, 1, data=data)
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert not report.ok
    assert len(report.problems) == 1, report.problems
    assert report.problems[0].startswith(f"global_step_1/{WEIGHTS}: ")
    assert expected in report.problems[0]


def test_safetensors_offsets_with_gap_or_overlap(tmp_path: Path) -> None:
    header = {
        "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
        "b": {"dtype": "U8", "shape": [4], "data_offsets": [6, 10]},
    }
    blob = json.dumps(header).encode()
    step_file(tmp_path, 1, data=struct.pack("<Q", len(blob)) + blob + bytes(10))
    header["b"]["data_offsets"] = [2, 6]
    blob = json.dumps(header).encode()
    step_file(tmp_path, 2, data=struct.pack("<Q", len(blob)) + blob + bytes(6))
    report = verify_checkpoints(FileStore(tmp_path), CKPT, all_steps=True)
    assert "leaves a gap" in report.problems[0]
    assert "overlaps the previous tensor" in report.problems[1]


def test_sharded_safetensors_index_names_missing_shard(tmp_path: Path) -> None:
    step_file(tmp_path, 1, "actor/hf/model-00001-of-00002.safetensors")
    index = {
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        }
    }
    step_file(tmp_path, 1, "actor/hf/model.safetensors.index.json", json.dumps(index).encode())
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.problems == [
        "global_step_1/actor/hf/model.safetensors.index.json: "
        "names shard model-00002-of-00002.safetensors which is missing"
    ]


# --- layout ------------------------------------------------------------------------------


def test_missing_and_empty_checkpoint_dirs(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    assert verify_checkpoints(store, CKPT).problems == [
        f"{CKPT}: no checkpoints (empty or missing)"
    ]
    (tmp_path / CKPT).mkdir(parents=True)
    assert verify_checkpoints(store, CKPT).problems == [
        f"{CKPT}: no checkpoints (empty or missing)"
    ]
    put(tmp_path, f"{CKPT}/notes.txt", b"x")
    assert verify_checkpoints(store, CKPT).problems == [f"{CKPT}: no global_step_N directories"]


def test_step_without_actor_or_weights(tmp_path: Path) -> None:
    step_file(tmp_path, 3, "critic/x.safetensors")
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.problems == ["global_step_3: no actor/ directory"]
    step_file(tmp_path, 5, "actor/README.txt", b"hello")
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.latest_step == 5
    assert report.problems == [
        "global_step_5/actor: no recognisable weights "
        "(*.safetensors, torch .pt archive or dcp_checkpoint/)"
    ]


def test_only_newest_step_checked_unless_all_steps(tmp_path: Path) -> None:
    step_file(tmp_path, 1, data=b"garbage!garbage!")
    step_file(tmp_path, 2)
    store = FileStore(tmp_path)
    assert verify_checkpoints(store, CKPT).ok
    report = verify_checkpoints(store, CKPT, all_steps=True)
    assert report.checked_steps == [1, 2]
    assert len(report.problems) == 1 and report.problems[0].startswith("global_step_1/")


def test_in_flight_temp_files_are_ignored(tmp_path: Path) -> None:
    step_file(tmp_path, 2)
    step_file(tmp_path, 2, "actor/model_state_dict/.full_weights.safetensors.ab12.tmp", b"half")
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok and len(report.files_checked) == 1


def test_prefix_given_with_slashes_or_at_root(tmp_path: Path) -> None:
    step_file(tmp_path, 7)
    assert verify_checkpoints(FileStore(tmp_path), f"/{CKPT}/").ok
    assert verify_checkpoints(FileStore(tmp_path / CKPT), "").ok


# --- torch zip archives ------------------------------------------------------------------

PT = "actor/model_state_dict/full_weights.pt"


def test_torch_zip_with_plain_pickle_passes(tmp_path: Path) -> None:
    step_file(tmp_path, 1, PT, torch_zip(plain=True))
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok, report.problems
    assert report.formats == ["torch-zip"]


def test_torch_zip_with_storage_references_passes_and_checks_sizes(tmp_path: Path) -> None:
    step_file(tmp_path, 1, PT, torch_zip({"0": bytes(16), "1": bytes(8)}))
    assert verify_checkpoints(FileStore(tmp_path), CKPT).ok
    step_file(tmp_path, 2, PT, torch_zip({"0": bytes(16)}, numel={"0": 5}))
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.problems == [
        f"global_step_2/{PT}: archive/data/0: 16 bytes, data.pkl says 5 x FloatStorage (20 bytes)"
    ]


def test_torch_zip_with_zip64_end_records_passes(tmp_path: Path) -> None:
    step_file(tmp_path, 1, PT, to_zip64_eocd(torch_zip()))
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok, report.problems


def test_truncated_torch_zip(tmp_path: Path) -> None:
    blob = torch_zip({"0": bytes(4096)})
    step_file(tmp_path, 1, PT, blob[: len(blob) // 2])
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"global_step_1/{PT}: truncated or not a zip archive")


def test_torch_zip_missing_storage_member(tmp_path: Path) -> None:
    blob = torch_zip({"0": bytes(16)})
    # Same archive without the data/0 member: the pickle still references it.
    src = zipfile.ZipFile(io.BytesIO(blob))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in src.infolist():
            if info.filename != "archive/data/0":
                zf.writestr(info, src.read(info))
    step_file(tmp_path, 1, PT, out.getvalue())
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.problems == [
        f"global_step_1/{PT}: data.pkl references storage '0' but archive/data/0 is missing"
    ]


def test_torch_zip_corrupt_member_fails_crc(tmp_path: Path) -> None:
    payload = b"\x11" * 64
    blob = bytearray(torch_zip({"0": payload}))
    at = blob.find(payload)
    blob[at + 10] ^= 0xFF
    step_file(tmp_path, 1, PT, bytes(blob))
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.problems == [
        f"global_step_1/{PT}: corrupt: archive/data/0 fails its CRC-32 check"
    ]


def test_zip_without_data_pkl_and_non_zip(tmp_path: Path) -> None:
    step_file(tmp_path, 1, PT, torch_zip(with_pkl=False))
    step_file(tmp_path, 2, PT, pickle.dumps({"legacy": "not a zip"}))
    report = verify_checkpoints(FileStore(tmp_path), CKPT, all_steps=True)
    assert (
        report.problems[0]
        == f"global_step_1/{PT}: not a torch archive: no <archive>/data.pkl entry"
    )
    assert report.problems[1].startswith(f"global_step_2/{PT}: truncated or not a zip archive")


def test_zip_with_malformed_data_pkl(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x01")  # cut mid-opcode, no STOP
    step_file(tmp_path, 1, PT, out.getvalue())
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"global_step_1/{PT}: archive/data.pkl: malformed pickle")


# --- pickle scanning never executes ------------------------------------------------------


class _Evil:
    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.target,))


def test_scan_pickle_does_not_execute(tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    summary = scan_pickle(pickle.dumps({"x": _Evil(str(target))}, protocol=4))
    assert not target.exists()
    assert any(g.endswith(".mkdir") for g in summary.globals)
    with pytest.raises(PickleScanError):
        scan_pickle(b"\x80\x04garbage")


# Protocol 0 writes persistent ids as text (PERSID); torch pickles with protocol 2.
@pytest.mark.parametrize("protocol", range(1, pickle.HIGHEST_PROTOCOL + 1))
def test_scan_pickle_reads_persistent_ids_in_every_protocol(protocol: int) -> None:
    buf = io.BytesIO()
    refs = [_Storage("0", 4), _Storage("1", 2), _Storage("0", 4)]
    _TorchLikePickler(buf, protocol=protocol).dump({"a": refs, "b": (1, "s")})
    storages = scan_pickle(buf.getvalue()).storages()
    assert [(k, n) for k, _, n in storages] == [("0", 4), ("1", 2), ("0", 4)]
    assert {t for _, t, _ in storages} == {"FloatStorage"}


# --- DCP ---------------------------------------------------------------------------------

DCP = "actor/dcp_checkpoint"


def test_dcp_checkpoint_good_and_broken(tmp_path: Path) -> None:
    step_file(tmp_path, 1, f"{DCP}/.metadata", pickle.dumps({"state_dict_metadata": {}}))
    step_file(tmp_path, 1, f"{DCP}/__0_0.distcp", b"\x00" * 32)
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok, report.problems
    assert report.formats == ["dcp"]
    assert f"global_step_1/{DCP}/.metadata" in report.files_checked

    step_file(tmp_path, 2, f"{DCP}/__0_0.distcp", b"\x00" * 32)  # no .metadata
    step_file(tmp_path, 3, f"{DCP}/.metadata", b"")  # empty metadata, no shard
    step_file(tmp_path, 4, f"{DCP}/.metadata", b"\x80\x04\x95bad")
    step_file(tmp_path, 4, f"{DCP}/__0_0.distcp", b"")
    report = verify_checkpoints(FileStore(tmp_path), CKPT, all_steps=True)
    assert (
        report.problems[0] == f"global_step_2/{DCP}: no .metadata file (DCP checkpoint incomplete)"
    )
    assert report.problems[1] == f"global_step_3/{DCP}/.metadata: empty"
    assert report.problems[2] == f"global_step_3/{DCP}: no *.distcp shard"
    assert report.problems[3].startswith(f"global_step_4/{DCP}/.metadata: corrupt: ")
    assert report.problems[4] == f"global_step_4/{DCP}/__0_0.distcp: empty shard"


def test_mixed_formats_in_one_step(tmp_path: Path) -> None:
    step_file(tmp_path, 9, PT, torch_zip())
    step_file(tmp_path, 9, f"{DCP}/.metadata", pickle.dumps({}))
    step_file(tmp_path, 9, f"{DCP}/__0_0.distcp", b"x")
    report = verify_checkpoints(FileStore(tmp_path), CKPT)
    assert report.ok, report.problems
    assert report.formats == ["dcp", "torch-zip"]


# --- TensorBoard event files -------------------------------------------------------------


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_tfrecord_framing(tmp_path: Path) -> None:
    good = tfrecord(b"\x09\x00\x00\x00\x00\x00\x00\x00\x00\x1a\x0dbrain.Event:2") + tfrecord(
        b"x" * 50
    )
    assert check_tfrecords(good) == (2, [])
    assert check_tfrecords(good[:-5])[1][0].startswith("truncated: record 1")
    assert check_tfrecords(good[:-5], complete=False) == (1, [])
    bad = bytearray(good)
    bad[-10] ^= 1
    assert "data CRC mismatch" in check_tfrecords(bytes(bad))[1][0]
    assert "length CRC mismatch" in check_tfrecords(b"\x01" * 16)[1][0]
    assert "not an event file" in check_tfrecords(tfrecord(b"hello"))[1][0]

    put(tmp_path, "logs/tensorboard/events.out.tfevents.1.host", good)
    store = FileStore(tmp_path)
    report = verify_event_files(store, "logs/tensorboard")
    assert report.ok and report.files == {"events.out.tfevents.1.host": 2}
    put(tmp_path, "logs/tensorboard/sub/events.out.tfevents.2.host", good[:-3])
    report = verify_event_files(store, "logs/tensorboard")
    assert report.problems[0].startswith("sub/events.out.tfevents.2.host: truncated")
    assert verify_event_files(store, "logs/none").problems == [
        "logs/none: no TensorBoard event files"
    ]


def test_tensorboardx_written_events_pass(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    writer = tbx.SummaryWriter(log_dir=str(tmp_path / "tb"))
    for i in range(3):
        writer.add_scalar("loss", 1.0 / (i + 1), i)
    writer.close()
    report = verify_event_files(FileStore(tmp_path), "tb")
    assert report.ok, report.problems
    assert sum(report.files.values()) >= 4


def test_filestore_delete_removes_the_files_and_the_folders_left_empty(tmp_path: Path) -> None:
    for rel in ("run/a/1.bin", "run/a/2.bin", "run/b/1.bin", "other/keep.bin"):
        put(tmp_path, rel, b"x")
    store = FileStore(tmp_path)
    store.delete(["run/a/1.bin", "run/b/1.bin", "run/never.bin"])
    assert [o.key for o in store.list()] == ["other/keep.bin", "run/a/2.bin"]
    assert not (tmp_path / "run" / "b").exists() and tmp_path.is_dir()
    with pytest.raises(StoreError):
        store.delete(["../outside"])


def test_written_since_is_what_the_snapshot_did_not_hold_as_it_is_now() -> None:
    before = {"a": (1, 10.0), "b": (2, 10.0), "c": (3, None)}
    now = [
        ObjectInfo("a", 1, 10.0),  # as it was
        ObjectInfo("b", 2, 11.0),  # written again, same size
        ObjectInfo("c", 4, None),  # grew
        ObjectInfo("d", 5, 12.0),  # new
    ]
    assert [o.key for o in written_since(now, before)] == ["b", "c", "d"]
    assert [o.key for o in written_since(now, None)] == ["a", "b", "c", "d"]
    assert written_since(now[:1], before) == []
