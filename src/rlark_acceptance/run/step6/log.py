"""Reading the Worker's log as it arrives: Ray's start-up, the run script's first output,
the config RLinf prints at start-up, the first signal."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from rlark_acceptance.run.step6.printed_config import printed_config_checks

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run

RAY_STARTED = re.compile(r"Ray runtime started")

# Ray's CLI logs as "2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps" when its
# output is not a terminal, as in a Pod; on a terminal it prints the same banner bare.
_RAY_CLI_LINE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\s+[A-Z]+\s+\S+:\d+ -- ")
_RAY_BANNER = re.compile(
    r"^\s*$|^-{3,}\s*$|^\s*(Next steps|Note: The following|the head node or within"
    r"|To (add another node|connect to this|terminate the Ray|view the status|monitor)"
    r"|ray (start|stop|status)\b|import ray$|ray\.init\(|Local node IP|Ray runtime started)"
)


# What a dying program says last: a Python exception's final line (``KeyError: 'x'``,
# ``ray.exceptions.AuthenticationError: …``), else any line that says "error".
_EXCEPTION_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit)\b(?::|$)")
_ERROR_WORD = re.compile(r"\berror\b", re.IGNORECASE)
LAST_ERROR_MAX = 300


def is_script_output(line: str) -> bool:
    """A line after Ray's start-up that Ray's own CLI did not print."""
    return not (_RAY_CLI_LINE.match(line) or _RAY_BANNER.search(line))


class LogReader:
    """Line indices of what Step 6 looks for; records 1.1 / 1.2 once the config is printed."""

    def __init__(
        self, run: Step6Run, signal: re.Pattern[str] | None, validated: dict[str, Any] | None
    ) -> None:
        self.run = run
        self.signal = signal
        self.validated = validated
        self.ray_line: int | None = None
        self.script_line: int | None = None
        self.signal_line: int | None = None
        self.signal_at: float | None = None
        self._json: list[str] | None = None
        self.last_error: str | None = None  # quoted when the Worker dies
        self._last_exception = False

    def feed(self, line: str, index: int, at: float) -> None:
        self._read(line, index)
        self._error(line)
        # Only the run script's output counts: Ray's own lines could match a loose pattern.
        if (
            self.signal is not None
            and self.signal_line is None
            and self.script_line is not None
            and self.signal.search(line)
        ):
            self.signal_line = index
            self.signal_at = at

    def _error(self, line: str) -> None:
        """Keep the last error line; an exception's own line outranks later mentions."""
        text = line.strip()
        if _EXCEPTION_LINE.match(text):
            self.last_error, self._last_exception = text[:LAST_ERROR_MAX], True
        elif _ERROR_WORD.search(text) and not self._last_exception:
            self.last_error = text[:LAST_ERROR_MAX]

    def _read(self, line: str, index: int) -> None:
        if self.ray_line is None and RAY_STARTED.search(line):
            self.ray_line = index
        # RLinf prints its resolved config as indented JSON right after start-up: "{" ... "}".
        if (
            self.ray_line is not None
            and self._json is None
            and self.run.rec.printed_config is None
            and line.rstrip() == "{"
        ):
            self._json = [line]
            if self.script_line is None:
                self.script_line = index
            return
        if self._json is not None:
            self._json.append(line)
            if line.rstrip() == "}":
                text = "\n".join(self._json)
                self._json = None
                try:
                    self.run.rec.printed_config = json.loads(text)
                except ValueError:
                    self.run.rec.printed_config = None
                printed_config_checks(self.run, self.validated)
            return
        if (
            self.ray_line is not None
            and index > self.ray_line
            and self.script_line is None
            and is_script_output(line)
        ):
            self.script_line = index
