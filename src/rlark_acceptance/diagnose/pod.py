"""A Pod's side of a failed run (``diagnose --pod``): its status, its events and its log,
read once through a kubeconfig with the official client, in the Kubernetes target's own
terms (``adapters.kubernetes.stream``: ``pod_status``, ``event_of``; ``observed.pod_text``).

What the Pod adds to its log: how the container ended when the kernel killed it
(``OOMKilled``: the log then ends in knock-ons with no Python error), that the cluster took
it away (evicted, preempted), or why it never ran (an image that did not pull, a volume that
did not mount, no node to take it), each a failure class of ``rlinf.failures``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from rlark_acceptance.adapters.base import DISRUPTION_REASONS, Event, PodStatus
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.rlinf import failures as f
from rlark_acceptance.rlinf.failures import FailureClass

Item = dict[str, Any]

IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
MOUNT_EVENTS = frozenset({"FailedMount", "FailedAttachVolume", "FailedMapVolume"})
# The check a run whose container never ran fails at, as Step 6 judges it (``scheduled``):
# a Pod no node takes or whose image does not pull fails 6.2 at once; one bound to its node
# whose volumes do not mount has started there, and its Ray head never comes (6.3).
NEVER_RAN: dict[str, str] = {
    f.UNSCHEDULABLE.id: CheckId.ONE_POD_ON_NODE,
    f.IMAGE_PULL_FAILED.id: CheckId.ONE_POD_ON_NODE,
    f.VOLUME_MOUNT_FAILED.id: CheckId.RAY_HEAD_STARTED,
}


@dataclass(frozen=True)
class PodFinding:
    """One thing the Pod says: its reason, in the Pod's or the event's words, and class."""

    reason: str
    text: str
    kind: FailureClass


@dataclass(frozen=True)
class NodeCondition:
    """One of the node's conditions, as its kubelet reports it."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None

    @property
    def wrong(self) -> bool:
        """A node not Ready, or under a pressure (memory, disk, PIDs) or without a network:
        what a kubelet evicts or refuses Pods for."""
        if self.type == "Ready":
            return self.status != "True"
        return self.status == "True"

    def said(self) -> str:
        why = ": ".join(x for x in (self.reason, self.message) if x)
        return f"{self.type} {self.status}" + (f" ({why})" if why else "")


@dataclass(frozen=True)
class NodeSide:
    """The Pod's node: its conditions, or why they could not be read."""

    name: str
    conditions: tuple[NodeCondition, ...] = ()
    unread: str | None = None

    @property
    def wrong(self) -> tuple[NodeCondition, ...]:
        return tuple(c for c in self.conditions if c.wrong)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "conditions": [
                {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                for c in self.conditions
            ],
            "wrong": [c.type for c in self.wrong],
            "unread": self.unread,
        }


def node_side(name: str, node: Item | None, unread: str | None = None) -> NodeSide:
    """``node`` (the API's Node) as the conditions its kubelet reports."""
    if node is None:
        return NodeSide(name, unread=unread or "not listed")
    conditions = (node.get("status") or {}).get("conditions") or []
    return NodeSide(
        name,
        tuple(
            NodeCondition(
                str(c.get("type")), str(c.get("status")), c.get("reason"), c.get("message")
            )
            for c in conditions
        ),
    )


@dataclass(frozen=True)
class PodSide:
    name: str
    namespace: str
    status: PodStatus
    events: tuple[Event, ...]  # its Warning events, oldest first
    findings: tuple[PodFinding, ...]
    container: str | None  # whose log was read
    previous: bool  # the log read is that container's run before its restart
    node: NodeSide | None = None  # its node's conditions (None: never bound to one)

    @property
    def ran(self) -> bool:
        """Whether its container ever ran (else it has no log to read)."""
        return not any(x.kind.id in NEVER_RAN for x in self.findings)

    def to_json(self) -> dict[str, Any]:
        s = self.status
        return {
            "name": self.name,
            "namespace": self.namespace,
            "node": s.node,
            "phase": s.phase,
            "reason": s.reason,
            "exitCode": s.exit_code,
            "message": s.message,
            "restarts": s.restarts,
            "container": self.container,
            "previousLog": self.previous,
            "findings": [
                {"reason": x.reason, "text": x.text, "class": x.kind.id} for x in self.findings
            ],
            "events": [{"reason": e.reason, "message": e.message} for e in self.events],
            "nodeConditions": self.node.to_json() if self.node is not None else None,
        }


