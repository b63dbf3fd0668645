"""testenv's real node: a kubelet, containerd and runc running real containers of the Worker
image, joined to the control plane from a network namespace of its own."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client

from fixtures.testenv import KubeEnv
from testenv import node, node_host, proc, state
from testenv.cluster import kubectl as cluster_kubectl
from testenv.paths import state_root

pytestmark = pytest.mark.cluster

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def pods(kube_env: KubeEnv) -> Iterator[list[str]]:
    created: list[str] = []
    yield created
    core = kube_env.core()
    for name in created:
        with contextlib.suppress(client.ApiException):
            core.delete_namespaced_pod(name, kube_env.namespace, grace_period_seconds=0)


def real_pod(kube_env: KubeEnv, pods: list[str], command: list[str], **spec: Any) -> str:
    name = f"node-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "nodeSelector": {"kubernetes.io/hostname": kube_env.real_node},
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": kube_env.worker_image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": command,
                    **spec.pop("container", {}),
                }
            ],
            **spec,
        },
    }
    kube_env.core().create_namespaced_pod(kube_env.namespace, body)
    pods.append(name)
    return name


def read(kube_env: KubeEnv, name: str) -> Any:
    return kube_env.core().read_namespaced_pod(name, kube_env.namespace)


def test_the_node_is_ready_with_its_gpus_on_its_own_network(kube_env: KubeEnv) -> None:
    n = kube_env.core().read_node(kube_env.real_node)
    ready = {c.type: c.status for c in n.status.conditions}
    assert ready["Ready"] == "True"
    assert n.status.allocatable["nvidia.com/gpu"] == str(node.GPUS)
    assert n.metadata.labels["rlark.io/pool"] == kube_env.real_pool
    assert n.metadata.labels["rlark.io/cluster"] == node.RLARK_CLUSTER
    assert "kwok.x-k8s.io/node" not in (n.metadata.annotations or {})  # not kwok's
    ip = ipaddress.ip_address(next(a.address for a in n.status.addresses if a.type == "InternalIP"))
    assert ip in ipaddress.ip_network("10.254.0.0/16")  # the veth pair testenv made
    assert n.status.node_info.kubelet_version == "v1.36.3"
    assert n.status.node_info.container_runtime_version.startswith("containerd://2.")


def test_the_node_weighs_as_a_machine_of_its_own_beside_this_ones_processes(
    kube_env: KubeEnv,
) -> None:
    """Its cgroup's CPU weight is that of several busy processes, not of one."""
    found = []
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        d = hierarchy / node_host.cgroup_root()
        for name, one in (("cpu.shares", 1024), ("cpu.weight", 100)):
            if (d / name).is_file():
                found.append((str(d / name), int((d / name).read_text()) / one))
    assert found and all(ratio >= 4 for _, ratio in found), found


def test_a_real_container_runs_logs_and_exits_with_its_code(
    kube_env: KubeEnv, pods: list[str]
) -> None:
    script = "import sys, ray; print('ray', ray.__version__, flush=True); sys.exit(3)"
    name = real_pod(kube_env, pods, ["python", "-c", script])
    pod = wait_for(
        "the Pod to end", lambda: (p := read(kube_env, name)).status.phase == "Failed" and p
    )
    term = pod.status.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (3, "Error")
    assert pod.spec.node_name == kube_env.real_node
    resp = kube_env.core().read_namespaced_pod_log(name, kube_env.namespace, _preload_content=False)
    assert resp.data.decode().startswith("ray 2.")  # through the API server from the kubelet


def test_a_pod_reaches_the_services_and_nothing_else(kube_env: KubeEnv, pods: list[str]) -> None:
    """The ``kubernetes`` and ``s3`` Services by their ClusterIPs (the variables the kubelet
    sets), the API server's TLS verified by its ClusterIP; any other address has no route."""
    script = (
        "import os, socket, ssl, sys\n"
        "h, p = os.environ['KUBERNETES_SERVICE_HOST'], int(os.environ['KUBERNETES_SERVICE_PORT'])\n"
        "ca = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt'\n"
        "ctx = ssl.create_default_context(cafile=ca)\n"
        "with ctx.wrap_socket(socket.create_connection((h, p), 5), server_hostname=h) as s:\n"
        "    print('api', s.version(), flush=True)\n"
        "socket.create_connection((os.environ['S3_SERVICE_HOST'], 80), 5).close()\n"
        "print('s3 ok', flush=True)\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), 5)\n"
        "except OSError as e:\n"
        "    print('elsewhere', e.errno, flush=True)\n"
    )
    name = real_pod(kube_env, pods, ["python", "-c", script], automountServiceAccountToken=True)
    pod = wait_for(
        "the Pod to end",
        lambda: (p := read(kube_env, name)).status.phase in ("Succeeded", "Failed") and p,
    )
    resp = kube_env.core().read_namespaced_pod_log(name, kube_env.namespace, _preload_content=False)
    out = resp.data.decode()
    assert pod.status.phase == "Succeeded", out
    assert out.splitlines() == ["api TLSv1.3", "s3 ok", "elsewhere 101"], out  # ENETUNREACH


def test_a_missing_image_is_a_real_pull_error(kube_env: KubeEnv, pods: list[str]) -> None:
    name = real_pod(kube_env, pods, ["true"], container={"image": "registry.rlark.test/none:1.0"})

    def waiting() -> Any:
        cs = read(kube_env, name).status.container_statuses or []
        w = cs[0].state.waiting if cs else None
        return w if w and w.reason in ("ErrImagePull", "ImagePullBackOff") else None

    w = wait_for("a pull error", waiting, 60)
    # The runtime really tried, at the closed port of the node's own loopback: nothing left.
    assert "127.0.0.1:9" in w.message and "connection refused" in w.message, w.message


