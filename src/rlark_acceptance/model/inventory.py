"""The node inventory the cluster checks take (3.2, 3.3's capacity, 5.7).

Either what ``kubectl get nodes -o yaml`` (or ``-o json``) prints, a ``NodeList``, so a
release engineer can check node selection against a cluster without the harness reaching
it; or a short hand-written list::

    - {name: gpu-node-07, gpus: 8, labels: {kubernetes.io/hostname: gpu-node-07}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keypath import dotted
from rlark_acceptance.model.profile import NodeSpec, parse_node
from rlark_acceptance.model.yamlsrc import YamlDoc, load_yaml

GPU_RESOURCE = "nvidia.com/gpu"


def node_from_k8s(item: dict[str, Any], doc: YamlDoc | None = None, *keys: Any) -> NodeSpec:
    """A Kubernetes Node object, reduced to what the checks read; wrong shapes are refused."""

    def refuse(message: str, *where: Any) -> NoReturn:
        raise InputError(str(doc.loc(*keys, *where)) if doc else "node", f"node {message}")

    def part(value: Any, kind: type, *where: Any) -> Any:
        if value is None:
            return kind()
        if not isinstance(value, kind):
            refuse(f"{dotted(where)} must be a {kind.__name__}", *where)
        return value

    meta = part(item.get("metadata"), dict, "metadata")
    status = part(item.get("status"), dict, "status")
    spec = part(item.get("spec"), dict, "spec")
    labels = part(meta.get("labels"), dict, "metadata", "labels")
    conditions = part(status.get("conditions"), list, "status", "conditions")
    allocatable = part(status.get("allocatable"), dict, "status", "allocatable")
    for i, c in enumerate(conditions):
        # A condition that is not {type, status} text would silently read as "not Ready".
        if not isinstance(c, dict):
            refuse(
                f"status.conditions[{i}] must be a mapping of type, status",
                "status",
                "conditions",
                i,
            )
        for name in ("type", "status"):
            if not isinstance(c.get(name), str):
                where = ("status", "conditions", i, name)
                refuse(f"status.conditions[{i}].{name} must be text", *where)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    name = meta.get("name", "")
    if not isinstance(name, str):
        refuse("metadata.name must be text", "metadata", "name")
    for k, v in labels.items():
        if isinstance(v, dict | list) or v is None:
            refuse(f"metadata.labels {k}: a label value must be text", "metadata", "labels", k)
    raw_gpus = str(allocatable.get(GPU_RESOURCE, "0")) or "0"
    if not raw_gpus.isdigit() or len(raw_gpus) > 6:
        place = str(doc.loc(*keys, "status", "allocatable")) if doc else "node"
        raise InputError(place, f"node allocatable {GPU_RESOURCE} {raw_gpus!r} is not a count")
    return NodeSpec(
        name=name,
        labels={str(k): str(v) for k, v in labels.items()},
        gpus=int(raw_gpus),
        ready=ready,
        schedulable=spec.get("unschedulable", False) is not True,
    )


def load_inventory(path: str | Path) -> list[NodeSpec]:
    doc = load_yaml(path, require_mapping=False)
    data = doc.data
    if isinstance(data, dict) and data.get("kind") in ("NodeList", "List"):
        items = data.get("items") or []
        if not isinstance(items, list):
            raise InputError(str(doc.loc("items")), "items must be a list of Nodes")
        nodes = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise InputError(str(doc.loc("items", i)), "a Node must be a mapping")
            nodes.append(node_from_k8s(item, doc, "items", i))
        return nodes
    if isinstance(data, dict) and data.get("kind") == "Node":
        return [node_from_k8s(data, doc)]
    if isinstance(data, list):
        return [parse_node(doc, n, i, default_name="") for i, n in enumerate(data)]
    raise InputError(str(path), "not a node inventory: expected a NodeList or a list of nodes")
