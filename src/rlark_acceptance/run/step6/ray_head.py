"""6.3 日志显示 Ray Head 已启动,并开始执行运行脚本: Ray's start-up line, then the run script.

Advanced by the log: Ray's "Ray runtime started" and then a line Ray did not print.
Failed at once when the Worker ends first (the prepare script failed, the Worker died, its
container could not be created: a volume that does not mount names its store); by the
deadline ``timeouts.rayHead`` otherwise.
"""

from __future__ import annotations

from typing import ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import CONTAINER_START_FAILURES, Decision, Passed, Phase


class RayHead(Phase):
    check: ClassVar[str] = CheckId.RAY_HEAD_STARTED
    bound: ClassVar[Bound | None] = Bound.RAY_HEAD

    def verdict(self, seen: Observed) -> Decision:
        log = seen.log
        if log.ray_line is None or log.script_line is None:
            return None
        return Passed(
            "the Ray head started and the run script began "
            f"(log lines {log.ray_line + 1} and {log.script_line + 1})",
            at=seen.happened_at,
        )

    def over(self, seen: Observed) -> str:
        pod = seen.pod
        if pod is not None and pod.reason in CONTAINER_START_FAILURES:
            missing = "the Worker's container was never created"
        elif seen.log.ray_line is None:
            missing = "the Ray head never started"
        else:
            missing = "the run script printed nothing after Ray started"
        return f"{missing}: {seen.pod_text()}"

    def timed_out(self, seen: Observed, seconds: float) -> str:
        # Which of the two lines never came: a Ray head still starting (a loaded node, an
        # image that pulls Ray's dependencies at start) is another fault than a run script
        # that hangs before its first print.
        if seen.log.ray_line is None:
            missing = "the Ray head had not started"
        else:
            missing = "the run script had printed nothing after Ray started"
        assert self.bound is not None
        return f"{missing} within {seconds:.0f} s ({self.bound.key}); {seen.pod_text()}"
