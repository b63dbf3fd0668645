"""The real node's configuration files: containerd's, the kubelet's, the Pods' CNI network,
the registry redirect, and the kubelet's kubeconfig. All under the state dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

from testenv import image
from testenv.node_host import (
    POD_BRIDGE,
    POD_GATEWAY,
    POD_SUBNET,
    SERVICE_SUBNET,
    cgroup_root,
    node_dir,
    sock,
)
from testenv.state import NodeState

KUBELET_PORT = 10250
# Image pulls go here: nothing listens on the node namespace's own loopback at this port,
# so a missing image fails the way a registry that cannot be reached does (ErrImagePull).
CLOSED_REGISTRY = "http://127.0.0.1:9"
RUNC = "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"


# --- config files ----------------------------------------------------------------------
def containerd_config() -> Path:
    """containerd's config file: written by ``write_configs``, read by each start of it."""
    return node_dir() / "containerd" / "config.toml"


def write_configs(node: NodeState, ca: Path) -> dict[str, Path]:
    d = node_dir()
    cni = d / "cni" / "net.d"
    cni.mkdir(parents=True, exist_ok=True)
    # Each Pod gets a network namespace of its own (its Ray head binds to its loopback and
    # cannot collide with another Pod's) and an address on a bridge inside the node's
    # namespace, which has no route anywhere but the veth pair: no forwarding, no NAT, no
    # firewall rule; the address bookkeeping stays in the state dir. The one route a Pod
    # gets is to the Service addresses (node_host.net_up gives the bridge its address, and
    # they are the node namespace's own): never a default route, and the plugin's
    # isGateway stays off since it would turn forwarding on.
    plugin = {
        "type": "bridge",
        "bridge": POD_BRIDGE,
        "isGateway": False,
        "ipMasq": False,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": POD_SUBNET, "gateway": POD_GATEWAY}]],
            "routes": [{"dst": SERVICE_SUBNET}],
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
    ctd = containerd_config().parent
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
  # NRI's socket defaults to a machine-wide path (/var/run/nri/nri.sock): a second
  # checkout's node would find it taken. Each node keeps its own beside containerd's.
  [plugins.'io.containerd.nri.v1.nri']
    socket_path = "{ctd / "nri.sock"}"
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
"""
    ctd.mkdir(parents=True, exist_ok=True)
    containerd_config().write_text(toml)

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
        "address": node.node_ip,
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
    return {"containerd": containerd_config(), "kubelet": d / "kubelet-config.json"}


def kubelet_kubeconfig(admin: Path, host_ip: str, port: int) -> Path:
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
