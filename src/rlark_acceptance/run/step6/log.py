"""Reading the Worker's log as it arrives: Ray's start-up, the run script's first output,
the config RLinf prints at start-up, the first signal. What it found is state the phases
decide from; it writes nothing and judges nothing."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rlark_acceptance.model.training import DEFAULT_STEP_PATTERN
from rlark_acceptance.rlinf.failures import FirstCause

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
# Candidates of _EXCEPTION_LINE in a block of lines (each then judged alone).
_EXCEPTION_CANDIDATE = re.compile(r"[A-Z]\w*(?:Error|Exception|Exit)\b")
LAST_ERROR_MAX = 300


def is_script_output(line: str) -> bool:
    """A line after Ray's start-up that Ray's own CLI did not print."""
    return not (_RAY_CLI_LINE.match(line) or _RAY_BANNER.search(line))


# A pattern that can see past a line's ends (anchors of the whole text, lookarounds,
# possessive or atomic matching) could match a line alone and not the same line inside a
# block of lines: such a pattern is searched line by line.
_SEES_PAST_LINE = re.compile(r"\\[AZBz]|\(\?[=!<>]|[*+?}]\+")
# Candidates only (each judged alone); without ``^`` the search skips to each brace at C speed.
_CONFIG_OPEN = re.compile(r"\{\s*$", re.MULTILINE)
_CONFIG_CLOSE = re.compile(r"\}\s*$", re.MULTILINE)
# A printed config longer than this is not RLinf's: it is read no further (never parsed).
MAX_CONFIG_LINES = 20_000


def block_pattern(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """``pattern`` for a block of lines joined by newlines (``^`` / ``$`` at each line), or
    None when it must be searched line by line."""
    if _SEES_PAST_LINE.search(pattern.pattern):
        return None
    return re.compile(pattern.pattern, pattern.flags | re.MULTILINE)


def first_line(
    lines: Sequence[str],
    text: str,
    block: re.Pattern[str] | None,
    is_match: Callable[[str], bool],
    start: int = 0,
) -> int | None:
    """The index of the first line from ``start`` on for which ``is_match`` holds."""
    return next(matching_lines(lines, text, block, is_match, start), None)


def matching_lines(
    lines: Sequence[str],
    text: str,
    block: re.Pattern[str] | None,
    is_match: Callable[[str], bool],
    start: int = 0,
) -> Iterator[int]:
    """The indices of the lines from ``start`` on for which ``is_match`` holds, in order.

    ``text`` is ``"\\n".join(lines)``; ``block`` finds candidates in it at C speed (every
    line that matches alone is one: the pattern sees no further than its line), each then
    judged alone, so a match that spans lines never counts.
    """
    if start >= len(lines):
        return
    if block is None:
        yield from (i for i in range(start, len(lines)) if is_match(lines[i]))
        return
    pos, index = sum(map(len, lines[:start])) + start, start  # where line ``start`` begins
    while (m := block.search(text, pos)) is not None:
        at = m.start()
        index += text.count("\n", pos, at)
        if is_match(lines[index]):
            yield index
        nl = text.find("\n", at)
        if nl < 0:
            return
        pos, index = nl + 1, index + 1


class StepCounter:
    """The highest step the log has shown, when it first showed it, and the total it
    printed; the first step it showed, and its line (where a resumed run started, T.4).
    Nothing of the log is kept but those two lines."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self._block = block_pattern(pattern)
        self.step: int | None = None
        self.total: int | None = None
        self.line: str | None = None
        self.at: float | None = None  # when the highest step was first read
        self.first: int | None = None
        self.first_line: str | None = None
        self.first_at: float | None = None

    def feed(self, lines: Sequence[str], text: str, at: float) -> None:
        for i in matching_lines(lines, text, self._block, self._matches):
            self._take(lines[i], at)

    def _matches(self, line: str) -> bool:
        return self.pattern.search(line) is not None

    def _take(self, line: str, at: float) -> None:
        # A tqdm line redrawn with carriage returns holds several counts: the last is current.
        *_, m = self.pattern.finditer(line)
        try:
            step = int(m.group(1))
            total = int(m.group(2)) if self.pattern.groups >= 2 and m.group(2) else None
        except (TypeError, ValueError):
            return  # the profile's pattern matched something that is not a number
        if total is not None:
            self.total = total
        if self.first is None:
            self.first, self.first_at, self.first_line = step, at, line.strip()[:160]
        if self.step is None or step > self.step:
            self.step, self.at, self.line = step, at, line.strip()[:160]


