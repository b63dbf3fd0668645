"""A failed run's first cause named from its log alone, with the page's check it belongs to.

The cause is Step 6's own (``rlinf.failures.FirstCause``, fed the log in batches): the
first error, its class and remedy, and the knock-ons passed over. What a log alone cannot
give Step 6's record, this adds from where the run stood when it failed:

- ``check``: the check of Step 6 (or the training's) the run fails at, as a harness run of
  it records it: ``6.3`` when Ray's start-up began and never said it started, ``T.1`` when
  the training had logged a step (it ended short of its last), else ``6.4`` (the logs never
  showed progress; a log cut at the top or RLinf's own log file, which hold no Ray
  start-up, count as Ray started);
- ``fix_at``: the check of the page whose requirement the failure's class breaks, where
  the page has one (a read-only mount is 3.7's, a GPU out of memory 3.3's): the run fails
  at a check of Step 6, but the remedy is that other check's, often an earlier one.

Example::

    >>> d = diagnose([["Ray runtime started.", "ValueError: bad task id"]])
    >>> d.cause.line, d.check, d.lines
    (1, '6.4', 2)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rlark_acceptance.diagnose.pod import NEVER_RAN, PodFinding, PodSide
from rlark_acceptance.model.doc_checks import BY_ID, CheckId
from rlark_acceptance.model.training import DEFAULT_STEP_PATTERN
from rlark_acceptance.rlinf import failures as f
from rlark_acceptance.rlinf.failures import Cause, FailureClass, FirstCause

# Where each class's failure is fixed on the page: the check whose requirement it breaks.
# A class absent here (an env worker's crash, a knock-on) has no check of its own before
# the one the run failed at.
FIX_AT: dict[str, str] = {
    f.HOST_OUT_OF_MEMORY.id: CheckId.MULTI_NODE_REDIRECT,  # memory fields → multi-node guide
    f.GPU_OUT_OF_MEMORY.id: CheckId.GPUS_FIT,
    f.NCCL.id: CheckId.GPUS_FIT,
    f.EGL_RENDERING.id: CheckId.IMAGE_PULLABLE,  # the image's rendering stack
    f.ROLLOUT_BACKEND_IMPORT.id: CheckId.IMAGE_PULLABLE,
    f.DEPENDENCY_MISMATCH.id: CheckId.IMAGE_PULLABLE,  # the image's packages
    f.HYDRA_COMPOSITION.id: CheckId.START_COMMAND_KEPT,  # the run command's overrides
    f.READ_ONLY_CHECKPOINT_DIR.id: CheckId.PATHS_UNDER_MOUNTS,
    f.RESUME_PATH.id: CheckId.PATHS_UNDER_MOUNTS,
    f.DISK_FULL.id: CheckId.OUTPUT_PERSISTED,
    f.MOUNT_IO_ERROR.id: CheckId.OUTPUT_PERSISTED,
    f.RAY_START_TIMEOUT.id: CheckId.RAY_HEAD_STARTED,
    f.TRAINING_DIVERGED.id: CheckId.METRICS_REAL,
    f.WORKER_DISRUPTED.id: CheckId.ONE_POD_ON_NODE,
    f.CONTAINER_RUNTIME_LOST.id: CheckId.ONE_POD_ON_NODE,
    f.WORKER_OOM_KILLED.id: CheckId.MULTI_NODE_REDIRECT,
    f.IMAGE_PULL_FAILED.id: CheckId.IMAGE_PULLABLE,
    f.VOLUME_MOUNT_FAILED.id: CheckId.ONE_NODE_PROVIDES_ALL,  # mounts the one node can reach
    f.UNSCHEDULABLE.id: CheckId.ONE_NODE_SELECTED,
}

_RAY_STARTED = "Ray runtime started"
# Ray's CLI as it logs in a Pod (``2026-12-01 10:14:42,792\tINFO scripts.py:1085 -- …``):
# Ray's start-up began.
_RAY_CLI = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\s+[A-Z]+\s+\S+:\d+ -- ", re.M)
_PROGRESS = re.compile(DEFAULT_STEP_PATTERN)


@dataclass(frozen=True)
class Diagnosis:
    """What a log says of its run: ``cause`` None when it shows no failure."""

    lines: int
    cause: Cause | None
    check: str | None
    fix_at: str | None
    ray_cli: int | None = None  # 0-based lines of what the run reached, for ``stood``
    ray_started: int | None = None
    progress: int | None = None
    pod: PodSide | None = None  # ``--pod``: what its status and events said
    pod_cause: PodFinding | None = None  # what the Pod said, where it names the cause

    @property
    def failed(self) -> bool:
        return self.cause is not None or self.pod_cause is not None

    @property
    def kind(self) -> FailureClass | None:
        if self.pod_cause is not None:
            return self.pod_cause.kind
        return self.cause.kind if self.cause is not None else None

    def stood(self) -> str:
        """Where the run stood when it failed, in the page's words."""
        if self.pod_cause is not None and self.pod_cause.kind.id in NEVER_RAN:
            return "the Worker's container never ran"
        if self.check == CheckId.RAY_HEAD_STARTED:
            return "Ray's start-up began and never said the Ray head started"
        if self.check == CheckId.STEPS_ADVANCE:
            assert self.progress is not None
            return f"the training had logged progress (log line {self.progress + 1}) and ended"
        return "the logs never showed the training's progress"

    def to_json(self) -> dict[str, Any]:
        c = self.cause
        kind = self.kind
        log_cause = (
            None
            if c is None
            else {"line": c.line + 1, "text": c.quote, "actor": c.actor, "path": c.mount_path}
        )
        first = log_cause
        if self.pod_cause is not None and self.pod is not None:
            first = {
                "line": None,
                "text": self.pod_cause.text,
                "actor": f"pod/{self.pod.name}",
                "path": None,
                "source": "pod",
            }
        out: dict[str, Any] = {
            "failed": self.failed,
            "lines": self.lines,
            "firstCause": first,
            "class": kind.id if kind is not None else None,
            "title": kind.title if kind is not None else None,
            "remedy": kind.remedy if kind is not None else None,
            "check": self.check,
            "checkRemedy": BY_ID[self.check].remedy if self.check else None,
            "fixAt": self.fix_at,
            "fixAtRemedy": BY_ID[self.fix_at].remedy if self.fix_at else None,
            "knockOns": c.knock_ons if c is not None else 0,
        }
        if self.pod is not None:
            out["pod"] = self.pod.to_json()
            out["logCause"] = log_cause
        return out


