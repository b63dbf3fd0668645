"""The check registry and what every check reads: the effective RLinf view, the Job, the profile."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rlark_acceptance.model.findings import Finding, Location, Severity, error
from rlark_acceptance.model.job import Job, Mount
from rlark_acceptance.model.profile import NodeSpec, Profile, RunInfo
from rlark_acceptance.preflight.secrets import redact
from rlark_acceptance.rlinf.effective import EffectiveRLinf


@dataclass
class Context:
    rlinf: EffectiveRLinf | None = None
    # The same config without the run script's overrides: what was validated (1.2).
    validated: EffectiveRLinf | None = None
    job: Job | None = None
    profile: Profile | None = None
    # Cluster side (3.1, 3.2, 5.7): known clusters and the node inventory, when reachable.
    nodes: list[NodeSpec] | None = None
    clusters: list[str] | None = None
    real_robot_confirmed: bool = False

    @property
    def run_info(self) -> RunInfo | None:
        return self.profile.run_info if self.profile else None

    def ri_loc(self, *keys: Any) -> Location | None:
        return self.profile.loc("runInfo", *keys) if self.profile else None

    @property
    def capacity(self) -> int | None:
        """GPUs the selected node can allocate, when the node is known."""
        node = self.selected_node
        return node.gpus if node else None

    @property
    def selected_node(self) -> NodeSpec | None:
        if self.nodes is None or self.job is None or self.job.worker is None:
            return None
        matched = nodes_matching(self.nodes, self.job.worker.node_selector)
        return matched[0] if len(matched) == 1 else None


CheckFn = Callable[[Context], Iterable[Finding]]


@dataclass(frozen=True)
class Registered:
    id: str
    fn: CheckFn
    needs: tuple[str, ...]


REGISTRY: list[Registered] = []


def check(check_id: str, *, needs: tuple[str, ...] = ()) -> Callable[[CheckFn], CheckFn]:
    """Register a static or cluster check; it runs only when the inputs it ``needs`` exist."""

    def wrap(fn: CheckFn) -> CheckFn:
        REGISTRY.append(Registered(check_id, fn, needs))
        return fn

    return wrap


def has_inputs(ctx: Context, needs: tuple[str, ...]) -> bool:
    present = {
        "rlinf": ctx.rlinf is not None,
        "job": ctx.job is not None,
        "run_info": ctx.profile is not None,
        "nodes": ctx.nodes is not None,
        "clusters": ctx.clusters is not None,
        "worker": ctx.job is not None and ctx.job.worker is not None,
    }
    return all(present[n] for n in needs)


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    evaluated: list[str] = field(default_factory=list)

    def status(self, check_id: str) -> str:
        if check_id not in self.evaluated:
            return "skipped"
        failed = any(f.check == check_id and f.severity == Severity.ERROR for f in self.findings)
        return "failed" if failed else "passed"


def run_checks(ctx: Context, only: Iterable[str] | None = None) -> Outcome:
    wanted = set(only) if only is not None else None
    out = Outcome()
    for reg in REGISTRY:
        if wanted is not None and reg.id not in wanted:
            continue
        if not has_inputs(ctx, reg.needs):
            continue
        if reg.id not in out.evaluated:
            out.evaluated.append(reg.id)
        out.findings.extend(reg.fn(ctx))
    # Fields of the wrong type or form, found while reading the Job YAML, under their check.
    for p in ctx.job.problems if ctx.job is not None else []:
        if wanted is None or p.check in wanted:
            out.findings.append(error(p.check, "yaml-shape", p.message, p.location))
            if p.check not in out.evaluated:
                out.evaluated.append(p.check)
    # Messages quote the inputs (an override, a config value, an image): the one redaction
    # runs last, when the secret scans of 3.6 / 5.8 have seen every value.
    out.findings = [_redacted(f) for f in out.findings]
    return out


def _redacted(f: Finding) -> Finding:
    message = redact(f.message)
    return f if message == f.message else dataclasses.replace(f, message=message)


# -- helpers shared by several checks ---------------------------------------------------


def under(path: str, root: str) -> bool:
    """True when container ``path`` lies inside ``root`` (both absolute POSIX paths)."""
    p = posixpath.normpath(path)
    r = posixpath.normpath(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def mount_for(path: str, mounts: list[Mount]) -> Mount | None:
    """The most specific mount whose container path holds ``path``."""
    holding = [
        m
        for m in mounts
        if m.container_path and posixpath.isabs(m.container_path) and under(path, m.container_path)
    ]
    return max(holding, key=lambda m: len(m.container_path or ""), default=None)


def nodes_matching(nodes: list[NodeSpec], selector: Any) -> list[NodeSpec]:
    """Nodes a label selector picks, as the scheduler would: ready and schedulable only."""
    if not isinstance(selector, dict):
        selector = {}
    return [
        n
        for n in nodes
        if n.ready
        and n.schedulable
        and all(n.labels.get(str(k)) == str(v) for k, v in selector.items())
    ]


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
