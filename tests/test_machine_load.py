"""The machine-load section of a failed test's report, and the one re-run of a test that
failed on Ray's start-up timeout (tests/conftest.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import RAY_START_TIMEOUT, SHOWN, Sample, describe, processes, sample

HERE = Path(__file__).parent


def test_processes_counts_the_gcs_servers_and_names_the_busiest_commands(
    tmp_path: Path,
) -> None:
    def proc(pid: str, comm: str, *states: str) -> None:
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(comm + "\n")
        for n, state in enumerate(states):
            task = tmp_path / pid / "task" / f"{pid}{n}"
            task.mkdir(parents=True)
            # A thread's name may hold spaces and parentheses: the state follows the last ")".
            (task / "stat").write_text(f"{pid}{n} (a (b) c) {state} 1 2 3\n")

    proc("1", "systemd", "S")
    proc("20", "gcs_server", "R", "S")
    proc("31", "raylet", "R", "R", "R")
    proc("44", "gcs_server", "S")
    proc("52", "python3", "R", "R")
    proc("60", "go", "R")
    (tmp_path / "self").mkdir()  # not a process's number: not read
    (tmp_path / "self" / "comm").write_text("gcs_server\n")
    seen = processes(tmp_path)
    assert seen.ray_heads == 2
    assert seen.busiest == (("raylet", 3), ("python3", 2), ("gcs_server", 1))


def test_a_sample_of_this_machine_is_plausible() -> None:
    s = sample()
    assert s.load1 >= 0 and s.runnable >= 1 and s.ray_heads >= 0
    # This test's own thread is running while it samples.
    assert s.busiest and all(n >= 1 for _, n in s.busiest), s


def test_the_section_names_the_peak_then_every_sample_in_the_span() -> None:
    start = 100.0
    samples = [
        Sample(101.0, 3.5, 2, 1),
        Sample(106.0, 17.9, 21, 6, (("raylet", 9), ("python3", 7))),
        Sample(111.0, 12.0, 9, 5),
    ]
    text = describe(samples, start, cores=2).splitlines()
    assert text[0] == (
        "peak 1-min load 17.9 on 2 cores at +6s (21 runnable, 6 Ray heads on the machine; "
        "running: raylet 9, python3 7)"
    )
    assert len(text) == 4 and "load  17.9" in text[2] and "Ray heads 6" in text[2]
    assert text[2].endswith("running: raylet 9, python3 7") and text[1].endswith("running: none")
    assert describe([], start, cores=2).startswith("no sample")


def test_a_long_test_s_section_is_thinned_and_keeps_its_peak() -> None:
    samples = [Sample(float(i), 1.0, 1, 0) for i in range(720)]
    samples[333] = Sample(333.0, 30.0, 40, 3)
    lines = describe(samples, 0.0, cores=2).splitlines()[1:]
    assert len(lines) <= SHOWN + 1 and any("load  30.0" in line for line in lines)
    offsets = [int(line.split("s")[0].lstrip("+ ")) for line in lines]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_the_rerun_rule_knows_ray_s_message_and_the_class_that_names_it() -> None:
    rx = re.compile(RAY_START_TIMEOUT)
    ray = "Exception: The current node timed out during startup. This could happen because"
    assert rx.search(ray)
    assert rx.search("6.3 failed: the Ray head did not come up [ray-start-timeout] ...")
    for other in (
        "6.3 failed: no Ray head within timeouts.rayHead (180 s)",
        "6.4 failed: [mount-io-error] the store behind ckpt does not answer",
        "AssertionError: timed out; pods [], log tail:",
    ):
        assert not rx.search(other), other


def test_only_a_test_failing_on_ray_s_start_timeout_runs_once_more(tmp_path: Path) -> None:
    """With this conftest: a module fixture and a test of its folder that fail once quoting
    the timeout pass on their second run; any other failure fails at once, and so does a
    test of another folder in the same session (the acceptance suite's scenarios)."""
    once = f"""
import pytest
from pathlib import Path

def once(name):
    mark = Path({str(tmp_path)!r}) / name
    first = not mark.exists()
    mark.touch()
    return first
"""
    (tmp_path / "tests").mkdir()
    (tmp_path / "features").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text((HERE / "conftest.py").read_text())
    (tmp_path / "features" / "test_scenario.py").write_text(
        once
        + """
def test_a_scenario():
    assert not once("scenario"), "6.3: The current node timed out during startup."
"""
    )
    (tmp_path / "tests" / "test_runs.py").write_text(
        once
        + """

@pytest.fixture(scope="module")
def head():
    assert not once("fixture"), "log: Exception: The current node timed out during startup."

def test_behind_the_fixture(head):
    pass

def test_the_class(head):
    assert not once("class"), "6.3: did not come up [ray-start-timeout] ..."

def test_another_failure():
    assert not once("other"), "6.4: [mount-io-error] the store does not answer"
"""
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests", "features"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = run.stdout
    assert run.returncode == 1, out
    assert "2 failed, 2 passed, 2 rerun" in out, out
    assert "FAILED tests/test_runs.py::test_another_failure" in out, out
    assert "FAILED features/test_scenario.py::test_a_scenario" in out, out
    assert "RERUN tests/test_runs.py::test_behind_the_fixture" in out, out
    assert "RERUN tests/test_runs.py::test_the_class" in out, out
