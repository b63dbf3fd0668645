"""The real worker node ``gpu-node-09``: containerd v2 + Debian's runc + a kubelet built from
the control plane's own Kubernetes module, joined to testenv's control plane.

Its network is a namespace of its own (``rlark-node-<id>``), joined to this machine by a
veth pair whose /30 testenv picks from 10.254.0.0/16 (free of every route here): the kubelet
serves on the node end, the API server reaches it there, and the kubelet reaches the API
server through ``testenv.forward`` on the host end (the API server itself stays on
loopback). Pods get network namespaces of their own on a bridge inside the node's; nothing
they do can leave the machine, and image pulls go to a closed port of the node's loopback.

What this machine kind imposes (each also said where it is done):
* no CAP_SYS_RESOURCE: runc cannot raise oom_score_adj, so the CRI clamps it;
* cgroup v1 (hybrid): the kubelet is told ``failCgroupV1: false``, cgroupfs driver;
* the kubelet sets a few kernel sysctls at start: their values are recorded before the
  first checkout's node starts and put back when the last one's goes down.

Everything machine-wide is named after this state dir's id (``ident()``): the network
namespace, the veth pair, the cgroup root of the Pods; two checkouts never share one.
``down`` stops every container, containerd, the kubelet and the forwarder (by pid), undoes
the kubelet's mounts under the state dir, removes the cgroups, the namespace, the
``/var/log/containers`` links and the sysctl changes: it leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testenv import apt, build, image, proc
from testenv.node_config import containerd_config, kubelet_kubeconfig, write_configs
from testenv.node_host import (
    RUN_CONTAINERD,
    VAR_LOG_CONTAINERS,
    cgroup_root,
    cgroups_down,
    cgroups_up,
    hold_sysctls,
    in_netns,
    net_up,
    netns,
    node_dir,
    pick_subnet,
    release_sysctls,
    sh,
    sock,
    veth,
)
from testenv.paths import state_root
from testenv.state import NodeState, State, load

NODE_NAME = "gpu-node-09"
POOL = "gpu-b"
# The RLark cluster the node makes up (a Job role's `cluster`), as the profile names it.
RLARK_CLUSTER = "rlark-testenv"
GPUS = 8
GPU_RESOURCE = "nvidia.com/gpu"
# Where testenv's Services live (the cluster's namespace of the acceptance runs).
SERVICE_NAMESPACE = "rlinf-acceptance"


# --- lifecycle -------------------------------------------------------------------------
def _ctr(*args: str, timeout: float = 600) -> str:
    ctr = str(build.RECIPES["containerd"].bin("ctr"))
    return sh(ctr, "--address", str(sock()), "-n", "k8s.io", *args, timeout=timeout)


def import_image(archive: Path, ref: str, timeout: float = 600) -> None:
    """Import an OCI archive into the node's containerd, unless that digest is there."""
    digest = json.loads(_read_index(archive))["manifests"][0]["digest"]
    listed = _ctr("images", "ls")
    if any(ref in line and digest in line for line in listed.splitlines()):
        return
    _ctr("images", "import", "--snapshotter", "overlayfs", str(archive), timeout=timeout)


def _read_index(archive: Path) -> str:
    import tarfile

    with tarfile.open(archive) as tf:
        member = tf.extractfile("index.json")
        assert member is not None
        return member.read().decode()


def healthy(node: NodeState | None, kubectl: Any) -> bool:
    """Running, Ready, and holding the Worker image of the current sources."""
    return _running(node, kubectl) and node is not None and node.worker_key == image.worker_key()


def _running(node: NodeState | None, kubectl: Any) -> bool:
    if not node:
        return False
    pids = node.pids
    bins = _bins()
    if not all(
        proc.alive(pids.get(c, 0), bins.get(c))
        for c in ("containerd", "kubelet", "forward", "services")
    ):
        return False
    out = kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
    try:
        status = json.loads(out)["status"]
        conds, allocatable = status["conditions"], status.get("allocatable") or {}
    except (ValueError, KeyError, TypeError):
        return False
    # Ready is not enough: the kubelet copies the patched GPU capacity into allocatable only
    # at its next status update, seconds later, and until then the scheduler refuses a Pod
    # that asks for GPUs (a Worker submitted at once would wait Unschedulable).
    return allocatable.get(GPU_RESOURCE) == str(GPUS) and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conds
    )


