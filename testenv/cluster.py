"""The Kubernetes control plane: kwokctl's binary runtime over locally built binaries.

Real etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as plain
processes on loopback; kwok plays the kubelet of three simulated nodes (two GPU nodes,
one CPU node), moves Pods through their phases with stages, and serves Pod logs and exec
through its Logs / Exec resources.

Over ~400 lines because the cluster's life cycle (configure, start, wait, restart a dead
component, stop) reads as one sequence over the same kwokctl state; split, each part would
need all of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from testenv import build, node, proc, rlark_platform, versions
from testenv.paths import state_root
from testenv.state import ClusterState, State

CLUSTER_NAME = "rlark-testenv"
NAMESPACE = "rlinf-acceptance"
# The first address of the API server's default service-cluster-ip-range (10.0.0.0/24).
KUBERNETES_SERVICE_IP = "10.0.0.1"
# The S3 server as the cluster's Pods reach it: a Service without selector (its data plane
# on the real node is testenv.forward), so Pods of the namespace get S3_SERVICE_HOST/_PORT.
S3_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "s3", "namespace": NAMESPACE},
    "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
}

# Simulated nodes. The two GPU nodes share the pool label, so one selector matches both;
# each keeps its own kubernetes.io/hostname, so a hostname selector picks exactly one.
GPU_NODES = ("gpu-node-07", "gpu-node-08")
CPU_NODES = ("cpu-node-01",)
GPUS_PER_NODE = 8
GPU_RESOURCE = "nvidia.com/gpu"
POOL_LABEL = "rlark.io/pool"
GPU_POOL = "gpu-a"
CLUSTER_LABEL = "rlark.io/cluster"
SIMULATED_CLUSTER = "gpu-a"

# A container image whose reference contains this marker never pulls: the image-pull
# stage turns its Pod into ErrImagePull, then ImagePullBackOff, like a real kubelet.
# `.invalid` is reserved (RFC 2606), so no real registry can ever match it.
BAD_IMAGE_MARKER = "pull-error.invalid"

# kwok's own failure stage: label a Pod with FAIL_LABEL=true and put its exit code in
# the FAIL_EXIT_CODE annotation; once Running it turns Failed with that exit code.
FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"
FAIL_EXIT_CODE = "pod-container-running-failed.stage.kwok.x-k8s.io/exit-code"
FAIL_REASON = "pod-container-running-failed.stage.kwok.x-k8s.io/reason"
FAIL_MESSAGE = "pod-container-running-failed.stage.kwok.x-k8s.io/message"

# kwok resources served as CRDs, so tests create them next to their Pods at run time.
KWOK_CRDS = ("Logs", "ClusterLogs", "Exec", "ClusterExec")

HERE = Path(__file__).resolve().parent

COMPONENTS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
)


def workdir() -> Path:
    return state_root() / "kwok"


def cluster_dir() -> Path:
    return workdir() / "clusters" / CLUSTER_NAME


def _pki(name: str) -> Path:
    return cluster_dir() / "pki" / name


def kubeconfig_path() -> Path:
    return state_root() / "kubeconfig"


def _bin(recipe: str, name: str) -> str:
    return str(build.RECIPES[recipe].bin(name))


def kubectl_bin() -> str:
    return _bin("kubernetes", "kubectl")


def component_binaries() -> dict[str, str]:
    return {
        "etcd": _bin("etcd", "etcd"),
        "kube-apiserver": _bin("kubernetes", "kube-apiserver"),
        "kube-controller-manager": _bin("kubernetes", "kube-controller-manager"),
        "kube-scheduler": _bin("kubernetes", "kube-scheduler"),
        "kwok-controller": _bin("kwok", "kwok"),
    }


def _kwokctl_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
    # Keep kwokctl's clusters, its config and its default kubeconfig out of $HOME.
    env["KWOK_WORKDIR"] = str(workdir())
    env["KUBECONFIG"] = str(kubeconfig_path())
    # kwokctl runs `kubectl` from PATH for some checks: make it ours, whatever else the
    # machine has installed.
    env["PATH"] = os.pathsep.join([str(Path(kubectl_bin()).parent), env.get("PATH", "")])
    return env


def kwokctl(*args: str, timeout: float = 300, check: bool = True) -> str:
    argv = [_bin("kwok", "kwokctl"), "--name", CLUSTER_NAME, *args]
    log = state_root() / "logs" / "kwokctl.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(f"\n$ kwokctl --name {CLUSTER_NAME} {' '.join(args)}\n")
        fh.flush()
        res = subprocess.run(
            argv,
            env=_kwokctl_env(),
            stdout=subprocess.PIPE,
            stderr=fh,
            text=True,
            timeout=timeout,
            cwd=state_root(),
        )
        fh.write(res.stdout)
    if check and res.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"kwokctl {' '.join(args)} failed ({res.returncode}):\n{tail}")
    return res.stdout


def kubectl(*args: str, stdin: str | None = None, check: bool = True, timeout: float = 60) -> str:
    res = subprocess.run(
        [kubectl_bin(), "--kubeconfig", str(kubeconfig_path()), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and res.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {res.stderr.strip()}")
    return res.stdout


_OWNED_BY_JOB = """\
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
"""


def _only_batch_jobs_complete(text: str) -> str:
    """kwok's pod-complete stage ends every Running Pod owned by *a* kind ``Job`` at once;
    it means batch/v1 Jobs, and an rlark.io Job's Worker must keep running like a real one."""
    if _OWNED_BY_JOB not in text:
        raise RuntimeError("kwok's pod-complete stage changed: review _only_batch_jobs_complete")
    also = (
        "    - key: '.metadata.ownerReferences.[].apiVersion'\n"
        "      operator: 'In'\n"
        "      values:\n"
        "      - 'batch/v1'\n"
    )
    return text.replace(_OWNED_BY_JOB, _OWNED_BY_JOB + also)


