"""``read_tensors``: a checkpoint's tensors read from raw storages, without torch.

On RLinf 0.3.0's own checkpoint (a torch zip and a DCP shard), on safetensors files
written here by the safetensors library (NaN, inf, bf16), on damaged copies, on a
directory and on the S3 test server; and in bounded memory on a 200 MB file.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import safetensors
from safetensors.numpy import save_file

from rlark_acceptance.storage import (
    FileStore,
    S3Store,
    compare_tensors,
    read_tensors,
)
from rlark_acceptance.storage.pickle_scan import scan_pickle
from tests.storage.uploads import upload

ACTOR = (
    Path(__file__).parents[1]
    / "fidelity/rlinf-0.3.0/mount/logs/ci-test/checkpoints/global_step_1/actor"
)
FULL = ACTOR / "model_state_dict/full_weights.pt"
DCP = ACTOR / "sac_components/alpha/dcp_checkpoint"


def save_bf16(path: Path, name: str, values: np.ndarray) -> None:
    """A BF16 tensor written by the safetensors library (numpy has no bfloat16: the bits
    are float32's upper half)."""
    bits = (values.astype("<f4").view("<u4") >> 16).astype("<u2")
    spec = safetensors.TensorSpec(
        dtype="bfloat16", shape=list(values.shape), data_ptr=bits.ctypes.data, data_len=bits.nbytes
    )
    safetensors.serialize_file({name: spec}, str(path), None)


def test_rlinf_torch_zip_tensors_as_stored() -> None:
    report = read_tensors(FileStore(ACTOR), "model_state_dict")
    (f,) = report.files
    assert (f.key, f.format, f.problems) == ("full_weights.pt", "torch-zip", [])
    with zipfile.ZipFile(FULL) as z:
        storages = {i.filename: z.read(i) for i in z.infolist() if "/data/" in i.filename}
    assert len(f.tensors) == len(storages) == 40
    assert f.nbytes == sum(map(len, storages.values()))
    assert f.elements == f.nbytes // 4 and {t.dtype for t in f.tensors} == {"F32"}
    # Every tensor here fills its storage: the digest is that of the member's bytes.
    assert sorted(t.sha256 for t in f.tensors) == sorted(
        hashlib.sha256(b).hexdigest() for b in storages.values()
    )
    weight = next(t for t in f.tensors if t.name == "q_head.qs.0.net.0.weight")
    assert (weight.shape, weight.elements) == ((256, 28), 7168)
    assert report.non_finite == 0 and report.ok


def test_rlinf_dcp_shard_tensors_with_and_without_metadata(tmp_path: Path) -> None:
    report = read_tensors(FileStore(DCP), "")
    (f,) = report.files
    assert f.problems == [] and f.format == "dcp"
    shard = (DCP / "__0_0.distcp").read_bytes()
    items = scan_pickle((DCP / ".metadata").read_bytes()).dcp_items()
    expected = {}
    for fqn, _, start, length in items:
        with zipfile.ZipFile(io.BytesIO(shard[start : start + length])) as z:
            data = [z.read(n) for n in z.namelist() if "/data/" in n]
        if data:  # the rest are pickled objects (optimizer settings, RNG states)
            expected[fqn] = hashlib.sha256(data[0]).hexdigest()
    assert {t.name: t.sha256 for t in f.tensors} == expected
    assert len(expected) == 5 and "fsdp_checkpoint.model.base_alpha" in expected
    assert {t.name: t.dtype for t in f.tensors}["fsdp_checkpoint.rng.cpu"] == "U8"
    assert f.non_finite == 0
    # Without .metadata: the archives are found by their headers, the same bytes read.
    shutil.copy(DCP / "__0_0.distcp", tmp_path)
    blind = read_tensors(FileStore(tmp_path), "", chunk_bytes=1024)
    assert blind.problems == [
        "__0_0.distcp: no .metadata next to the shard: archives found by headers"
    ]
    assert sorted(t.sha256 for t in blind.files[0].tensors) == sorted(expected.values())
    assert all(t.name.startswith("@") for t in blind.files[0].tensors)


def test_rlinf_checkpoint_totals() -> None:
    report = read_tensors(FileStore(ACTOR), "")
    assert [f.key for f in report.files] == [
        "model_state_dict/full_weights.pt",
        "sac_components/alpha/dcp_checkpoint/__0_0.distcp",
    ]
    assert report.tensors == 45 and report.problems == [] and report.non_finite == 0
    assert report.elements == sum(f.elements for f in report.files) > 400_000
    assert report.bytes_read >= report.nbytes


class CountingStore(FileStore):
    """A real directory store that counts the requests made of it (each is a round trip on
    S3)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.requests: list[tuple[str, int, int | None]] = []

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        self.requests.append((key, start, end))
        return super().read(key, start, end)


def test_a_small_file_is_fetched_once_however_many_reads_its_tensors_take() -> None:
    """RLinf's DCP shard is one torch.save archive per item, each read as headers, a pickle
    and a storage: one request per block of the file, not one per read."""
    store = CountingStore(ACTOR)
    report = read_tensors(store, "")
    assert report.ok and report.tensors == 45
    sizes = {p.relative_to(ACTOR).as_posix(): p.stat().st_size for p in ACTOR.rglob("*.*")}
    keys = [key for key, _, _ in store.requests]
    assert sorted(keys) == sorted(
        [
            "model_state_dict/full_weights.pt",
            "sac_components/alpha/dcp_checkpoint/.metadata",
            "sac_components/alpha/dcp_checkpoint/__0_0.distcp",
        ]
    ), store.requests
    weights = sum(n for k, n in sizes.items() if not k.endswith(".metadata"))
    assert report.bytes_read == weights  # each weight file whole, once
    # Files larger than a block are read a block at a time: the same tensors, more requests.
    small = CountingStore(ACTOR)
    again = read_tensors(small, "", chunk_bytes=64 * 1024)
    assert again.digest == report.digest and len(small.requests) > len(store.requests)


def test_files_excluded_are_neither_read_nor_counted_to_the_limit() -> None:
    dcp = "sac_components/alpha/dcp_checkpoint/__0_0.distcp"
    size = (ACTOR / dcp).stat().st_size
    full = (ACTOR / "model_state_dict/full_weights.pt").stat().st_size
    report = read_tensors(
        FileStore(ACTOR), "", max_bytes=full, exclude=lambda key: key.startswith("sac_")
    )
    assert [f.key for f in report.files] == ["model_state_dict/full_weights.pt"], report
    assert report.ok and report.tensors == 40 and report.bytes_read < full + size
    assert not read_tensors(FileStore(ACTOR), "", max_bytes=full).ok  # both count without


def test_non_finite_values_by_dtype(tmp_path: Path) -> None:
    bad = np.array([1.0, np.nan, np.inf, -np.inf, -np.inf, 0.0], dtype=np.float32)
    save_file(
        {
            "f32": bad.reshape(2, 3),
            "f16": bad.astype(np.float16),
            "f64": np.array([np.nan, np.nan, 1.0]),
            "i64": np.arange(7, dtype=np.int64),
            "ok": np.linspace(0, 1, 1000, dtype=np.float32),
        },
        tmp_path / "model.safetensors",
    )
    save_bf16(tmp_path / "bf16.safetensors", "b", np.array([1.0, -np.inf, np.nan, 2.5, np.inf]))
    report = read_tensors(FileStore(tmp_path), "", chunk_bytes=16)  # chunks of a few elements
    assert report.problems == []
    got = {k: (t.dtype, t.nan, t.posinf, t.neginf) for k, t in report.by_name().items()}
    assert got == {
        "bf16.safetensors:b": ("BF16", 1, 1, 1),
        "model.safetensors:f16": ("F16", 1, 1, 2),
        "model.safetensors:f32": ("F32", 1, 1, 2),
        "model.safetensors:f64": ("F64", 2, 0, 0),
        "model.safetensors:i64": ("I64", 0, 0, 0),
        "model.safetensors:ok": ("F32", 0, 0, 0),
    }
    assert sorted(report.non_finite_tensors()) == [
        "bf16.safetensors:b",
        "model.safetensors:f16",
        "model.safetensors:f32",
        "model.safetensors:f64",
    ]
    f32 = report.by_name()["model.safetensors:f32"]
    assert (f32.shape, f32.elements, f32.nbytes) == ((2, 3), 6, 24)
    assert f32.sha256 == hashlib.sha256(bad.tobytes()).hexdigest()
    assert report.non_finite == 3 + 4 + 4 + 2


def test_identical_and_changed_weights(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    w: dict[str, np.ndarray] = {
        "a.weight": rng.standard_normal((64, 32), dtype=np.float32),
        "a.bias": np.zeros(32),
    }
    for step in ("global_step_1", "global_step_2", "global_step_3"):
        (tmp_path / step).mkdir()
    save_file(w, tmp_path / "global_step_1/model.safetensors")
    # Written again in another order: the same weights, the same digest.
    save_file(dict(reversed(w.items())), tmp_path / "global_step_2/model.safetensors")
    changed = {**w, "a.weight": w["a.weight"].copy(), "extra": np.ones(2)}
    changed["a.weight"][3, 4] += 1e-3
    save_file(changed, tmp_path / "global_step_3/model.safetensors")
    store = FileStore(tmp_path)
    one, two, three = (read_tensors(store, f"global_step_{n}") for n in (1, 2, 3))
    assert one.digest == two.digest != three.digest
    same = compare_tensors(one, two)
    assert same.identical and same.changed == same.added == same.removed == []
    diff = compare_tensors(one, three)
    assert not diff.identical
    assert diff.changed == ["model.safetensors:a.weight"]
    assert diff.added == ["model.safetensors:extra"] and diff.removed == []
    assert compare_tensors(three, one).removed == ["model.safetensors:extra"]


def test_damaged_files_are_problems_not_exceptions(tmp_path: Path) -> None:
    save_file({"w": np.ones(1000, dtype=np.float32)}, tmp_path / "cut.safetensors")
    data = (tmp_path / "cut.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-100])
    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 64)
    (tmp_path / "cut.pt").write_bytes(FULL.read_bytes()[: FULL.stat().st_size // 2])
    (tmp_path / "junk.distcp").write_bytes(b"PK\x05\x06" + bytes(200))
    dcp = tmp_path / "dcp"
    dcp.mkdir()
    shutil.copy(DCP / ".metadata", dcp)
    (dcp / "__0_0.distcp").write_bytes((DCP / "__0_0.distcp").read_bytes()[:40000])
    report = read_tensors(FileStore(tmp_path), "")
    by_file = {f.key: f.problems for f in report.files}
    assert by_file["cut.safetensors"] == ["truncated: header says 4000 data bytes, object has 3900"]
    assert by_file["junk.safetensors"][0].startswith("corrupt: header length")
    assert by_file["cut.pt"][0].startswith("truncated or not a zip archive")
    assert by_file["junk.distcp"][-1] == "no torch.save archive found in the shard"
    assert "fsdp_checkpoint.optimizers.state.base_alpha.exp_avg: truncated" in " ".join(
        by_file["dcp/__0_0.distcp"]
    )
    # What lies before the cut is still read.
    assert "fsdp_checkpoint.model.base_alpha" in {t.name for f in report.files for t in f.tensors}
    assert not report.ok and len(report.problems) >= 5


def test_a_torch_storage_shorter_than_its_tensor(tmp_path: Path) -> None:
    # Same length, one storage member's size field and CRC left, its bytes cut from the
    # data.pkl's point of view: rewrite the view's shape so it needs more than it has.
    with zipfile.ZipFile(FULL) as z:
        pkl = z.read("full_weights/data.pkl")
    longer = pkl.replace(b"M\x00\x01K\x1c\x86", b"M\x00\x02K\x1c\x86", 1)  # (256, 28) -> (512, 28)
    assert longer != pkl and len(longer) == len(pkl)
    with zipfile.ZipFile(FULL) as src, zipfile.ZipFile(tmp_path / "w.pt", "w") as dst:
        for info in src.infolist():
            dst.writestr(info, longer if info.filename.endswith("data.pkl") else src.read(info))
    report = read_tensors(FileStore(tmp_path), "")
    assert report.problems == [
        "w.pt: q_head.qs.0.net.0.weight: view of 14336 elements at 0 overruns its storage "
        "of 7168 F32 elements"
    ]
    assert report.tensors == 39


def test_size_limit(tmp_path: Path) -> None:
    save_file({"w": np.ones(1000, dtype=np.float32)}, tmp_path / "m.safetensors")
    size = (tmp_path / "m.safetensors").stat().st_size
    report = read_tensors(FileStore(tmp_path), "", max_bytes=size - 1)
    assert report.problems == [
        f"/: 1 weight files of {size} bytes, over the limit of {size - 1} bytes: tensors not read"
    ]
    assert report.files == [] and report.bytes_read == 0
    assert read_tensors(FileStore(tmp_path), "", max_bytes=size).ok
    assert read_tensors(FileStore(tmp_path), "none").problems == [
        "none: no weight files (*.safetensors, *.pt, *.distcp)"
    ]


def test_bounded_memory_on_a_200_mb_file(tmp_path: Path) -> None:
    weights = np.ones(50 * 1024 * 1024, dtype=np.float32)  # 200 MiB
    weights[-1] = np.nan
    save_file({"big": weights}, tmp_path / "big.safetensors")
    del weights
    size = (tmp_path / "big.safetensors").stat().st_size
    tracemalloc.start()
    try:
        report = read_tensors(FileStore(tmp_path), "", chunk_bytes=4 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.problems == [] and report.by_name()["big.safetensors:big"].nan == 1
    assert report.nbytes == 200 * 1024 * 1024
    assert peak < size / 10, f"peak {peak} bytes of Python allocations for a {size}-byte file"


@pytest.mark.cluster
def test_tensors_from_s3_match_the_directory(s3_store: S3Store, tmp_path: Path) -> None:
    ckpt = tmp_path / "global_step_1" / "actor"
    shutil.copytree(ACTOR, ckpt)
    bad = np.array([np.nan, 1.0, np.inf], dtype=np.float32)
    save_file({"x": bad}, ckpt / "extra.safetensors")
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "full_weights.pt").write_bytes(FULL.read_bytes()[:-30])
    upload(s3_store, tmp_path)
    remote = read_tensors(s3_store, "global_step_1/actor", chunk_bytes=64 * 1024)
    local = read_tensors(FileStore(tmp_path), "global_step_1/actor")
    assert remote.problems == [] and remote.tensors == 45 + 1
    assert remote.digest == local.digest and compare_tensors(local, remote).identical
    assert remote.non_finite_tensors().keys() == {"extra.safetensors:x"}
    cut = read_tensors(s3_store, "cut")
    assert len(cut.problems) == 1 and cut.problems[0].startswith("full_weights.pt: ")
    assert struct.unpack("<Q", s3_store.read("global_step_1/actor/extra.safetensors", 0, 8))
