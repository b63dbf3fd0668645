"""Tests of rlark_acceptance.rlinf.placement: RLinf's placement syntax, its errors, real configs.

The expectations for the real configs (tests/data/rlinf-configs, a copy of the shared
sample) were derived by hand from each file's ``cluster`` section, not with the code
under test.

Over ~400 lines: RLinf's placement grammar has many forms and refusals; each keeps its own
small test, and the real configs' table is data.
"""

from __future__ import annotations

import doctest
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlark_acceptance.rlinf import placement as placement_module
from rlark_acceptance.rlinf.placement import (
    ClusterSummary,
    PlacementProblem,
    dotted,
    redirect_reasons,
    summarize_cluster,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "rlinf-configs"
CP = ("cluster", "component_placement")

GPU_GROUP = {"label": "gpu", "node_ranks": 0}
FRANKA_GROUP = {
    "label": "franka",
    "node_ranks": 0,
    "hardware": {"type": "Franka", "configs": [{"robot_ip": "ROBOT_IP", "node_rank": 0}]},
}


def one(value: Any, key: Any = "actor", **cluster: Any) -> ClusterSummary:
    """A one-node cluster placing ``key`` with ``value``."""
    return summarize_cluster({"num_nodes": 1, "component_placement": {key: value}, **cluster})


def messages(summary: ClusterSummary) -> list[str]:
    return [p.message for p in summary.problems]


# --- valid syntax ------------------------------------------------------------------------

# (placement value, resource ranks, uses_all, process count, gpus_required)
VALID_SHORT = [
    ("0-7", tuple(range(8)), False, 8, 8),
    ("0", (0,), False, 1, 1),
    (0, (0,), False, 1, 1),  # YAML int: `actor: 0`
    (3, (3,), False, 1, 4),
    ("1-1", (1,), False, 1, 2),
    ("0-0", (0,), False, 1, 1),
    ("all", None, True, None, None),
    ("ALL", None, True, None, None),
    (" all ", None, True, None, None),
    ("0-3,4-7", tuple(range(8)), False, 8, 8),
    ("0-3, 4-7", tuple(range(8)), False, 8, 8),
    (" 0 - 3 , 4 - 7 ", tuple(range(8)), False, 8, 8),
    ("0-3,", (0, 1, 2, 3), False, 4, 4),  # RLinf skips empty parts
    ("0-1:0-3", (0, 1), False, 4, 2),  # 2 processes per GPU
    ("0-3:0-1", (0, 1, 2, 3), False, 2, 4),  # 2 GPUs per process
    ("0-3:0-3,4-7:4-7", tuple(range(8)), False, 8, 8),
    ("0-1:0-3,3-5,7-10:7-14", (0, 1, 3, 4, 5, 7, 8, 9, 10), False, 15, 11),  # placement.rst
    ("0-1 : 0-3", (0, 1), False, 4, 2),
    ("2,5", (2, 5), False, 2, 6),
    ("all:0-7", None, True, 8, None),
]


@pytest.mark.parametrize(("value", "ranks", "uses_all", "procs", "gpus"), VALID_SHORT)
def test_short_form(value: Any, ranks: Any, uses_all: bool, procs: Any, gpus: Any) -> None:
    summary = one(value)
    assert summary.problems == ()
    (p,) = summary.placements
    assert p.resource_ranks == ranks
    assert p.uses_all is uses_all
    assert p.process_count == procs
    assert p.resource_kind == "accelerator"
    assert p.node_group is None
    assert p.valid
    assert summary.gpus_required == gpus
    assert summary.gpus_all is uses_all
    assert summary.num_nodes == 1
    assert summary.real_robot is False


@pytest.mark.parametrize(
    ("key", "components"),
    [
        ("actor", ("actor",)),
        ("actor,rollout", ("actor", "rollout")),
        ("actor,env,rollout", ("actor", "env", "rollout")),
        ("actor, env, rollout", ("actor", "env", "rollout")),
        (" env ,rollout ", ("env", "rollout")),
    ],
)
def test_component_keys(key: str, components: tuple[str, ...]) -> None:
    summary = one("0-3", key=key)
    assert summary.problems == ()
    assert summary.placements[0].components == components
    assert summary.placements[0].path == (*CP, key)


def test_several_keys_take_the_highest_gpu() -> None:
    summary = summarize_cluster(
        {"num_nodes": 1, "component_placement": {"actor": "0-7", "env": "0-3", "rollout": "4-7"}}
    )
    assert summary.problems == ()
    assert summary.gpus_required == 8
    assert [p.components for p in summary.placements] == [("actor",), ("env",), ("rollout",)]


def test_all_anywhere_makes_gpus_all() -> None:
    summary = summarize_cluster(
        {"num_nodes": 1, "component_placement": {"actor": "0-1", "rollout": 7, "reward": "all"}}
    )
    assert summary.gpus_all is True
    assert summary.gpus_required is None


# (node group entries, component value, kind, hardware type, labels, gpus_required)
VALID_GROUP_FORM = [
    pytest.param(
        [GPU_GROUP],
        {"node_group": "gpu", "placement": 0},
        "accelerator",
        None,
        ("gpu",),
        1,
        id="gpu-group",
    ),
    pytest.param(
        [GPU_GROUP],
        {"node_group": "gpu", "placement": "0-3"},
        "accelerator",
        None,
        ("gpu",),
        4,
        id="gpu-group-range",
    ),
    pytest.param(
        [FRANKA_GROUP],
        {"node_group": "franka", "placement": 0},
        "hardware",
        "Franka",
        ("franka",),
        0,
        id="robot-not-gpu",
    ),
    pytest.param(
        [FRANKA_GROUP],
        {"node_group": "franka", "placement": "0-0:0-1"},
        "hardware",
        "Franka",
        ("franka",),
        0,
        id="robot-shared",
    ),
    pytest.param(
        [],
        {"node_group": "node", "placement": "0:0-3"},
        "node",
        None,
        ("node",),
        0,
        id="special-node-group",
    ),
    pytest.param(
        [],
        {"node_group": "cluster", "placement": "0-1"},
        "accelerator",
        None,
        ("cluster",),
        2,
        id="explicit-default-group",
    ),
    pytest.param([], {"placement": "0-5"}, "accelerator", None, (), 6, id="no-node-group"),
    pytest.param(
        [{"label": 4090, "node_ranks": 0}],
        {"node_group": "4090", "placement": 1},
        "accelerator",
        None,
        ("4090",),
        2,
        id="int-label",
    ),
    pytest.param(
        [{"label": "4090", "node_ranks": 0}],
        {"node_group": 4090, "placement": 1},
        "accelerator",
        None,
        ("4090",),
        2,
        id="int-node-group",
    ),
    pytest.param(
        [{"label": "cpu", "node_ranks": 0, "ignore_hardware": True}],
        {"node_group": "cpu", "placement": 0},
        "node",
        None,
        ("cpu",),
        0,
        id="ignore-hardware",
    ),
    pytest.param(
        [GPU_GROUP, {"label": "b", "node_ranks": 0}],
        {"node_group": "gpu,b", "placement": "0-3"},
        "accelerator",
        None,
        ("gpu", "b"),
        4,
        id="comma-groups",
    ),
    pytest.param(
        [GPU_GROUP, {"label": "b", "node_ranks": 0}],
        {"node_group": ["gpu", "b"], "placement": "0-3"},
        "accelerator",
        None,
        ("gpu", "b"),
        4,
        id="list-groups",
    ),
    # GPUs and robots in one placement: which ranks are GPUs depends on the node, so all count.
    pytest.param(
        [GPU_GROUP, FRANKA_GROUP],
        {"node_group": "gpu, franka", "placement": "0-1"},
        "accelerator",
        "Franka",
        ("gpu", "franka"),
        2,
        id="mixed-gpu-robot",
    ),
    pytest.param(
        [FRANKA_GROUP],
        {"node_group": "franka,node", "placement": "0"},
        "node",
        "Franka",
        ("franka", "node"),
        0,
        id="node-wins",
    ),
    pytest.param(
        [{"label": "arm", "node_ranks": 0, "hardware_type": "Franka"}],
        {"node_group": "arm", "placement": 0},
        "hardware",
        "Franka",
        ("arm",),
        0,
        id="bare-hardware-type",
    ),
]


@pytest.mark.parametrize(("groups", "value", "kind", "hw_type", "labels", "gpus"), VALID_GROUP_FORM)
def test_node_group_form(
    groups: list[Any], value: Any, kind: str, hw_type: Any, labels: Any, gpus: Any
) -> None:
    summary = one(value, key="env", node_groups=groups)
    assert messages(summary) == []
    (p,) = summary.placements
    assert p.resource_kind == kind
    assert p.hardware_type == hw_type
    assert p.node_group_labels == labels
    assert p.node_group == (",".join(labels) if labels else None)
    assert summary.gpus_required == gpus


def test_robot_and_node_ranks_are_not_gpus() -> None:
    summary = summarize_cluster(
        {
            "num_nodes": 1,
            "component_placement": {
                "actor,rollout": {"node_group": "gpu", "placement": "0-1"},
                "env": {"node_group": "franka", "placement": "0-0:0-3"},
                "agent": {"node_group": "node", "placement": "0:0-199"},
            },
            "node_groups": [GPU_GROUP, FRANKA_GROUP],
        }
    )
    assert messages(summary) == []
    assert summary.gpus_required == 2
    assert summary.gpus_all is False
    assert summary.real_robot is True
    assert summary.hardware_groups == ("franka",)
    assert redirect_reasons(summary) == ["node_groups=2"]


def test_robot_with_all_is_not_gpus_all() -> None:
    summary = one({"node_group": "franka", "placement": "all"}, node_groups=[FRANKA_GROUP])
    assert summary.gpus_all is False
    assert summary.gpus_required == 0  # docs/contract.md §3: no component on a GPU
    assert summary.real_robot is True


def test_node_groups_are_parsed() -> None:
    summary = summarize_cluster(
        {
            "num_nodes": 3,
            "component_placement": {"actor": {"node_group": "a800", "placement": "0-7"}},
            "node_groups": [
                {
                    "label": "a800",
                    "node_ranks": "0-1",
                    "env_configs": [
                        {
                            "node_ranks": 0,
                            "python_interpreter_path": "/opt/venv/bin/python3",
                            "env_vars": [{"GLOO_SOCKET_IFNAME": "eth0"}],
                        }
                    ],
                },
                {
                    "label": "franka",
                    "node_ranks": "all",
                    "hardware": {
                        "type": "Franka",
                        "configs": [
                            {"robot_ip": "a", "node_rank": 1},
                            {"robot_ip": "b", "node_rank": 2},
                        ],
                    },
                },
            ],
        }
    )
    assert messages(summary) == []
    a800, franka = summary.node_groups
    assert (a800.label, a800.node_ranks, a800.hardware_type, a800.resource_kind) == (
        "a800",
        (0, 1),
        None,
        "accelerator",
    )
    assert a800.env_configs[0].node_ranks == (0,)
    assert a800.env_configs[0].env_var_keys == ("GLOO_SOCKET_IFNAME",)
    assert a800.env_configs[0].python_interpreter_path == "/opt/venv/bin/python3"
    assert (franka.node_ranks, franka.hardware_type, franka.hardware_configs) == (
        (0, 1, 2),
        "Franka",
        2,
    )
    assert franka.hardware_node_ranks == (1, 2)
    assert franka.path == ("cluster", "node_groups", 1)
    assert summary.real_robot is True
    assert redirect_reasons(summary) == ["num_nodes=3", "node_groups=2"]


# --- errors ------------------------------------------------------------------------------

# (placement value, expected text in the one problem)
BAD_SHORT = [
    ("7-0", "reversed range '7-0'"),
    ("0-3,7-4", "reversed range '7-4'"),
    ("0-3:3-0", "reversed range '3-0'"),
    ("-1", "negative resource rank '-1'"),
    (-1, "negative resource rank '-1'"),
    ("0--1", "negative resource rank"),
    ("0-3:-1-2", "negative process rank"),
    ("abc", "'abc' is not a number or a range"),
    ("0-x", "'0-x' is not a number or a range"),
    ("1.5", "'1.5' is not a number or a range"),
    ("0-1-2", "'0-1-2' is not a number or a range"),
    ("gpu0", "not a number"),
    ("0-3:abc", "process rank 'abc'"),
    (1.5, "must be a rank string"),
    (True, "not the boolean True"),
    ([0, 1], "must be a rank string"),
    (None, "placement is empty"),
    ("", "placement is empty"),
    (" , ", "placement is empty"),
    ("0-3:all", "'all' is not allowed for process ranks"),
    ("0-3:ALL", "'all' is not allowed for process ranks"),
    ("0-3:1-4", "are not continuous: expected them to start at 0"),
    ("0-3,4-7:5-8", "are not continuous: expected them to start at 4"),
    ("0-3:0-3,4-7:2-5", "repeat earlier ones"),
    ("0-1:0-1,2-3:0-1", "repeat earlier ones"),
    ("0-1:0-2", "maps 3 processes to 2 resources"),
    ("0-2:0-1", "maps 2 processes to 3 resources"),
    ("4-7,0-3", "come after higher ones"),
    ("0-3,2-5", "repeat ranks of an earlier segment"),
    ("0-3,3", "repeat ranks of an earlier segment"),
    ("all,0-3", "'all' cannot be combined"),
    ("0-3,all", "'all' cannot be combined"),
    ("0:1:2", "more than one ':'"),
    ("0-999999999", "implausibly large"),
]


@pytest.mark.parametrize(("value", "expected"), BAD_SHORT)
def test_short_form_errors(value: Any, expected: str) -> None:
    summary = one(value)
    assert len(summary.problems) == 1, messages(summary)
    (problem,) = summary.problems
    assert expected in problem.message
    assert problem.message.startswith("cluster.component_placement.actor: ")
    assert problem.path == (*CP, "actor")
    assert summary.placements[0].valid is False
    assert summary.placements[0].process_count is None


def test_message_names_component_and_text() -> None:
    (problem,) = one("7-0").problems
    assert problem == PlacementProblem(
        "cluster.component_placement.actor: reversed range '7-0' in resource rank", (*CP, "actor")
    )


def test_docs_agent_example_breaks_rlinfs_multiple_rule() -> None:
    # placement.rst's `0-1:0-200,2-3:201-511` puts 201 and 311 processes on 2 nodes:
    # RLinf's parser asserts one count divides the other, so both segments are refused.
    summary = one({"node_group": "node", "placement": "0-1:0-200,2-3:201-511"}, key="agent")
    assert len(summary.problems) == 2
    assert all("one count must be a multiple" in m for m in messages(summary))
    ok = one({"node_group": "node", "placement": "0-1:0-199,2-3:200-399"}, key="agent")
    assert ok.problems == ()
    assert ok.placements[0].process_count == 400


def test_node_placement_cannot_span_nodes() -> None:
    summary = one({"node_group": "node", "placement": "0-1:0"}, key="agent")
    assert any("cannot span several nodes" in m for m in messages(summary))
    # The same text on GPUs is fine: one process may use several GPUs.
    assert one("0-1:0").problems == ()


# (cluster section, expected text, expected path)
BAD_CLUSTER = [
    pytest.param(
        {"num_nodes": "many", "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-text",
    ),
    pytest.param(
        {"num_nodes": 0, "component_placement": {"a": 0}},
        "positive integer, not 0",
        ("cluster", "num_nodes"),
        id="num-nodes-zero",
    ),
    pytest.param(
        {"num_nodes": -2, "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-negative",
    ),
    pytest.param(
        {"num_nodes": True, "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-bool",
    ),
    pytest.param(
        {"num_nodes": 2.0, "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-float",
    ),
    pytest.param(
        {"num_nodes": "1", "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-string",
    ),
    pytest.param(
        {"num_nodes": None, "component_placement": {"a": 0}},
        "positive integer",
        ("cluster", "num_nodes"),
        id="num-nodes-null",
    ),
    pytest.param(
        {"component_placement": {"a": 0}},
        "num_nodes is missing",
        ("cluster",),
        id="num-nodes-missing",
    ),
    pytest.param(
        {"num_nodes": 1}, "component_placement is missing", ("cluster",), id="placement-missing"
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": None},
        "component_placement is missing",
        CP,
        id="placement-null",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {}},
        "no component is placed",
        CP,
        id="placement-empty",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": "actor: 0-7"},
        "must be a mapping",
        CP,
        id="placement-string",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": [{"actor": 0}]},
        "must be a mapping",
        CP,
        id="placement-list",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"actor": 0, "actor,rollout": 1}},
        "component 'actor' is placed twice",
        (*CP, "actor,rollout"),
        id="duplicate",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"actor,": 0}},
        "empty component name",
        (*CP, "actor,"),
        id="empty-name",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"env": {"node_group": "gpu", "placement": 0}}},
        "unknown node_group 'gpu' (declared: none)",
        (*CP, "env", "node_group"),
        id="unknown-group",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"env": {"node_group": "robot", "placement": 0}},
            "node_groups": [FRANKA_GROUP],
        },
        "unknown node_group 'robot' (declared: franka)",
        (*CP, "env", "node_group"),
        id="unknown-group-declared",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"env": {"node_group": "gpu"}},
            "node_groups": [GPU_GROUP],
        },
        "placement is missing",
        (*CP, "env"),
        id="group-form-no-placement",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"env": {"node_group": "gpu", "placement": "5-2"}},
            "node_groups": [GPU_GROUP],
        },
        "reversed range '5-2'",
        (*CP, "env", "placement"),
        id="group-form-reversed",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"env": {"node_group": None, "placement": 0}}},
        "node_group is missing",
        (*CP, "env", "node_group"),
        id="group-null",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"env": {"node_group": 1.5, "placement": 0}}},
        "node_group must be a string",
        (*CP, "env", "node_group"),
        id="group-float",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"env": {"node_grop": "franka", "placement": 0}}},
        "unknown key 'node_grop'",
        (*CP, "env", "node_grop"),
        id="group-form-typo",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"a": 0}, "node_groups": {"label": "x"}},
        "must be a list",
        ("cluster", "node_groups"),
        id="groups-not-list",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"a": 0}, "node_groups": ["gpu"]},
        "must be a mapping",
        ("cluster", "node_groups", 0),
        id="group-not-mapping",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "node", "node_ranks": 0}],
        },
        "label 'node' is reserved",
        ("cluster", "node_groups", 0, "label"),
        id="reserved-node",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "cluster", "node_ranks": 0}],
        },
        "label 'cluster' is reserved",
        ("cluster", "node_groups", 0, "label"),
        id="reserved-cluster",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [GPU_GROUP, {"label": "gpu", "node_ranks": 0}],
        },
        "declared twice",
        ("cluster", "node_groups", 1, "label"),
        id="duplicate-label",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"a": 0}, "node_groups": [{"node_ranks": 0}]},
        "label is missing",
        ("cluster", "node_groups", 0, "label"),
        id="no-label",
    ),
    pytest.param(
        {"num_nodes": 1, "component_placement": {"a": 0}, "node_groups": [{"label": "g"}]},
        "node_ranks is missing",
        ("cluster", "node_groups", 0),
        id="no-node-ranks",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 1}],
        },
        "node rank '1' is outside 0-0",
        ("cluster", "node_groups", 0, "node_ranks"),
        id="node-rank-out-of-range",
    ),
    pytest.param(
        {
            "num_nodes": 2,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": "1-0"}],
        },
        "reversed range '1-0'",
        ("cluster", "node_groups", 0, "node_ranks"),
        id="node-ranks-reversed",
    ),
    pytest.param(
        {
            "num_nodes": 2,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": [0, 1]}],
        },
        "must be a rank string",
        ("cluster", "node_groups", 0, "node_ranks"),
        id="node-ranks-yaml-list",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 0, "gpus": 8}],
        },
        "unknown node group field 'gpus'",
        ("cluster", "node_groups", 0, "gpus"),
        id="group-unknown-field",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 0, "hardware": "Franka"}],
        },
        "hardware must be a mapping",
        ("cluster", "node_groups", 0, "hardware"),
        id="hardware-not-mapping",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 0, "hardware": {"type": "Franka"}}],
        },
        "hardware.configs is missing",
        ("cluster", "node_groups", 0, "hardware"),
        id="hardware-no-configs",
    ),
    pytest.param(
        {
            "num_nodes": 2,
            "component_placement": {"a": 0},
            "node_groups": [
                {
                    "label": "g",
                    "node_ranks": 0,
                    "hardware": {"type": "Franka", "configs": [{"node_rank": 1}]},
                }
            ],
        },
        "node_rank 1 is not one of the group's node_ranks",
        ("cluster", "node_groups", 0, "hardware", "configs", 0, "node_rank"),
        id="hardware-node-outside-group",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{**FRANKA_GROUP, "ignore_hardware": True}],
        },
        "ignore_hardware is true",
        ("cluster", "node_groups", 0, "hardware"),
        id="hardware-and-ignore",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [FRANKA_GROUP, {**FRANKA_GROUP, "label": "f2"}],
        },
        "already declared by node group 'franka'",
        ("cluster", "node_groups", 1, "hardware"),
        id="hardware-twice",
    ),
    pytest.param(
        {
            "num_nodes": 2,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 0, "env_configs": [{"node_ranks": 1}]}],
        },
        "subset of the group's node_ranks",
        ("cluster", "node_groups", 0, "env_configs", 0, "node_ranks"),
        id="env-config-outside-group",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [{"label": "g", "node_ranks": 0, "env_configs": {"node_ranks": 0}}],
        },
        "env_configs must be a list",
        ("cluster", "node_groups", 0, "env_configs"),
        id="env-configs-not-list",
    ),
    pytest.param(
        {
            "num_nodes": 1,
            "component_placement": {"a": 0},
            "node_groups": [
                {
                    "label": "g",
                    "node_ranks": 0,
                    "env_configs": [{"node_ranks": 0, "env_vars": [{"A": 1}, {"A": 2}]}],
                }
            ],
        },
        "env var 'A' is set twice",
        ("cluster", "node_groups", 0, "env_configs", 0, "env_vars", 1),
        id="env-var-twice",
    ),
]


