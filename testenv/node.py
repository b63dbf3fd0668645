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
* the kubelet sets a few kernel sysctls at start: their values are recorded before and
  put back by ``down``.

Everything machine-wide is named after this state dir's id (``ident()``): the network
namespace, the veth pair, the cgroup root of the Pods; two checkouts never share one.
``down`` stops every container, containerd, the kubelet and the forwarder (by pid), undoes
the kubelet's mounts under the state dir, removes the cgroups, the namespace, the
``/var/log/containers`` links and the sysctl changes: it leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testenv import apt, build, image, proc
from testenv.paths import state_root
from testenv.state import State

NODE_NAME = "gpu-node-09"
POOL = "gpu-b"
# The RLark cluster the node makes up (a Job role's `cluster`), as the profile names it.
RLARK_CLUSTER = "rlark-testenv"
GPUS = 8
GPU_RESOURCE = "nvidia.com/gpu"
KUBELET_PORT = 10250
# Image pulls go here: nothing listens on the node namespace's own loopback at this port,
# so a missing image fails the way a registry that cannot be reached does (ErrImagePull).
CLOSED_REGISTRY = "http://127.0.0.1:9"
RUNC = "/usr/sbin/runc"
# The Pods' addresses: they exist only inside the node's network namespace.
POD_SUBNET = "10.255.0.0/24"
CNI_BIN = "/usr/lib/cni"
VAR_LOG_CONTAINERS = Path("/var/log/containers")
RUN_CONTAINERD = Path("/run/containerd")
# The kernel tunables the kubelet sets when protectKernelDefaults is false.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
CGROUP_FS = Path("/sys/fs/cgroup")


def ident() -> str:
    return hashlib.sha256(str(state_root()).encode()).hexdigest()[:6]


def netns() -> str:
    return f"rlark-node-{ident()}"


def veth() -> tuple[str, str]:
    return f"rkn{ident()}h", f"rkn{ident()}n"


def cgroup_root() -> str:
    return f"rlark-node-{ident()}"


def node_dir() -> Path:
    return state_root() / "node"


def sock() -> Path:
    return node_dir() / "containerd" / "containerd.sock"


def _sh(*argv: str, check: bool = True, timeout: float = 60) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def _in_netns(*argv: str) -> list[str]:
    # nsenter joins only the network namespace: the node shares this machine's mounts, so
    # what the kubelet mounts for a Pod is what runc sees, and `down` can undo it.
    return ["nsenter", f"--net=/run/netns/{netns()}", "--", *argv]


# --- network ---------------------------------------------------------------------------
def _pick_subnet() -> ipaddress.IPv4Network:
    """A /30 of 10.254.0.0/16 that no address or route of this machine overlaps."""
    used = []
    for line in _sh("ip", "-4", "-o", "addr").splitlines() + _sh("ip", "-4", "route").splitlines():
        for word in line.split():
            with contextlib.suppress(ValueError):
                used.append(ipaddress.ip_network(word, strict=False))
    start, count = int(ipaddress.ip_address("10.254.0.0")), 1 << 14
    base = int(ident(), 16) % count
    for i in range(count):
        cand = ipaddress.IPv4Network((start + ((base + i) % count) * 4, 30))
        if not any(cand.overlaps(u) for u in used):
            return cand
    raise RuntimeError("no free /30 in 10.254.0.0/16 for the node's veth pair")


def _net_up(node: dict[str, Any]) -> None:
    ns, (host_if, node_if) = netns(), veth()
    if ns not in _sh("ip", "netns", "list"):
        _sh("ip", "netns", "add", ns)
    if not Path(f"/sys/class/net/{host_if}").exists():
        _sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", node_if, "netns", ns)
    _sh("ip", "addr", "replace", f"{node['host_ip']}/30", "dev", host_if)
    _sh("ip", "link", "set", host_if, "up")
    _sh(*_in_netns("ip", "addr", "replace", f"{node['node_ip']}/30", "dev", node_if))
    _sh(*_in_netns("ip", "link", "set", node_if, "up"))
    _sh(*_in_netns("ip", "link", "set", "lo", "up"))