def _bins() -> dict[str, str]:
    return {
        "containerd": str(build.RECIPES["containerd"].bin("containerd")),
        "kubelet": str(build.RECIPES["kubelet"].bin("kubelet")),
        "forward": os.path.realpath(sys.executable),
        "services": os.path.realpath(sys.executable),
    }


def up(state: State, apiserver_port: int, kubeconfig: Path, ca: Path, kubectl: Any) -> None:
    if _kept(state, kubectl):
        return
    if state.node:
        down(state)
    apt.ensure()
    build.ensure(("kubelet", "containerd", "pause"))
    pause, worker = image.pause_archive(), image.worker_archive()
    net = pick_subnet()
    hosts = list(net.hosts())
    node = NodeState(
        netns=netns(),
        host_ip=str(hosts[0]),
        node_ip=str(hosts[1]),
        cgroup_root=cgroup_root(),
        sysctls=hold_sysctls(),
        var_log_containers_existed=VAR_LOG_CONTAINERS.exists(),
        run_containerd_existed=RUN_CONTAINERD.exists(),
    )
    state.node = node
    d = node_dir()
    d.mkdir(parents=True, exist_ok=True)
    net_up(node)
    cgroups_up()
    files = write_configs(node, ca)
    bins = _bins()
    fwd_port = _relays_up(node, state, apiserver_port, kubectl)
    node.kubelet_env = {
        # containerd finds its shim next to itself; without /usr/sbin the kubelet finds no
        # iptables and leaves this machine's firewall alone.
        "PATH": os.pathsep.join(
            [str(Path(bins["containerd"]).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        "HOME": str(d),
    }
    start_containerd(node)
    import_image(pause, image.PAUSE_IMAGE)
    import_image(worker, image.WORKER_IMAGE)
    node.worker_key = image.worker_key()
    kk = kubelet_kubeconfig(kubeconfig, node.host_ip, fwd_port)
    node.kubelet_argv = in_netns(
        bins["kubelet"],
        f"--config={files['kubelet']}",
        f"--kubeconfig={kk}",
        f"--root-dir={d / 'kubelet'}",
        f"--cert-dir={d / 'kubelet-pki'}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={node.node_ip}",
        f"--node-labels=rlark.io/pool={POOL},rlark.io/cluster={RLARK_CLUSTER},"
        "nvidia.com/gpu.present=true",
        "--v=2",
    )
    start_kubelet(node)
    _registered_with_gpus(node, kubectl)


def _kept(state: State, kubectl: Any) -> bool:
    """Whether the node that runs can be kept as it is: its dead parts restarted, or only
    the smoke workload changed (the new Worker image imported into it)."""
    node = state.node
    if node is not None and node.kubelet_argv and _restart_dead_parts(node):
        # The kubelet reconnects by itself; Ready again within its status interval.
        with contextlib.suppress(RuntimeError):
            _wait(lambda: _running(node, kubectl), 60, f"node {NODE_NAME} Ready again")
    if healthy(node, kubectl):
        return True
    if node and _running(node, kubectl):
        import_image(image.worker_archive(), image.WORKER_IMAGE)
        node.worker_key = image.worker_key()
        return True
    return False


def _relays_up(node: NodeState, state: State, apiserver_port: int, kubectl: Any) -> int:
    """The node's ways out of its namespace, started: the host end's relay to the API
    server and, when it runs, the S3 server (each its own port), and the cluster's Service
    network inside the namespace (each ClusterIP an address of it, relayed to the host
    end: see testenv.forward). Returns the host end's port for the API server."""
    fwd_port = proc.free_port()
    upstream = {"kubernetes": fwd_port}
    routes = [node.host_ip, str(fwd_port), "127.0.0.1", str(apiserver_port)]
    services = _services(kubectl)
    s3 = state.s3
    if s3 is not None and "s3" in services:
        upstream["s3"] = proc.free_port()
        routes += [node.host_ip, str(upstream["s3"]), "127.0.0.1", str(s3.port)]
    node.forward_routes = routes
    start_relay(node, "forward")
    service_routes = []
    for name, (ip, port) in services.items():
        if name in upstream:
            sh(*in_netns("ip", "addr", "replace", f"{ip}/32", "dev", "lo"))
            service_routes += [ip, str(port), node.host_ip, str(upstream[name])]
    node.services = {n: f"{ip}:{port}" for n, (ip, port) in services.items() if n in upstream}
    node.services_routes = service_routes
    start_relay(node, "services")
    return fwd_port


def _registered_with_gpus(node: NodeState, kubectl: Any) -> None:
    """Waits for the kubelet to register the node, gives it its fake GPUs, and waits for it
    to be Ready."""

    def registered() -> bool:
        return bool(kubectl("get", "node", NODE_NAME, check=False).strip())

    _wait(registered, 120, f"node {NODE_NAME} registered")
    # Fake GPUs, as a device plugin would advertise them: the real scheduler then places
    # (or refuses) nvidia.com/gpu requests on this node.
    kubectl(
        "patch",
        "node",
        NODE_NAME,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"capacity": {GPU_RESOURCE: str(GPUS)}}}),
    )
    _wait(lambda: healthy(node, kubectl), 120, f"node {NODE_NAME} Ready")