@pytest.mark.parametrize(("cluster", "expected", "path"), BAD_CLUSTER)
def test_cluster_errors(cluster: dict[str, Any], expected: str, path: tuple[Any, ...]) -> None:
    summary = summarize_cluster(cluster)
    matching = [p for p in summary.problems if expected in p.message]
    assert matching, messages(summary)
    assert matching[0].path == path
    assert matching[0].message.startswith(dotted(path) + ": ")


@pytest.mark.parametrize(
    ("value", "num_nodes"),
    [("many", None), (0, None), (True, None), (1, 1), (2, 2), (16, 16)],
)
def test_num_nodes(value: Any, num_nodes: int | None) -> None:
    summary = summarize_cluster({"num_nodes": value, "component_placement": {"a": 0}})
    assert summary.num_nodes == num_nodes
    assert (summary.problems == ()) is (num_nodes is not None)


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        (None, "cluster: the cluster section is missing"),
        ([1, 2], "cluster: must be a mapping, not list"),
        ("num_nodes: 1", "cluster: must be a mapping, not str"),
    ],
)
def test_section_missing_or_malformed(cluster: Any, expected: str) -> None:
    summary = summarize_cluster(cluster)
    assert messages(summary) == [expected]
    assert summary.placements == () and summary.num_nodes is None