# What a resumed run says of its resume (T.4): RLinf's embodied and SFT runners
# ("Resuming training from checkpoint directory D."), its reasoning runners ("Load from
# checkpoint folder: D"); and the digest of the actor's weights as loaded, which the smoke
# workload prints (RLinf prints none) in the form of the record's checkpoint digests.
RESUMING = re.compile(
    r"(?:Resuming training from checkpoint directory|Load from checkpoint folder:)\s+(\S+?)\.?\s*$"
)
WEIGHTS_AT_START = re.compile(r"actor weights at start: sha256 ([0-9a-f]{64})\b")


class ResumeLines:
    """Where the run said it resumed from, and the digest of its weights at start."""

    def __init__(self) -> None:
        self.resumed_from: str | None = None
        self.line: str | None = None
        self.digest: str | None = None

    def feed(self, lines: Sequence[str], text: str) -> None:
        if self.resumed_from is None:
            found = first_line(lines, text, _RESUMING_BLOCK, _says_resuming)
            if found is not None:
                m = RESUMING.search(lines[found])
                assert m is not None
                self.resumed_from, self.line = m.group(1), lines[found].strip()[:300]
        if self.digest is None:
            found = first_line(lines, text, WEIGHTS_AT_START, _weights_at_start)
            if found is not None:
                m = WEIGHTS_AT_START.search(lines[found])
                assert m is not None
                self.digest = m.group(1)


_RESUMING_BLOCK = block_pattern(RESUMING)


def _says_resuming(line: str) -> bool:
    return RESUMING.search(line) is not None


def _weights_at_start(line: str) -> bool:
    return WEIGHTS_AT_START.search(line) is not None