def _services(kubectl: Any) -> dict[str, tuple[str, int]]:
    """The Services a Pod of the node reaches by ClusterIP: ``kubernetes`` (the API server)
    and testenv's ``s3`` (the S3 server) when it exists; name -> (ClusterIP, port)."""
    out: dict[str, tuple[str, int]] = {}
    for name, ns in (("kubernetes", "default"), ("s3", SERVICE_NAMESPACE)):
        raw = kubectl("get", "service", name, "-n", ns, "-o", "json", check=False)
        try:
            spec = json.loads(raw)["spec"]
            out[name] = (str(spec["clusterIP"]), int(spec["ports"][0]["port"]))
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    return out


def start_relay(node: NodeState, name: str) -> int:
    """Start one of the node's relays on its recorded routes: ``forward`` on the host end of
    the veth, ``services`` (the Service network) inside the node's namespace."""
    forward = [sys.executable, "-m", "testenv.forward"]
    if name == "forward":
        argv = [*forward, *node.forward_routes]
    else:
        argv = in_netns(*forward, *node.services_routes)
    repo = Path(__file__).resolve().parent.parent
    # Its state dir in its environment: what `down` finds it by if the record is lost.
    env_of_state = {**os.environ, "RLARK_TESTENV_STATE": str(state_root())}
    log = state_root() / "logs" / f"node-{name}.log"
    node.pids[name] = proc.spawn(argv, log, env_of_state, repo)
    return node.pids[name]


def _restart_dead_parts(node: NodeState) -> bool:
    """Start again a part of the node that died (killed, crashed) while its network stands:
    containerd (on its kept root), the kubelet (its state dir is kept), a relay on its own
    routes. The node needs no rebuild for any of them. True if one was started."""
    if not node.netns or not Path(f"/run/netns/{node.netns}").exists():
        return False  # the machine lost the node's network (a reboot): `up` builds it anew
    bins = _bins()
    restarted = False
    if not proc.alive(node.pids.get("containerd", 0), bins["containerd"]):
        start_containerd(node)
        restarted = True
    if not proc.alive(node.pids.get("kubelet", 0), bins["kubelet"]):
        start_kubelet(node)
        restarted = True
    for name, routes in (("forward", node.forward_routes), ("services", node.services_routes)):
        if routes and not proc.alive(node.pids.get(name, 0), bins[name]):
            start_relay(node, name)
            restarted = True
    return restarted


def start_containerd(node: NodeState) -> int:
    """Start the node's containerd (again, after it died: on its kept root it finds the
    shims still running; a container whose shim did not outlive the gap is reported lost,
    "Unknown", exit 255); returns once its socket answers."""
    logs = state_root() / "logs"
    config = containerd_config()
    with contextlib.suppress(FileNotFoundError):
        sock().unlink()  # a killed containerd leaves its socket: it is not an answer
    pid = proc.spawn(
        in_netns(_bins()["containerd"], "--config", str(config)),
        logs / "node-containerd.log",
        node.kubelet_env,  # the same PATH and HOME as the kubelet's (its shim beside it)
        node_dir(),
    )
    node.pids["containerd"] = pid
    _wait(lambda: sock().exists(), 30, "containerd socket")
    return pid


def start_kubelet(node: NodeState) -> int:
    """Start the node's kubelet (again, after it was killed: its state dir is kept)."""
    logs = state_root() / "logs"
    pid = proc.spawn(node.kubelet_argv, logs / "node-kubelet.log", node.kubelet_env, node_dir())
    node.pids["kubelet"] = pid
    return pid


def _wait(probe: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout:.0f}s (see .testenv/logs/node-*.log)")
        time.sleep(0.2)


