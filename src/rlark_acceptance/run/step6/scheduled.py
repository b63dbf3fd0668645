"""6.2 一个 Worker 对应的实际 Pod,位于预期 Node: exactly one Pod, on the expected node.

Advanced by the Pod leaving Pending on a node (running, or already finished), or by a Pod
bound to its node whose container could not be created or whose volumes do not mount (a
FailedMount Event): that is the Worker's start, 6.3. Then the Pods of the Job are listed
(a probe): a second Pod fails it, as does another node.
Failed at once by Unschedulable, an image that cannot be pulled, CrashLoopBackOff; by the
deadline ``timeouts.scheduled`` otherwise.
"""

from __future__ import annotations

from typing import ClassVar

from rlark_acceptance.adapters.base import FATAL_REASONS
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import (
    CONTAINER_START_FAILURES,
    Decision,
    Failed,
    ListPods,
    Passed,
    Phase,
)


class Scheduled(Phase):
    check: ClassVar[str] = CheckId.ONE_POD_ON_NODE
    bound: ClassVar[Bound | None] = Bound.SCHEDULED

    def __init__(self, expected_node: str | None) -> None:
        self.expected_node = expected_node

    def verdict(self, seen: Observed) -> Decision:
        pod = seen.pod
        if pod is None:
            return None
        # Bound to its node, but its volumes or container cannot be set up there: that is the
        # Worker's start (6.3). Kubernetes keeps such a Pod Pending and says so in Events.
        mount_failed = seen.warning is not None and seen.warning.reason == "FailedMount"
        placed = bool(pod.node) and (pod.reason in CONTAINER_START_FAILURES or mount_failed)
        if pod.reason in FATAL_REASONS and not placed:
            return Failed(
                f"pod {pod.name} is {pod.phase}: {pod.reason}: {pod.message or ''}".strip()
            )
        if pod.phase == "Pending" and not placed:
            return None  # not bound yet, or bound and its container not started yet
        if seen.pods is None:
            return ListPods()
        # A listing that failed: the Pod seen in the stream is evidence enough of one Pod,
        # and the verdict says what it stood on (a second Pod would have gone unseen).
        unlisted: Exception | None = None
        if isinstance(seen.pods, Exception):
            unlisted, pods = seen.pods, [pod]
        else:
            pods = seen.pods
        if len(pods) != 1:
            return Failed(f"{len(pods)} Pods for one Worker: {', '.join(p.name for p in pods)}")
        if self.expected_node and pod.node != self.expected_node:
            return Failed(f"pod {pod.name} runs on {pod.node}, expected {self.expected_node}")
        said = f"one Pod, {pod.name}, on node {pod.node}"
        if unlisted is not None:
            said += (
                f" (the Job's Pods could not be listed: {type(unlisted).__name__}: "
                f"{str(unlisted)[:200]}; judged on the Pod the target's watch showed)"
            )
        return Passed(said, at=seen.happened_at)

    def over(self, seen: Observed) -> str:
        return f"the Pod never ran on a node: {seen.pod_text()}"

    def timed_out(self, seen: Observed, seconds: float) -> str:
        """Names the scheduler when nothing shows it ever considered the Pod: a scheduler that
        tried says why (Unschedulable, a FailedScheduling Event); one whose watches have not
        reconnected after an API server restart says nothing (placed 14-35 s late on
        testenv's cluster), and neither does a cluster whose scheduler is down."""
        text = super().timed_out(seen, seconds)
        pod = seen.pod
        unbound = pod is not None and pod.phase == "Pending" and not pod.node
        if unbound and pod and not pod.reason and not pod.message and seen.warning is None:
            text += (
                "; no scheduling decision and no Event: nothing has considered the Pod "
                "(is the cluster's scheduler running and connected to the API server?)"
            )
        elif pod is not None and pod.phase == "Pending" and pod.node and not pod.reason:
            # Bound, yet no container status at all: a working kubelet reports
            # ContainerCreating (or why not) within seconds of the binding.
            text += (
                f"; bound to node {pod.node}, whose kubelet has reported nothing of it (is the "
                "node's kubelet running and connected to the API server?)"
            )
        return text