# --- redirect reasons (check 0.4) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "reasons"),
    [
        ({"num_nodes": 1, "component_placement": {"a": "all"}}, []),
        ({"num_nodes": 2, "component_placement": {"a": "all"}}, ["num_nodes=2"]),
        ({"num_nodes": "two", "component_placement": {"a": "all"}}, []),  # a problem instead
        (
            {
                "num_nodes": 1,
                "component_placement": {"a": {"node_group": "gpu", "placement": 0}},
                "node_groups": [GPU_GROUP],
            },
            [],
        ),
        (
            {
                # The reserved `node` group is implicit: it is no second node group.
                "num_nodes": 1,
                "component_placement": {
                    "a": {"node_group": "gpu", "placement": 0},
                    "agent": {"node_group": "node", "placement": "0:0-3"},
                },
                "node_groups": [GPU_GROUP],
            },
            [],
        ),
        (
            {
                "num_nodes": 3,
                "component_placement": {"a": 0},
                "node_groups": [
                    {"label": "x", "node_ranks": 0},
                    {"label": "y", "node_ranks": 1},
                    {"label": "z", "node_ranks": 2},
                ],
            },
            ["num_nodes=3", "node_groups=3"],
        ),
    ],
)
def test_redirect_reasons(cluster: dict[str, Any], reasons: list[str]) -> None:
    assert redirect_reasons(summarize_cluster(cluster)) == reasons


