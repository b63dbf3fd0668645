"""The real node's footprint on this machine: its names, network namespace, cgroups and the
kernel settings the kubelet changes.

Everything machine-wide is named after the state dir's id (``ident()``), so two checkouts
never share a network namespace, a veth pair or a cgroup root.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from testenv.paths import state_root
from testenv.state import NodeState

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
# The Pods' addresses: they exist only inside the node's network namespace.
POD_SUBNET = "10.255.0.0/24"
POD_BRIDGE = "cni0"
POD_GATEWAY = "10.255.0.1"
# The API server's default service-cluster-ip-range: where the ClusterIPs are.
SERVICE_SUBNET = "10.0.0.0/24"


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


def sh(*argv: str, check: bool = True, timeout: float = 60) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def in_netns(*argv: str) -> list[str]:
    # nsenter joins only the network namespace: the node shares this machine's mounts, so
    # what the kubelet mounts for a Pod is what runc sees, and `down` can undo it.
    return ["nsenter", f"--net=/run/netns/{netns()}", "--", *argv]


# --- network ---------------------------------------------------------------------------
def pick_subnet() -> ipaddress.IPv4Network:
    """A /30 of 10.254.0.0/16 that no address or route of this machine overlaps."""
    used = []
    for line in sh("ip", "-4", "-o", "addr").splitlines() + sh("ip", "-4", "route").splitlines():
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


def net_up(node: NodeState) -> None:
    ns, (host_if, node_if) = netns(), veth()
    if ns not in sh("ip", "netns", "list"):
        sh("ip", "netns", "add", ns)
    if not Path(f"/sys/class/net/{host_if}").exists():
        sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", node_if, "netns", ns)
    sh("ip", "addr", "replace", f"{node.host_ip}/30", "dev", host_if)
    sh("ip", "link", "set", host_if, "up")
    sh(*in_netns("ip", "addr", "replace", f"{node.node_ip}/30", "dev", node_if))
    sh(*in_netns("ip", "link", "set", node_if, "up"))
    sh(*in_netns("ip", "link", "set", "lo", "up"))
    # The Pods' bridge, made here with its address so it is the Pods' way to the Service
    # addresses; the CNI plugin adopts it. Forwarding stays off: nothing a Pod sends goes
    # past the node's namespace.
    if sh(*in_netns("ip", "link", "show", POD_BRIDGE), check=False) == "":
        sh(*in_netns("ip", "link", "add", POD_BRIDGE, "type", "bridge"))
    prefix = POD_SUBNET.split("/")[1]
    sh(*in_netns("ip", "addr", "replace", f"{POD_GATEWAY}/{prefix}", "dev", POD_BRIDGE))
    sh(*in_netns("ip", "link", "set", POD_BRIDGE, "up"))
    sh(*in_netns("sysctl", "-qw", "net.ipv4.ip_forward=0"))


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


# The node's CPU weight beside the rest of this machine, as so many busy processes. On a
# platform the Worker has its node to itself; here the node's whole cgroup (kubelet,
# containerd, every Pod) is one entity beside each runnable process of the machine's own
# (cgroup v1 weighs those 1024 apiece, the default cpu.shares of one group). With the
# test workers' Ray heads at a load of 19 on 2 cores, a Worker's raylet then did not
# register within the 30 s that `ray start --head` waits (its dashboard agent had missed the
# raylet's fixed 15 s for its port file, and the raylet had aborted).
NODE_CPU_WEIGHT = 8


def cgroups_up() -> None:
    for h in _hierarchies():
        d = h / cgroup_root()
        d.mkdir(exist_ok=True)
        for name, value in (("cpu.shares", 1024), ("cpu.weight", 100)):
            if (d / name).exists():
                (d / name).write_text(f"{value * NODE_CPU_WEIGHT}\n")
        if (h / "cpuset.cpus").exists() and "cgroup2" not in str(h):
            # A new v1 cpuset is empty: give it its parent's CPUs and memory nodes.
            for f in ("cpuset.cpus", "cpuset.mems"):
                with contextlib.suppress(OSError):
                    (d / f).write_text((h / f).read_text())


def cgroups_down() -> list[str]:
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


# The sysctls are the machine's, shared by every checkout's node: the values before the
# first node's kubelet changed them are kept here (tmpfs: a reboot resets both), with the
# nodes that run; the last node down puts them back. A per-checkout record would hold the
# first kubelet's values when a second checkout starts, and leave them behind.
SYSCTLS_RECORD = Path("/run/rlark-testenv-sysctls.json")


def read_sysctls() -> dict[str, str]:
    return {k: (Path("/proc/sys") / k).read_text().strip() for k in SYSCTLS}


@contextlib.contextmanager
def _sysctls_record() -> Any:
    import fcntl
    import json

    # The lock file stays after the last node is down (0 bytes, on tmpfs): removing it while
    # another checkout waits on it would let two processes hold "the" lock at once.
    with open(SYSCTLS_RECORD.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            record = json.loads(SYSCTLS_RECORD.read_text())
        except (OSError, ValueError):
            record = {"before": read_sysctls(), "nodes": []}
        yield record
        if record["nodes"]:
            SYSCTLS_RECORD.write_text(json.dumps(record))
        else:
            SYSCTLS_RECORD.unlink(missing_ok=True)


def hold_sysctls() -> dict[str, str]:
    """This node is up: the machine's values before any node's kubelet, recorded once."""
    with _sysctls_record() as record:
        if ident() not in record["nodes"]:
            record["nodes"].append(ident())
        return dict(record["before"])


def release_sysctls(saved: dict[str, str]) -> None:
    """This node is down: the values put back once no other checkout's node runs."""
    with _sysctls_record() as record:
        record["nodes"] = [n for n in record["nodes"] if n != ident()]
        if record["nodes"]:
            return
        before = record.get("before") or saved
    for k, v in before.items():
        with contextlib.suppress(OSError):
            if (Path("/proc/sys") / k).read_text().strip() != v:
                (Path("/proc/sys") / k).write_text(v)
