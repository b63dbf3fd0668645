"""What this machine makes of a Worker (``model.worker``): the one node's scheduling verdict,
the image's /workspace, and the init's spec (its filesystem, environment and entry).

The Worker itself (image, env, GPUs, mounts, prepare → ``ray start --head`` → run) is the
platform's and comes from ``model.worker``; only how this machine runs it is here.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from rlark_acceptance.adapters.local.images import LocalImage
from rlark_acceptance.adapters.local.leftovers import POD_MARKER_ENV
from rlark_acceptance.adapters.local.options import LocalOptions
from rlark_acceptance.adapters.local.s3 import S3ConfigError, endpoint_for_s3fs, probe
from rlark_acceptance.adapters.local.spec import (
    GPU_STANDIN_DIR,
    POD_HOME,
    RAY_TEMP_DIR,
    SCRIPT_DIR,
    MountSpec,
    WorkerSpec,
)
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.model.worker import (
    GPU_RESOURCE,
    Worker,
    WorkerMount,
    entry_script,
    ray_head,
)

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
WORKSPACE = "/workspace"
# `cd /workspace/x` in a script: the real image ships that directory (the project checkout).
_CD_WORKSPACE = re.compile(r"(?:^|[\s;&|(])cd\s+['\"]?(/workspace(?:/[^\s;&|)'\"]*)?)")
# Ray's ports are picked here and bound by Ray a few seconds later. Taken from the kernel's
# ephemeral range (what binding port 0 gives), one could meanwhile become the source port of
# some outgoing connection; this range lies below Linux's ephemeral ports (32768+) and above
# Ray's own worker ports (10002-19999).
_PORT_RANGE = (20000, 32000)
# Every port a head binds at a fixed default: the Pods share this machine's network, so two
# heads at once would share one. The client server's 10001 is bound with SO_REUSEPORT (gRPC),
# so a second head does not even fail: connections to it were shared between the two Pods.
_RAY_PORTS = (
    "--port",
    "--dashboard-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
    "--metrics-export-port",
    "--ray-client-server-port",
)


class ContainerError(RuntimeError):
    """The container cannot be created here (no free port, a volume it cannot mount)."""


def unschedulable(worker: Worker, node: NodeSpec) -> str | None:
    """kube-scheduler's verdict for the one node, in its words; None when the Pod fits."""
    if any(node.labels.get(k) != v for k, v in worker.node_selector.items()):
        return "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    if worker.gpus > node.gpus:
        return f"0/1 nodes are available: 1 Insufficient {GPU_RESOURCE}."
    for m in worker.volumes:
        if m.type == "pvc":
            return f'0/1 nodes are available: persistentvolumeclaim "{m.claim_name}" not found.'
    return None


def host_base(job: Job, profile_dir: Path) -> Path:
    """Relative hostPaths are relative to the Job YAML's folder (the profile's if rendered)."""
    path = Path(job.doc.path)
    return path.parent if path.is_file() else profile_dir


def copy_image_workspace(
    worker: Worker, scratch: Path, image: LocalImage, extra: tuple[str, ...]
) -> None:
    """The image's /workspace content: what the image names (copied: the image's writable
    layer), the directories the scripts cd into (created empty, as the real image would ship
    them) plus ``target.imageDirs``."""
    for name, src in image.workspace.items():
        shutil.copytree(src, scratch / "workspace" / name, symlinks=True, dirs_exist_ok=True)
    scripts = f"{worker.prepare_script}\n{worker.run_script}"
    wanted = [m.group(1) for m in _CD_WORKSPACE.finditer(scripts)] + list(extra)
    for d in wanted:
        rel = Path(d).relative_to(WORKSPACE) if d.startswith(WORKSPACE) else None
        if rel is not None and ".." not in rel.parts:
            (scratch / "workspace" / rel).mkdir(parents=True, exist_ok=True)


