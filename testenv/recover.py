"""What runs of this state dir's set when its record is lost (state.json unreadable): found
by kwokctl's pid files and by each process's own arguments or environment, never by a name
or a working directory alone (other checkouts, and other state dirs of this checkout, run
the same binaries and modules).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from testenv import build, cluster
from testenv.paths import state_root
from testenv.state import ClusterState, NodeState, PlatformState, S3State, State

STATE_ENV = "RLARK_TESTENV_STATE"


@dataclass(frozen=True)
class Process:
    pid: int
    argv: tuple[str, ...]
    state: str | None  # its RLARK_TESTENV_STATE: the state dir testenv started it for


def processes() -> list[Process]:
    """Every process this user may read the arguments and environment of."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
        prefix = f"{STATE_ENV}=".encode()
        state = next((e[len(prefix) :].decode() for e in env if e.startswith(prefix)), None)
        if argv:
            out.append(Process(int(entry), argv, state))
    return out


def recover(found: list[Process] | None = None) -> State:
    """A record of what runs: the services' processes that name this checkout's state dir
    in their arguments (versitygw, containerd, kubelet), or are testenv's own Python modules
    started for it (the node's forwarder, the platform stand-in: ``RLARK_TESTENV_STATE``)."""
    root = str(state_root())
    ours = {
        "versitygw": str(build.RECIPES["versitygw"].bin("versitygw")),
        "containerd": str(build.RECIPES["containerd"].bin("containerd")),
        "kubelet": str(build.RECIPES["kubelet"].bin("kubelet")),
    }
    st = State()
    node = NodeState()
    for p in processes() if found is None else found:
        names_root = any(root in a for a in p.argv[1:])
        exe = next((k for k, path in ours.items() if p.argv[0] == path), None)
        module = p.argv[2] if len(p.argv) > 2 and p.argv[1] == "-m" else None
        if exe == "versitygw" and names_root:
            st.s3 = S3State(pid=p.pid)
        elif exe in ("containerd", "kubelet") and names_root:
            node.pids[exe] = p.pid
        elif module == "testenv.forward" and p.state == root:
            # Two relays: the host's to the API server, the Service network's in the node.
            node.pids["services" if "forward" in node.pids else "forward"] = p.pid
        elif module == "testenv.rlark_platform" and p.state == root:
            st.platform = PlatformState(p.pid)
    if node.pids:
        st.node = node
    if cluster.pids() or (cluster.cluster_dir() / "kwok.yaml").is_file():
        st.cluster = ClusterState(pids=cluster.pids())
    return st