# --- config files ----------------------------------------------------------------------
def _write_configs(node: dict[str, Any], ca: Path) -> dict[str, Path]:
    d = node_dir()
    cni = d / "cni" / "net.d"
    cni.mkdir(parents=True, exist_ok=True)
    # Each Pod gets a network namespace of its own (its Ray head binds to its loopback and
    # cannot collide with another Pod's) and an address on a bridge inside the node's
    # namespace, which has no route anywhere but the veth pair: no forwarding, no NAT, no
    # firewall rule; the address bookkeeping stays in the state dir.
    plugin = {
        "type": "bridge",
        "bridge": "cni0",
        "isGateway": False,
        "ipMasq": False,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": POD_SUBNET}]],
            "dataDir": str(d / "cni" / "ipam"),
        },
    }
    (cni / "10-pods.conflist").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "rlark-node-pods", "plugins": [plugin]})
    )
    hosts = d / "certs.d" / "_default"
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "hosts.toml").write_text(
        f'server = "{CLOSED_REGISTRY}"\n\n[host."{CLOSED_REGISTRY}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
    )
    ctd = d / "containerd"
    rt = "plugins.'io.containerd.cri.v1.runtime'"
    toml = f"""version = 3
root = "{ctd / "root"}"
state = "{ctd / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{sock()}"
[ttrpc]
  address = "{sock()}.ttrpc"
[metrics]
  address = ""

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "{image.PAUSE_IMAGE}"
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "{d / "certs.d"}"
  [{rt}]
    enable_selinux = false
    # This machine kind withholds CAP_SYS_RESOURCE: raising oom_score_adj fails in runc.
    restrict_oom_score_adj = true
    # Pod network namespaces under the state dir, not the machine's /run/netns.
    netns_mounts_under_state_dir = true
    [{rt}.containerd]
      default_runtime_name = "runc"
      [{rt}.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [{rt}.containerd.runtimes.runc.options]
          SystemdCgroup = false
          BinaryName = "{RUNC}"
          Root = "{ctd / "runc"}"
    [{rt}.cni]
      bin_dirs = ["{CNI_BIN}"]
      conf_dir = "{cni}"
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
"""
    (ctd).mkdir(parents=True, exist_ok=True)
    (ctd / "config.toml").write_text(toml)

    kcfg = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # cgroup v1 (hybrid) here: kubelet >= 1.35 refuses it unless told.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        # Pods' cgroups under a root of this state dir's own, never the machine's kubepods.
        "cgroupRoot": f"/{cgroup_root()}",
        "containerRuntimeEndpoint": f"unix://{sock()}",
        "imageServiceEndpoint": f"unix://{sock()}",
        "address": node["node_ip"],
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        # The API server calls with its kubelet client certificate (x509 against the
        # cluster CA), then the kubelet asks it (Webhook) whether that user may.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "registerNode": True,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        # The imported images cannot be pulled again: never collect them; no disk eviction.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": False,
        "resolvConf": "/etc/resolv.conf",
        "clusterDomain": "cluster.local",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "podLogsDir": str(d / "pod-logs"),
        "containerLogMaxSize": "10Mi",
        "containerLogMaxFiles": 2,
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "5s",
    }
    (d / "kubelet-config.json").write_text(json.dumps(kcfg, indent=2))
    return {"containerd": ctd / "config.toml", "kubelet": d / "kubelet-config.json"}


def _kubelet_kubeconfig(admin: Path, host_ip: str, port: int) -> Path:
    """The admin kubeconfig, pointed at the forwarder (the API server's name unchanged)."""
    import yaml

    cfg = yaml.safe_load(admin.read_text())
    for c in cfg.get("clusters") or []:
        server = c["cluster"]["server"]
        c["cluster"]["server"] = f"https://{host_ip}:{port}"
        # The serving certificate names 127.0.0.1: verify against that.
        c["cluster"]["tls-server-name"] = server.split("//", 1)[1].rsplit(":", 1)[0]
    out = node_dir() / "kubelet.kubeconfig"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(cfg, fh)
    return out


