"""OCI images for the real node, built from the package registries: no container registry.

* The Worker image (``WORKER_IMAGE``): a Debian root filesystem by ``mmdebstrap`` (minbase +
  Python), a virtualenv in ``/opt/worker`` holding the project's smoke workload and Ray
  (wheels from PyPI through pip's own cache), packed as an OCI image archive by the small
  writer below. Its ENTRYPOINT refuses to run, loudly: RLark replaces it with the role's
  scripts (as the page warns), so a Worker that reaches it is a platform bug.
* The sandbox image (``PAUSE_IMAGE``): the ``pause`` binary built by ``build.py``.

Both are cached by content under the testenv cache (``image-<name>-<hash>/image.tar``):
the hash covers every input (Debian suite and packages, the Python requirements, the
project's sources), so an unchanged tree imports the cached archive and builds nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path
from typing import Any

from testenv import build, versions
from testenv.paths import REPO_ROOT, cache_root, dir_lock

# Bump when the recipe below changes, so cached archives are not reused.
REVISION = 1

DEBIAN_PACKAGES = ("python3", "python3-venv", "procps")
# What the Worker runs: the smoke workload's own imports and Ray (the `local` extra).
WORKER_REQUIREMENTS = ("hydra-core", "omegaconf", "PyYAML")
VENV = "/opt/worker"
PATH = f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def project_version() -> str:
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    return str(data["project"]["version"])


WORKER_IMAGE = f"{versions.WORKER_IMAGE_REPO}:{project_version()}"
PAUSE_IMAGE = "registry.rlark.test/pause:1.0"


def _requirements() -> list[str]:
    """Pinned ranges from pyproject.toml: the smoke workload's own and the `local` extra."""
    data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = {n.lower() for n in WORKER_REQUIREMENTS}
    base = [d for d in data["dependencies"] if _name(d) in wanted]
    return base + list(data["optional-dependencies"]["local"])


def _name(req: str) -> str:
    for i, ch in enumerate(req):
        if not (ch.isalnum() or ch in "-_."):
            return req[:i].lower()
    return req.lower()


def worker_key() -> str:
    h = hashlib.sha256()
    h.update(json.dumps([REVISION, versions.WORKER_IMAGE_SUITE, DEBIAN_PACKAGES]).encode())
    h.update(json.dumps(_requirements()).encode())
    h.update((REPO_ROOT / "pyproject.toml").read_bytes())
    # What the Worker runs of the project: the smoke workload (the rest of the package is
    # in the image too, but never imported there, so its changes do not rebuild it).
    src = REPO_ROOT / "src"
    pkg = src / "rlark_acceptance"
    for path in sorted([pkg / "__init__.py", *(pkg / "smoke").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            h.update(str(path.relative_to(src)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _run(argv: list[str], log: Path, cwd: Path | None = None) -> None:
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n")
        fh.flush()
        res = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd)
    if res.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-25:])
        raise build.BuildError(f"{argv[0]} failed (exit {res.returncode}); see {log}\n{tail}")


# --- a minimal OCI image-layout writer ---------------------------------------------------
def _blob(out: tarfile.TarFile, data: bytes) -> tuple[str, int]:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    out.addfile(info, io.BytesIO(data))
    return f"sha256:{digest}", len(data)


def write_oci_archive(
    dest: Path, ref: str, layer_tar: Path, config: dict[str, Any], compress: bool = True
) -> None:
    """One-layer OCI image layout as a tar, named ``ref`` for ``ctr images import``."""
    raw = layer_tar.read_bytes()
    diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    layer = gzip.compress(raw, compresslevel=1, mtime=0) if compress else raw
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if compress else "")
    tmp = dest.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as out:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        out.addfile(info, io.BytesIO(layout))
        layer_digest, layer_size = _blob(out, layer)
        cfg = {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
        cfg_digest, cfg_size = _blob(out, json.dumps(cfg).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": cfg_digest,
                "size": cfg_size,
            },
            "layers": [{"mediaType": media, "digest": layer_digest, "size": layer_size}],
        }
        man_digest, man_size = _blob(out, json.dumps(manifest).encode())
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": man_digest,
                    "size": man_size,
                    "annotations": {
                        "io.containerd.image.name": ref,
                        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1],
                    },
                }
            ],
        }
        data = json.dumps(index).encode()
        info = tarfile.TarInfo("index.json")
        info.size = len(data)
        out.addfile(info, io.BytesIO(data))
    tmp.replace(dest)