def test_more_gpus_than_the_node_has_are_refused_by_the_scheduler(
    kube_env: KubeEnv, pods: list[str]
) -> None:
    limits = {"nvidia.com/gpu": str(node.GPUS + 1)}
    name = real_pod(kube_env, pods, ["true"], container={"resources": {"limits": limits}})

    def refused() -> str | None:
        for c in read(kube_env, name).status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                return str(c.message)
        return None

    assert "Insufficient nvidia.com/gpu" in wait_for("the scheduler's refusal", refused, 30)


@pytest.mark.cluster_alone
def test_a_changed_worker_image_is_imported_without_restarting_the_node(
    kube_env: KubeEnv,
) -> None:
    """`up` after the smoke workload changed: the node is no longer current (so the fixtures
    bring it up), and the new image is imported into the running node."""
    import testenv.__main__ as testenv_cli
    from testenv import image

    with state.locked():
        st = state.load()
        assert st.node is not None
        before = dict(st.node.pids)
        st.node.worker_key = "an-older-build"
        state.save(st)
    assert not node.healthy(state.load().node, cluster_kubectl)
    testenv_cli.up("cluster")
    after = state.load().node
    assert after is not None and after.worker_key == image.worker_key()
    assert after.pids == before  # imported, not restarted
    assert node.healthy(after, cluster_kubectl)


SLEEPER = "import time; print('started', flush=True); time.sleep(8); print('ended', flush=True)"


@pytest.mark.cluster_alone
def test_up_starts_dead_parts_of_the_node_again_without_rebuilding_it(
    kube_env: KubeEnv, pods: list[str]
) -> None:
    """containerd and both relays killed (the host end's to the API server, the Service
    network's): `up` starts each again on its own config and routes, without rebuilding the
    node; the kubelet keeps running, a container running meanwhile is found again by the new
    containerd and ends with its log, and a new Pod is placed and run through them and reaches
    the S3 Service."""
    import testenv.__main__ as testenv_cli

    before = state.load().node
    assert before is not None
    waiting = real_pod(kube_env, pods, ["python", "-c", SLEEPER])
    wait_for("the running Pod", lambda: read(kube_env, waiting).status.phase == "Running")
    dead = ("containerd", "forward", "services")
    for part in dead:
        os.kill(before.pids[part], signal.SIGKILL)
    wait_for("the parts gone", lambda: not any(proc.alive(before.pids[p]) for p in dead), 20)
    assert not node.healthy(state.load().node, cluster_kubectl)
    testenv_cli.up("cluster")
    after = state.load().node
    assert after is not None and node.healthy(after, cluster_kubectl)
    for part in dead:
        assert after.pids[part] != before.pids[part] and proc.alive(after.pids[part])
    assert after.pids["kubelet"] == before.pids["kubelet"] and after.netns == before.netns
    ran = wait_for(
        "the Pod that ran through it to end",
        lambda: (p := read(kube_env, waiting)).status.phase in ("Succeeded", "Failed") and p,
    )
    log = kube_env.core().read_namespaced_pod_log(
        waiting, kube_env.namespace, _preload_content=False
    )
    assert (ran.status.phase, log.data.decode()) == ("Succeeded", "started\nended\n")
    script = (
        "import os, socket\n"
        "socket.create_connection((os.environ['S3_SERVICE_HOST'], 80), 5).close()\n"
        "print('s3 ok', flush=True)\n"
    )
    name = real_pod(kube_env, pods, ["python", "-c", script])
    pod = wait_for(
        "the Pod to end",
        lambda: (p := read(kube_env, name)).status.phase in ("Succeeded", "Failed") and p,
    )
    resp = kube_env.core().read_namespaced_pod_log(name, kube_env.namespace, _preload_content=False)
    assert (pod.status.phase, resp.data.decode()) == ("Succeeded", "s3 ok\n")


def leftovers() -> dict[str, Any]:
    """What of the node could outlive it on this machine."""
    ident = node_host.ident()
    d = str(state_root() / "node")
    mounts = [
        m.split()[1]
        for m in Path("/proc/self/mounts").read_text().splitlines()
        if d in m.split()[1]
    ]
    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if d in cmd:
            procs.append(cmd.replace("\0", " ")[:120])
    cgroups = [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{node_host.cgroup_root()}")]
    links = (
        [
            str(p)
            for p in Path("/var/log/containers").glob("*")
            if p.is_symlink() and os.readlink(p).startswith(d)
        ]
        if Path("/var/log/containers").is_dir()
        else []
    )
    return {
        "netns": node_host.netns() in os.popen("ip netns list").read(),
        "veth": Path(f"/sys/class/net/rkn{ident}h").exists(),
        "mounts": mounts,
        "procs": procs,
        "cgroups": cgroups,
        "links": links,
        "node_dir": Path(d).exists(),
    }


@pytest.mark.slow
@pytest.mark.cluster_alone
def test_down_leaves_nothing_behind_and_up_brings_the_node_back(kube_env: KubeEnv) -> None:
    import testenv.__main__ as testenv_cli

    st = state.load()
    assert st.node is not None
    sysctls = dict(st.node.sysctls)
    with state.locked():
        st = state.load()
        left = node.down(st)
        state.save(st)
    assert left == []
    assert leftovers() == {
        "netns": False,
        "veth": False,
        "mounts": [],
        "procs": [],
        "cgroups": [],
        "links": [],
        "node_dir": False,
    }
    assert {k: (Path("/proc/sys") / k).read_text().strip() for k in sysctls} == sysctls
    testenv_cli.up("cluster")  # the node again, on the same control plane
    n = kube_env.core().read_node(kube_env.real_node)
    assert {c.type: c.status for c in n.status.conditions}["Ready"] == "True"
