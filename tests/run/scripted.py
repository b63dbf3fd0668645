"""A scripted stand-in for the target during Step 6: the RLark platform cannot exist here.

``ScriptedTarget`` plays an adapter whose Worker shows exactly the script given (Pod changes,
log lines, Events, the end of the log, each at a second after submission) on a fake clock:
waiting for the next happening advances the clock to it, and a wait that nothing ends
advances it by the whole timeout, so a 30-minute deadline costs microseconds. The store is a
real ``FileStore`` on a temporary directory. Below it, the pieces Step 6's tests build their
scripts from (a Pod that runs, a run script that started, a first signal) and ``run`` /
``verdict`` to submit one and read its earliest failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.base import (
    CleanupRefused,
    Event,
    EventSeen,
    Happening,
    JobRef,
    LogEnded,
    LogLines,
    PodChanged,
    PodStatus,
    SubmitRejected,
    TargetLost,
    TargetUnreachable,
)
from rlark_acceptance.model.job import Job, Mount
from rlark_acceptance.model.profile import NodeSpec, Profile
from rlark_acceptance.run.step6 import Progress, RunRecord, build_plan, confirm_running
from rlark_acceptance.storage import FileStore, Store, StoreUnavailable
from tests.storage.test_checkpoint import GOOD

NODE = "local-node"
POD = "rlinf-smoke-ppo-mlp-worker-0"
RAY = "2026-11-30 13:13:38,746\tSUCC scripts.py:1085 -- Ray runtime started."


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Step:
    """One scripted happening, ``at`` seconds after submission; ``then`` runs when it is read."""

    at: float
    item: Happening
    then: Callable[[], None] | None = None


def pod(at: float, phase: str = "Running", node: str | None = NODE, **kw: object) -> Step:
    status = PodStatus(POD, node, phase, **kw)  # type: ignore[arg-type]
    return Step(at, PodChanged(at, status))


def line(at: float, text: str) -> Step:
    return Step(at, LogLines(at, (text,)))


def lines(at: float, *texts: str) -> list[Step]:
    return [line(at, t) for t in texts]


def stamped(at: float, written: float, *texts: str) -> Step:
    """Lines read at ``at`` that the Worker wrote at ``written`` (a target that stamps its
    log, read behind the Worker)."""
    return Step(at, LogLines(at, texts, written=written))


def end(at: float) -> Step:
    return Step(at, LogEnded(at))


def lost(at: float, message: str, left: str = "") -> Step:
    """The target stopped answering past its bound (its API server, a node's kubelet)."""
    return Step(at, TargetLost(at, TargetUnreachable(message, left)))


def warning(at: float, reason: str, message: str) -> Step:
    return Step(at, EventSeen(at, Event(f"pod/{POD}", reason, message, "Warning")))


def call(at: float, fn: Callable[[], None]) -> Step:
    """Something the script does to the world at ``at`` (a store going away, say)."""
    return Step(at, EventSeen(at, Event("script", "Scripted", "")), then=fn)


def _shifted(item: Happening, t0: float) -> Happening:
    if isinstance(item, LogLines) and item.written is not None:
        return replace(item, at=t0 + item.at, written=t0 + item.written)
    return replace(item, at=t0 + item.at)


class ScriptedObservation:
    def __init__(self, clock: FakeClock, t0: float, script: list[Step]) -> None:
        self.clock = clock
        self.pending = sorted(
            (replace(s, at=t0 + s.at, item=_shifted(s.item, t0)) for s in script),
            key=lambda s: s.at,
        )
        self.seen: list[Happening] = []
        self.closed = False

    def next(self, timeout: float) -> Happening | None:
        if self.pending and self.pending[0].at <= self.clock.now + timeout:
            step = self.pending.pop(0)
            self.clock.now = max(self.clock.now, step.at)
            if step.then is not None:
                step.then()
            self.seen.append(step.item)
            return step.item
        self.clock.now += timeout
        return None

    def close(self) -> None:
        self.closed = True


@dataclass
class ScriptedTarget:
    """The adapter surface Step 6 uses, answering from the script (and, for a later
    submission of the same run, T.4's second one, from ``later``)."""

    script: list[Step]
    store_root: Path
    clock: FakeClock = field(default_factory=FakeClock)
    listed: bool = True
    refuse: str | None = None
    refuse_delete: str | None = None  # the target refuses the clean-up (RBAC)
    delete_fails: Exception | None = None  # the delete fails otherwise (as raised)
    extra_pods: int = 0
    name: str = "scripted"
    deleted: list[JobRef] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    observation: ScriptedObservation | None = None
    store: Store | None = None
    later: list[list[Step]] = field(default_factory=list)  # the scripts of later submissions
    jobs: list[Job] = field(default_factory=list)  # as submitted, with their YAML
    manifests: list[str] = field(default_factory=list)
    observations: dict[str, ScriptedObservation] = field(default_factory=dict)

    def submit(self, job: Job, manifest: str) -> JobRef:
        if self.refuse:
            raise SubmitRejected(self.refuse)
        self.t0 = self.clock.now
        self.submitted.append(str(job.name))
        self.jobs.append(job)
        self.manifests.append(manifest)
        return JobRef(str(job.name), job.namespace or "rlinf-acceptance", "uid-1")

    def list_jobs(self, namespace: str) -> list[str]:
        return list(self.submitted) if self.listed else []

    def observe(self, ref: JobRef) -> ScriptedObservation:
        n = self.submitted.index(ref.name) if ref.name in self.submitted else 0
        script = self.script if n == 0 else self.later[n - 1]
        self.observation = ScriptedObservation(self.clock, self.t0, script)
        self.observations[ref.name] = self.observation
        return self.observation

    def pods(self, ref: JobRef) -> list[PodStatus]:
        observed = self.observations.get(ref.name, self.observation)
        seen = observed.seen if observed else []
        last = [h.pod for h in seen if isinstance(h, PodChanged)][-1:]
        return last + [
            replace(p, name=f"{p.name}-{i}") for p in last for i in range(self.extra_pods)
        ]

    def events(self, ref: JobRef) -> list[Event]:
        return []

    def logs(self, ref: JobRef, pod: str) -> str:
        return ""

    def node_inventory(self) -> list[NodeSpec]:
        return []

    def clusters(self) -> list[str]:
        return ["local"]

    def store_for(self, job: Job, mount: Mount) -> Store:
        return self.store if self.store is not None else FileStore(self.store_root)

    def delete(self, ref: JobRef) -> None:
        if self.refuse_delete:
            raise CleanupRefused(self.refuse_delete)
        if self.delete_fails is not None:
            raise self.delete_fails
        self.deleted.append(ref)

    def close(self) -> None:
        pass


class Unanswering(FileStore):
    """A real directory store that stops answering when told to, as a dead S3 server does."""

    down = False

    def list(self, prefix: str = "") -> Any:
        if self.down:
            raise StoreUnavailable(
                "EndpointConnectionError", prefix, "Could not connect (after 4 attempts)"
            )
        return super().list(prefix)


# --- scripts and their verdicts ---------------------------------------------------------
CKPT = "logs/smoke_ppo_mlp/checkpoints"  # /mnt/ckpt/logs/... under the "ckpt" mount
SIGNAL = "Global Step:   1%|          | 1/100"
CONFIG = {"cluster": {"num_nodes": 1, "component_placement": {"actor": "0-1"}}}
# Timeouts of profiles/local.yaml: scheduled 30, rayHead 60, firstSignal 120, output 120.


def running(at: float = 1.0) -> list[Step]:
    return [pod(0.1, "Pending", node=None), pod(0.5, "Pending"), pod(at)]


def started(at: float = 2.0) -> list[Step]:
    """Up to the run script's first output: 6.2 and 6.3 pass."""
    return [*running(), line(at - 0.5, RAY), line(at, "smoke workload starting")]


def write_checkpoint(root: Path, step: int = 1) -> None:
    path = root / CKPT / f"global_step_{step}" / "actor" / "model.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(GOOD)


def run(
    base: tuple[Profile, Any],
    tmp_path: Path,
    script: list[Step],
    *,
    profile: Profile | None = None,
    validated: dict[str, Any] | None = None,
    progress: list[Progress] | None = None,
    delete_after: bool = True,
    own_location: bool = True,
    **target: Any,
) -> tuple[RunRecord, ScriptedTarget]:
    """``own_location=False``: the run writes under a folder on no object-storage mount,
    so its checkpoints' location is the profile's, shared with every run (no run id)."""
    prof, job = base
    if not own_location:
        paths = {**prof.run_info.paths, "output": "/workspace/out"}
        prof = replace(prof, run_info=replace(prof.run_info, paths=paths))
    t = ScriptedTarget(script, tmp_path / "store", **target)
    (tmp_path / "store").mkdir(exist_ok=True)
    rec = confirm_running(
        t,  # type: ignore[arg-type]
        build_plan(profile or prof, job, validated=validated, delete_after=delete_after),
        on_progress=progress.append if progress is not None else None,
        clock=t.clock,
    )
    return rec, t


def verdict(rec: RunRecord) -> tuple[str, str, float]:
    first = rec.earliest_failure
    assert first is not None, {c: (p.status, p.message) for c, p in rec.phases.items()}
    assert first.at is not None
    return first.check, first.message, first.at


def statuses(rec: RunRecord) -> dict[str, str]:
    return {c: p.status for c, p in rec.phases.items()}


# --- the happy path ---------------------------------------------------------------------


def happy_script(root: Path) -> list[Step]:
    return [
        *started(),
        *lines(2.1, *json.dumps(CONFIG, indent=2).splitlines()),
        line(3.0, SIGNAL),
        call(4.0, lambda: write_checkpoint(root)),
        end(5.0),
        pod(5.1, "Succeeded", exit_code=0, reason="Completed"),
    ]


def signalled() -> list[Step]:
    return [*started(), line(3.0, SIGNAL)]


TERMINAL: dict[str, dict[str, Any]] = {
    "Failed": {"phase": "Failed", "reason": "Error", "exit_code": 1},
    "Succeeded": {"phase": "Succeeded", "reason": "Completed", "exit_code": 0},
    "terminated container": {"phase": "Running", "reason": "Error", "exit_code": 137},
    "CrashLoopBackOff": {"phase": "Running", "reason": "CrashLoopBackOff", "restarts": 3},
    "CreateContainerConfigError": {"phase": "Pending", "reason": "CreateContainerConfigError"},
    "ErrImagePull": {"phase": "Pending", "reason": "ErrImagePull"},
}
