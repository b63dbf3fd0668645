"""A scripted stand-in for the target during Step 6: the RLark platform cannot exist here.

``ScriptedTarget`` plays an adapter whose Worker shows exactly the script given (Pod changes,
log lines, Events, the end of the log, each at a second after submission) on a fake clock:
waiting for the next happening advances the clock to it, and a wait that nothing ends
advances it by the whole timeout, so a 30-minute deadline costs microseconds. The store is a
real ``FileStore`` on a temporary directory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rlark_acceptance.adapters.base import Event, Happening, JobRef, PodStatus, SubmitRejected
from rlark_acceptance.model.job import Job, Mount
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.storage import FileStore, Store

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
    return Step(at, Happening("pod", at, pod=status))


def line(at: float, text: str) -> Step:
    return Step(at, Happening("log", at, line=text))


def lines(at: float, *texts: str) -> list[Step]:
    return [line(at, t) for t in texts]


def end(at: float) -> Step:
    return Step(at, Happening("end", at))


def warning(at: float, reason: str, message: str) -> Step:
    return Step(at, Happening("event", at, event=Event(f"pod/{POD}", reason, message, "Warning")))


def call(at: float, fn: Callable[[], None]) -> Step:
    """Something the script does to the world at ``at`` (a store going away, say)."""
    return Step(at, Happening("event", at, event=Event("script", "Scripted", "")), then=fn)


class ScriptedObservation:
    def __init__(self, clock: FakeClock, t0: float, script: list[Step]) -> None:
        self.clock = clock
        self.pending = sorted(
            (replace(s, at=t0 + s.at, item=replace(s.item, at=t0 + s.at)) for s in script),
            key=lambda s: s.at,
        )
        self.seen: list[Happening] = []

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


@dataclass
class ScriptedTarget:
    """The adapter surface Step 6 uses, answering from the script."""

    script: list[Step]
    store_root: Path
    clock: FakeClock = field(default_factory=FakeClock)
    listed: bool = True
    refuse: str | None = None
    extra_pods: int = 0
    name: str = "scripted"
    deleted: list[JobRef] = field(default_factory=list)
    observation: ScriptedObservation | None = None
    store: Store | None = None

    def submit(self, job: Job, manifest: str) -> JobRef:
        if self.refuse:
            raise SubmitRejected(self.refuse)
        self.t0 = self.clock.now
        return JobRef(str(job.name), job.namespace or "rlinf-acceptance", "uid-1")

    def list_jobs(self, namespace: str) -> list[str]:
        return ["rlinf-smoke-ppo-mlp"] if self.listed else []

    def observe(self, ref: JobRef) -> ScriptedObservation:
        self.observation = ScriptedObservation(self.clock, self.t0, self.script)
        return self.observation

    def pods(self, ref: JobRef) -> list[PodStatus]:
        seen = self.observation.seen if self.observation else []
        last = [h.pod for h in seen if h.pod is not None][-1:]
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
        self.deleted.append(ref)

    def close(self) -> None:
        pass