class LogReader:
    """Line indices of what Step 6 looks for, and the config RLinf printed at start-up.

    Lines come in batches (as the target delivers them); nothing of them is kept here but
    the printed config while it is being read and the first signal's line.
    """

    def __init__(
        self,
        signal: re.Pattern[str] | None,
        steps: re.Pattern[str] | None = None,
        *,
        resume: bool = False,
    ) -> None:
        self.signal = signal
        self.steps = StepCounter(steps or re.compile(DEFAULT_STEP_PATTERN))  # T.1
        self.resume = ResumeLines() if resume else None  # T.4: a resumed run's log only
        self._signal_block = block_pattern(signal) if signal is not None else None
        # The config RLinf printed (parsed), once a ``{`` ... ``}`` block was JSON; blocks
        # that were not are counted (1.1 says so until a later block parses).
        self.config: dict[str, Any] | None = None
        self.unparsed_configs = 0
        # Where the last block that was not JSON failed to parse: what 1.1 quotes, so a
        # reader sees whether RLinf printed something else or the block came short.
        self.unparsed_why: str | None = None
        self.ray_line: int | None = None
        self.script_line: int | None = None
        self.signal_line: int | None = None
        self.signal_text: str | None = None
        self.signal_at: float | None = None
        self._json: list[str] | None = None
        self._json_at = 0  # the log line (0-based) of the open block's ``{``
        self.last_error: str | None = None  # quoted when the Worker dies
        self.cause = FirstCause()  # the run's first error: what a failure quotes
        self._last_exception = False

    def feed(self, line: str, index: int, at: float) -> None:
        self.feed_lines((line,), index, at)

    def feed_lines(self, lines: Sequence[str], first: int, at: float) -> None:
        """Read ``lines``, the first of which is log line ``first`` (0-based)."""
        if not lines:
            return
        text = "\n".join(lines)
        self._errors(lines, text)
        self.cause.feed(lines, first)
        self._read(lines, text, first, at)
        self.steps.feed(lines, text, at)
        if self.resume is not None:
            self.resume.feed(lines, text)

    def _errors(self, lines: Sequence[str], text: str) -> None:
        """Keep the last error line; an exception's own line outranks later mentions."""
        last = _last(matching_lines(lines, text, _EXCEPTION_CANDIDATE, _is_exception_line))
        if last is not None:
            self.last_error, self._last_exception = lines[last].strip()[:LAST_ERROR_MAX], True
        elif not self._last_exception:
            last = _last(matching_lines(lines, text, _ERROR_WORD, _says_error))
            if last is not None:
                self.last_error = lines[last].strip()[:LAST_ERROR_MAX]

    def _read(self, lines: Sequence[str], text: str, first: int, at: float) -> None:
        start = self._start_up(lines, text, first)
        if start >= len(lines):
            return
        self._config(lines, text, first, start)
        if self.signal is not None and self.signal_line is None:
            found = first_line(lines, text, self._signal_block, self._is_signal, start)
            if found is not None:
                self.signal_line, self.signal_text, self.signal_at = first + found, lines[found], at

    def _is_signal(self, line: str) -> bool:
        assert self.signal is not None
        return self.signal.search(line) is not None

    def _start_up(self, lines: Sequence[str], text: str, first: int) -> int:
        """Ray's start-up line, then the run script's first line; returns where in
        ``lines`` the run script's output begins (``len(lines)`` if not yet)."""
        i = 0
        if self.ray_line is None:
            found = first_line(lines, text, RAY_STARTED, _ray_started)
            if found is None:
                return len(lines)
            self.ray_line, i = first + found, found + 1
        if self.script_line is None:
            while i < len(lines):
                if is_script_output(lines[i]):
                    self.script_line = first + i
                    return i
                i += 1
            return len(lines)
        return i

    def _config(self, lines: Sequence[str], text: str, first: int, start: int) -> None:
        """RLinf prints its resolved config as indented JSON right after start-up:
        ``{`` ... ``}``."""
        i = start
        while self.config is None and i < len(lines):
            if self._json is None:
                found = first_line(lines, text, _CONFIG_OPEN, _opens_config, i)
                if found is None:
                    return
                self._json, self._json_at, i = [lines[found]], first + found, found + 1
                continue
            close = first_line(lines, text, _CONFIG_CLOSE, _closes_config, i)
            end = len(lines) if close is None else close + 1
            self._json.extend(lines[i:end])
            i = end
            if close is None:
                if len(self._json) > MAX_CONFIG_LINES:
                    self._json = None  # never closed: not a config
                return
            parsed = "\n".join(self._json)
            self._json = None
            try:
                self.config = json.loads(parsed)  # a "{" line to a "}" line: an object
            except json.JSONDecodeError as e:
                self.unparsed_configs += 1
                self.unparsed_why = (
                    f"the block from log line {self._json_at + 1}: {e.msg} at log line "
                    f"{self._json_at + e.lineno}"
                )


def _last(indices: Iterator[int]) -> int | None:
    tail = deque(indices, maxlen=1)
    return tail[0] if tail else None


def _is_exception_line(line: str) -> bool:
    return _EXCEPTION_LINE.match(line) is not None


def _says_error(line: str) -> bool:
    return _ERROR_WORD.search(line) is not None


def _ray_started(line: str) -> bool:
    return RAY_STARTED.search(line) is not None


def _opens_config(line: str) -> bool:
    return line.rstrip() == "{"


def _closes_config(line: str) -> bool:
    return line.rstrip() == "}"