# --- the images ----------------------------------------------------------------------------
def pause_archive() -> Path:
    binary = build.RECIPES["pause"].bin("pause")
    key = hashlib.sha256(binary.read_bytes()).hexdigest()[:16]
    dest = cache_root() / f"image-pause-{key}" / "image.tar"
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    layer = dest.parent / "layer.tar"
    with tarfile.open(layer, "w") as tf:
        info = tarfile.TarInfo("pause")
        info.size, info.mode = binary.stat().st_size, 0o755
        with binary.open("rb") as fh:
            tf.addfile(info, fh)
    write_oci_archive(
        dest, PAUSE_IMAGE, layer, {"Entrypoint": ["/pause"], "User": "65535:65535"}, False
    )
    layer.unlink()
    return dest


def worker_archive() -> Path:
    """The Worker image archive, built when its inputs changed (~3 min cold)."""
    key = worker_key()
    dest = cache_root() / f"image-worker-{key}" / "image.tar"
    if dest.is_file():
        return dest
    with dir_lock(cache_root() / "image-locks"):
        if dest.is_file():
            return dest
        return _build_worker(dest)


def _build_worker(dest: Path) -> Path:
    logs = cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{dest.parent.name}.log"
    log.write_text("")
    work = cache_root() / f".tmp-{dest.parent.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    wheels = work / "wheels"
    wheels.mkdir(parents=True)
    build.say(f"building the Worker image {WORKER_IMAGE} (log: {log}) ...")
    started = time.monotonic()
    try:
        pip = [sys.executable, "-m", "pip", "wheel", "-q", "-w"]
        # The project itself (without its dependencies: only the smoke workload's) ...
        _run([*pip, str(wheels / "project"), "--no-deps", str(REPO_ROOT)], log)
        # ... and what it imports in the Worker, as binary wheels for CPython 3.11 (the
        # Debian release's Python), through pip's own cache.
        (wheels / "requirements.txt").write_text("\n".join(_requirements()) + "\n")
        _run([*pip, str(wheels), "-r", str(wheels / "requirements.txt")], log)
        pip_in = f"{VENV}/bin/pip install -q --no-index --no-compile"
        (wheels / "install.sh").write_text(
            "set -e\n"
            f"{pip_in} --find-links /tmp/wheels -r /tmp/wheels/requirements.txt\n"
            f"{pip_in} --no-deps /tmp/wheels/project/*.whl\n"
        )
        rootfs = work / "rootfs.tar"
        _run(
            [
                "mmdebstrap",
                "--variant=minbase",
                f"--include={','.join(DEBIAN_PACKAGES)}",
                "--aptopt=Acquire::Retries 3",
                f'--customize-hook=chroot "$1" python3 -m venv {VENV}',
                # /workspace/<dir>: where the role scripts `cd`, as in the RLinf image.
                '--customize-hook=mkdir -p "$1/tmp/wheels" "$1/workspace/smoke"',
                f"--customize-hook=sync-in {wheels} /tmp/wheels",
                '--customize-hook=chroot "$1" sh /tmp/wheels/install.sh',
                '--customize-hook=rm -rf "$1/tmp/wheels" "$1/var/cache/apt" "$1/var/lib/apt/lists"',
                versions.WORKER_IMAGE_SUITE,
                str(rootfs),
            ],
            log,
        )
        config = {
            "Env": [f"PATH={PATH}", "PYTHONUNBUFFERED=1"],
            "WorkingDir": "/",
            "Entrypoint": [
                "/bin/sh",
                "-c",
                "echo 'this image has no entrypoint of its own: the platform runs the "
                "role scripts' >&2; exit 64",
            ],
        }
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_oci_archive(dest, WORKER_IMAGE, rootfs, config)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    build.say(f"built the Worker image in {time.monotonic() - started:.0f}s")
    return dest
