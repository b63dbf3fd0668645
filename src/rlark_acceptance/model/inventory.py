"""The node inventory the cluster checks take (3.2, 3.3's capacity, 5.7).

Either what ``kubectl get nodes -o yaml`` (or ``-o json``) prints, a ``NodeList``, so a
release engineer can check node selection against a cluster without the harness reaching
it; or a short hand-written list::

    - {name: gpu-node-07, gpus: 8, labels: {kubernetes.io/hostname: gpu-node-07}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.model.yamlsrc import load_yaml

GPU_RESOURCE = "nvidia.com/gpu"


def node_from_k8s(item: dict[str, Any]) -> NodeSpec:
    """A Kubernetes Node object, reduced to what the checks read."""
    meta = item.get("metadata") or {}
    status = item.get("status") or {}
    spec = item.get("spec") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    allocatable = status.get("allocatable") or {}
    return NodeSpec(
        name=str(meta.get("name", "")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        gpus=int(str(allocatable.get(GPU_RESOURCE, "0")) or 0),
        ready=ready,
        schedulable=not spec.get("unschedulable", False),
    )


def load_inventory(path: str | Path) -> list[NodeSpec]:
    doc = load_yaml(path, require_mapping=False)
    data = doc.data
    try:
        if isinstance(data, dict) and data.get("kind") in ("NodeList", "List"):
            return [node_from_k8s(i) for i in data.get("items") or []]
        if isinstance(data, dict) and data.get("kind") == "Node":
            return [node_from_k8s(data)]
        if isinstance(data, list):
            return [
                NodeSpec(
                    name=str(n["name"]),
                    labels={str(k): str(v) for k, v in (n.get("labels") or {}).items()},
                    gpus=int(n.get("gpus", 0)),
                    ready=bool(n.get("ready", True)),
                    schedulable=bool(n.get("schedulable", True)),
                )
                for n in data
            ]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(str(path), f"not a node inventory: {exc}") from None
    raise InputError(str(path), "not a node inventory: expected a NodeList or a list of nodes")