# --- never raises --------------------------------------------------------------------------

GARBAGE: list[Any] = [
    None,
    0,
    1,
    -1,
    True,
    1.5,
    "",
    "x",
    "all",
    [],
    [None],
    {},
    {None: None},
    (1, 2),
    {"num_nodes": [1]},
    {"num_nodes": {"a": 1}, "component_placement": {"a": {"b": {"c": None}}}},
    {"num_nodes": 1, "component_placement": {None: None, 3: 3, True: "all", 1.5: [1]}},
    {"num_nodes": 1, "component_placement": {("a", "b"): "0-1"}},
    {"num_nodes": 1, "component_placement": {"a": {"node_group": [[1]], "placement": {}}}},
    {"num_nodes": 1, "component_placement": {"a": {"node_group": {"x": 1}, "placement": []}}},
    {"num_nodes": 1, "component_placement": {"a": {None: 1}}},
    {"num_nodes": 1, "node_groups": [None, 1, "x", [], {}, {"label": []}, {"label": {}}]},
    {"num_nodes": 1, "node_groups": [{"label": "g", "node_ranks": {}, "hardware": []}]},
    {
        "num_nodes": 1,
        "node_groups": [
            {"label": "g", "node_ranks": 0, "hardware": {"type": None, "configs": [None, {}, 1]}}
        ],
    },
    {"num_nodes": 1, "node_groups": [{"label": "g", "node_ranks": 0, "hardware": {"configs": 5}}]},
    {
        "num_nodes": 1,
        "node_groups": [
            {
                "label": "g",
                "node_ranks": 0,
                "env_configs": [
                    None,
                    {},
                    {"node_ranks": "all"},
                    {"node_ranks": 0, "env_vars": "A=1"},
                    {"node_ranks": 0, "env_vars": [None, {}, {"a": 1, "b": 2}]},
                    {"x": 1},
                ],
            }
        ],
    },
    {"num_nodes": 10**100, "component_placement": {"a": 10**100}},
    {"num_nodes": 1, "component_placement": {"a": "9" * 5000}},
    {"num_nodes": 10**5000, "component_placement": {10**5000: 10**5000}},
    {"num_nodes": 1, "component_placement": {"a": -(10**5000)}},
    {
        "num_nodes": 1,
        "component_placement": {"a": {"node_group": 10**5000, "placement": "0-" + "9" * 5000}},
        "node_groups": [{"label": 10**5000, "node_ranks": 10**5000}],
    },
    {"num_nodes": 1, "component_placement": {"a": "0-3:" * 1000}},
    {"num_nodes": 1, "component_placement": {"a": ",".join(str(i) for i in range(2000))}},
    {"num_nodes": 1, "component_placement": {"a": "\x00\uffff-\u0663"}},
]


