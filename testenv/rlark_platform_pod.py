"""What the RLark platform stand-in makes of a Job: the Worker of ``rlark_acceptance.model.
worker`` (the one mapping the local target uses too) as a Pod of the real node (rendering
only; the controller in ``rlark_platform`` creates it). See that module for the behaviour."""

from __future__ import annotations

from typing import Any

from rlark_acceptance.model.job import JOB_NAME_LABEL, Job, job_of
from rlark_acceptance.model.worker import (
    GPU_RESOURCE,
    Worker,
    WorkerRefused,
    entry_script,
    ray_head,
    worker_of,
)

GROUP, VERSION, PLURAL, KIND = "rlark.io", "v1alpha1", "jobs", "Job"
JOB_LABEL = JOB_NAME_LABEL
CLUSTER_LABEL = "rlark.io/cluster"
# The Ray head binds to the Pod's own loopback (each Pod has its own network namespace).
# Its dashboard is Ray's default: started when the image has its dependencies (RLinf's
# does: RLinf lists its actors through the state API the dashboard serves), on loopback.
# The scripts reach bash as its arguments ($1 prepare, $2 run).
ENTRY = entry_script('eval "$1"', 'eval "$2"', ray_head(dashboard=None))
TERMINATION_GRACE_S = 10
# What the platform cannot create is reported as a FailedCreate Event, in these words.
Refused = WorkerRefused

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


def job_from(body: dict[str, Any]) -> Job:
    """The Job object as the API server returned it, read as the harness reads a Job YAML."""
    meta = body.get("metadata") or {}
    return job_of(body, f"jobs.{GROUP}/{meta.get('namespace')}/{meta.get('name')}")


def worker_of_object(body: dict[str, Any]) -> Worker:
    """The Worker RLark makes of the Job object; ``Refused`` if it can make none."""
    return worker_of(job_from(body), str((body.get("metadata") or {}).get("namespace")))


def worker_pod(body: dict[str, Any], worker: Worker, s3_dirs: dict[str, str]) -> dict[str, Any]:
    """The Worker's Pod; ``s3_dirs``: objectStorage mount name → its s3fs folder on the node."""
    meta = body["metadata"]
    res = {GPU_RESOURCE: str(worker.gpus)} if worker.gpus else {}
    volumes, mounts = [], []
    for m in worker.mounts(host_base=None):
        if m.kind == "hostPath":
            volumes.append(
                {"name": m.name, "hostPath": {"path": m.host_path, "type": "DirectoryOrCreate"}}
            )
        elif m.name in s3_dirs:
            volumes.append(
                {"name": m.name, "hostPath": {"path": s3_dirs[m.name], "type": "Directory"}}
            )
        else:
            raise Refused(f'volume "{m.name}": its object storage is not mounted on the node')
        mounts.append({"name": m.name, "mountPath": m.container_path, "readOnly": m.read_only})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": worker.pod,
            "namespace": worker.namespace,
            "labels": worker.labels,
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
            "nodeSelector": dict(worker.node_selector),
            **_cluster_affinity(worker.cluster),
            "volumes": volumes,
            "containers": [
                {
                    "name": worker.role,
                    "image": worker.image,
                    "imagePullPolicy": "IfNotPresent",
                    # The image's ENTRYPOINT is replaced, as on RLark.
                    "command": [_literal(a) for a in ("/bin/bash", "-c", ENTRY, "rlark-worker")],
                    "args": [_literal(worker.prepare_script), _literal(worker.run_script)],
                    "resources": {"limits": res, "requests": res},
                    "env": [{"name": k, "value": v} for k, v in worker.env.items()],
                    "volumeMounts": mounts,
                }
            ],
        },
    }


def _literal(text: str) -> str:
    """Kubernetes expands ``$(VAR)`` and turns ``$$`` into ``$`` in command and args: the
    scripts must reach bash as written (``kill -KILL $$`` included)."""
    return text.replace("$", "$$")


def _cluster_affinity(name: str | None) -> dict[str, Any]:
    """A role's ``cluster`` is the RLark cluster it runs in: its nodes carry that name in
    ``rlark.io/cluster``, and the Worker goes nowhere else (on top of its nodeSelector)."""
    if not name:
        return {}
    term = {"matchExpressions": [{"key": CLUSTER_LABEL, "operator": "In", "values": [name]}]}
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }
