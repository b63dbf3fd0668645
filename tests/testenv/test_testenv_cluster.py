"""The Kubernetes control plane of testenv is a real one.

Real apiserver, scheduler and controller manager over real etcd; kwok simulates only the
kubelets. The apiserver restart test is last in this file on purpose: it is the slowest.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.stream import stream

from fixtures.testenv import KubeEnv
from testenv import build, cluster, versions

pytestmark = pytest.mark.cluster

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except client.ApiException as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def pod(
    name: str,
    image: str = "registry.example.com/rlinf:v0.3.0-cuda12.4",
    gpus: int = 0,
    node_selector: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> client.V1Pod:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else None
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels, annotations=annotations),
        spec=client.V1PodSpec(
            restart_policy="Never",
            node_selector=node_selector,
            containers=[
                client.V1Container(
                    name="worker",
                    image=image,
                    command=["bash", "-c", "sleep infinity"],
                    resources=client.V1ResourceRequirements(limits=limits),
                )
            ],
        ),
    )


def running(core: Any, ns: str, name: str) -> client.V1Pod | None:
    p = core.read_namespaced_pod(name, ns)
    return p if p.status.phase == "Running" else None


def events_for(core: Any, ns: str, name: str, reason: str) -> list[Any]:
    evs = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
    return [e for e in evs if e.reason == reason]


def test_version_is_served_by_the_built_apiserver(kube_env: KubeEnv) -> None:
    info = client.VersionApi(kube_env.api_client()).get_code()
    assert info.git_version == versions.KUBERNETES
    # The process answering is the binary this project built from the Go modules.
    pid = cluster.pids()["kube-apiserver"]
    exe = subprocess.run(["readlink", f"/proc/{pid}/exe"], capture_output=True, text=True)
    assert exe.stdout.strip() == str(build.RECIPES["kubernetes"].bin("kube-apiserver"))


def test_nodes_simulate_two_gpu_nodes_and_a_cpu_node(kube_env: KubeEnv) -> None:
    core = kube_env.core()
    gpu = core.list_node(label_selector=f"{kube_env.pool_label}={kube_env.gpu_pool}").items
    assert sorted(n.metadata.name for n in gpu) == sorted(kube_env.gpu_nodes)
    for node in gpu:
        assert node.status.allocatable[kube_env.gpu_resource] == "8"
        assert node.status.capacity[kube_env.gpu_resource] == "8"
        assert node.metadata.labels["kubernetes.io/hostname"] == node.metadata.name
    cpu = core.read_node(kube_env.cpu_nodes[0])
    assert kube_env.gpu_resource not in cpu.status.allocatable
    ready = {
        n.metadata.name: [c.status for c in n.status.conditions if c.type == "Ready"]
        for n in core.list_node().items
    }
    assert all(v == ["True"] for v in ready.values()), ready
    core.read_namespace(kube_env.namespace)


def test_gpu_pod_is_bound_by_the_real_scheduler(kube_env: KubeEnv, kube_namespace: str) -> None:
    core = kube_env.core()
    target = kube_env.gpu_nodes[1]
    labels = {"rlark.io/job-name": "rlinf-maniskill-ppo", "rlark.io/role": "worker"}
    core.create_namespaced_pod(
        kube_namespace,
        pod("worker-0", gpus=8, node_selector={"kubernetes.io/hostname": target}, labels=labels),
    )
    bound = wait_for("Running", lambda: running(core, kube_namespace, "worker-0"))
    assert bound.spec.node_name == target
    scheduled = wait_for(
        "Scheduled event", lambda: events_for(core, kube_namespace, "worker-0", "Scheduled")
    )
    assert scheduled[0].source.component == "default-scheduler" or (
        scheduled[0].reporting_component == "default-scheduler"
    )
    assert f"to {target}" in scheduled[0].message
    selected = core.list_namespaced_pod(
        kube_namespace, label_selector="rlark.io/job-name=rlinf-maniskill-ppo,rlark.io/role=worker"
    ).items
    assert [p.metadata.name for p in selected] == ["worker-0"]

    # The pool label matches both GPU nodes; the other one still has 8 GPUs free.
    core.create_namespaced_pod(
        kube_namespace,
        pod("worker-1", gpus=8, node_selector={kube_env.pool_label: kube_env.gpu_pool}),
    )
    other = wait_for("Running", lambda: running(core, kube_namespace, "worker-1"))
    assert other.spec.node_name == kube_env.gpu_nodes[0]


@pytest.mark.stand_in_gpus
def test_a_deleted_namespace_frees_its_gpus_before_the_next_test(kube_env: KubeEnv) -> None:
    """``delete_namespace`` returns once the namespace's Pods are gone, so the simulated
    node's GPUs are free for the next test's Pod (the scheduler counts a terminating Pod)."""
    core = kube_env.core()
    target = kube_env.gpu_nodes[0]
    first = kube_env.create_namespace()
    try:
        core.create_namespaced_pod(
            first, pod("worker-0", gpus=8, node_selector={"kubernetes.io/hostname": target})
        )
        wait_for("Running", lambda: running(core, first, "worker-0"))
    finally:
        kube_env.delete_namespace(first)
    assert [p.metadata.name for p in core.list_namespaced_pod(first).items] == []
    second = kube_env.create_namespace()
    try:
        core.create_namespaced_pod(
            second, pod("worker-0", gpus=8, node_selector={"kubernetes.io/hostname": target})
        )
        bound = wait_for("Running", lambda: running(core, second, "worker-0"))
        assert bound.spec.node_name == target
        assert events_for(core, second, "worker-0", "FailedScheduling") == []
    finally:
        kube_env.delete_namespace(second)


def test_sixteen_gpus_stay_pending_with_failed_scheduling(
    kube_env: KubeEnv, kube_namespace: str
) -> None:
    core = kube_env.core()
    core.create_namespaced_pod(
        kube_namespace,
        pod("too-big", gpus=16, node_selector={kube_env.pool_label: kube_env.gpu_pool}),
    )
    failed = wait_for(
        "FailedScheduling", lambda: events_for(core, kube_namespace, "too-big", "FailedScheduling")
    )
    event = failed[0]
    assert event.type == "Warning"
    assert "default-scheduler" in (event.source.component, event.reporting_component)
    assert "Insufficient nvidia.com/gpu" in event.message
    p = core.read_namespaced_pod("too-big", kube_namespace)
    assert p.status.phase == "Pending"
    assert p.spec.node_name is None
    cond = [c for c in p.status.conditions if c.type == "PodScheduled"]
    assert cond and cond[0].status == "False" and cond[0].reason == "Unschedulable"


def test_bad_image_marker_yields_err_image_pull(kube_env: KubeEnv, kube_namespace: str) -> None:
    core = kube_env.core()
    image = kube_env.bad_image()
    core.create_namespaced_pod(
        kube_namespace,
        pod("bad-image", image=image, node_selector={"kubernetes.io/hostname": "cpu-node-01"}),
    )

    def waiting_reason() -> str | None:
        p = core.read_namespaced_pod("bad-image", kube_namespace)
        statuses = p.status.container_statuses or []
        if statuses and statuses[0].state.waiting:
            assert p.status.phase == "Pending"
            return str(statuses[0].state.waiting.reason)
        return None

    assert wait_for("ErrImagePull", waiting_reason) == "ErrImagePull"
    assert wait_for(
        "ImagePullBackOff", lambda: waiting_reason() == "ImagePullBackOff" or None, timeout=30
    )
    failed = events_for(core, kube_namespace, "bad-image", "Failed")
    assert failed and image.split("/")[0] in failed[0].message


def test_pod_logs_are_what_a_local_process_wrote(kube_env: KubeEnv, kube_namespace: str) -> None:
    core = kube_env.core()
    core.create_namespaced_pod(kube_namespace, pod("logger"))
    wait_for("Running", lambda: running(core, kube_namespace, "logger"))
    path = kube_env.pod_log_file(kube_namespace, "logger")
    # A separate local process writes the container log, as a container runtime would.
    writer = (
        "import sys, datetime\n"
        "ts = lambda: datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%S.%f')\n"
        "with open(sys.argv[1], 'a') as f:\n"
        "    for i in range(3):\n"
        "        f.write(f'{ts()}000Z stdout F Global Step {i}\\n')\n"
        "    f.write(f'{ts()}000Z stderr F warning: fake\\n')\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(path)], check=True)

    def logs() -> str | None:
        text = read_log(core, kube_namespace, "logger", container="worker")
        return text if "warning: fake" in text else None

    text = wait_for("pod logs", logs, timeout=90)  # kwok picks up its Logs object late under load
    assert text.splitlines() == ["Global Step 0", "Global Step 1", "Global Step 2", "warning: fake"]
    assert read_log(core, kube_namespace, "logger", tail_lines=1) == "warning: fake\n"

    kube_env.write_log(path, ["Global Step 3"])
    wait_for("appended line", lambda: "Global Step 3" in read_log(core, kube_namespace, "logger"))


def read_log(core: Any, ns: str, name: str, **kwargs: Any) -> str:
    # kubernetes 36's read_namespaced_pod_log returns str(bytes) ("b'...'") for this
    # text/plain answer, so read the raw body and decode it here.
    resp = core.read_namespaced_pod_log(name, ns, _preload_content=False, **kwargs)
    return bytes(resp.data).decode()


def test_exec_returns_output(kube_env: KubeEnv, kube_namespace: str) -> None:
    core = kube_env.core()
    core.create_namespaced_pod(kube_namespace, pod("shell"))
    wait_for("Running", lambda: running(core, kube_namespace, "shell"))
    kube_env.enable_exec(kube_namespace, "shell")

    def run() -> str | None:
        out = stream(
            core.connect_get_namespaced_pod_exec,
            "shell",
            kube_namespace,
            container="worker",
            command=["sh", "-c", "echo exec-$((40 + 2))"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
        return str(out) if out else None

    assert wait_for("exec output", run, timeout=30).strip() == "exec-42"


def test_recorded_exit_code_makes_the_pod_failed(kube_env: KubeEnv, kube_namespace: str) -> None:
    core = kube_env.core()
    core.create_namespaced_pod(
        kube_namespace,
        pod(
            "crasher",
            labels={kube_env.fail_label: "true"},
            annotations={kube_env.fail_exit_code_annotation: "137"},
        ),
    )

    def failed() -> client.V1Pod | None:
        p = core.read_namespaced_pod("crasher", kube_namespace)
        return p if p.status.phase == "Failed" else None

    p = wait_for("Failed", failed, timeout=60)
    terminated = p.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 137


@pytest.mark.cluster_alone
def test_cluster_survives_an_apiserver_kill_and_restart(kube_env: KubeEnv) -> None:
    core = kube_env.core()
    ns = kube_env.create_namespace("restart")
    try:
        core.create_namespaced_config_map(
            ns,
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name="keep"), data={"k": "v"}),
        )
        old, new = kube_env.restart_apiserver()
        assert old != new
        fresh = kube_env.core()
        cm = wait_for(
            "configmap after restart", lambda: fresh.read_namespaced_config_map("keep", ns)
        )
        assert cm.data == {"k": "v"}
        nodes = {n.metadata.name for n in fresh.list_node().items}
        assert set(kube_env.gpu_nodes) | set(kube_env.cpu_nodes) <= nodes
        # And it still schedules: the scheduler reconnected to the new apiserver.
        fresh.create_namespaced_pod(ns, pod("after-restart", gpus=1))
        wait_for("Running after restart", lambda: running(fresh, ns, "after-restart"))
    finally:
        kube_env.delete_namespace(ns)
