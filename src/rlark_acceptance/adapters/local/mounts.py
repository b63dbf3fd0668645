"""The Pod's filesystem, assembled by the init inside its private mount namespace.

Layout of the Pod root (``<scratch>/root``), as the Pod's processes see it after chroot:

- every top-level host directory is bound recursively (the local image's environment is one
  of this machine's), except ``/proc`` (a fresh procfs of the Pod's PID namespace), ``/tmp``
  and ``/root`` (the Pod's own, in the scratch: the container's HOME starts empty, so no
  Ray, pip or XDG state of the user's reaches the Worker); host folders the image's
  interpreter needs under them (a virtualenv in ``~/.cache``) are shown again read-only;
- ``/workspace`` is the Pod's own scratch directory: the image's writable layer, lost with
  the Pod;
- a top-level host directory that must receive a mount point it does not have (``/mnt`` for
  ``/mnt/ckpt``) is a copy-on-write overlay of the host directory, so creating the mount
  point, or anything else written there, stays in the scratch and never reaches the host;
- each Job mount is bound at its ``containerPath``: ``hostPath`` read-only when asked,
  ``objectStorage`` as an s3fs FUSE mount of ``bucket:/prefix``.

Object storage semantics (s3fs 1.90, a real FUSE mount of ``s3://bucket/prefix``):

- reads list and fetch the bucket live; a file written in the Pod is uploaded as one object
  when it is flushed or closed (``close``, ``fsync``), so a closed file is in the bucket
  before ``close`` returns; an open, unflushed file is not there yet;
- ``mkdir`` creates a zero-byte ``dir/`` marker object; ``rename`` is a server-side copy plus
  delete (not atomic for readers outside the Pod);
- at the Pod's end the init stops every process (their files close, so s3fs uploads them),
  then unmounts s3fs and waits for it to exit; only then does the init exit and the adapter
  report the terminal phase: a Succeeded / Failed Pod's output is all in the bucket;
- credentials come from boto3's standard chain in the adapter, reach s3fs only through a
  0600 passwd file in a 0700 directory of the scratch, removed once mounted; the Pod's
  processes get no AWS variables.

The namespace is private (no propagation), so none of these mounts is visible on the host
and all of them vanish with the Pod's last process; on the host the scratch holds only
plain (empty) mount-point directories.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlark_acceptance.adapters.local.spec import MountSpec, S3Endpoint, WorkerSpec

HOST_ROOT = Path("/")
# Top-level host entries the Pod does not get from the host.
PRIVATE_TOP = frozenset({"proc", "tmp", "workspace", "root"})
# The Pod's own top-level dirs: the scratch folder each is, and its mode.
PRIVATE_DIRS = {"tmp": ("tmp", 0o1777), "workspace": ("workspace", 0o755), "root": ("home", 0o700)}
S3FS_TIMEOUT_S = 30.0


class MountError(RuntimeError):
    """A volume could not be set up; the message is what kubelet's FailedMount would say."""


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise MountError(f"mount {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")


def _inside(root: Path, container_path: str) -> Path:
    return root / container_path.lstrip("/")


def _needs_overlay(container_paths: list[str]) -> set[str]:
    """Top-level host dirs in which a mount point would have to be created."""
    out: set[str] = set()
    for cp in container_paths:
        parts = Path(cp).parts[1:]
        if len(parts) < 2 or parts[0] in PRIVATE_TOP:
            continue
        top = HOST_ROOT / parts[0]
        if top.is_dir() and not top.is_symlink() and not (HOST_ROOT / cp.lstrip("/")).is_dir():
            out.add(parts[0])
    return out


