"""6.2 一个 Worker 对应的实际 Pod,位于预期 Node: exactly one Pod, on the expected node.

Advanced by the Pod leaving Pending on a node (running, or already finished), or by a Pod
bound to its node whose container could not be created or whose volumes do not mount (a
FailedMount Event): that is the Worker's start, 6.3.
Failed at once by Unschedulable, an image that cannot be pulled, CrashLoopBackOff, a second
Pod, another node; by the deadline ``timeouts.scheduled`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.adapters.base import FATAL_REASONS
from rlark_acceptance.run.step6.record import Status
from rlark_acceptance.run.step6.run import CONTAINER_START_FAILURES

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


class Scheduled:
    check: ClassVar[str] = "6.2"
    timeout_key: ClassVar[str] = "scheduled"

    def __init__(self, expected_node: str | None) -> None:
        self.expected_node = expected_node

    def verdict(self, run: Step6Run) -> tuple[Status, str] | None:
        pod = run.pod
        if pod is None:
            return None
        # Bound to its node, but its volumes or container cannot be set up there: that is the
        # Worker's start (6.3). Kubernetes keeps such a Pod Pending and says so in Events.
        mount_failed = run.warning is not None and run.warning.reason == "FailedMount"
        placed = bool(pod.node) and (pod.reason in CONTAINER_START_FAILURES or mount_failed)
        if pod.reason in FATAL_REASONS and not placed:
            return (
                "failed",
                f"pod {pod.name} is {pod.phase}: {pod.reason}: {pod.message or ''}".strip(),
            )
        if pod.phase == "Pending" and not placed:
            return None  # not bound yet, or bound and its container not started yet
        try:
            pods = run.adapter.pods(run.rec.ref)  # type: ignore[arg-type]
        except Exception:  # the Pod seen in the stream is evidence enough of one Pod
            pods = [pod]
        if len(pods) != 1:
            return "failed", f"{len(pods)} Pods for one Worker: {', '.join(p.name for p in pods)}"
        if self.expected_node and pod.node != self.expected_node:
            return "failed", f"pod {pod.name} runs on {pod.node}, expected {self.expected_node}"
        run.rec.durations["scheduled"] = run.since(run.now)
        return "passed", f"one Pod, {pod.name}, on node {pod.node}"

    def over(self, run: Step6Run) -> str:
        return f"the Pod never ran on a node: {run.pod_text()}"
