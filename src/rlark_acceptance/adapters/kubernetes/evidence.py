"""What a cluster still holds of a Worker, for a red run's diagnostics bundle, read before the
Job is deleted: the Pod as the API server has it, its node's conditions and allocatable
resources, and Ray's session logs from the Worker's container while it runs (by exec: a
container that ended has no filesystem the API can reach, and the bundle says so).

Each request is one, bounded by ``seconds`` and never retried: a cluster that does not
answer now leaves that part unread; the bundle is no verdict.
"""

from __future__ import annotations

from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters.base import RAY_LOG_TAIL_BYTES, RAY_SESSION_LOGS, WorkerEvidence

Item = dict[str, Any]
# Where a Ray head keeps its session by default (``ray start`` without ``--temp-dir``).
RAY_SESSION = "/tmp/ray/session_latest/logs"
_MARK = "==> rlark-acceptance: "
_ABSENT = "(absent)"


def worker_evidence(
    core: client.CoreV1Api, namespace: str, pod: str, seconds: float
) -> WorkerEvidence:
    unread: list[str] = []
    timeout = (seconds, seconds)
    found: Item | None = None
    try:
        raw = core.read_namespaced_pod(pod, namespace, _request_timeout=timeout)
        found = core.api_client.sanitize_for_serialization(raw)
    except (ApiException, urllib3.exceptions.HTTPError) as e:
        unread.append(f"pod {namespace}/{pod}: {_said(e)}")
    if found is not None:
        (found.get("metadata") or {}).pop("managedFields", None)
    node_name = ((found or {}).get("spec") or {}).get("nodeName")
    node = _node(core, str(node_name), timeout, unread) if node_name else None
    if found is not None and node_name is None:
        unread.append("node: the Pod was never bound to a node")
    logs = _ray_logs(core, namespace, pod, found, seconds, unread) if found is not None else {}
    return WorkerEvidence(found, node, logs, tuple(unread))


def _node(core: client.CoreV1Api, name: str, timeout: Any, unread: list[str]) -> Item | None:
    try:
        nodes = core.list_node(field_selector=f"metadata.name={name}", _request_timeout=timeout)
    except (ApiException, urllib3.exceptions.HTTPError) as e:
        unread.append(f"node {name}: {_said(e)}")
        return None
    if not nodes.items:
        unread.append(f"node {name}: not listed (removed from the cluster)")
        return None
    node: Item = core.api_client.sanitize_for_serialization(nodes.items[0])
    status = node.get("status") or {}
    return {
        "name": name,
        "labels": (node.get("metadata") or {}).get("labels") or {},
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
            for c in status.get("conditions") or []
        ],
        "allocatable": status.get("allocatable") or {},
        "capacity": status.get("capacity") or {},
    }


def _ray_logs(
    core: client.CoreV1Api, namespace: str, pod: str, found: Item, seconds: float, unread: list[str]
) -> dict[str, str]:
    containers = (found.get("spec") or {}).get("containers") or [{}]
    container = str(containers[0].get("name"))
    statuses = (found.get("status") or {}).get("containerStatuses") or []
    state = next((s.get("state") or {} for s in statuses if s.get("name") == container), {})
    if "running" not in state:
        unread.append(
            "Ray's session logs: the Worker's container is not running (its filesystem ended "
            "with it; exec reaches only a running container)"
        )
        return {}
    from kubernetes.stream import stream

    script = "; ".join(
        f'echo "{_MARK}{name}"; tail -c {RAY_LOG_TAIL_BYTES} {RAY_SESSION}/{name} 2>/dev/null '
        f'|| echo "{_ABSENT}"'
        for name in RAY_SESSION_LOGS
    )
    try:
        # Not preloaded: the client's own decoding of an exec's answer is an HTTP body's,
        # which a websocket's is not (it fails on it); the output is read off the socket.
        ws = stream(
            core.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=["sh", "-c", script],
            stderr=False,
            stdin=False,
            stdout=True,
            tty=False,
            _preload_content=False,
        )
        try:
            ws.run_forever(timeout=seconds)
            out = ws.read_all()
        finally:
            ws.close()
    except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
        unread.append(f"Ray's session logs: exec into {pod} failed: {_said(e)}")
        return {}
    except Exception as e:  # the websocket client's own errors: said, never raised
        unread.append(f"Ray's session logs: exec into {pod} failed: {type(e).__name__}: {e}")
        return {}
    return split_logs(str(out), unread)


def split_logs(out: str, unread: list[str]) -> dict[str, str]:
    """The exec's output, one log per marker; an absent log said in ``unread``."""
    found: dict[str, str] = {}
    for part in out.split(_MARK)[1:]:
        name, _, text = part.partition("\n")
        if text.strip() == _ABSENT:
            unread.append(f"Ray's {name}: not in {RAY_SESSION}")
        else:
            found[name] = text
    return found


def _said(e: BaseException) -> str:
    if isinstance(e, ApiException):
        return f"the API server said {e.status} {e.reason}"
    return f"no answer: {e}"
