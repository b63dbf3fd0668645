"""A profile for a new site, written from what the site already has: the Job YAML its
console exported, the RLinf config that Job runs, and optionally a kubeconfig and a node
inventory.

Every value that can be read from them is filled in: the name, namespace, cluster and node
selection from the Job; the image, GPUs, prepare and start commands from its Worker; the
paths from its mounts; where checkpoints land from the config as the Job's command composes
it (the pre-flight's own evaluation); the node's GPUs and labels from the inventory. What
none of them says is left out or null with a comment saying what to write there, so the
pre-flight on the result passes or names only what is left to fill.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlark_acceptance.model.job import Job, Role
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.model.yamlsrc import read_text
from rlark_acceptance.preflight.checks.base import nodes_matching
from rlark_acceptance.preflight.entry import preflight_files
from rlark_acceptance.rlinf.effective import LOG_PATH_RUNNERS

HOSTNAME = "kubernetes.io/hostname"
# RLinf's embodied runners print a metric table after each step ("│ Global Step:  1/2 │").
EMBODIED_SIGNAL = r"Global Step:.*\b[1-9]\d*/\d+"
TODO = "TO FILL:"


@dataclass
class Written:
    """The profile's text and the lines a user still has to fill."""

    text: str
    to_fill: list[str] = field(default_factory=list)


def _scalar(value: Any) -> str:
    """``value`` as one line of YAML (quoted where YAML needs it)."""
    out = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1 << 20)
    return out.removesuffix("\n").removesuffix("\n...")


def _rel(path: Path, base: Path) -> str:
    """``path`` relative to the profile's folder, as the profile names files; absolute
    where that would climb out past the folders they share."""
    real, here = os.path.realpath(path), os.path.realpath(base)
    rel = os.path.relpath(real, here)
    return real if rel.startswith("../../..") else rel


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.to_fill: list[str] = []

    def add(self, text: str) -> None:
        self.lines.append(text)

    def value(self, indent: int, key: str, value: Any, note: str | None = None) -> None:
        line = f"{' ' * indent}{key}: {_scalar(value)}"
        self.lines.append(line + (f"  # {note}" if note else ""))

    def fill(self, indent: int, key: str, what: str, value: Any = None) -> None:
        """A key whose value only the user knows: null (or ``value``) and what to write."""
        self.lines.append(f"{' ' * indent}{key}: {_scalar(value)}  # {TODO} {what}")
        self.to_fill.append(f"{key}: {what}")


def scaffold(
    job_path: Path,
    config_path: Path,
    out: Path,
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    nodes: list[NodeSpec] | None = None,
) -> Written:
    """The profile's text for ``out`` (paths relative to its folder)."""
    pre = preflight_files(config_path, job=job_path)
    job, rlinf = pre.job, pre.rlinf
    assert job is not None and rlinf is not None  # preflight_files read both, or raised
    role = job.worker
    base = out.parent
    w = _Lines()
    w.add("# Written by `rlark-acceptance init` from the Job YAML and RLinf config below.")
    w.add("# A value they do not say is null, its comment says what to write; then check it with")
    w.add(f"#   rlark-acceptance preflight --profile {out.name}")
    name = job.name if isinstance(job.name, str) and job.name else config_path.stem
    w.value(0, "name", name)
    _target(w, job, role, base, kubeconfig, context, nodes)
    w.add("rlinf:")
    w.value(2, "config", _rel(config_path, base))
    w.value(2, "configDir", None)
    w.value(2, "overrides", [])
    w.value(0, "job", _rel(job_path, base))
    _run_info(w, job, role, rlinf, nodes)
    w.add("safety:")
    if rlinf.cluster.real_robot:
        w.fill(2, "realRobotConfirmed", "true once the robot's run is confirmed safe (0.5)", False)
    else:
        w.value(2, "realRobotConfirmed", False)
    w.add("# timeouts: the contract's defaults (docs/contract.md §2); raise them for slow sites.")
    text = "\n".join(w.lines) + "\n"
    return Written(text, w.to_fill)


def _selector(role: Role | None) -> dict[str, str]:
    sel = role.node_selector if role is not None else None
    return {str(k): str(v) for k, v in sel.items()} if isinstance(sel, dict) else {}


def _node(role: Role | None, nodes: list[NodeSpec] | None) -> NodeSpec | None:
    """The one node the Worker's selection picks in the inventory, if exactly one."""
    if not nodes:
        return None
    picked = nodes_matching(nodes, _selector(role))
    return picked[0] if len(picked) == 1 else None