def _stage_docs() -> list[str]:
    """kwok's default stages from the pinned module, plus ours (a custom list replaces
    the defaults, so they must be listed again)."""
    docs = []
    stages = build.RECIPES["kwok"].dir / "stages"
    for rel in build.KWOK_STAGE_FILES:
        text = (stages / Path(rel).name).read_text()
        if Path(rel).name == "pod-complete.yaml":
            text = _only_batch_jobs_complete(text)
        docs.append(text)
    own = HERE / "stages"
    for path in sorted(own.glob("*.yaml")):
        docs.append(path.read_text().replace("@BAD_IMAGE_MARKER@", BAD_IMAGE_MARKER))
    return docs


def _write_config(ports: dict[str, int]) -> None:
    bins = component_binaries()
    options: dict[str, Any] = {
        "runtime": "binary",
        # Loopback only: kwokctl's default would listen on every interface.
        "bindAddress": "127.0.0.1",
        "kubeApiserverPort": ports["kube-apiserver"],
        "etcdPort": ports["etcd"],
        "etcdPeerPort": ports["etcd-peer"],
        "kubeControllerManagerPort": ports["kube-controller-manager"],
        "kubeSchedulerPort": ports["kube-scheduler"],
        "kwokControllerPort": ports["kwok-controller"],
        "kubeVersion": versions.KUBERNETES,
        "etcdVersion": versions.ETCD.lstrip("v"),
        # Plain file paths: kwokctl uses these as they are and downloads nothing.
        "kubeApiserverBinary": bins["kube-apiserver"],
        "kubeControllerManagerBinary": bins["kube-controller-manager"],
        "kubeSchedulerBinary": bins["kube-scheduler"],
        "kwokControllerBinary": bins["kwok-controller"],
        "etcdBinary": bins["etcd"],
        "kubectlBinary": kubectl_bin(),
        "enableCRDs": list(KWOK_CRDS),
        # RBAC and admission on, as on a real cluster.
        "kubeAuthorization": True,
        "kubeAdmission": True,
        "cacheDir": str(workdir() / "cache"),
        "etcdQuotaBackendSize": "1Gi",
        # The `kubernetes` Service's ClusterIP, as a real cluster's serving certificate
        # names it: an in-cluster client (the runner Pod) verifies the API server by it.
        "kubeApiserverCertSANs": [KUBERNETES_SERVICE_IP],
    }
    conf = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
        "componentsPatches": [
            {
                "name": "kube-apiserver",
                # Every simulated node is served by the one local kwok controller on
                # 127.0.0.1; node names do not resolve, so reach kubelets by InternalIP.
                "extraArgs": [
                    {"key": "kubelet-preferred-address-types", "value": "InternalIP"},
                    # Logs and exec of the real node go through its kubelet, which accepts
                    # only clients with a certificate of the cluster CA.
                    {"key": "kubelet-client-certificate", "value": str(_pki("admin.crt"))},
                    {"key": "kubelet-client-key", "value": str(_pki("admin.key"))},
                ],
            },
            # kwokctl runs kwok for every node; it must fake only its own (annotated) ones
            # and leave the real node's Pods to its kubelet. Later flags win.
            {
                "name": "kwok-controller",
                "extraArgs": [
                    {"key": "manage-all-nodes", "value": "false"},
                    {
                        "key": "manage-nodes-with-annotation-selector",
                        "value": "kwok.x-k8s.io/node=fake",
                    },
                ],
            },
            # A single instance of each: with leader election they exit ~10 s after the
            # apiserver goes away (no kubelet here restarts them); without it they retry
            # until it is back, so an apiserver restart leaves the cluster whole.
            {
                "name": "kube-controller-manager",
                "extraArgs": [{"key": "leader-elect", "value": "false"}],
            },
            {
                "name": "kube-scheduler",
                "extraArgs": [{"key": "leader-elect", "value": "false"}],
            },
        ],
    }
    docs = [json.dumps(conf, indent=2), *_stage_docs()]
    workdir().mkdir(parents=True, exist_ok=True)
    # kwokctl reads $KWOK_WORKDIR/kwok.yaml by default, for create and every later call.
    (workdir() / "kwok.yaml").write_text("\n---\n".join(d.strip() for d in docs) + "\n")


