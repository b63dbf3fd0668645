"""6.3 日志显示 Ray Head 已启动,并开始执行运行脚本: Ray's start-up line, then the run script.

Advanced by the log: Ray's "Ray runtime started" and then a line Ray did not print.
Failed at once when the Worker ends first (the prepare script failed, the Worker died, its
container could not be created: a volume that does not mount names its store); by the
deadline ``timeouts.rayHead`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.run.step6.record import Status
from rlark_acceptance.run.step6.run import CONTAINER_START_FAILURES

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


class RayHead:
    check: ClassVar[str] = "6.3"
    timeout_key: ClassVar[str] = "rayHead"

    def verdict(self, run: Step6Run) -> tuple[Status, str] | None:
        log = run.log
        if log.ray_line is None or log.script_line is None:
            return None
        run.rec.durations["rayHead"] = run.since(run.now)
        return (
            "passed",
            "the Ray head started and the run script began "
            f"(log lines {log.ray_line + 1} and {log.script_line + 1})",
        )

    def over(self, run: Step6Run) -> str:
        pod = run.pod
        if pod is not None and pod.reason in CONTAINER_START_FAILURES:
            missing = "the Worker's container was never created"
        elif run.log.ray_line is None:
            missing = "the Ray head never started"
        else:
            missing = "the run script printed nothing after Ray started"
        return f"{missing}: {run.pod_text()}"