# --- cgroups and sysctls -------------------------------------------------------------
def _hierarchies() -> list[Path]:
    seen: set[str] = set()
    out = []
    for p in sorted(CGROUP_FS.iterdir()):
        real = os.path.realpath(p)
        if p.is_dir() and real not in seen:
            seen.add(real)
            out.append(Path(real))
    return out


def _cgroups_up() -> None:
    for h in _hierarchies():
        d = h / cgroup_root()
        d.mkdir(exist_ok=True)
        if (h / "cpuset.cpus").exists() and "cgroup2" not in str(h):
            # A new v1 cpuset is empty: give it its parent's CPUs and memory nodes.
            for f in ("cpuset.cpus", "cpuset.mems"):
                with contextlib.suppress(OSError):
                    (d / f).write_text((h / f).read_text())


def _cgroups_down() -> list[str]:
    """Kill what is left in our cgroups, then remove them deepest first."""
    left = []
    for h in _hierarchies():
        root = h / cgroup_root()
        if not root.is_dir():
            continue
        for procs in root.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        dirs = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, root]:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            if d.exists():
                left.append(str(d))
    return left


def _read_sysctls() -> dict[str, str]:
    return {k: (Path("/proc/sys") / k).read_text().strip() for k in SYSCTLS}


def _restore_sysctls(saved: dict[str, str]) -> None:
    for k, v in saved.items():
        with contextlib.suppress(OSError):
            if (Path("/proc/sys") / k).read_text().strip() != v:
                (Path("/proc/sys") / k).write_text(v)


# --- lifecycle -------------------------------------------------------------------------
def _ctr(*args: str, timeout: float = 600) -> str:
    ctr = str(build.RECIPES["containerd"].bin("ctr"))
    return _sh(ctr, "--address", str(sock()), "-n", "k8s.io", *args, timeout=timeout)


def _import(archive: Path, ref: str) -> None:
    digest = json.loads(_read_index(archive))["manifests"][0]["digest"]
    listed = _ctr("images", "ls")
    if any(ref in line and digest in line for line in listed.splitlines()):
        return
    _ctr("images", "import", "--snapshotter", "overlayfs", str(archive))


def _read_index(archive: Path) -> str:
    import tarfile

    with tarfile.open(archive) as tf:
        member = tf.extractfile("index.json")
        assert member is not None
        return member.read().decode()


def healthy(node: dict[str, Any] | None, kubectl: Any) -> bool:
    if not node:
        return False
    pids = node.get("pids") or {}
    bins = _bins()
    if not all(proc.alive(pids.get(c, 0), bins.get(c)) for c in ("containerd", "kubelet")):
        return False
    out = kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
    try:
        conds = json.loads(out)["status"]["conditions"]
    except (ValueError, KeyError):
        return False
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _bins() -> dict[str, str]:
    return {
        "containerd": str(build.RECIPES["containerd"].bin("containerd")),
        "kubelet": str(build.RECIPES["kubelet"].bin("kubelet")),
        "forward": os.path.realpath(sys.executable),
    }


