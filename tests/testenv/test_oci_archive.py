"""testenv's OCI archive writer: every blob is named by its content and the config lists the
layers' diff_ids in order (what ``ctr images import`` checks)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

from testenv import image


def _layer(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _read(archive: Path) -> tuple[dict[str, bytes], dict, dict]:
    with tarfile.open(archive) as tf:
        blobs = {}
        for m in tf.getmembers():
            fh = tf.extractfile(m)
            assert fh is not None
            blobs[m.name] = fh.read()
    index = json.loads(blobs["index.json"])
    manifest = json.loads(blobs[f"blobs/sha256/{index['manifests'][0]['digest'][7:]}"])
    config = json.loads(blobs[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    return blobs, manifest, config


def test_a_one_layer_image_is_gzipped_and_a_big_one_streamed_uncompressed(tmp_path: Path) -> None:
    small = _layer(tmp_path / "small.tar", {"etc/os": b"debian\n"})
    one = tmp_path / "one.tar"
    image.write_oci_archive(one, "registry.test/one:1", small, {"Env": ["PATH=/bin"]})
    blobs, manifest, cfg = _read(one)
    (desc,) = manifest["layers"]
    assert desc["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
    gz = blobs[f"blobs/sha256/{desc['digest'][7:]}"]
    assert gzip.decompress(gz) == small.read_bytes()
    assert cfg["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(small.read_bytes()).hexdigest()]

    top = _layer(tmp_path / "top.tar", {"opt/env/bin/python": b"#!\n"})
    two = tmp_path / "two.tar"
    layers = [image.file_layer(small), image.file_layer(top)]
    image.write_oci_layers(two, "registry.test/two:2", layers, {"Env": ["PATH=/opt/env/bin"]})
    blobs, manifest, cfg = _read(two)
    index = json.loads(blobs["index.json"])
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == "registry.test/two:2"
    assert cfg["config"] == {"Env": ["PATH=/opt/env/bin"]}
    descs = manifest["layers"]
    assert [d["mediaType"] for d in descs] == ["application/vnd.oci.image.layer.v1.tar"] * 2
    for desc, raw in zip(descs, (small, top), strict=True):
        data = blobs[f"blobs/sha256/{desc['digest'][7:]}"]
        assert data == raw.read_bytes()
        assert hashlib.sha256(data).hexdigest() == desc["digest"][7:]
        assert len(data) == desc["size"]
    assert cfg["rootfs"]["diff_ids"] == [d["digest"] for d in descs]
