"""The Worker image with real RLinf for the real node: ``testenv image rlinf``.

Too big for every ``up`` (GBs, minutes), so it is a command of its own. Two uncompressed
layers: a Debian root filesystem (the smoke Worker image's packages and a C++ compiler:
torch's inductor compiles RLinf's compiled functions on the CPU, as RLinf's own images can)
and a layer holding

* RLinf's Worker environment exactly as the embedded target runs it: the virtualenv that
  ``rlark_acceptance.adapters.local.images`` builds from ``profiles/rlinf-embodied``'s lock
  (built here if missing, else reused), carried at the path it was built for, with the
  interpreter it was made from (a virtualenv is not relocatable; its ``home`` is the base
  interpreter). A base interpreter under ``/usr`` is the image's own Debian Python instead.
* ``/workspace/RLinf``: what RLinf's wheel leaves out (``third_party/rlinf-v0.3``), as the
  local profile's image workspace;
* ``/opt/rlark/gpu-standin``: the GPU stand-in and the sitecustomize that loads it, put on
  ``PYTHONPATH`` by the Job's prepare script when the node has no GPU (this one has none).

Uncompressed: the layer is ~8 GB and this machine has two shared cores; gzip would cost
minutes at each build for nothing (the archive never leaves the machine).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import shutil
import tarfile
import time
from pathlib import Path

from rlark_acceptance.adapters.local import images as local_images
from rlark_acceptance.adapters.local.worker import GPU_STANDIN_SOURCE, SITECUSTOMIZE
from testenv import build, image, node
from testenv.paths import REPO_ROOT, cache_root

REVISION = 2
DEBIAN_PACKAGES = (*image.DEBIAN_PACKAGES, "g++")
RLINF_IMAGE = "registry.rlark.test/rlinf:0.3.0-cpu"
LOCK = REPO_ROOT / "profiles" / "rlinf-embodied" / "rlinf-0.3.0.lock"
WORKSPACE = {"RLinf": REPO_ROOT / "third_party" / "rlinf-v0.3"}
STANDIN_DIR = "/opt/rlark/gpu-standin"


def _base_prefix(env: Path) -> Path | None:
    """The installation the virtualenv's interpreter comes from, if the image lacks it."""
    cfg = {}
    for line in (env / "pyvenv.cfg").read_text().splitlines():
        name, _, value = line.partition("=")
        cfg[name.strip()] = value.strip()
    prefix = Path(cfg["home"]).parent
    return None if prefix == Path("/usr") else prefix


def key(env: Path) -> str:
    h = hashlib.sha256()
    base = _base_prefix(env)
    suite = image.versions.WORKER_IMAGE_SUITE
    h.update(json.dumps([REVISION, suite, DEBIAN_PACKAGES, str(env), str(base)]).encode())
    h.update(LOCK.read_bytes() + GPU_STANDIN_SOURCE.read_bytes() + SITECUSTOMIZE.encode())
    for name, folder in sorted(WORKSPACE.items()):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(f"{name}/{path.relative_to(folder)}".encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def archive() -> Path:
    """The image archive, built when its inputs changed; RLinf's environment too."""
    env = local_images.build(LOCK)
    dest = cache_root() / f"image-rlinf-{key(env)}" / "image.tar"
    return image.cached(dest, functools.partial(_build, env))


def _add_parents(tf: tarfile.TarFile, arcname: str, seen: set[str]) -> None:
    parts = Path(arcname).parts[:-1]
    for i in range(1, len(parts) + 1):
        d = "/".join(parts[:i])
        if d not in seen:
            seen.add(d)
            if Path("/" + d).is_dir():  # as on this machine (its mode), else a plain dir
                tf.add("/" + d, d, recursive=False)
            else:
                info = tarfile.TarInfo(d)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)


def _build(env: Path, dest: Path) -> Path:
    log = image.build_log(dest.parent.name)
    build.say(f"building {RLINF_IMAGE} (log: {log}) ...")
    started = time.monotonic()
    dest.parent.mkdir(parents=True, exist_ok=True)
    rootfs, layer = dest.parent / "rootfs.tar", dest.parent / "layer.tar"
    trees: list[tuple[Path, str]] = [(env, str(env).lstrip("/"))]
    base = _base_prefix(env)
    if base is not None:
        trees.append((base, str(base).lstrip("/")))
    trees += [(folder, f"workspace/{name}") for name, folder in WORKSPACE.items()]
    try:
        image.debian_rootfs(rootfs, DEBIAN_PACKAGES, [], log)
        seen: set[str] = set()
        with tarfile.open(layer, "w", format=tarfile.PAX_FORMAT) as tf:
            for src, arc in trees:
                _add_parents(tf, arc, seen)
                tf.add(str(src), arc)
            standin = STANDIN_DIR.lstrip("/")
            _add_parents(tf, f"{standin}/x", seen)
            tf.add(str(GPU_STANDIN_SOURCE), f"{standin}/gpu_standin.py")
            info = tarfile.TarInfo(f"{standin}/sitecustomize.py")
            data = SITECUSTOMIZE.encode()
            info.size, info.mode = len(data), 0o644
            tf.addfile(info, io.BytesIO(data))
        layers = [image.file_layer(rootfs), image.file_layer(layer)]
        config = image.worker_config(f"{env}/bin:{image.PATH}")
        image.write_oci_layers(dest, RLINF_IMAGE, layers, config)
    except BaseException:
        shutil.rmtree(dest.parent, ignore_errors=True)
        raise
    finally:
        rootfs.unlink(missing_ok=True)
        layer.unlink(missing_ok=True)
    build.say(
        f"built {RLINF_IMAGE} in {time.monotonic() - started:.0f}s: "
        f"{dest.stat().st_size / 2**30:.2f} GiB ({dest})"
    )
    return dest


def import_into_node() -> dict[str, float]:
    """Build (if needed) and import into this checkout's running node; the phases' seconds."""
    figures = node.import_into_node(archive, RLINF_IMAGE, timeout=3600)
    figures["archive_gib"] = round(figures.pop("archive_mib") / 1024, 2)
    return figures