def up(state: State, apiserver_port: int, kubeconfig: Path, ca: Path, kubectl: Any) -> None:
    node = state.get("node")
    if healthy(node, kubectl):
        return
    if node:
        down(state)
    apt.ensure()
    build.ensure(("kubelet", "containerd", "pause"))
    pause, worker = image.pause_archive(), image.worker_archive()
    net = _pick_subnet()
    hosts = list(net.hosts())
    node = {
        "netns": netns(),
        "host_ip": str(hosts[0]),
        "node_ip": str(hosts[1]),
        "cgroup_root": cgroup_root(),
        "sysctls": _read_sysctls(),
        "var_log_containers_existed": VAR_LOG_CONTAINERS.exists(),
        "run_containerd_existed": RUN_CONTAINERD.exists(),
        "pids": {},
    }
    state["node"] = node
    d = node_dir()
    d.mkdir(parents=True, exist_ok=True)
    _net_up(node)
    _cgroups_up()
    files = _write_configs(node, ca)
    bins = _bins()
    logs = state_root() / "logs"
    fwd_port = proc.free_port()
    node["pids"]["forward"] = proc.spawn(
        [
            sys.executable,
            "-m",
            "testenv.forward",
            node["host_ip"],
            str(fwd_port),
            "127.0.0.1",
            str(apiserver_port),
        ],
        logs / "node-forward.log",
        dict(os.environ),
        Path(__file__).resolve().parent.parent,
    )
    env = {
        # containerd finds its shim next to itself; without /usr/sbin the kubelet finds no
        # iptables and leaves this machine's firewall alone.
        "PATH": os.pathsep.join(
            [str(Path(bins["containerd"]).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        "HOME": str(d),
    }
    node["pids"]["containerd"] = proc.spawn(
        _in_netns(bins["containerd"], "--config", str(files["containerd"])),
        logs / "node-containerd.log",
        env,
        d,
    )
    _wait(lambda: sock().exists(), 30, "containerd socket")
    _import(pause, image.PAUSE_IMAGE)
    _import(worker, image.WORKER_IMAGE)
    kk = _kubelet_kubeconfig(kubeconfig, node["host_ip"], fwd_port)
    node["pids"]["kubelet"] = proc.spawn(
        _in_netns(
            bins["kubelet"],
            f"--config={files['kubelet']}",
            f"--kubeconfig={kk}",
            f"--root-dir={d / 'kubelet'}",
            f"--cert-dir={d / 'kubelet-pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={node['node_ip']}",
            f"--node-labels=rlark.io/pool={POOL},rlark.io/cluster={RLARK_CLUSTER},"
            "nvidia.com/gpu.present=true",
            "--v=2",
        ),
        logs / "node-kubelet.log",
        env,
        d,
    )

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
    node = state.get("node") or {}
    pids = node.get("pids") or {}
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
    if pids.get("forward"):
        proc.stop(pids["forward"], bins["forward"], timeout=5)
    left = _cgroups_down()
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
    if netns() in _sh("ip", "netns", "list", check=False):
        _sh("ip", "netns", "del", netns(), check=False)  # the veth pair goes with it
    host_if = veth()[0]
    if Path(f"/sys/class/net/{host_if}").exists():
        _sh("ip", "link", "del", host_if, check=False)
    # The kubelet always links container logs from /var/log/containers.
    if VAR_LOG_CONTAINERS.is_dir():
        for link in VAR_LOG_CONTAINERS.iterdir():
            if link.is_symlink() and os.readlink(link).startswith(d + "/"):
                link.unlink()
        if not node.get("var_log_containers_existed", True):
            with contextlib.suppress(OSError):
                VAR_LOG_CONTAINERS.rmdir()
    # containerd keeps shim sockets under /run/containerd/s whatever its state dir.
    if not node.get("run_containerd_existed", True):
        for sub in (RUN_CONTAINERD / "s", RUN_CONTAINERD):
            with contextlib.suppress(OSError):
                sub.rmdir()
    if node.get("sysctls"):
        _restore_sysctls(node["sysctls"])
    shutil.rmtree(node_dir(), ignore_errors=True)
    if node_dir().exists():
        left.append(str(node_dir()))
    state.pop("node", None)
    return left


def status(state: State) -> dict[str, Any]:
    node = state.get("node")
    if not node:
        return {"running": False}
    bins = _bins()
    comps = {
        c: {
            "pid": pid,
            "alive": proc.alive(pid, bins.get(c)),
            "rss_mib": round(proc.rss_kib(pid) / 1024, 1),
        }
        for c, pid in (node.get("pids") or {}).items()
    }
    return {
        "name": NODE_NAME,
        "netns": node.get("netns"),
        "node_ip": node.get("node_ip"),
        "images": [image.WORKER_IMAGE, image.PAUSE_IMAGE],
        "components": comps,
    }
