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
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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
    data = gzip.compress(raw, compresslevel=1, mtime=0) if compress else raw
    media = LAYER_MEDIA + ("+gzip" if compress else "")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    layer = Layer(digest, len(data), diff_id, media, lambda: io.BytesIO(data))
    write_oci_layers(dest, ref, [layer], config)


LAYER_MEDIA = "application/vnd.oci.image.layer.v1.tar"


@dataclass(frozen=True)
class Layer:
    """A layer blob as the archive names it, and how to read its bytes (streamed)."""

    digest: str
    size: int
    diff_id: str
    media: str
    open: Callable[[], AbstractContextManager[IO[bytes]]]


def file_layer(path: Path) -> Layer:
    """An uncompressed layer from a tar file, hashed in one streamed pass (GBs, not RAM)."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    digest = f"sha256:{h.hexdigest()}"
    return Layer(digest, path.stat().st_size, digest, LAYER_MEDIA, lambda: path.open("rb"))


def write_oci_layers(dest: Path, ref: str, layers: list[Layer], config: dict[str, Any]) -> None:
    """An OCI image layout as a tar, named ``ref`` for ``ctr images import``."""
    tmp = dest.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as out:
        layout = json.dumps({"imageLayoutVersion": "1.0.0"}).encode()
        info = tarfile.TarInfo("oci-layout")
        info.size = len(layout)
        out.addfile(info, io.BytesIO(layout))
        for layer in layers:
            info = tarfile.TarInfo(f"blobs/sha256/{layer.digest.split(':')[1]}")
            info.size = layer.size
            with layer.open() as fh:
                out.addfile(info, fh)
        cfg = {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [la.diff_id for la in layers]},
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
            "layers": [
                {"mediaType": la.media, "digest": la.digest, "size": la.size} for la in layers
            ],
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


def cached(dest: Path, make: Callable[[Path], Path]) -> Path:
    """``dest`` when it was built, else ``make(dest)``: one builder at a time on the machine."""
    if dest.is_file():
        return dest
    with dir_lock(cache_root() / "image-locks"):
        if dest.is_file():
            return dest
        return make(dest)


def worker_archive() -> Path:
    """The Worker image archive, built when its inputs changed (~3 min cold)."""
    return cached(cache_root() / f"image-worker-{worker_key()}" / "image.tar", _build_worker)


def debian_rootfs(rootfs: Path, packages: tuple[str, ...], hooks: list[str], log: Path) -> None:
    """A Debian root filesystem as a tar: minbase, ``packages``, then ``hooks`` in order."""
    _run(
        [
            "mmdebstrap",
            "--variant=minbase",
            f"--include={','.join(packages)}",
            "--aptopt=Acquire::Retries 3",
            *(f"--customize-hook={hook}" for hook in hooks),
            '--customize-hook=rm -rf "$1/var/cache/apt" "$1/var/lib/apt/lists"',
            versions.WORKER_IMAGE_SUITE,
            str(rootfs),
        ],
        log,
    )


def worker_config(path: str) -> dict[str, Any]:
    """A Worker image's config: its PATH, and an ENTRYPOINT that refuses to run."""
    return {
        "Env": [f"PATH={path}", "PYTHONUNBUFFERED=1"],
        "WorkingDir": "/",
        "Entrypoint": [
            "/bin/sh",
            "-c",
            "echo 'this image has no entrypoint of its own: the platform runs the "
            "role scripts' >&2; exit 64",
        ],
    }


def build_log(name: str) -> Path:
    logs = cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    log.write_text("")
    return log


def venv_wheels(
    wheels: Path,
    requirements: list[str],
    venv: str,
    log: Path,
    constraints: list[str] | None = None,
) -> None:
    """The project's wheel (no dependencies) and ``requirements`` as binary wheels for
    CPython 3.11 (the Debian release's Python) through pip's own cache, in ``wheels``, with
    ``install.sh``: what installs them into ``venv`` from ``/tmp/wheels`` in the image."""
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "-w"]
    # Built from a copy of what the wheel is made of: an in-tree build would leave build/
    # and an egg-info in the user's checkout.
    tree = wheels.parent / "project-tree"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, tree / name)
    shutil.copytree(
        REPO_ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    _run([*pip, str(wheels / "project"), "--no-deps", str(tree)], log)
    shutil.rmtree(tree, ignore_errors=True)
    (wheels / "requirements.txt").write_text("\n".join(requirements) + "\n")
    (wheels / "constraints.txt").write_text("\n".join(constraints or []) + "\n")
    reqs = ["-r", str(wheels / "requirements.txt"), "-c", str(wheels / "constraints.txt")]
    _run([*pip, str(wheels), *reqs], log)
    pip_in = f"{venv}/bin/pip install -q --no-index --no-compile"
    (wheels / "install.sh").write_text(
        "set -e\n"
        f"{pip_in} --find-links /tmp/wheels -r /tmp/wheels/requirements.txt\n"
        f"{pip_in} --no-deps /tmp/wheels/project/*.whl\n"
    )


def _build_worker(dest: Path) -> Path:
    log = build_log(dest.parent.name)
    work = cache_root() / f".tmp-{dest.parent.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    wheels = work / "wheels"
    wheels.mkdir(parents=True)
    build.say(f"building the Worker image {WORKER_IMAGE} (log: {log}) ...")
    started = time.monotonic()
    try:
        # The project itself (without its dependencies: only the smoke workload's) and
        # what it imports in the Worker.
        venv_wheels(wheels, _requirements(), VENV, log)
        rootfs = work / "rootfs.tar"
        debian_rootfs(
            rootfs,
            DEBIAN_PACKAGES,
            [
                f'chroot "$1" python3 -m venv {VENV}',
                # /workspace/<dir>: where the role scripts `cd`, as in the RLinf image.
                'mkdir -p "$1/tmp/wheels" "$1/workspace/smoke"',
                f"sync-in {wheels} /tmp/wheels",
                'chroot "$1" sh /tmp/wheels/install.sh',
                'rm -rf "$1/tmp/wheels"',
            ],
            log,
        )
        config = worker_config(PATH)
        dest.parent.mkdir(parents=True, exist_ok=True)
        write_oci_archive(dest, WORKER_IMAGE, rootfs, config)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    build.say(f"built the Worker image in {time.monotonic() - started:.0f}s")
    return dest