def _random_value(rng: random.Random, depth: int) -> Any:
    atoms: list[Any] = [
        None,
        True,
        0,
        1,
        2,
        -1,
        7,
        1.5,
        "",
        "all",
        "0-7",
        "7-0",
        "0-1:0-3",
        "a,b",
        "-1",
        "0:all",
        "franka",
        "gpu",
        "node",
        "cluster",
        "Franka",
        "label",
        "placement",
    ]
    if depth <= 0 or rng.random() < 0.4:
        return rng.choice(atoms)
    if rng.random() < 0.5:
        return [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    keys = [
        "num_nodes",
        "component_placement",
        "node_groups",
        "label",
        "node_ranks",
        "hardware",
        "type",
        "configs",
        "node_rank",
        "node_group",
        "placement",
        "env_configs",
        "env_vars",
        "ignore_hardware",
        "hardware_type",
        "actor",
        "env,rollout",
        0,
        None,
    ]
    return {rng.choice(keys): _random_value(rng, depth - 1) for _ in range(rng.randint(0, 4))}


def _random_cluster(rng: random.Random) -> Any:
    return {
        "num_nodes": _random_value(rng, 0),
        "component_placement": _random_value(rng, 3),
        "node_groups": _random_value(rng, 4),
    }


@pytest.mark.parametrize(
    "cluster", GARBAGE + [_random_cluster(random.Random(s)) for s in range(300)]
)
def test_never_raises(cluster: Any) -> None:
    summary = summarize_cluster(cluster)
    assert isinstance(summary, ClusterSummary)
    redirect_reasons(summary)
    for problem in summary.problems:
        assert isinstance(problem.message, str) and problem.message
        assert problem.path[:1] == ("cluster",)


def test_docstring_example() -> None:
    assert doctest.testmod(placement_module).failed == 0


# --- the real RLinf configs ----------------------------------------------------------------

ALL = None  # gpus_required when a GPU component uses 'all'

# path under examples/, num_nodes, gpus_required, gpus_all, real_robot, redirect reasons;
# read off each file's `cluster:` section by hand.
REAL_CONFIGS = [
    ("embodiment/config/behavior_ppo_openvlaoft.yaml", 1, ALL, True, False, []),
    ("embodiment/config/calvin_abc_d_ppo_openpi_pi05.yaml", 1, ALL, True, False, []),
    ("embodiment/config/calvin_d_d_ppo_openpi_pi05.yaml", 1, ALL, True, False, []),
    # actor/rollout on GPU 0 of group "gpu"; env on the DOS-W1 robot of node 1.
    (
        "embodiment/config/dosw1_pick_sac_flow.yaml",
        2,
        1,
        False,
        True,
        ["num_nodes=2", "node_groups=2"],
    ),
    ("embodiment/config/embodichain_ppo_cart_pole.yaml", 1, 4, False, False, []),
    ("embodiment/config/frankasim_ppo_mlp.yaml", 1, 1, False, False, []),  # a simulator
    ("embodiment/config/gsenv_ppo_openpi_pi05.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_10_grpo_openpi_pi05.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_10_plus_ppo_abot_m0.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_goal_async_ppo_gr00t.yaml", 1, 4, False, False, []),
    ("embodiment/config/libero_goal_ppo_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_object_grpo_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_object_ppo_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_object_ppo_openpi_pi05.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_spatial_0_grpo_mlp.yaml", 1, 2, False, False, []),  # 1-1
    ("embodiment/config/libero_spatial_dagger_openpi_lerobot.yaml", 1, 8, False, False, []),
    ("embodiment/config/libero_spatial_dsrl_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_spatial_ppo_gr00t_n1d7.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_spatial_ppo_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/libero_spatial_ppo_openpi_quickstart.yaml", 1, ALL, True, False, []),
    ("embodiment/config/maniskill_ppo_mlp_vlm_trend_reward_collect.yaml", 1, 1, False, False, []),
    ("embodiment/config/maniskill_ppo_openvlaoft.yaml", 1, 8, False, False, []),
    ("embodiment/config/maniskill_sac_mlp.yaml", 1, 1, False, False, []),
    ("embodiment/config/polaris_tapeintocontainer_ppo_openpi_pi05.yaml", 1, 1, False, False, []),
    (
        "embodiment/config/realworld_cap_tighten_rlpd_cnn_async.yaml",
        2,
        1,
        False,
        True,
        ["num_nodes=2", "node_groups=2"],
    ),
    # Only env, on the Franka of node 0: no GPU component at all.
    ("embodiment/config/realworld_collect_dexhand_data.yaml", 1, 0, False, True, []),
    # Everything on the DualFranka group (robot ranks, not GPUs).
    ("embodiment/config/realworld_eval_dual_franka.yaml", 2, 0, False, True, ["num_nodes=2"]),
    (
        "embodiment/config/realworld_sac_flow_image.yaml",
        2,
        1,
        False,
        True,
        ["num_nodes=2", "node_groups=2"],
    ),
    ("embodiment/config/robocasa_closedrawer_ppo_openpi.yaml", 1, ALL, True, False, []),
    ("embodiment/config/robotwin_adjust_bottle_dagger_openpi.yaml", 1, 8, False, False, []),
    ("embodiment/config/robotwin_adjust_bottle_ppo_openpi_pi05.yaml", 1, 8, False, False, []),
    (
        "embodiment/config/robotwin_place_container_plate_grpo_openvlaoft.yaml",
        1,
        8,
        False,
        False,
        [],
    ),
    ("embodiment/config/robotwin_place_empty_cup_grpo_openvlaoft.yaml", 1, 8, False, False, []),
    ("embodiment/config/wan_libero_goal_grpo_openvlaoft.yaml", 1, ALL, True, False, []),
    ("embodiment/config/wan_libero_spatial_grpo_openvlaoft.yaml", 1, ALL, True, False, []),
    ("reasoning/config/math/moonlight-16b-grpo-megatron.yaml", 1, ALL, True, False, []),
    (
        "reasoning/config/math/qwen2.5-1.5b-grpo-fsdp-pipeline.yaml",
        8,
        64,
        False,
        False,
        ["num_nodes=8"],
    ),
    ("reasoning/config/math/qwen2.5-1.5b-grpo-fsdp.yaml", 1, ALL, True, False, []),
    # actor 0-1, rollout 2-5, inference 6-7, but reward: all.
    ("reasoning/config/math/qwen2.5-1.5b-grpo-megatron-dynamic.yaml", 1, ALL, True, False, []),
    (
        "reasoning/config/math/qwen2.5-1.5b-grpo-megatron-pipeline.yaml",
        8,
        64,
        False,
        False,
        ["num_nodes=8"],
    ),
    (
        "reasoning/config/math/qwen2.5-1.5b-grpo-megatron.yaml",
        16,
        ALL,
        True,
        False,
        ["num_nodes=16"],
    ),
    ("reasoning/config/math/qwen2.5-1.5b-is-megatron.yaml", 16, ALL, True, False, ["num_nodes=16"]),
    ("reasoning/config/math/qwen2.5-1.5b-ppo-megatron.yaml", 1, ALL, True, False, []),
    (
        "reasoning/config/math/qwen2.5-1.5b-reinpp-megatron.yaml",
        16,
        ALL,
        True,
        False,
        ["num_nodes=16"],
    ),
    ("reasoning/config/math/qwen2.5-1.5b-single-gpu.yaml", 1, 1, False, False, []),
    (
        "reasoning/config/math/qwen2.5-32b-grpo-megatron.yaml",
        32,
        ALL,
        True,
        False,
        ["num_nodes=32"],
    ),
    ("reasoning/config/math/qwen2.5-7b-grpo-megatron.yaml", 16, ALL, True, False, ["num_nodes=16"]),
    ("reasoning/config/math/qwen3-30b-grpo-megatron.yaml", 16, ALL, True, False, ["num_nodes=16"]),
    ("reasoning/config/vqa/qwen2.5-vl-3b-grpo-fsdp.yaml", 1, ALL, True, False, []),
    ("reasoning/config/vqa/qwen3-vl-2b-grpo-fsdp-geo3k.yaml", 1, ALL, True, False, []),
]


def _load_cluster(rel: str) -> Any:
    with (DATA / "examples" / rel).open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)["cluster"]


