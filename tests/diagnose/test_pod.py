"""What a Pod's status and events add to its log (``diagnose --pod``), on Pods as the API
server returns them (``kubectl get pod -o json``'s shape), and which cause wins."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from rlark_acceptance.adapters.base import Event
from rlark_acceptance.adapters.kubernetes.stream import pod_status
from rlark_acceptance.diagnose import command, diagnose
from rlark_acceptance.diagnose.diagnosis import with_pod
from rlark_acceptance.diagnose.pod import NodeSide, PodSide, findings, log_to_read, node_side
from rlark_acceptance.rlinf import failures as f
from tests.diagnose.corpus import REAL, load

NODE = "gpu-node-09"


def pod(status: dict[str, Any], *, node: str | None = NODE) -> dict[str, Any]:
    return {
        "metadata": {"name": "w-0", "namespace": "team"},
        "spec": {"nodeName": node, "containers": [{"name": "worker"}, {"name": "sidecar"}]},
        "status": status,
    }


OOM = pod(
    {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "worker",
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            }
        ],
    }
)
EVICTED = pod(
    {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
        "containerStatuses": [
            {"name": "worker", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}
        ],
    }
)
IMAGE = pod(
    {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "worker",
                "state": {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": 'Back-off pulling image "registry.example.com/rlinf:v0.3.1"',
                    }
                },
            }
        ],
    }
)
UNSCHEDULED = pod(
    {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
            }
        ],
    },
    node=None,
)
MOUNTING = pod(
    {
        "phase": "Pending",
        "containerStatuses": [
            {"name": "worker", "state": {"waiting": {"reason": "ContainerCreating"}}}
        ],
    }
)
FAILED_MOUNT = Event(
    "pod/w-0",
    "FailedMount",
    'MountVolume.SetUp failed for volume "ckpt" : secret "s3-creds" not found',
    "Warning",
)


def side(raw: dict[str, Any], events: tuple[Event, ...] = ()) -> PodSide:
    status = pod_status(raw)
    chosen, previous = log_to_read(raw, None)
    return PodSide(
        "w-0", "team", status, events, tuple(findings(raw, status, events)), chosen, previous
    )


@pytest.mark.parametrize(
    ("raw", "events", "kind", "check", "fix_at"),
    [
        (OOM, (), "worker-oom-killed", "6.4", "0.4"),
        (EVICTED, (), "worker-disrupted", "6.4", "6.2"),
        (IMAGE, (), "image-pull-failed", "6.2", "3.4"),
        (UNSCHEDULED, (), "unschedulable", "6.2", "3.2"),
        (MOUNTING, (FAILED_MOUNT,), "volume-mount-failed", "6.3", "0.2"),
    ],
    ids=["oom-killed", "evicted", "image-pull", "unschedulable", "mount-failed"],
)
def test_the_pod_names_the_cause_its_log_cannot(
    raw: dict[str, Any], events: tuple[Event, ...], kind: str, check: str, fix_at: str
) -> None:
    """No log (a container that never ran), or a log of knock-ons only: the Pod's finding
    is the cause, at the check Step 6 fails for it."""
    knock_ons = [
        "Ray runtime started.",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    ]
    log = [] if kind in ("image-pull-failed", "unschedulable", "volume-mount-failed") else knock_ons
    d = with_pod(diagnose([log]), side(raw, events))
    assert d.failed and d.pod_cause is not None and d.kind is not None
    assert (d.kind.id, d.check, d.fix_at) == (kind, check, fix_at)
    out = d.to_json()
    assert out["class"] == kind and out["firstCause"]["source"] == "pod", out
    assert out["firstCause"]["actor"] == "pod/w-0" and out["pod"]["node"] == raw["spec"]["nodeName"]
    never_ran = "(no log: its container never ran)" in command.render(d, "pod team/w-0")
    assert never_ran == (not log), kind


def test_a_log_of_its_own_error_keeps_it_and_the_pod_adds_the_kill() -> None:
    """The actor's own read-only error in a real run's log, then the Pod OOMKilled: the log's
    error stays the first cause; the Pod's kill is added, not put in its place."""
    e = load(REAL[0])
    d = with_pod(diagnose([e.lines]), side(OOM))
    assert d.pod_cause is None and d.cause is not None and d.cause.quote == e.quote
    words = command.render(d, "pod team/w-0")
    assert "the Pod adds: OOMKilled [worker-oom-killed]: container worker OOMKilled" in words
    assert "pod: team/w-0 on node gpu-node-09: Failed, OOMKilled, exit code 137" in words


