"""What the RLark platform stand-in makes of a Job: its Worker Pod (rendering only; the
controller in ``rlark_platform`` creates it). See that module for the behaviour listed."""

from __future__ import annotations

import shlex
from typing import Any

GROUP, VERSION, PLURAL, KIND = "rlark.io", "v1alpha1", "jobs", "Job"
JOB_LABEL, ROLE_LABEL = "rlark.io/job-name", "rlark.io/role"
GPU_RESOURCE = "nvidia.com/gpu"
CLUSTER_LABEL = "rlark.io/cluster"
# The Ray head binds to the Pod's own loopback (each Pod has its own network namespace).
# Its dashboard is Ray's default: started when the image has its dependencies (RLinf's
# does: RLinf lists its actors through the state API the dashboard serves), on loopback.
RAY_START = [
    "ray",
    "start",
    "--head",
    "--node-ip-address=127.0.0.1",
    "--num-gpus=0",
    "--object-store-memory=100000000",
    "--dashboard-host=127.0.0.1",
    "--disable-usage-stats",
]
# One bash is PID 1: prepare ($1) in this shell so its exports reach the run script, the
# Ray head, the run script ($2) in the background so a SIGTERM is handled at once (bash as
# PID 1 otherwise ignores it until the run script ends): the run script gets it, and once
# PID 1 exits the kernel ends every other process of the Pod (its Ray head).
ENTRY = """\
trap 'kill -TERM $run 2>/dev/null; wait $run; exit 143' TERM
eval "$1" || exit $?
{ray} || exit $?
(eval "$2") &
run=$!
wait $run
"""
TERMINATION_GRACE_S = 10

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "job", "kind": KIND, "listKind": "JobList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                # RLark's real schema is internal: the stand-in keeps whatever the Job says.
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


class Refused(Exception):
    """The platform cannot create the Worker (reported as a FailedCreate Event)."""


def head_role(job: dict[str, Any]) -> dict[str, Any] | None:
    spec = job.get("spec") or {}
    head = spec.get("headRole")
    return next((r for r in spec.get("roles") or [] if r.get("name") == head), None)


def pod_name(job: dict[str, Any], role: dict[str, Any]) -> str:
    return f"{job['metadata']['name']}-{role['name']}-0"


def worker_pod(
    job: dict[str, Any], role: dict[str, Any], s3_dirs: dict[str, str]
) -> dict[str, Any]:
    """The Pod RLark creates for the Header role; ``s3_dirs``: mount name → node dir."""
    meta, spec = job["metadata"], job.get("spec") or {}
    gpus = int(role.get("gpus") or 0)
    res = {GPU_RESOURCE: str(gpus)} if gpus else {}
    volumes, mounts = [], []
    for m in role.get("mounts") or []:
        name, kind = str(m.get("name")), m.get("type")
        if kind == "hostPath":
            path = str(m.get("hostPath") or "")
            if not path.startswith("/"):
                raise Refused(f'volume "{name}": hostPath "{path}" is not an absolute path')
            volumes.append({"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}})
        elif kind == "objectStorage" and name in s3_dirs:
            volumes.append({"name": name, "hostPath": {"path": s3_dirs[name], "type": "Directory"}})
        else:
            raise Refused(f'volume "{name}": type {kind!r} is not supported here')
        mounts.append(
            {
                "name": name,
                "mountPath": str(m.get("containerPath")),
                "readOnly": bool(m.get("readOnly")),
            }
        )
    entry = ENTRY.format(ray=" ".join(shlex.quote(a) for a in RAY_START))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job, role),
            "namespace": meta["namespace"],
            "labels": {JOB_LABEL: meta["name"], ROLE_LABEL: str(role["name"])},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
            "automountServiceAccountToken": False,
            # The sandbox's pause process is PID 1 and reaps orphans; the Worker's shell is
            # an ordinary process, so a signal it sends itself (kill -KILL $$) or SIGTERM from
            # the runtime acts on it as on any process (PID 1 would ignore both).
            "shareProcessNamespace": True,
            "enableServiceLinks": False,
            "nodeSelector": role.get("nodeSelector") or {},
            **_cluster_affinity(role),
            "volumes": volumes,
            "containers": [
                {
                    "name": str(role["name"]),
                    "image": role.get("image"),
                    "imagePullPolicy": "IfNotPresent",
                    # The image's ENTRYPOINT is replaced, as on RLark.
                    "command": [_literal(a) for a in ("/bin/bash", "-c", entry, "rlark-worker")],
                    "args": [
                        _literal(str(role.get("prepareScript") or "")),
                        _literal(str(spec.get("runScript"))),
                    ],
                    "resources": {"limits": res, "requests": res},
                    "env": [
                        {"name": str(e["name"]), "value": str(e.get("value") or "")}
                        for e in role.get("env") or []
                    ],
                    "volumeMounts": mounts,
                }
            ],
        },
    }


def _literal(text: str) -> str:
    """Kubernetes expands ``$(VAR)`` and turns ``$$`` into ``$`` in command and args: the
    scripts must reach bash as written (``kill -KILL $$`` included)."""
    return text.replace("$", "$$")


def _cluster_affinity(role: dict[str, Any]) -> dict[str, Any]:
    """A role's ``cluster`` is the RLark cluster it runs in: its nodes carry that name in
    ``rlark.io/cluster``, and the Worker goes nowhere else (on top of its nodeSelector)."""
    name = role.get("cluster")
    if not name:
        return {}
    term = {"matchExpressions": [{"key": CLUSTER_LABEL, "operator": "In", "values": [str(name)]}]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }
