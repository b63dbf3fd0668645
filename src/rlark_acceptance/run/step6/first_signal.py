"""6.4 RLinf 日志出现预先确定的训练进展: the profile's first-signal regex in the run's output.

Advanced by a line of the run script (not Ray's) matching ``runInfo.firstSignal``. Failed at
once when no signal was prepared or the Worker ends first; by the deadline
``timeouts.firstSignal`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.run.step6.record import Status

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


class FirstSignal:
    check: ClassVar[str] = "6.4"
    timeout_key: ClassVar[str] = "firstSignal"

    def verdict(self, run: Step6Run) -> tuple[Status, str] | None:
        log = run.log
        if log.signal is None:
            return "failed", "no first signal was prepared (runInfo.firstSignal)"
        if log.signal_line is None:
            return None
        signal_at = log.signal_at if log.signal_at is not None else run.now
        run.rec.signal_lag = run.clock() - signal_at
        run.rec.durations["firstSignal"] = run.since(signal_at)
        return (
            "passed",
            f"log line {log.signal_line + 1} shows the first signal: "
            f"{(log.signal_text or '').strip()[:160]}",
        )

    def over(self, run: Step6Run) -> str:
        pattern = run.log.signal.pattern if run.log.signal is not None else ""
        return f"the logs never showed /{pattern}/ and the Worker ended: {run.pod_text()}"