def _node(name: str, gpu: bool) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
    }
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "500Gi"}
    # The RLark cluster these nodes make up (the platform stand-in places a role naming it
    # here); the real node is a cluster of its own.
    labels[CLUSTER_LABEL] = SIMULATED_CLUSTER
    if gpu:
        labels[POOL_LABEL] = GPU_POOL
        labels["nvidia.com/gpu.present"] = "true"
        capacity = {
            "cpu": "96",
            "memory": "1024Gi",
            "pods": "110",
            "ephemeral-storage": "2Ti",
            GPU_RESOURCE: str(GPUS_PER_NODE),
        }
    else:
        labels[POOL_LABEL] = "cpu"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        # Nodes, unlike most objects, keep the status given at create: capacity and
        # allocatable come from here, conditions and heartbeats from kwok's stages.
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
        },
    }


def _apply_objects() -> None:
    nodes = [_node(n, True) for n in GPU_NODES] + [_node(n, False) for n in CPU_NODES]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    items = {"apiVersion": "v1", "kind": "List", "items": [ns, S3_SERVICE, *nodes]}
    kubectl("apply", "-f", "-", stdin=json.dumps(items))


def _wait_ready(timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    names = [*GPU_NODES, *CPU_NODES]
    while True:
        try:
            kubectl("wait", "--for=condition=Ready", "--timeout=5s", *[f"node/{n}" for n in names])
            # The ServiceAccount admission plugin rejects Pods until the controller
            # manager has made the namespace's default ServiceAccount.
            kubectl("get", "serviceaccount", "default", "-n", NAMESPACE)
            return
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster not ready after {timeout:.0f}s: {exc}") from exc
            time.sleep(0.5)


def pids() -> dict[str, int]:
    """The component pids kwokctl recorded (it forks them; we stop them by these pids)."""
    out: dict[str, int] = {}
    piddir = cluster_dir() / "pids"
    for comp in COMPONENTS:
        try:
            out[comp] = int((piddir / f"{comp}.pid").read_text().strip())
        except (OSError, ValueError):
            continue
    return out


def _all_alive() -> bool:
    bins = component_binaries()
    running = pids()
    return all(comp in running and proc.alive(running[comp], bins[comp]) for comp in COMPONENTS)


def apiserver_ready() -> bool:
    try:
        return kubectl("get", "--raw", "/readyz", check=False, timeout=10).strip() == "ok"
    except (OSError, subprocess.TimeoutExpired):
        return False


def healthy(cluster: ClusterState | None) -> bool:
    return bool(cluster) and kubeconfig_path().is_file() and _all_alive() and apiserver_ready()


def whole(state: State) -> bool:
    """The control plane, the real node and the platform stand-in all up."""
    return (
        healthy(state.cluster)
        and node.healthy(state.node, kubectl)
        and rlark_platform.healthy(state)
    )


def _forget_dead() -> None:
    """Remove the pid files of components that are gone.

    kwokctl restarts only components whose recorded pid does not run, and it counts a
    zombie as running; where init is slow to reap orphans (seen here), a killed
    component stays a zombie for a long while, and kwokctl would not restart it.
    """
    bins = component_binaries()
    for comp, pid in pids().items():
        if not proc.alive(pid, bins[comp]):
            (cluster_dir() / "pids" / f"{comp}.pid").unlink(missing_ok=True)


def up(state: State) -> None:
    cluster = state.cluster
    if whole(state):
        return
    build.ensure(build.NEEDS["cluster"])
    if cluster and (cluster_dir() / "kwok.yaml").is_file():
        _forget_dead()
        # Made before but some process is gone (a reboot, a killed apiserver): kwokctl
        # starts only the components whose pid is not running, on the same etcd data.
        kwokctl("start", "cluster", "--wait", "2m")
    else:
        down(state)
        ports = {
            p: proc.free_port()
            for p in (
                "kube-apiserver",
                "etcd",
                "etcd-peer",
                "kube-controller-manager",
                "kube-scheduler",
                "kwok-controller",
            )
        }
        _write_config(ports)
        kwokctl(
            "create",
            "cluster",
            "--runtime",
            "binary",
            "--kubeconfig",
            str(kubeconfig_path()),
            "--wait",
            "2m",
            timeout=600,
        )
        cluster = ClusterState(ports=ports)
    cluster = cluster or ClusterState()
    cluster.kubeconfig, cluster.namespace, cluster.pids = str(kubeconfig_path()), NAMESPACE, pids()
    state.cluster = cluster
    _apply_objects()
    _wait_ready()
    cluster.harness_kubeconfig = _harness_access()
    try:
        apiserver = cluster.ports["kube-apiserver"]
        node.up(state, apiserver, kubeconfig_path(), _pki("ca.crt"), kubectl)
        crd = f"{rlark_platform.PLURAL}.{rlark_platform.GROUP}"
        rlark_platform.up(state, lambda: bool(kubectl("get", "crd", crd, check=False).strip()))
    finally:
        cluster.node = state.node is not None


HARNESS_RBAC = HERE.parent / "deploy" / "harness-rbac.yaml"
HARNESS_SA = "rlark-acceptance"


def harness_kubeconfig_path() -> Path:
    return state_root() / "harness.kubeconfig"


def _harness_access() -> str:
    """The harness's own identity: the ServiceAccount bound to the repository's
    least-privilege Role, and a kubeconfig with its token (RBAC enforced by the API server)."""
    import yaml

    kubectl("apply", "-f", str(HARNESS_RBAC))
    token = kubectl("create", "token", HARNESS_SA, "-n", NAMESPACE, "--duration=48h").strip()
    admin = yaml.safe_load(kubeconfig_path().read_text())
    cluster = admin["clusters"][0]["cluster"]
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": HARNESS_SA, "user": {"token": token}}],
        "contexts": [
            {
                "name": HARNESS_SA,
                "context": {"cluster": CLUSTER_NAME, "user": HARNESS_SA, "namespace": NAMESPACE},
            }
        ],
        "current-context": HARNESS_SA,
    }
    path = harness_kubeconfig_path()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(cfg, fh)
    return str(path)


