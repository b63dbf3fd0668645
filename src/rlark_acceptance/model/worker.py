"""What a Job becomes on RLark: its Worker (docs/contract.md §1).

RLark runs a single-node Job as one Pod, ``<job>-<role>-0``, for the role ``headRole``
names: the role's image, env, ``nvidia.com/gpu`` = ``gpus``, nodeSelector and cluster, its
mounts at their ``containerPath``, and a container command that replaces the image's
ENTRYPOINT: the role's prepareScript, then ``ray start --head``, then the Job's runScript.

Every target that makes the Worker itself builds it from here, so the two cannot drift
apart: the ``local`` adapter (a process group on this machine) and testenv's RLark platform
stand-in (a Pod on the real node). What differs is only how each one runs it.

Example::

    worker = worker_of(read_job("profiles/local/job.yaml"), namespace="rlinf-acceptance")
    worker.pod  # -> "rlinf-smoke-ppo-mlp-worker-0"
    worker.mounts(host_base=None)  # -> [WorkerMount("ckpt", "objectStorage", ...), ...]
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rlark_acceptance.model.job import JOB_NAME_LABEL, ROLE_LABEL, Job, Mount, Role

GPU_RESOURCE = "nvidia.com/gpu"
MountKind = Literal["hostPath", "objectStorage"]


class WorkerRefused(Exception):
    """The platform cannot make this Worker; the message is what the platform says."""


@dataclass(frozen=True)
class WorkerMount:
    """One volume of the Worker at its ``containerPath``."""

    name: str
    kind: MountKind
    container_path: str
    read_only: bool
    host_path: str | None = None  # hostPath: absolute, on the node
    bucket: str | None = None  # objectStorage
    prefix: str = ""


@dataclass(frozen=True)
class Worker:
    """The Worker Pod of a Job, as RLark makes it (before a target runs it)."""

    job: str
    namespace: str
    role: str
    image: str
    gpus: int
    node_selector: Mapping[str, str]
    cluster: str | None
    env: Mapping[str, str]
    prepare_script: str
    run_script: str
    # As the Job declares them: a target checks what it can schedule before it mounts.
    volumes: tuple[Mount, ...] = field(default=())

    @property
    def pod(self) -> str:
        return f"{self.job}-{self.role}-0"

    @property
    def labels(self) -> dict[str, str]:
        return {JOB_NAME_LABEL: self.job, ROLE_LABEL: self.role}

    def mounts(self, host_base: Path | None) -> list[WorkerMount]:
        """Each volume as the Worker gets it; ``WorkerRefused`` names one that cannot be.

        A relative ``hostPath`` is resolved against ``host_base`` (the local target: the
        Job YAML's folder); with none (a cluster node) it is refused.
        """
        return [_mount(m, host_base) for m in self.volumes]


def head_role(job: Job) -> Role | None:
    """The role ``headRole`` names: the one RLark starts on a single node."""
    return next((r for r in job.roles if r.name is not None and r.name == job.head_role), None)


def worker_of(job: Job, namespace: str) -> Worker:
    """The Worker RLark makes of ``job`` in ``namespace`` (the Job's own, if it names one)."""
    role = head_role(job)
    name = str(job.name or "")
    if role is None:
        raise WorkerRefused(f'Job.rlark.io "{name}" is invalid: spec.headRole names no role')
    selector = role.node_selector if role.node_selector is not None else {}
    if not isinstance(selector, dict):
        raise WorkerRefused(f'Job.rlark.io "{name}": nodeSelector is not a mapping')
    gpus = role.gpus if isinstance(role.gpus, int) and not isinstance(role.gpus, bool) else 0
    return Worker(
        job=name,
        namespace=job.namespace or namespace,
        role=str(role.name),
        image=str(role.image or ""),
        gpus=gpus,
        node_selector={str(k): str(v) for k, v in selector.items()},
        cluster=str(role.cluster) if role.cluster else None,
        env={e.name: e.value or "" for e in role.env},
        prepare_script=role.prepare_script or "",
        run_script=job.run_script or "",
        volumes=tuple(role.mounts),
    )


def _mount(m: Mount, host_base: Path | None) -> WorkerMount:
    where = f'volume "{m.name}"'
    if not m.container_path or not m.container_path.startswith("/"):
        raise WorkerRefused(f"{where}: containerPath must be absolute")
    if m.type == "hostPath":
        path = m.host_path or ""
        if not path:
            raise WorkerRefused(f"{where}: hostPath without a path")
        if host_base is not None:
            path = str((host_base / path).resolve())
        elif not path.startswith("/"):
            raise WorkerRefused(f'{where}: hostPath "{path}" is not an absolute path')
        return WorkerMount(m.name, "hostPath", m.container_path, m.read_only, host_path=path)
    if m.type == "objectStorage":
        if not m.bucket:
            raise WorkerRefused(f"{where}: objectStorage without a bucket")
        return WorkerMount(
            m.name,
            "objectStorage",
            m.container_path,
            m.read_only,
            bucket=m.bucket,
            prefix=m.prefix or "",
        )
    raise WorkerRefused(f"{where}: type {m.type!r} is not supported here")


def ray_head(
    *,
    dashboard: bool | None,
    monitor: bool = True,
    num_cpus: int | None = None,
    temp_dir: str | None = None,
    ports: Mapping[str, int] | None = None,
) -> list[str]:
    """``ray start --head`` as the Worker runs it, on the Pod's own loopback.

    ``dashboard``: None leaves it to Ray (started when the image has its dependencies);
    it serves the state API RLinf lists its actors through. ``monitor``: False leaves out
    the autoscaler's monitor, which a head with no node to add has no use for. ``ports``:
    Ray's flags for the ports it would otherwise take from fixed defaults (``--port``:
    20001...).
    """
    if dashboard is None:
        board = ["--dashboard-host=127.0.0.1"]
    elif dashboard:
        board = ["--include-dashboard=true", "--dashboard-host=127.0.0.1"]
    else:
        board = ["--include-dashboard=false"]
    return [
        "ray",
        "start",
        "--head",
        # Nothing joins the head from outside the Pod: never the node's interface address.
        "--node-ip-address=127.0.0.1",
        *([f"--num-cpus={num_cpus}"] if num_cpus is not None else []),
        # The node's GPUs are RLinf's to place (or a stand-in's): Ray schedules none.
        "--num-gpus=0",
        "--object-store-memory=100000000",
        *board,
        *([] if monitor else ["--no-monitor"]),
        "--disable-usage-stats",
        *([f"--temp-dir={temp_dir}"] if temp_dir else []),
        *(f"{k}={v}" for k, v in (ports or {}).items()),
    ]


# One bash runs the Worker: prepare in this shell so its exports reach the run script (if it
# fails the shell ends with its status and Ray never starts), the Ray head, then the run
# script in the background so a SIGTERM is handled at once (a shell waiting for a foreground
# command defers its traps): the run script gets it, and the shell ends with 143.
ENTRY = """\
trap 'kill -TERM $run 2>/dev/null; wait $run; exit 143' TERM
{prepare} || exit $?
{ray} || exit $?
({run}) &
run=$!
wait $run
"""


def entry_script(prepare: str, run: str, ray: Sequence[str]) -> str:
    """The container command's script; ``prepare`` / ``run``: the shell words that run the
    two scripts where the target put them (``eval "$1"``, ``. /.rlark/run.sh``)."""
    return ENTRY.format(prepare=prepare, run=run, ray=" ".join(shlex.quote(a) for a in ray))
