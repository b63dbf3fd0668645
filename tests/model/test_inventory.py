"""The node inventory (``model/inventory.py``): what the cluster checks read of a node list."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.inventory import load_inventory

NODES = Path(__file__).resolve().parents[1] / "data" / "nodes" / "nodelist.yaml"


def test_a_kubectl_node_list_reads_as_the_checks_need_it() -> None:
    nodes = {n.name: n for n in load_inventory(NODES)}
    assert set(nodes) >= {"gpu-node-07", "gpu-node-09", "cpu-node-01"}
    assert (nodes["gpu-node-07"].gpus, nodes["gpu-node-07"].ready) == (8, True)
    assert nodes["gpu-node-07"].labels["rlark.io/pool"] == "gpu-a"
    assert nodes["gpu-node-09"].schedulable is False  # spec.unschedulable
    assert nodes["cpu-node-01"].gpus == 0  # no GPU resource is no GPU


def test_a_single_node_and_a_short_list_read_alike(tmp_path: Path) -> None:
    one = tmp_path / "node.yaml"
    one.write_text(
        "kind: Node\nmetadata: {name: n1, labels: {a: b}}\n"
        "status:\n  allocatable: {nvidia.com/gpu: '2'}\n"
        "  conditions: [{type: Ready, status: 'False'}]\n"
    )
    [node] = load_inventory(one)
    assert (node.name, node.gpus, node.ready, node.labels) == ("n1", 2, False, {"a": "b"})
    short = tmp_path / "short.yaml"
    short.write_text("- {name: n2, gpus: 4, labels: {kubernetes.io/hostname: n2}}\n")
    [node] = load_inventory(short)
    assert (node.name, node.gpus, node.ready) == ("n2", 4, True)


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("kind: List\nitems:\n- kind: Node\n  status: {allocatable: {nvidia.com/gpu: lots}}\n",
         4, "nvidia.com/gpu 'lots' is not a count"),
        ("kind: List\nitems:\n- kind: Node\n  status:\n    conditions: [Ready]\n",
         5, "status.conditions[0] must be a mapping"),
        ("kind: List\nitems: {a: 1}\n", 2, "items must be a list of Nodes"),
        ("kind: List\nitems:\n- kind: Node\n  metadata: {name: n, labels: {a: [1]}}\n",
         4, "a label value must be text"),
    ],
)  # fmt: skip
def test_a_node_of_the_wrong_shape_names_its_line(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_inventory(path)
    assert err.value.where == f"{path}:{line}" and says in str(err.value), str(err.value)


def test_a_document_that_is_no_inventory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("kind: Deployment\n")
    with pytest.raises(InputError, match="not a node inventory"):
        load_inventory(path)
