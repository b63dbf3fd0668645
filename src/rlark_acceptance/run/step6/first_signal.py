"""6.4 RLinf 日志出现预先确定的训练进展: the profile's first-signal regex in the run's output.

Advanced by a line of the run script (not Ray's) matching ``runInfo.firstSignal``. Failed at
once when no signal was prepared or the Worker ends first; by the deadline
``timeouts.firstSignal`` otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.run.step6.log import is_script_output
from rlark_acceptance.run.step6.record import Status

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


# What training progress looks like in a log whatever the pattern: a step / epoch /
# iteration counter (a whole number: RLinf's metric table also prints timings such as
# "step=0.011"), a "3/10" count, a percentage (tqdm's bars).
_PROGRESS_LIKE = re.compile(
    r"(?i)\b(global[ _]?step|step|epoch|iter(ation)?)s?\b\s*[:=#]?\s*\d+(?![.\d])"
    r"|\b\d+\s*/\s*\d+\b|\d%"
)


def last_progress_like(log: Iterable[str]) -> str | None:
    """The last line of the run script that looks like progress: what the prepared
    pattern (``runInfo.firstSignal``) should have matched, when it did not. Read from what
    the record keeps of the log (its bounded head and tail)."""
    for line in reversed(list(log)):
        if is_script_output(line) and _PROGRESS_LIKE.search(line):
            return line.strip()[:160]
    return None


def progress_hint(log: Iterable[str]) -> str:
    line = last_progress_like(log)
    if line is None:
        return "; the run script printed no progress-like line"
    return f"; the last progress-like line was: {line!r}"


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
        return (
            f"the logs never showed /{pattern}/ and the Worker ended: {run.pod_text()}"
            f"{progress_hint(run.rec.log)}"
        )