class _Stages:
    """The first line of each mark of how far the run got; searched only until found."""

    def __init__(self) -> None:
        self.ray_cli: int | None = None
        self.ray_started: int | None = None
        self.progress: int | None = None

    def feed(self, lines: Sequence[str], first: int) -> None:
        if self.ray_cli is not None and self.ray_started is not None and self.progress is not None:
            return
        text = "\n".join(lines)
        if self.ray_cli is None and (m := _RAY_CLI.search(text)) is not None:
            self.ray_cli = first + text.count("\n", 0, m.start())
        if self.ray_started is None and (at := text.find(_RAY_STARTED)) >= 0:
            self.ray_started = first + text.count("\n", 0, at)
        if self.progress is None and (m := _PROGRESS.search(text)) is not None:
            self.progress = first + text.count("\n", 0, m.start())


def diagnose(batches: Iterable[Sequence[str]]) -> Diagnosis:
    """The diagnosis of the log whose lines ``batches`` gives in order."""
    return diagnose_stretches(_numbered(batches))


def diagnose_stretches(stretches: Iterable[tuple[int, Sequence[str]]], total: int = 0) -> Diagnosis:
    """The diagnosis of stretches of a log (each its first line, 0-based, and its lines, in
    order): a log kept in part, as a red run's bundle keeps it; ``total`` its whole length."""
    tracker, stages, n = FirstCause(), _Stages(), 0
    for first, lines in stretches:
        tracker.feed(lines, first)
        stages.feed(lines, first)
        n = first + len(lines)
    n = max(n, total)
    tracker.end()  # a log cut inside a remote task's traceback still names its task
    cause = tracker.cause
    d = Diagnosis(n, cause, None, None, stages.ray_cli, stages.ray_started, stages.progress)
    if cause is None:
        return d
    kind = cause.kind
    return replace(d, check=_check(d, kind, cause.line), fix_at=_fix_at(kind))


def _numbered(batches: Iterable[Sequence[str]]) -> Iterable[tuple[int, Sequence[str]]]:
    n = 0
    for lines in batches:
        yield n, lines
        n += len(lines)


def with_pod(d: Diagnosis, side: PodSide) -> Diagnosis:
    """``d`` with what the Pod says. The Pod names the cause where its log cannot: it never
    ran, the cluster took it away (what it printed then is how it was stopped), or its log
    shows no error but knock-ons (an actor's process killed without Python's output)."""
    d = replace(d, pod=side)
    first = side.findings[0] if side.findings else None
    if first is None:
        return d
    log_error = d.cause is not None and d.cause.kind is not f.ACTOR_KILLED
    if log_error and side.ran and first.kind is not f.WORKER_DISRUPTED:
        return d  # the log's own first error stays the cause; the Pod's findings are added
    check = NEVER_RAN.get(first.kind.id) or _check(d, first.kind, d.lines)
    return replace(d, pod_cause=first, check=check, fix_at=_fix_at(first.kind))


def _fix_at(kind: FailureClass | None) -> str | None:
    return FIX_AT.get(kind.id) if kind is not None else None


def _check(d: Diagnosis, kind: FailureClass | None, line: int) -> str:
    """The check a run fails at whose first cause is at log line ``line`` (0-based)."""

    def before(mark: int | None) -> bool:
        return mark is not None and mark < line

    if kind is f.RAY_START_TIMEOUT or (before(d.ray_cli) and not before(d.ray_started)):
        return CheckId.RAY_HEAD_STARTED
    if before(d.progress):
        return CheckId.STEPS_ADVANCE
    return CheckId.PROGRESS_LOGGED
