"""The adapter protocol: how the harness submits a Job and observes it on some target.

It is shaped after Kubernetes so the Kubernetes adapter maps one to one (a Job's Pods,
their phase / reason / exit code, Events, Nodes, Pod logs); the local adapter plays the
same roles with a process group on this machine. Plugins register a factory under the
entry-point group ``rlark_acceptance.adapters``: ``factory(profile) -> Adapter``.

Observation is event-driven: an adapter pushes what happens (Pod changes, log lines,
Events) into one stream, and the Step 6 observer waits on that stream under a deadline
per phase, so a terminal state is seen the moment it happens. A Pod that is terminal, has a
terminated container or is stuck for one of ``FATAL_REASONS`` ends the phase waited for
whether or not the adapter ever calls ``end()`` (log lines still in flight get a second);
``end()`` alone, a log stream that was cut, waits a few seconds for the Pod's final status.
``lost()`` (the target stopped answering past its bound) ends the phase waited for at
once, naming what stopped answering instead of the Worker.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rlark_acceptance.adapters.clock import SYSTEM, Clock

if TYPE_CHECKING:
    from rlark_acceptance.model.job import Job, Mount
    from rlark_acceptance.model.profile import NodeSpec
    from rlark_acceptance.storage.store import Store


class SubmitRejected(Exception):
    """The platform refused the Job (as the Kubernetes API answers 422 Invalid)."""


class TargetUnreachable(Exception):
    """The target stopped answering the harness past its bound (its API server, the kubelet
    of the Worker's node): what the Worker does can no longer be seen. The message names
    what stopped answering; ``left`` says what may be left on the target."""

    def __init__(self, message: str, left: str = "") -> None:
        super().__init__(message)
        self.left = left


class CleanupRefused(Exception):
    """The target refused to remove what the harness submitted (RBAC); names what is left."""


class CleanupFailed(UserWarning):
    """What the harness submitted could not be removed (the target refused or did not
    answer the delete): a warning of the record, never a check's verdict."""


class LeftoversRemoved(UserWarning):
    """A run that died without cleaning up (SIGKILL) left Jobs or Pods behind; a later run
    removed them."""


class LeftoversUnchecked(UserWarning):
    """Whether a dead run left something behind could not be looked at (the target refused
    the listing or did not answer); names why."""


@dataclass(frozen=True)
class JobRef:
    name: str
    namespace: str
    uid: str | None = None


@dataclass(frozen=True)
class PodStatus:
    """A Pod as ``kubectl get pod -o yaml`` would tell it, reduced to what Step 6 reads."""

    name: str
    node: str | None
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    reason: str | None = (
        None  # Unschedulable, ErrImagePull, ImagePullBackOff, CrashLoopBackOff, Error...
    )
    message: str | None = None
    restarts: int = 0
    exit_code: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # What the node ran as the Worker's image: the runtime's image ID (``sha256:…``, the
    # Pod's ``status.containerStatuses[].imageID``), where the target says; run to run, a
    # rebuilt image under the same reference shows here.
    image_id: str | None = None

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


# Reasons that end a Worker's chances: Step 6 fails on them at once, naming the cause.
FATAL_REASONS = frozenset(
    {
        "Unschedulable",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        # The target refused the harness a read it needs (RBAC): it can observe no more.
        "Forbidden",
    }
)


# Why the cluster took a Pod away, as its status or its DisruptionTarget condition says: the
# Worker was stopped from outside (an eviction, a preemption, its node lost or shut down),
# whatever it printed while it was being stopped.
DISRUPTION_REASONS = frozenset(
    {
        "EvictionByEvictionAPI",
        "PreemptionByScheduler",
        "PreemptionByKubeScheduler",
        "DeletionByTaintManager",
        "DeletionByPodGC",
        "TerminationByKubelet",
        "Evicted",
        "Preempting",
        "NodeLost",
        "NodeShutdown",
    }
)


# How a container ended when its node's runtime lost it (a containerd restarted under it, a
# shim killed): the kubelet could not learn how the Worker ended, and reports this instead
# (with exit code 255, or 137 for ContainerStatusUnknown).
RUNTIME_LOST_REASONS = frozenset({"Unknown", "ContainerStatusUnknown"})


# The source of the Events an adapter's own observation puts, not the target's: the record
# keeps them when it reads the target's Events back at the end.
HARNESS_SOURCE = "rlark-acceptance"
# The reason of the Warning a target puts when lines of the Worker's log were lost unread
# (the kubelet rotated them away before the follow reached them).
LOG_LOST = "LogRotated"
# ... and of the Normal Event that says how much of the log was read ahead of the consumer
# and held on disk meanwhile (the files the follow was behind on).
LOG_READ_AHEAD = "LogReadAhead"


@dataclass(frozen=True)
class Event:
    involved: str  # kind/name
    reason: str
    message: str
    type: str = "Normal"  # Normal | Warning
    source: str = ""
    time: float = 0.0


# The items of an observation stream, each stamped ``at`` (the run's monotonic clock) when it
# happened. One class per kind, so a reader dispatches on the type and mypy checks that every
# kind is handled (``assert_never``).


@dataclass(frozen=True)
class PodChanged:
    """The Worker's Pod as the target has it now."""

    at: float
    pod: PodStatus


@dataclass(frozen=True)
class LogLines:
    """Lines of the Worker's log, in order."""

    at: float
    lines: Sequence[str]
    # When the batch's last line was written, by the target's stamps, on the clock of ``at``
    # (None: the target does not stamp its log): a reader behind the Worker is told from a
    # Worker that is late.
    written: float | None = None


@dataclass(frozen=True)
class EventSeen:
    """An Event about the Job or its Pods."""

    at: float
    event: Event


@dataclass(frozen=True)
class LogEnded:
    """The Worker's log stream ended: no more lines will come."""

    at: float


@dataclass(frozen=True)
class TargetLost:
    """The target stopped answering past its bound: nothing more can be observed."""

    at: float
    cause: TargetUnreachable


Happening = PodChanged | LogLines | EventSeen | LogEnded | TargetLost


# Log text an observation holds for a reader that is behind. A writer beyond it waits, as a
# pipe blocks its writer: a Worker printing faster than Step 6 reads cannot grow the
# harness's memory, and no line is dropped.
MAX_QUEUED_CHARS = 8 * 1024 * 1024


class Observation:
    """A bounded queue the adapter fills from its own threads or watches; read with a
    deadline. ``close()`` (the reader is done) discards what is queued and every later item,
    so a Worker that goes on printing after its verdict costs nothing."""

    def __init__(
        self,
        replay: Iterator[Happening] | None = None,
        max_chars: int = MAX_QUEUED_CHARS,
        clock: Clock = SYSTEM,
    ) -> None:
        self.clock = clock
        self._items: deque[tuple[Happening, int]] = deque()
        self._chars = 0
        self._max = max_chars
        self._cond = threading.Condition()
        self._closed = False
        # What happened before the reader attached, read lazily before anything queued.
        self._replay = replay

    def put(self, item: Happening) -> None:
        size = sum(map(len, item.lines)) if isinstance(item, LogLines) else 0
        with self._cond:
            while size and self._items and self._chars + size > self._max and not self._closed:
                self._cond.wait()
            if self._closed:
                return
            self._items.append((item, size))
            self._chars += size
            self._cond.notify_all()

    def put_pod(self, pod: PodStatus) -> None:
        self.put(PodChanged(self.clock.monotonic(), pod))

    def put_lines(self, lines: Sequence[str], written: float | None = None) -> None:
        """A batch of log lines; ``written``: when its last line was written, in seconds
        since the epoch (the target's stamps)."""
        now = self.clock.monotonic()
        at = None if written is None else now - max(0.0, self.clock.wall() - written)
        self.put(LogLines(now, lines, written=at))

    def put_event(self, event: Event) -> None:
        self.put(EventSeen(self.clock.monotonic(), event))

    def end(self) -> None:
        """No more log lines will come (the Worker's log stream ended)."""
        self.put(LogEnded(self.clock.monotonic()))

    def _take(self) -> Happening | None:
        with self._cond:
            if not self._items:
                return None
            item, size = self._items.popleft()
            self._chars -= size
            self._cond.notify_all()
            return item

    def lost(self, cause: TargetUnreachable) -> None:
        """The target stopped answering: nothing more can be observed (ends the phase)."""
        self.put(TargetLost(self.clock.monotonic(), cause))

    def next(self, timeout: float) -> Happening | None:
        if self._replay is not None:
            replayed = next(self._replay, None)
            if replayed is not None:
                return replayed
            self._replay = None
        with self._cond:
            if not self._items and not self._closed:
                self._cond.wait(max(0.0, timeout))
        return self._take()

    def drain(self) -> Iterator[Happening]:
        while (item := self._take()) is not None:
            yield item

    def close(self) -> None:
        """The reader is done: drop what is queued, take nothing more, free the writers."""
        with self._cond:
            self._closed = True
            self._items.clear()
            self._chars = 0
            self._replay = None
            self._cond.notify_all()


# The keys an adapter's ``describe`` may fill (the record's ``provenance``, camelCase).
DESCRIBED = (
    "apiServerVersion",
    "kubeletVersion",
    "containerRuntimeVersion",
    "imageId",
    "rayVersion",
    "rlinfVersion",
)


@runtime_checkable
class Describes(Protocol):
    """An adapter that can say what the Worker ran on and with, for the record's
    provenance: optional (a plugin without it leaves those keys empty).

    ``describe`` returns some of ``DESCRIBED`` with what the target says, and ``unread``:
    one line per fact it could not read and why. It answers within seconds and never
    raises for a target that does not answer: provenance is no verdict."""

    def describe(self, ref: JobRef, pods: Sequence[PodStatus]) -> dict[str, str]: ...


# Ray's own logs of a head, in its session's logs folder, that say why a head or its
# actors died where the Worker's log does not: the raylet's and the GCS server's stderr,
# the dashboard agent's log.
RAY_SESSION_LOGS = ("raylet.err", "gcs_server.err", "dashboard_agent.log")
# What a red run's bundle keeps of each such log: its end (the latest of it explains).
RAY_LOG_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class WorkerEvidence:
    """What a target still holds of a Worker, read before it is deleted (a red run's
    diagnostics bundle): the Pod as the target has it (spec and status, a Pod-shaped
    mapping), its node's conditions and allocatable resources, and Ray's session logs
    where the Worker's filesystem still holds them (the end of each, by name). ``unread``:
    one line per part that could not be read, and why."""

    pod: dict[str, object] | None = None
    node: dict[str, object] | None = None
    ray_logs: dict[str, str] = field(default_factory=dict)
    unread: tuple[str, ...] = ()


@runtime_checkable
class Diagnoses(Protocol):
    """An adapter that can say what it holds of a Worker beyond its Pods, Events and log,
    for a red run's diagnostics bundle: optional (a plugin without it gives the bundle the
    record's own evidence only). ``worker_evidence`` answers within seconds and never
    raises for a target that does not answer: the bundle is no verdict."""

    def worker_evidence(self, ref: JobRef, pod: str) -> WorkerEvidence: ...


@runtime_checkable
class Adapter(Protocol):
    name: str

    def submit(self, job: Job, manifest: str) -> JobRef:
        """Create the Job from its YAML text; returns at once (no waiting).

        Raises ``SubmitRejected`` when the platform refuses it (an invalid name, say)."""
        ...

    def list_jobs(self, namespace: str) -> list[str]:
        """Names of the Jobs the platform lists (6.1)."""
        ...

    def pods(self, ref: JobRef) -> list[PodStatus]:
        """The Job's Pods now: none once it is deleted; a target that cannot say raises."""
        ...

    def observe(self, ref: JobRef) -> Observation:
        """Start streaming Pod changes, the Worker's log lines and Events for ``ref``."""
        ...

    def logs(self, ref: JobRef, pod: str) -> str:
        """The whole log of a Pod so far (for evidence)."""
        ...

    def events(self, ref: JobRef) -> list[Event]:
        """The Job's Events now: none once it is deleted; a target that cannot say raises."""
        ...

    def node_inventory(self) -> list[NodeSpec]: ...

    def clusters(self) -> list[str]: ...

    def store_for(self, job: Job, mount: Mount) -> Store:
        """A reader of what the Worker wrote under ``mount``, from outside the Worker."""
        ...

    def delete(self, ref: JobRef) -> None:
        """Delete the Job and its Pods; returns when the Worker is gone."""
        ...

    def close(self) -> None:
        """Stop and remove everything this adapter submitted (also on interrupt)."""
        ...