def findings(pod: Item, status: PodStatus, events: Sequence[Event]) -> list[PodFinding]:
    """What the Pod's status and its events say of how it failed, most decisive first."""
    out: list[PodFinding] = []
    if status.reason in DISRUPTION_REASONS:
        out.append(PodFinding(status.reason, _said(status), f.WORKER_DISRUPTED))
    for cs in _container_statuses(pod):
        for state in (cs.get("state") or {}, cs.get("lastState") or {}):
            ended = state.get("terminated") or {}
            if ended.get("reason") == "OOMKilled":
                code = ended.get("exitCode")
                text = f"container {cs.get('name')} OOMKilled, exit code {code}"
                out.append(PodFinding("OOMKilled", text, f.WORKER_OOM_KILLED))
                break
    if status.reason in IMAGE_REASONS:
        out.append(PodFinding(status.reason, _said(status), f.IMAGE_PULL_FAILED))
    if status.reason == "Unschedulable":
        out.append(PodFinding(status.reason, _said(status), f.UNSCHEDULABLE))
    mount = next((e for e in events if e.reason in MOUNT_EVENTS), None)
    if mount is not None and status.phase == "Pending":
        out.append(PodFinding(mount.reason, mount.message, f.VOLUME_MOUNT_FAILED))
    return out


def _said(status: PodStatus) -> str:
    return f"{status.reason}: {status.message}" if status.message else str(status.reason)


def _container_statuses(pod: Item) -> list[Item]:
    status = pod.get("status") or {}
    return cast(
        list[Item],
        (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []),
    )


def log_to_read(pod: Item, container: str | None) -> tuple[str | None, bool]:
    """The container whose log tells the run (the Worker's, the Pod's first, unless named)
    and whether to read its previous run's: after a restart, the run that failed is the
    one before."""
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    chosen = container or (names[0] if names else None)
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == chosen:
            restarted = "terminated" in (cs.get("lastState") or {})
            return chosen, restarted and "terminated" not in (cs.get("state") or {})
    return chosen, False


@dataclass
class PodSource:
    """Where the Pod is: a kubeconfig (or the in-cluster account), its context, a namespace
    (the context's when not given) and the Pod's name."""

    name: str
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None

    @contextmanager
    def read(self, container: str | None = None) -> Iterator[tuple[PodSide, Any]]:
        """The Pod's side, and its log as a byte stream (None when it has none), closed
        after."""
        # The client is imported only when a Pod is asked for: a log file needs none of it.
        import urllib3
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        from rlark_acceptance.adapters.kubernetes.adapter import connect
        from rlark_acceptance.adapters.kubernetes.stream import event_of, get_json, pod_status

        api, _, source = connect(self.kubeconfig, self.context)
        namespace = self.namespace or _context_namespace(self.kubeconfig, self.context)
        core = client.CoreV1Api(api)
        where = f"pod {namespace}/{self.name}"
        resp = None
        try:
            try:
                pod = get_json(core.read_namespaced_pod, self.name, namespace)
                listing = get_json(
                    core.list_namespaced_event,
                    namespace,
                    field_selector=f"involvedObject.kind=Pod,involvedObject.name={self.name}",
                )
            except ApiException as e:
                raise InputError(where, _api_refusal(e, source)) from None
            except (urllib3.exceptions.HTTPError, OSError) as e:  # retried, still no answer
                raise InputError(where, f"the API server ({source}) did not answer: {e}") from None
            status = pod_status(pod)
            events = sorted((event_of(e) for e in listing.get("items") or []), key=lambda e: e.time)
            warnings = tuple(e for e in events if e.type == "Warning")
            chosen, previous = log_to_read(pod, container)
            side = PodSide(
                self.name,
                namespace,
                status,
                warnings,
                tuple(findings(pod, status, warnings)),
                chosen,
                previous,
                _read_node(core, status.node) if status.node else None,
            )
            if side.ran and chosen is not None:
                try:
                    resp = core.read_namespaced_pod_log(
                        self.name,
                        namespace,
                        container=chosen,
                        previous=previous,
                        _preload_content=False,
                    )
                except ApiException:
                    resp = None  # no log yet (a container waiting to start): the Pod's side
            yield side, resp
        finally:
            if resp is not None:
                resp.release_conn()
            api.close()


def _read_node(core: Any, name: str) -> NodeSide:
    """The node's conditions; a node the kubeconfig's user may not list is said, never an
    error: the Pod's side stands without it."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    from rlark_acceptance.adapters.kubernetes.stream import get_json

    try:
        listing = get_json(core.list_node, field_selector=f"metadata.name={name}")
    except ApiException as e:
        return NodeSide(name, unread=f"the API server said {e.status} {e.reason}")
    except (urllib3.exceptions.HTTPError, OSError) as e:
        return NodeSide(name, unread=f"no answer: {e}")
    items = listing.get("items") or []
    return node_side(name, items[0] if items else None, None if items else "not listed")


def _api_refusal(e: Any, source: str) -> str:
    if e.status == 404:
        return "not found (is the namespace right? --namespace)"
    if e.status in (401, 403):
        return f"refused to the kubeconfig's user ({source}): {e.reason}"
    return f"the API server said {e.status} {e.reason}"


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace ``kubectl`` would use: the context's, else ``default``."""
    import os
    from pathlib import Path

    from kubernetes import config

    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    try:
        contexts, active = config.list_kube_config_contexts(config_file=path)
    except Exception:  # no kubeconfig (in-cluster) or one connect already refused: default
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), active) if context else active
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")