def _target(
    w: _Lines,
    job: Job,
    role: Role | None,
    base: Path,
    kubeconfig: Path | None,
    context: str | None,
    nodes: list[NodeSpec] | None,
) -> None:
    w.add("target:")
    w.value(2, "adapter", "kubernetes")
    if kubeconfig is not None:
        w.value(2, "kubeconfig", _rel(kubeconfig, base))
        context = context or _current_context(kubeconfig)
    else:
        w.add("  # kubeconfig: the cluster's kubeconfig (absent: ~/.kube/config, KUBECONFIG)")
    if context:
        w.value(2, "context", context)
    if job.namespace:
        w.value(2, "namespace", job.namespace)
    else:
        w.fill(2, "namespace", "the namespace the console submits Jobs to")
    if role is not None and role.cluster:
        w.value(2, "cluster", role.cluster)
    node = _node(role, nodes)
    sel = _selector(role)
    w.add("  node:  # the node the Worker must land on (3.1-3.3, 5.5, 5.7)")
    if node is not None:
        w.value(4, "name", node.name)
        w.value(4, "gpus", node.gpus)
        w.value(4, "labels", dict(node.labels))
        return
    if sel.get(HOSTNAME):
        w.value(4, "name", sel[HOSTNAME])
    else:
        w.fill(4, "name", "the node's name (kubectl get nodes)")
    w.fill(4, "gpus", "the node's allocatable GPUs (nvidia.com/gpu)")
    w.value(4, "labels", sel or {}, "the node's labels: at least those the Job selects by")


def _current_context(kubeconfig: Path) -> str | None:
    data = yaml.safe_load(read_text(kubeconfig))
    ctx = data.get("current-context") if isinstance(data, dict) else None
    return ctx if isinstance(ctx, str) and ctx else None


def _run_info(
    w: _Lines, job: Job, role: Role | None, rlinf: Any, nodes: list[NodeSpec] | None
) -> None:
    w.add("runInfo:  # 准备 RLinf 运行信息: what the team prepared, as the Job carries it")
    if role is not None and role.image:
        w.value(2, "image", role.image)
    else:
        w.fill(2, "image", "the Worker's image, with a version tag or digest")
    if role is not None and isinstance(role.gpus, int):
        w.value(2, "gpus", role.gpus)
    else:
        w.fill(2, "gpus", "the GPUs the Worker requests")
    if job.run_script and job.run_script.strip():
        w.value(2, "startCommand", job.run_script.strip())
    else:
        w.fill(2, "startCommand", "the validated start command (cd …  && python …)")
    if role is not None and role.prepare_script and role.prepare_script.strip():
        w.value(2, "prepareCommand", role.prepare_script.strip())
    paths = _paths(role, rlinf)
    w.add("  paths:")
    for kind in ("data", "model", "checkpoint", "output"):
        if kind in paths:
            w.value(4, kind, paths[kind])
        else:
            w.fill(4, kind, f"the {kind} path in the container, under a mount")
    if rlinf.task_type in LOG_PATH_RUNNERS:
        w.value(2, "firstSignal", EMBODIED_SIGNAL, "RLinf's metric table after a step")
    else:
        w.fill(2, "firstSignal", "a regex of the first sign of training in the Worker's log")
    if rlinf.checkpoint_dir:
        w.value(2, "expectedOutput", rlinf.checkpoint_dir)
    else:
        w.fill(2, "expectedOutput", "where the checkpoint must be, as a container path")
    node = _node(role, nodes)
    hostname = node.name if node is not None else _selector(role).get(HOSTNAME)
    if hostname:
        w.value(2, "expectedNode", hostname)
    else:
        w.fill(2, "expectedNode", "the node the Worker must run on")


def _paths(role: Role | None, rlinf: Any) -> dict[str, str]:
    """Paths the Job's mounts and the config say: data / model mounts by name, the
    checkpoint and output where RLinf writes its log path."""
    out: dict[str, str] = {}
    for mount in role.mounts if role is not None else []:
        for kind in ("data", "model"):
            if kind not in out and mount.container_path and kind in mount.name.lower():
                out[kind] = mount.container_path
    written = rlinf.log_path
    if isinstance(written, str) and posixpath.isabs(written):
        out["checkpoint"] = out["output"] = written
    return out
