"""The tests' timeline (``fixtures/timeline.py``) and what ``tests/durations.py`` reads from
it: where each worker's time went, and which tests waited for their turn at a service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.durations import main, print_timeline, timeline

REPO = Path(__file__).resolve().parents[1]

# Two tests that each hold one service alone for a second: on two workers, one waits.
SOLE_TESTS = """
import time
from fixtures.timeline import turn
from testenv import turns

def test_a(request):
    with turn(request.node, turns.sole("demo")):
        time.sleep(1.0)

def test_b(request):
    with turn(request.node, turns.sole("demo")):
        time.sleep(1.0)
"""


def test_two_workers_at_one_sole_service_write_who_waited(tmp_path: Path) -> None:
    (tmp_path / "test_sole.py").write_text(SOLE_TESTS, encoding="utf-8")
    out = tmp_path / "reports" / "timeline.jsonl"
    out.parent.mkdir()
    out.write_text('{"stale": "a line of an earlier session"}\n', encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RLARK_TESTENV_STATE": str(tmp_path / "state"),
    }
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "test_sole.py", "-p", "fixtures.timeline"),
            *("-n", "2", "--dist", "load", "-p", "no:randomly", "-p", "no:cacheprovider"),
            *("--timeline", str(out), "-q"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(t) for t in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["test"] for line in lines) == [
        "test_sole.py::test_a",
        "test_sole.py::test_b",
    ]
    assert {line["worker"] for line in lines} == {"gw0", "gw1"}
    first, second = sorted(lines, key=lambda line: line["end"])
    # The one that ended last waited about as long as the other held the service.
    assert first["waited"] < 0.5 <= second["waited"] <= second["end"] - second["start"]
    assert second["end"] - second["start"] >= 1.5


def test_a_workers_share_is_its_running_waiting_and_idle_time() -> None:
    lines = [
        {"test": "t1", "worker": "gw0", "start": 100.0, "end": 110.0, "waited": 0.0},
        {"test": "t2", "worker": "gw0", "start": 110.0, "end": 130.0, "waited": 5.0},
        {"test": "t3", "worker": "gw1", "start": 101.0, "end": 105.0, "waited": 0.0},
    ]
    span, workers = timeline(lines)
    assert span == 30.0
    assert (workers["gw0"].running, workers["gw0"].waiting, workers["gw0"].idle(span)) == (
        25.0,
        5.0,
        0.0,
    )
    assert (workers["gw1"].running, workers["gw1"].idle(span), workers["gw1"].last_end) == (
        4.0,
        26.0,
        5.0,
    )


def test_the_profile_names_the_longest_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "timeline.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(line)
            for line in [
                {"test": "tests/a.py::t", "worker": "gw0", "start": 0.0, "end": 50.0, "waited": 0},
                {"test": "tests/b.py::t", "worker": "gw1", "start": 0.0, "end": 60.0, "waited": 40},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    print_timeline(path)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "60 s on 2 workers: running 58%, waiting for a turn 33%, idle 8%"
    assert "40.0 s  gw1 at     0.0 s  tests/b.py::t" in out
    assert "tests/a.py::t" not in out.split("longest waits")[1]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "timeline.jsonl: no test in it"),
        ('{"test": "t", "worker": "gw0", "start": 1, "end": 2, "waited": 0}\n{"test"\n', ":2: "),
        ('{"test": "t", "worker": "gw0", "start": 1, "end": 2}\n', ":1: not a timeline line"),
    ],
)
def test_a_timeline_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    path = tmp_path / "timeline.jsonl"
    path.write_text(text, encoding="utf-8")
    assert main(["--timeline", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and said in err and str(path) in err, err


def test_a_missing_timeline_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--timeline", str(tmp_path / "absent.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'absent.jsonl'}: ") and err.count("\n") == 1


def test_a_reader_that_goes_away_ends_the_profile_quietly(tmp_path: Path) -> None:
    """``durations.py --timeline FILE | head -1``: what is left to say has no reader; it
    ends with no traceback."""
    path = tmp_path / "timeline.jsonl"
    path.write_text(
        json.dumps({"test": "t", "worker": "gw0", "start": 0, "end": 1, "waited": 1}) + "\n",
        encoding="utf-8",
    )
    script = Path(__file__).with_name("durations.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), "--timeline", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(script.parent.parent)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the tool says anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert err == "", err
