"""6.4 RLinf 日志出现预先确定的训练进展: the profile's first-signal regex in the run's output.

Advanced by a line of the run script (not Ray's) matching ``runInfo.firstSignal``. Failed at
once when no signal was prepared or the Worker ends first; by the deadline
``timeouts.firstSignal`` otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6.log import is_script_output
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase

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


class FirstSignal(Phase):
    check: ClassVar[str] = CheckId.PROGRESS_LOGGED
    bound: ClassVar[Bound | None] = Bound.FIRST_SIGNAL

    def verdict(self, seen: Observed) -> Decision:
        log = seen.log
        if log.signal is None:
            return Failed("no first signal was prepared (runInfo.firstSignal)")
        if log.signal_line is None:
            return None
        return Passed(
            f"log line {log.signal_line + 1} shows the first signal: "
            f"{(log.signal_text or '').strip()[:160]}",
            at=log.signal_at if log.signal_at is not None else seen.happened_at,
        )

    def over(self, seen: Observed) -> str:
        pattern = seen.log.signal.pattern if seen.log.signal is not None else ""
        return (
            f"the logs never showed /{pattern}/ and the Worker ended: {seen.pod_text()}"
            f"{progress_hint(seen.tail)}"
        )

    def timed_out(self, seen: Observed, seconds: float) -> str:
        """Says what the Worker printed instead of the signal."""
        return super().timed_out(seen, seconds) + progress_hint(seen.tail)