def init_spec(
    worker: Worker,
    mounts: list[WorkerMount],
    scratch: Path,
    image: LocalImage,
    options: LocalOptions,
    uid: str,
) -> WorkerSpec:
    """What the Pod's init runs; ``S3ConfigError`` if object storage does not answer."""
    specs = [mount_spec(m) for m in mounts]
    s3 = endpoint_for_s3fs(scratch / "secret") if any(m.kind == "s3" for m in specs) else None
    for ms in specs:
        if ms.kind == "s3" and ms.bucket:
            try:
                probe(ms.bucket, ms.prefix)
            except S3ConfigError as e:
                if s3 is not None:  # no s3fs will read it
                    Path(s3.passwd_file).unlink(missing_ok=True)
                raise S3ConfigError(
                    f'MountVolume.SetUp failed for volume "{ms.name}" : {e}'
                ) from None
    env = container_env(worker, image, uid)
    if options.without_gpu:
        # Every interpreter of the Worker (Ray's workers inherit it) loads the GPU stand-in.
        env["PYTHONPATH"] = ":".join(p for p in (GPU_STANDIN_DIR, env.get("PYTHONPATH")) if p)
    return WorkerSpec(
        pod=worker.pod,
        scratch=str(scratch),
        mounts=specs,
        env=env,
        prepare_script=worker.prepare_script,
        run_script=worker.run_script,
        # The init writes both scripts into the Pod's root; the shell sources them.
        entry=entry_script(
            f". {SCRIPT_DIR}/prepare.sh",
            f". {SCRIPT_DIR}/run.sh",
            ray_head(
                dashboard=options.ray_dashboard,
                monitor=options.ray_monitor,
                num_cpus=options.ray_num_cpus,
                temp_dir=RAY_TEMP_DIR,
                # Every port Ray would otherwise take from fixed defaults is picked free, so
                # this head never collides with another one on the machine.
                ports=dict(zip(_RAY_PORTS, free_ports(len(_RAY_PORTS)), strict=True)),
            ),
        ),
        status_fd=-1,
        s3=s3,
        keep=python_paths(str(image.environment / "bin" / "python")),
        gpu_standin=options.without_gpu,
    )


def container_env(worker: Worker, image: LocalImage, uid: str) -> dict[str, str]:
    """The container's environment: what a runtime gives it, then the role's env."""
    env = {
        "PATH": f"{image.bin}:{SYSTEM_PATH}",
        "VIRTUAL_ENV": str(image.environment),
        # The container's own home, empty: no Ray, pip or XDG state of the user's.
        "HOME": POD_HOME,
        "XDG_CONFIG_HOME": f"{POD_HOME}/.config",
        "XDG_CACHE_HOME": f"{POD_HOME}/.cache",
        "XDG_DATA_HOME": f"{POD_HOME}/.local/share",
        "XDG_STATE_HOME": f"{POD_HOME}/.local/state",
        "LANG": "C.UTF-8",
        "HOSTNAME": worker.pod,
        "RAY_USAGE_STATS_ENABLED": "0",
        # The node is this machine and nothing joins from outside: keep Ray on loopback.
        # Ray replaces --node-ip-address=127.0.0.1 with the machine's interface address
        # unless its cluster mode is off (the switch Ray itself uses on laptops).
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        POD_MARKER_ENV: uid,
    }
    env.update(worker.env)
    return env


def init_env(uid: str) -> dict[str, str]:
    """The init's own environment (not the container's): this interpreter, and the marker
    a later run finds a dead run's Pods by."""
    venv_bin = str(Path(sys.executable).parent)
    return {"PATH": f"{venv_bin}:{SYSTEM_PATH}", "LANG": "C.UTF-8", POD_MARKER_ENV: uid}


def mount_spec(m: WorkerMount) -> MountSpec:
    """A Worker mount as the init sets it up: a bind of the host folder, or s3fs."""
    if m.kind == "hostPath":
        return MountSpec(m.name, "bind", m.container_path, m.read_only, source=m.host_path)
    return MountSpec(
        m.name, "s3", m.container_path, m.read_only, bucket=m.bucket, prefix=m.prefix or None
    )


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports of ``_PORT_RANGE`` free on loopback now: Ray refuses a head two
    of whose components are given one port ("... is trying to use a port number that is
    used by other components"), which six independent picks were, now and then."""
    rng = random.SystemRandom()
    picked: list[int] = []
    for _ in range(200 * n):
        if len(picked) == n:
            return picked
        port = rng.randrange(*_PORT_RANGE)
        if port in picked:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        picked.append(port)
    if len(picked) == n:
        return picked
    low, high = _PORT_RANGE
    raise ContainerError(f"no {n} free ports for the Ray head between {low} and {high}")


def python_paths(python: str) -> list[str]:
    """Host folders an interpreter needs: its environment, its base, its sys.path.

    The Pod gets a private /tmp and /root; an environment under them must stay visible.
    """
    # Compared by prefix: every virtualenv's python resolves to the same base interpreter.
    if os.path.abspath(os.path.join(python, "..", "..")) == os.path.abspath(sys.prefix):
        found = {sys.prefix, sys.base_prefix, *sys.path}
    else:
        code = (
            "import sys; print(sys.prefix); print(sys.base_prefix); print(*sys.path, sep=chr(10))"
        )
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, check=True, env={}
        ).stdout
        found = set(out.splitlines())
    ordered = sorted(os.path.realpath(p) for p in found if p and os.path.isdir(p))
    # A folder inside one already kept comes along with it.
    return [
        p
        for i, p in enumerate(ordered)
        if not any(p.startswith(q.rstrip("/") + "/") for q in ordered[:i])
    ]