def build_root(spec: WorkerSpec) -> None:
    """Assemble the Pod root: the image's directories, /proc, /tmp and /workspace."""
    root = spec.root
    scratch = Path(spec.scratch)
    root.mkdir(parents=True, exist_ok=True)
    overlays = _needs_overlay([m.container_path for m in spec.mounts])
    for entry in sorted(os.listdir(HOST_ROOT)):
        if entry in PRIVATE_TOP:
            continue
        host = HOST_ROOT / entry
        target = root / entry
        if host.is_symlink():  # /bin -> usr/bin on merged-/usr systems
            target.symlink_to(os.readlink(host))
        elif host.is_dir() and entry in overlays:
            upper, work = (
                scratch / "overlay" / entry / "upper",
                scratch / "overlay" / entry / "work",
            )
            for d in (upper, work, target):
                d.mkdir(parents=True, exist_ok=True)
            _mount(
                "-t",
                "overlay",
                "overlay",
                "-o",
                f"lowerdir={host},upperdir={upper},workdir={work}",
                str(target),
            )
        elif host.is_dir():
            target.mkdir(exist_ok=True)
            _mount("--rbind", str(host), str(target))
        # Top-level regular files (container markers) are not part of the image.
    (root / "proc").mkdir(exist_ok=True)
    _mount("-t", "proc", "proc", str(root / "proc"))
    for private, (folder, mode) in PRIVATE_DIRS.items():
        src = scratch / folder
        src.mkdir(exist_ok=True)
        src.chmod(mode)
        (root / private).mkdir(exist_ok=True)
        _mount("--bind", str(src), str(root / private))
    # The image's environment may live under /tmp or /root (a checkout there, a virtualenv in
    # ~/.cache): show it again, read-only, through the Pod's private dir so its Python runs.
    for path in spec.keep:
        parts = Path(path).parts
        if len(parts) > 2 and parts[1] in PRIVATE_TOP - {"proc"} and Path(path).is_dir():
            target = _inside(root, path)
            target.mkdir(parents=True, exist_ok=True)
            _mount("--rbind", path, str(target))
            _mount("-o", "remount,bind,ro", str(target))


def _bind(root: Path, m: MountSpec) -> None:
    assert m.source
    if not Path(m.source).is_dir():
        raise MountError(
            f'MountVolume.SetUp failed for volume "{m.name}" : hostPath {m.source} '
            "is not a directory"
        )
    target = _inside(root, m.container_path)
    target.mkdir(parents=True, exist_ok=True)
    _mount("--rbind", m.source, str(target))
    if m.read_only:
        # A bind mount takes its flags from the source until remounted read-only.
        _mount("-o", "remount,bind,ro", str(target))


def mount_volumes(spec: WorkerSpec) -> list[Path]:
    """Mount every Job volume at its containerPath; returns the s3fs mount points.

    Parents before children, whatever their kind, so a nested mount lands inside its
    parent's. s3fs daemonises only after the FUSE mount is in place and the bucket
    answered, so its zero exit status means the volume is ready. Its passwd file is
    removed as soon as the last s3fs has read it (or the setup failed).
    """
    mounted: list[Path] = []
    try:
        for m in sorted(spec.mounts, key=lambda m: len(Path(m.container_path).parts)):
            if m.kind == "bind":
                _bind(spec.root, m)
            elif m.kind == "s3":
                assert spec.s3 is not None
                target = _inside(spec.root, m.container_path)
                target.mkdir(parents=True, exist_ok=True)
                mount_s3fs(spec.s3, m, target)
                mounted.append(target)
    finally:
        if spec.s3 is not None:
            Path(spec.s3.passwd_file).unlink(missing_ok=True)
    return mounted


def mount_s3fs(s3: S3Endpoint, m: MountSpec, target: Path) -> None:
    """``bucket:/prefix`` as an s3fs FUSE mount at ``target``; ``MountError`` in kubelet's
    words if it cannot be. Also what testenv's platform stand-in mounts on its node."""
    assert m.bucket
    prefix = (m.prefix or "").strip("/")
    source = f"{m.bucket}:/{prefix}" if prefix else m.bucket
    opts = [
        f"passwd_file={s3.passwd_file}",
        f"url={s3.url}",
        f"endpoint={s3.region}",  # the SigV4 region
        "use_path_request_style",
        # Checkpoint writers rename their temp files: keep s3fs's stat cache short so a
        # reader in the Pod sees the renamed object at once.
        "stat_cache_expire=1",
    ]
    if m.read_only:
        opts.append("ro")
    try:
        proc = subprocess.run(
            ["s3fs", source, str(target), "-o", ",".join(opts)],
            capture_output=True,
            text=True,
            check=False,
            timeout=S3FS_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise MountError(
            f'MountVolume.SetUp failed for volume "{m.name}" : s3fs is not installed'
        ) from None
    except subprocess.TimeoutExpired:
        raise MountError(
            f'MountVolume.SetUp failed for volume "{m.name}" : s3fs did not mount within '
            f"{S3FS_TIMEOUT_S:.0f}s"
        ) from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise MountError(
            f'MountVolume.SetUp failed for volume "{m.name}" : s3fs {source}: '
            f"{detail[-1] if detail else f'exit {proc.returncode}'}"
        )


def unmount_s3(targets: list[Path]) -> list[str]:
    """Unmount (children first); s3fs finishes pending uploads before it lets go."""
    problems: list[str] = []
    for target in reversed(targets):
        proc = subprocess.run(
            ["fusermount", "-u", str(target)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            problems.append(f"unmount {target}: {proc.stderr.strip()}")
    return problems
