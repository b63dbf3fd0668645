"""The check registry and what every check reads: the effective RLinf view, the Job, the profile."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rlark_acceptance.model.findings import Finding, Location, Severity, Status, error, warning
from rlark_acceptance.model.job import Job, Role
from rlark_acceptance.model.profile import NodeSpec, Profile, RunInfo
from rlark_acceptance.rlinf.effective import EffectiveRLinf
from rlark_acceptance.secrets import Redactor


@dataclass
class Context:
    rlinf: EffectiveRLinf | None = None
    # The same config without the run script's overrides: what was validated (1.2).
    validated: EffectiveRLinf | None = None
    job: Job | None = None
    profile: Profile | None = None
    # Cluster side (3.1, 3.2, 3.3, 5.5, 5.7): known clusters and the node inventory, when reachable.
    nodes: list[NodeSpec] | None = None
    clusters: list[str] | None = None
    real_robot_confirmed: bool = False
    # The run's redaction: the secret scans of 3.6 / 5.8 remember what they find in it, and
    # every finding's message goes through it.
    redactor: Redactor = field(default_factory=Redactor)

    @property
    def run_info(self) -> RunInfo | None:
        return self.profile.run_info if self.profile else None

    # The inputs a check ``needs``: it runs only when they exist, so these raise only on a
    # check registered with too few ``needs`` (a bug, which keeps its traceback).

    @property
    def the_rlinf(self) -> EffectiveRLinf:
        return _required(self.rlinf, "rlinf")

    @property
    def the_job(self) -> Job:
        return _required(self.job, "job")

    @property
    def worker(self) -> Role:
        return _required(self.the_job.worker, "worker")

    @property
    def the_run_info(self) -> RunInfo:
        return _required(self.run_info, "run_info")

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


_T = TypeVar("_T")


class MissingInput(Exception):
    """A check read an input it did not declare in ``needs``."""


def _required(value: _T | None, name: str) -> _T:
    if value is None:
        raise MissingInput(f"a check read '{name}' without declaring it in needs=")
    return value


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


# What each input a check ``needs`` is, for the verdict's "not evaluated: needs ..." count.
INPUT_GROUPS = {
    "rlinf": "config",
    "job": "job",
    "worker": "job",
    "run_info": "profile",
    "nodes": "cluster",
    "clusters": "cluster",
}


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    evaluated: list[str] = field(default_factory=list)
    # check ID -> the input groups it lacked (config | job | profile | cluster)
    missing: dict[str, set[str]] = field(default_factory=dict)

    def not_evaluated(self) -> dict[str, set[str]]:
        return {k: v for k, v in self.missing.items() if k not in self.evaluated}

    def status(self, check_id: str) -> Status:
        if check_id not in self.evaluated:
            return Status.SKIPPED
        failed = any(f.check == check_id and f.severity == Severity.ERROR for f in self.findings)
        return Status.FAILED if failed else Status.PASSED


def run_checks(ctx: Context, only: Iterable[str] | None = None) -> Outcome:
    wanted = set(only) if only is not None else None
    out = Outcome()
    for reg in REGISTRY:
        if wanted is not None and reg.id not in wanted:
            continue
        if not has_inputs(ctx, reg.needs):
            lacking = {INPUT_GROUPS[n] for n in reg.needs if not has_inputs(ctx, (n,))}
            out.missing.setdefault(reg.id, set()).update(lacking)
            continue
        if reg.id not in out.evaluated:
            out.evaluated.append(reg.id)
        out.findings.extend(reg.fn(ctx))
    # Fields of the wrong type or form, found while reading the Job YAML, under their check.
    # A key near a field the harness reads is a warning (the console may add fields).
    for p in ctx.job.problems if ctx.job is not None else []:
        if wanted is None or p.check in wanted:
            if p.slip:
                out.findings.append(warning(p.check, "field-near-miss", p.message, p.location))
            else:
                out.findings.append(error(p.check, "yaml-shape", p.message, p.location))
            if p.check not in out.evaluated:
                out.evaluated.append(p.check)
    # Messages quote the inputs (an override, a config value, an image): the run's redaction
    # runs last, when the secret scans of 3.6 / 5.8 have seen every value.
    out.findings = [_redacted(f, ctx.redactor) for f in out.findings]
    return out


def _redacted(f: Finding, redactor: Redactor) -> Finding:
    message = redactor.redact(f.message)
    return f if message == f.message else dataclasses.replace(f, message=message)


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