@pytest.mark.parametrize(
    ("rel", "num_nodes", "gpus", "gpus_all", "robot", "reasons"),
    REAL_CONFIGS,
    ids=[row[0].rsplit("/", 1)[-1] for row in REAL_CONFIGS],
)
def test_real_config(
    rel: str, num_nodes: int, gpus: int | None, gpus_all: bool, robot: bool, reasons: list[str]
) -> None:
    summary = summarize_cluster(_load_cluster(rel))
    assert messages(summary) == []
    assert summary.num_nodes == num_nodes
    assert summary.gpus_required == gpus
    assert summary.gpus_all is gpus_all
    assert summary.real_robot is robot
    assert redirect_reasons(summary) == reasons


def test_table_covers_every_config_with_a_cluster_section() -> None:
    found = set()
    for path in (DATA / "examples").rglob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and "cluster" in doc:
            found.add(path.relative_to(DATA / "examples").as_posix())
    assert found == {row[0] for row in REAL_CONFIGS}


@pytest.mark.parametrize(
    ("rel", "component", "group", "kind", "hw_type"),
    [
        ("embodiment/config/realworld_sac_flow_image.yaml", "env", "franka", "hardware", "Franka"),
        ("embodiment/config/realworld_sac_flow_image.yaml", "actor", "4090", "accelerator", None),
        (
            "embodiment/config/realworld_eval_dual_franka.yaml",
            "actor",
            "franka",
            "hardware",
            "DualFranka",
        ),
        ("embodiment/config/dosw1_pick_sac_flow.yaml", "env", "dosw1", "hardware", "DOSW1"),
        ("embodiment/config/dosw1_pick_sac_flow.yaml", "rollout", "gpu", "accelerator", None),
        ("embodiment/config/libero_spatial_dsrl_openpi.yaml", "rollout", None, "accelerator", None),
    ],
)
def test_real_config_placements(
    rel: str, component: str, group: str | None, kind: str, hw_type: str | None
) -> None:
    summary = summarize_cluster(_load_cluster(rel))
    (p,) = [p for p in summary.placements if component in p.components]
    assert (p.node_group, p.resource_kind, p.hardware_type) == (group, kind, hw_type)


def test_real_config_hardware_groups() -> None:
    summary = summarize_cluster(_load_cluster("embodiment/config/realworld_eval_dual_franka.yaml"))
    (franka,) = summary.node_groups
    assert franka.node_ranks == (0, 1)
    assert franka.env_configs[0].node_ranks == (0,)
    assert summary.hardware_groups == ("franka",)


def test_data_is_a_full_copy_of_the_sample() -> None:
    for name in ("LICENSE", "README.md", "docs/placement.rst", "docs/cluster.rst"):
        assert (DATA / name).is_file(), name