def test_an_eviction_wins_over_what_the_worker_printed_while_stopped() -> None:
    e = load(REAL[0])
    d = with_pod(diagnose([e.lines]), side(EVICTED))
    assert d.pod_cause is not None and d.kind is f.WORKER_DISRUPTED
    words = command.render(d, "pod team/w-0").splitlines()
    assert words[1].startswith("verdict: failed  first cause in the Pod's status and events: ")
    assert any(w.startswith("the log's first error: log line ") for w in words), words


def test_a_pod_that_says_nothing_wrong_adds_nothing() -> None:
    running = pod({"phase": "Running", "containerStatuses": [{"name": "worker", "state": {}}]})
    d = with_pod(diagnose([["Ray runtime started."]]), side(running))
    assert not d.failed and d.to_json()["pod"]["findings"] == []


def _node(**conditions: str) -> dict[str, Any]:
    """A Node as the API returns it, with ``type=status`` conditions."""
    return {
        "metadata": {"name": NODE},
        "status": {
            "conditions": [
                {"type": t, "status": v, "reason": f"Kubelet{t}", "message": f"{t} is {v}"}
                for t, v in conditions.items()
            ]
        },
    }


@pytest.mark.parametrize(
    ("conditions", "said"),
    [
        (
            {"Ready": "True", "MemoryPressure": "True", "DiskPressure": "False"},
            [
                "node gpu-node-09: MemoryPressure True "
                "(KubeletMemoryPressure: MemoryPressure is True)"
            ],
        ),
        (
            {"Ready": "Unknown", "MemoryPressure": "False", "DiskPressure": "True"},
            [
                "node gpu-node-09: Ready Unknown (KubeletReady: Ready is Unknown)",
                "node gpu-node-09: DiskPressure True (KubeletDiskPressure: DiskPressure is True)",
            ],
        ),
        (
            {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False"},
            ["node gpu-node-09: Ready, no memory, disk or PID pressure"],
        ),
    ],
    ids=["memory-pressure", "not-ready-disk-pressure", "healthy"],
)
def test_the_pod_s_node_conditions_are_said_where_they_are_wrong(
    conditions: dict[str, str], said: list[str]
) -> None:
    node = node_side(NODE, _node(**conditions))
    d = with_pod(diagnose([["Ray runtime started."]]), replace(side(OOM), node=node))
    words = command.render(d, "pod team/w-0").splitlines()
    assert [w for w in words if w.startswith("node ")] == said
    out = d.to_json()["pod"]["nodeConditions"]
    assert out["name"] == NODE and len(out["conditions"]) == 3
    assert out["wrong"] == [c for c, v in conditions.items() if (v == "True") != (c == "Ready")]


def test_a_node_the_user_may_not_read_is_said_and_the_pod_stands() -> None:
    node = NodeSide(NODE, unread="the API server said 403 Forbidden")
    d = with_pod(diagnose([[]]), replace(side(OOM), node=node))
    words = command.render(d, "pod team/w-0")
    assert "node gpu-node-09: its conditions could not be read: the API server said 403" in words
    assert d.kind is f.WORKER_OOM_KILLED


def test_the_log_of_a_restarted_worker_is_its_run_before() -> None:
    restarted = pod(
        {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "worker",
                    "restartCount": 1,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
            ],
        }
    )
    assert log_to_read(restarted, None) == ("worker", True)
    assert log_to_read(restarted, "sidecar") == ("sidecar", False)
    assert log_to_read(OOM, None) == ("worker", False)
    assert [x.reason for x in side(restarted).findings] == ["OOMKilled"]


def test_pod_options_without_pod_and_both_inputs_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rlark_acceptance.cli import main

    assert main(["diagnose", "--namespace", "team"]) == 2
    assert main(["diagnose", "x.log", "--pod", "w-0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "rlark-acceptance: --namespace: reads a Pod: give --pod NAME with it",
        "rlark-acceptance: diagnose: give a log file or --pod, not both",
    ]


def test_a_kubeconfig_that_cannot_be_read_is_one_line_exit_2(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlark_acceptance.cli import main

    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [\n", encoding="utf-8")
    assert main(["diagnose", "--pod", "w-0", "--kubeconfig", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0], err