def restart_component(state: State, component: str) -> int:
    """SIGKILL one component by its pid and let kwokctl start it again; returns new pid."""
    old = pids()[component]
    os.kill(old, 9)
    deadline = time.monotonic() + 20
    while proc.alive(old) and time.monotonic() < deadline:
        time.sleep(0.05)
    start_dead(state)
    return pids()[component]


def start_dead(state: State) -> None:
    """Start the components that are not running (on the same etcd data)."""
    _forget_dead()
    kwokctl("start", "cluster", "--wait", "2m")
    if not _all_alive():  # another component gave up meanwhile: start it too
        _forget_dead()
        kwokctl("start", "cluster", "--wait", "2m")
    if state.cluster is None:
        state.cluster = ClusterState()
    state.cluster.pids = pids()


def down(state: State) -> None:
    rlark_platform.down(state)
    left = node.down(state)
    if left:
        build.say("down: left behind: " + ", ".join(left))
    recorded = dict(state.cluster.pids) if state.cluster else {}
    recorded.update(pids())
    if (cluster_dir() / "kwok.yaml").is_file() and Path(_bin("kwok", "kwokctl")).is_file():
        # The pids below are stopped either way.
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            kwokctl("delete", "cluster", "--kubeconfig", str(kubeconfig_path()), timeout=120)
    bins = component_binaries()
    for comp, pid in recorded.items():
        proc.stop(pid, bins.get(comp))
    state.cluster = None
    shutil.rmtree(workdir(), ignore_errors=True)
    kubeconfig_path().unlink(missing_ok=True)
    harness_kubeconfig_path().unlink(missing_ok=True)


def status(state: State) -> dict[str, Any]:
    cluster = state.cluster
    if not cluster:
        return {"running": False}
    bins = component_binaries()
    comps = {}
    for comp, pid in pids().items():
        comps[comp] = {
            "pid": pid,
            "alive": proc.alive(pid, bins[comp]),
            "rss_mib": round(proc.rss_kib(pid) / 1024, 1),
        }
    return {
        "running": healthy(cluster) and node.healthy(state.node, kubectl),
        "node": node.status(state),
        "platform": rlark_platform.status(state),
        "kubeconfig": cluster.kubeconfig,
        "apiserver_port": cluster.ports.get("kube-apiserver"),
        "components": comps,
    }
