"""How Step 6 reads a Worker log: Ray's start-up, the run script's first output, the first
signal, in batches of lines whatever the log's size."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_acceptance.adapters.base import LogLines
from rlark_acceptance.run.step6.log import RAY_STARTED, block_pattern, first_line, is_script_output
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.printed_config import OneNode
from rlark_acceptance.run.step6.record import LogTail
from tests.run.scripted import RAY

# What `ray start --head` printed in a Pod (not a terminal), as the local target logs it.
RAY_LOG = """\
2026-11-30 13:13:35,847\tINFO usage_lib.py:448 -- Usage stats collection is disabled.
2026-11-30 13:13:38,745\tSUCC scripts.py:1084 -- --------------------
2026-11-30 13:13:38,746\tSUCC scripts.py:1085 -- Ray runtime started.
2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps
2026-11-30 13:13:38,746\tINFO scripts.py:1095 --   ray start --address='127.0.0.1:43305'
2026-11-30 13:13:38,746\tINFO scripts.py:1108 -- import ray
2026-11-30 13:13:38,747\tINFO scripts.py:1143 --   ray stop"""

# The same banner on a terminal.
RAY_TTY = """\
--------------------
Ray runtime started.
--------------------
Next steps
  To add another node to this Ray cluster, run
    ray start --address='127.0.0.1:6379'
  To connect to this Ray cluster:
    import ray
    ray.init()
  To terminate the Ray runtime, run
    ray stop"""


def test_ray_start_up_line_is_recognised() -> None:
    assert sum(bool(RAY_STARTED.search(line)) for line in RAY_LOG.splitlines()) == 1


@pytest.mark.parametrize("line", RAY_LOG.splitlines() + RAY_TTY.splitlines() + [""])
def test_ray_own_lines_are_not_the_run_script(line: str) -> None:
    assert not is_script_output(line)


@pytest.mark.parametrize(
    "line",
    [
        "{",
        "rlark-acceptance smoke workload: CPU-only stand-in for an RLinf run (not RLinf)",
        "+ python train_embodied_agent.py --config-name maniskill_ppo_openvlaoft",
        "bash: line 1: cd: /workspace/RLinf: No such file or directory",
        "Traceback (most recent call last):",
    ],
)
def test_run_script_lines_are(line: str) -> None:
    assert is_script_output(line)


# --- logs at any size: the streaming matcher ------------------------------------------------
PATTERNS = [
    r"Global Step: +\d+%\|",
    r"^step \d+$",
    r"loss=\s*\d",
    r"a\s+b",
    r"^$",
    r"x$",
    r"(?s)a.b",
    r"\bab\b",
    r"^\s*x",
    r"[^a]+$",
    r"foo(?!\s)",  # these see past a line's end: searched line by line
    r"\Aab",
    r"x\s*+$",
]
LINE = st.text(alphabet="ab x\t{}=1%|", max_size=8) | st.sampled_from(
    ["step 3", "loss= 1", "Global Step:   1%|", "foo", "foo ", "{", "}", "x", ""]
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PATTERNS), st.lists(LINE, max_size=30), st.integers(0, 5))
def test_a_block_search_finds_the_first_line_a_line_search_finds(
    pattern: str, lines: list[str], start: int
) -> None:
    compiled = re.compile(pattern)

    def one(line: str) -> bool:
        return compiled.search(line) is not None

    text = "\n".join(lines)
    start = min(start, len(lines))
    expected = first_line(lines, text, None, one, start)
    assert first_line(lines, text, block_pattern(compiled), one, start) == expected


SCRIPT_LINES = st.sampled_from(
    [
        *(RAY, "", "smoke workload starting", "{", '  "a": 1', "}", "{", "not json", "}"),
        *("Global Step:   1%|", "Global Step:", "noise " * 8),
    ]
)


def _read(batches: list[list[str]]) -> tuple[Any, ...]:
    seen = Observed(0.0, re.compile(r"Global Step: +\d+%\|"), LogTail())
    for batch in batches:
        seen.take(LogLines(0.0, batch))
    log = seen.log
    config = (log.config, log.unparsed_configs, OneNode().verdict(seen))
    return log.ray_line, log.script_line, log.signal_line, log.signal_text, config


@settings(max_examples=200, deadline=None)
@given(st.lists(SCRIPT_LINES, max_size=40), st.lists(st.integers(1, 7), max_size=40))
def test_lines_read_in_batches_decide_as_lines_read_one_by_one(
    lines: list[str], cuts: list[int]
) -> None:
    batches, i = [], 0
    for n in cuts:
        if i < len(lines):
            batches.append(lines[i : i + n])
            i += n
    if i < len(lines):
        batches.append(lines[i:])
    assert _read(batches) == _read([[x] for x in lines])


def test_the_record_keeps_a_bounded_head_and_tail_of_any_log() -> None:
    tail = LogTail()
    for n in range(0, 100_000, 1000):
        tail.extend([f"line {i}" for i in range(n, n + 1000)])
    kept = list(tail)
    assert tail.count == 100_000 and len(kept) == LogTail.HEAD + LogTail.TAIL
    assert kept[0] == "line 0" and kept[-1] == "line 99999" and tail.last == "line 99999"
    assert tail.omitted == 100_000 - len(kept)


def test_the_step_counter_keeps_the_first_step_and_the_highest() -> None:
    """Where a resumed run started (T.4) is its first step line, kept beside the highest."""
    from rlark_acceptance.model.training import DEFAULT_STEP_PATTERN
    from rlark_acceptance.run.step6.log import StepCounter

    counter = StepCounter(re.compile(DEFAULT_STEP_PATTERN))
    rows = [f"│ Global Step: {n:4d}/7 │ Progress: ██ │" for n in (6, 7)]
    counter.feed(["Loaded 6 actor tensors", rows[0]], "\n".join(["x", rows[0]]), at=3.0)
    counter.feed([rows[1]], rows[1], at=4.0)
    assert (counter.first, counter.first_at, counter.first_line) == (6, 3.0, rows[0])
    assert (counter.step, counter.at, counter.total) == (7, 4.0, 7)


@pytest.mark.parametrize(
    ("line", "resumed_from"),
    [
        (
            "[INFO 23:21:04 RLinf] Resuming training from checkpoint directory /mnt/ckpt/nope.",
            "/mnt/ckpt/nope",
        ),
        (
            "Resuming training from checkpoint directory /mnt/c/checkpoints/global_step_5.",
            "/mnt/c/checkpoints/global_step_5",
        ),
        ("INFO:root:Load from checkpoint folder: /mnt/c/global_step_40", "/mnt/c/global_step_40"),
    ],
)
def test_a_resumed_runs_log_says_where_it_resumed_from(line: str, resumed_from: str) -> None:
    """RLinf's embodied / SFT runners and its reasoning runners say it each their own way;
    only a log read for a resumed run (T.4) is searched for it."""
    from rlark_acceptance.run.step6.log import LogReader

    reader = LogReader(None, resume=True)
    digest = "ab" * 32
    reader.feed_lines(
        [RAY, "started", line, f"smoke: actor weights at start: sha256 {digest}"], 0, 1.0
    )
    assert reader.resume is not None
    assert reader.resume.resumed_from == resumed_from and reader.resume.line == line.strip()
    assert reader.resume.digest == digest
    assert LogReader(None).resume is None
