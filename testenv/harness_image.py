"""The harness as an OCI image, for the in-cluster runner: ``testenv image harness``.

Built like the Worker image (``image.py``): a Debian root filesystem by ``mmdebstrap``
(minbase + Python), a virtualenv ``/opt/rlark-acceptance/venv`` holding the project's wheel
and its dependencies at exactly the versions of the virtualenv running this build (pip's
own cache, no index beyond what pip already uses), and the acceptance suite itself
(``features/``, ``steps/``, ``fixtures/``, the root ``conftest.py``, ``pyproject.toml``; the
``testenv`` package too, since the root conftest loads its fixtures) in
``/opt/rlark-acceptance/suite``, the image's working directory. No Ray, no RLinf: the
runner only observes a Job on a Kubernetes target. Its ENTRYPOINT is the in-cluster runner
(``python -m rlark_acceptance.incluster.runner``).

Not part of every ``up`` (the key covers the project's sources, so every edit of them
would rebuild it): ``testenv image harness`` builds it when its inputs changed and imports
it into the running node; the in-cluster tests do the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import time
from importlib import metadata
from pathlib import Path

from testenv import build, image, node
from testenv.paths import REPO_ROOT, cache_root

REVISION = 1
HARNESS_IMAGE = f"registry.rlark.test/rlark-acceptance:{image.project_version()}"
ROOT = "/opt/rlark-acceptance"
VENV = f"{ROOT}/venv"
SUITE = f"{ROOT}/suite"
# What the in-cluster runner runs of the repository: the suite and its plugins.
SUITE_PARTS = ("features", "steps", "fixtures", "testenv", "conftest.py", "pyproject.toml")
ENTRYPOINT = [f"{VENV}/bin/python", "-m", "rlark_acceptance.incluster.runner"]


def _requirements() -> list[str]:
    """The project's own dependencies (no extra), pinned to what this virtualenv holds."""
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return list(deps)


def _constraints() -> list[str]:
    """Every distribution of the running virtualenv at its version: the image resolves
    the dependencies to what the project's own tests ran with."""
    out = []
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() != "rlark-acceptance":
            out.append(f"{name}=={dist.version}")
    return sorted(set(out))


def _sources() -> list[Path]:
    files = [p for p in (REPO_ROOT / "src" / "rlark_acceptance").rglob("*") if p.is_file()]
    for part in SUITE_PARTS:
        path = REPO_ROOT / part
        files += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return sorted(p for p in files if "__pycache__" not in p.parts and p.suffix != ".pyc")


def key() -> str:
    h = hashlib.sha256()
    suite = image.versions.WORKER_IMAGE_SUITE
    h.update(json.dumps([REVISION, suite, image.DEBIAN_PACKAGES, _constraints()]).encode())
    for path in _sources():
        h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def archive() -> Path:
    """The image archive, built when its inputs changed."""
    return image.cached(cache_root() / f"image-harness-{key()}" / "image.tar", _build)


def config() -> dict[str, object]:
    return {
        "Env": [
            f"PATH={VENV}/bin:/usr/local/bin:/usr/bin:/bin",
            "PYTHONUNBUFFERED=1",
            # The root filesystem may be read-only: no bytecode caches beside the sources.
            "PYTHONDONTWRITEBYTECODE=1",
            "HOME=/tmp/home",
        ],
        "WorkingDir": SUITE,
        "Entrypoint": ENTRYPOINT,
        # Not root: the runner needs no privilege of the node.
        "User": "65532:65532",
    }


def _suite_layer(dest: Path) -> None:
    with tarfile.open(dest, "w") as tf:
        for part in SUITE_PARTS:
            tf.add(
                str(REPO_ROOT / part),
                f"{SUITE.lstrip('/')}/{part}",
                filter=lambda t: None if "__pycache__" in t.name or t.name.endswith(".pyc") else t,
            )


def _build(dest: Path) -> Path:
    log = image.build_log(dest.parent.name)
    work = cache_root() / f".tmp-{dest.parent.name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    wheels = work / "wheels"
    wheels.mkdir(parents=True)
    build.say(f"building the harness image {HARNESS_IMAGE} (log: {log}) ...")
    started = time.monotonic()
    try:
        image.venv_wheels(wheels, _requirements(), VENV, log, _constraints())
        rootfs = work / "rootfs.tar"
        image.debian_rootfs(
            rootfs,
            image.DEBIAN_PACKAGES,
            [
                f'chroot "$1" python3 -m venv {VENV}',
                'mkdir -p "$1/tmp/wheels"',
                f"sync-in {wheels} /tmp/wheels",
                'chroot "$1" sh /tmp/wheels/install.sh',
                'rm -rf "$1/tmp/wheels"',
                # pip and its wheel cache are not needed to run: only the installed tree.
                f'rm -rf "$1{VENV}/lib/python3.11/site-packages/pip"',
            ],
            log,
        )
        suite = work / "suite.tar"
        _suite_layer(suite)
        dest.parent.mkdir(parents=True, exist_ok=True)
        layers = [
            _gz_layer(rootfs, work / "rootfs.tar.gz"),
            _gz_layer(suite, work / "suite.tar.gz"),
        ]
        image.write_oci_layers(dest, HARNESS_IMAGE, layers, config())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    build.say(
        f"built the harness image in {time.monotonic() - started:.0f}s: "
        f"{dest.stat().st_size / 2**20:.0f} MiB compressed ({dest})"
    )
    return dest


def _gz_layer(raw: Path, out: Path) -> image.Layer:
    """A gzip layer (the image may be pushed to a site's registry), streamed, with the
    digest of its uncompressed content as the diff id."""
    import gzip

    diff = hashlib.sha256()
    with raw.open("rb") as src, gzip.GzipFile(out, "wb", compresslevel=6, mtime=0) as gz:
        while chunk := src.read(1 << 22):
            diff.update(chunk)
            gz.write(chunk)
    data = out.read_bytes()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    media = image.LAYER_MEDIA + "+gzip"
    return image.Layer(
        digest, len(data), f"sha256:{diff.hexdigest()}", media, lambda: out.open("rb")
    )


def import_into_node() -> dict[str, float]:
    """Build (if needed) and import into this checkout's running node; the phases' seconds."""
    return node.import_into_node(archive, HARNESS_IMAGE)
