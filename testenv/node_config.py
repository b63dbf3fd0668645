"""The real node's configuration files: containerd's, the kubelet's, the Pods' CNI network,
the registry redirect, and the kubelet's kubeconfig. All under the state dir."""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import yaml

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
# The config files, with ``${name}`` placeholders (string.Template).
TEMPLATES = Path(__file__).resolve().parent / "templates"


# --- config files ----------------------------------------------------------------------
def containerd_config() -> Path:
    """containerd's config file: written by ``write_configs``, read by each start of it."""
    return node_dir() / "containerd" / "config.toml"


def render(template: str, **values: object) -> str:
    """A file of ``templates/`` with its ``${name}`` placeholders filled in; a placeholder
    without a value is a KeyError, never left in the file."""
    return string.Template((TEMPLATES / template).read_text()).substitute(values)


def _as_json(template: str, indent: int | None = None, **values: object) -> str:
    """A YAML template (commented, unlike the JSON the program reads) written as JSON."""
    return json.dumps(yaml.safe_load(render(template, **values)), indent=indent)


def write_configs(node: NodeState, ca: Path) -> dict[str, Path]:
    d = node_dir()
    cni = d / "cni" / "net.d"
    cni.mkdir(parents=True, exist_ok=True)
    (cni / "10-pods.conflist").write_text(
        _as_json(
            "cni-pods.yaml",
            bridge=POD_BRIDGE,
            subnet=POD_SUBNET,
            gateway=POD_GATEWAY,
            service_subnet=SERVICE_SUBNET,
            ipam_dir=d / "cni" / "ipam",
        )
    )
    hosts = d / "certs.d" / "_default"
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "hosts.toml").write_text(render("hosts.toml", registry=CLOSED_REGISTRY))
    ctd = containerd_config().parent
    ctd.mkdir(parents=True, exist_ok=True)
    containerd_config().write_text(
        render(
            "containerd.toml",
            root=ctd / "root",
            state=ctd / "state",
            sock=sock(),
            pause_image=image.PAUSE_IMAGE,
            certs=d / "certs.d",
            runc=RUNC,
            runc_root=ctd / "runc",
            cni_bin=CNI_BIN,
            cni_conf=cni,
            nri_sock=ctd / "nri.sock",
        )
    )
    (d / "kubelet-config.json").write_text(
        _as_json(
            "kubelet-config.yaml",
            indent=2,
            cgroup_root=cgroup_root(),
            sock=sock(),
            node_ip=node.node_ip,
            kubelet_port=KUBELET_PORT,
            ca=ca,
            pod_logs=d / "pod-logs",
        )
    )
    return {"containerd": containerd_config(), "kubelet": d / "kubelet-config.json"}


def kubelet_kubeconfig(admin: Path, host_ip: str, port: int) -> Path:
    """The admin kubeconfig, pointed at the forwarder (the API server's name unchanged)."""
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
