"""What the embedded target still holds of a Worker, for a red run's diagnostics bundle.

The Pod as ``kubectl get pod -o yaml`` would show it (its spec from the ``model.worker``
Worker, its status as this node reports it), this machine's conditions and allocatable
resources in a kubelet's terms, and Ray's session logs, read from the Pod's own ``/tmp`` in
its scratch while the Pod is not deleted yet.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rlark_acceptance.adapters.base import (
    RAY_LOG_TAIL_BYTES,
    RAY_SESSION_LOGS,
    PodStatus,
    WorkerEvidence,
)
from rlark_acceptance.adapters.local.spec import RAY_TEMP_DIR
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.model.worker import Worker

# A kubelet's default hard eviction thresholds: below them it reports the pressure.
MEMORY_PRESSURE_BYTES = 100 * 1024 * 1024
DISK_PRESSURE_SHARE = 0.10


def worker_evidence(
    worker: Worker | None, status: PodStatus, namespace: str, scratch: Path | None, node: NodeSpec
) -> WorkerEvidence:
    unread: list[str] = []
    logs: dict[str, str] = {}
    if scratch is None:
        unread.append("Ray's session logs: the Pod was never scheduled (it has no filesystem)")
    else:
        logs = ray_logs(scratch / "tmp", unread)
    return WorkerEvidence(
        pod_manifest(worker, status, namespace), node_status(node, scratch), logs, tuple(unread)
    )


def pod_manifest(worker: Worker | None, status: PodStatus, namespace: str) -> dict[str, object]:
    """The Pod, shaped as the Kubernetes API shows one (its spec as far as the Worker says)."""
    spec: dict[str, object] = {"nodeName": status.node}
    if worker is not None:
        spec |= {
            "nodeSelector": dict(worker.node_selector),
            "containers": [
                {
                    "name": "worker",
                    "image": worker.image,
                    "env": [{"name": k, "value": v} for k, v in worker.env.items()],
                    "resources": {"limits": {"nvidia.com/gpu": worker.gpus}},
                    "volumeMounts": [
                        {"name": m.name, "mountPath": m.container_path, "readOnly": m.read_only}
                        for m in worker.volumes
                    ],
                }
            ],
            "volumes": [
                {"name": m.name, "type": m.type, "source": m.bucket or m.host_path or m.claim_name}
                for m in worker.volumes
            ],
        }
    ended = {"terminated": {"exitCode": status.exit_code}} if status.exit_code is not None else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": status.name, "namespace": namespace, "labels": dict(status.labels)},
        "spec": spec,
        "status": {
            "phase": status.phase,
            "reason": status.reason,
            "message": status.message,
            "containerStatuses": [
                {"name": "worker", "restartCount": status.restarts, "state": ended}
            ],
        },
    }


def node_status(node: NodeSpec, scratch: Path | None) -> dict[str, object]:
    """This machine as the node: its conditions by a kubelet's default thresholds, and what
    it can give a Pod (its GPUs as the profile declares them: it has none of its own)."""
    available, total = _meminfo()
    where = scratch if scratch is not None and scratch.exists() else Path("/")
    disk = shutil.disk_usage(where)
    conditions = [
        _condition("Ready", True, "KubeletReady", "the embedded target runs Pods"),
        _condition(
            "MemoryPressure",
            available is not None and available < MEMORY_PRESSURE_BYTES,
            "MemoryAvailable",
            f"{_mib(available)} MiB of memory available" if available is not None else "unknown",
        ),
        _condition(
            "DiskPressure",
            disk.free < DISK_PRESSURE_SHARE * disk.total,
            "DiskAvailable",
            f"{_mib(disk.free)} MiB free of {_mib(disk.total)} MiB under the Pods' scratch",
        ),
    ]
    return {
        "name": node.name,
        "labels": dict(node.labels),
        "conditions": conditions,
        "allocatable": {
            "cpu": str(os.cpu_count() or 0),
            "memory": f"{_mib(total)}Mi" if total is not None else None,
            "ephemeral-storage": f"{_mib(disk.free)}Mi",
            "nvidia.com/gpu": str(node.gpus),
        },
    }


def ray_logs(pod_tmp: Path, unread: list[str]) -> dict[str, str]:
    """The end of each of Ray's session logs in the Pod's ``/tmp`` (its ``session_latest``
    names the session by a path inside the Pod)."""
    latest = pod_tmp / Path(RAY_TEMP_DIR).relative_to("/tmp") / "session_latest"
    try:
        target = os.readlink(latest)
    except OSError:
        unread.append(f"Ray's session logs: no Ray session under {RAY_TEMP_DIR} in the Pod")
        return {}
    inside = Path(target)
    session = (
        pod_tmp / inside.relative_to("/tmp") if inside.is_absolute() else latest.parent / inside
    )
    found: dict[str, str] = {}
    for name in RAY_SESSION_LOGS:
        text = tail(session / "logs" / name)
        if text is None:
            unread.append(f"Ray's {name}: not in the session's logs")
        else:
            found[name] = text
    return found


def tail(path: Path, limit: int = RAY_LOG_TAIL_BYTES) -> str | None:
    """The last ``limit`` bytes of ``path`` (from a line's start), None if it is not there."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return None
    if size > limit:
        data = data[data.find(b"\n") + 1 :]
    return data.decode("utf-8", "replace")


def _condition(kind: str, true: bool, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True" if true else "False",
        "reason": reason,
        "message": message,
    }


def _meminfo() -> tuple[int | None, int | None]:
    fields: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    return fields.get("MemAvailable"), fields.get("MemTotal")


def _mib(n: int | None) -> int:
    return (n or 0) // (1024 * 1024)