def _our_shims() -> list[int]:
    """containerd's shims run detached: ours are the ones that talk to our socket."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"containerd-shim-runc-v2") and str(sock()).encode() in cmd:
            out.append(int(entry))
    return out


def down(state: State) -> list[str]:
    """Stop and undo everything of the node; returns what could not be removed."""
    node = state.node or NodeState()
    pids = node.pids
    bins = _bins()
    if pids.get("kubelet"):
        proc.stop(pids["kubelet"], bins["kubelet"], timeout=10)
    # Every container and sandbox, before containerd goes (its shims would outlive it).
    if pids.get("containerd") and proc.alive(pids["containerd"], bins["containerd"]):
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            for task in _ctr("tasks", "ls", "-q", timeout=30).split():
                with contextlib.suppress(RuntimeError):
                    _ctr("tasks", "kill", "-a", "-s", "SIGKILL", task, timeout=10)
            time.sleep(0.5)
            for task in _ctr("tasks", "ls", "-q", timeout=30).split():
                with contextlib.suppress(RuntimeError):
                    _ctr("tasks", "delete", "-f", task, timeout=10)
        proc.stop(pids["containerd"], bins["containerd"], timeout=10)
    for pid in _our_shims():
        proc.stop(pid, None, timeout=5)
    for relay in ("forward", "services"):
        if pids.get(relay):
            proc.stop(pids[relay], bins["forward"], timeout=5)
    left = cgroups_down()
    # The kubelet bind-mounts its root dir onto itself and mounts volumes under it.
    d = str(node_dir())
    mounts = [
        line.split()[1]
        for line in Path("/proc/self/mounts").read_text().splitlines()
        if line.split()[1] == d or line.split()[1].startswith(d + "/")
    ]
    for m in sorted(mounts, key=len, reverse=True):
        res = subprocess.run(["umount", m], capture_output=True, text=True)
        if res.returncode != 0:
            subprocess.run(["umount", "-l", m], capture_output=True)
    if netns() in sh("ip", "netns", "list", check=False):
        sh("ip", "netns", "del", netns(), check=False)  # the veth pair goes with it
    host_if = veth()[0]
    if Path(f"/sys/class/net/{host_if}").exists():
        sh("ip", "link", "del", host_if, check=False)
    # The kubelet always links container logs from /var/log/containers.
    if VAR_LOG_CONTAINERS.is_dir():
        for link in VAR_LOG_CONTAINERS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(d + "/"):
                link.unlink()
        if not node.var_log_containers_existed:
            with contextlib.suppress(OSError):
                VAR_LOG_CONTAINERS.rmdir()
    # containerd keeps shim sockets under /run/containerd/s whatever its state dir.
    if not node.run_containerd_existed:
        for sub in (RUN_CONTAINERD / "s", RUN_CONTAINERD):
            with contextlib.suppress(OSError):
                sub.rmdir()
    if node.sysctls:
        release_sysctls(node.sysctls)
    shutil.rmtree(node_dir(), ignore_errors=True)
    if node_dir().exists():
        left.append(str(node_dir()))
    state.node = None
    return left


def status(state: State) -> dict[str, Any]:
    node = state.node
    if not node:
        return {"running": False}
    bins = _bins()
    comps = {
        c: {
            "pid": pid,
            "alive": proc.alive(pid, bins.get(c)),
            "rss_mib": round(proc.rss_kib(pid) / 1024, 1),
        }
        for c, pid in node.pids.items()
    }
    return {
        "name": NODE_NAME,
        "netns": node.netns,
        "node_ip": node.node_ip,
        "services": node.services,
        "images": [image.WORKER_IMAGE, image.PAUSE_IMAGE],
        "components": comps,
    }


def import_into_node(make: Callable[[], Path], ref: str, timeout: float = 600) -> dict[str, float]:
    """Build an image archive (if needed) and import it into this checkout's running node;
    the phases' seconds and the archive's size."""
    # Before minutes of building: without a node there is nothing to import into.
    if load().node is None:
        raise RuntimeError("no real node in this checkout: run `testenv/testenv up` first")
    t0 = time.monotonic()
    path = make()
    built = time.monotonic() - t0
    t1 = time.monotonic()
    import_image(path, ref, timeout=timeout)
    return {
        "build_s": round(built, 1),
        "import_s": round(time.monotonic() - t1, 1),
        "archive_mib": round(path.stat().st_size / 2**20, 1),
    }
