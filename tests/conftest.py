"""A failing test's report says how loaded the machine was while it ran, and a test that
failed on Ray's own start-up timeout runs once more.

Tests here start real Ray heads, RLinf runs, a kubelet and its Pods on two cores, several
at once (``./run tests`` runs three workers). A Worker that fails at 6.3 with Ray's own
"The current node timed out during startup" met one of Ray's fixed start-up waits (its
raylet gives the dashboard agent 15 s) on a loaded machine, or a fault; only the load at the
time tells which. Every few seconds a thread of each test process reads the load average,
the runnable tasks, which commands they belong to and how many Ray heads (``gcs_server``
processes) the machine holds; a failed test's report gets those of its own span as a section
("machine load"), beside its captured output.

A test here whose failure quotes that timeout (Ray's message, or the failure class the
harness names it by) is run once more (pytest-rerunfailures' ``flaky`` marker, ``R`` in the
progress line, ``RERUN`` in the short summary): no test here puts that fault in on purpose,
and the harness's verdict on it is tested by its own tests (tests/rlinf/test_failures.py).
The suite runs of tests/run/ repeat themselves on the same fault, judged by their run
record (``again_if_ray_start_timed_out``). Any other failure fails at once, and the
acceptance suite's scenarios never run twice, in whatever session they are.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

SAMPLE_S = 5.0
# An hour of samples: a test longer than that reports its last hour.
KEPT = int(3600 / SAMPLE_S)
# Lines of samples a section shows at most (a long test's are thinned evenly, the peak kept).
SHOWN = 60
# How many of the commands with the most runnable tasks a sample names.
BUSIEST = 3
# What a failure quotes when a Worker's Ray head missed Ray's own start-up waits: Ray's
# message, or the failure class (rlinf/failures.py RAY_START_TIMEOUT) that names it.
RAY_START_TIMEOUT = r"timed out during startup|\[ray-start-timeout"
_STARTED = pytest.StashKey[float]()


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    load1: float
    runnable: int
    ray_heads: int
    # The commands with the most runnable tasks (threads), most first: what the load is.
    busiest: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Processes:
    ray_heads: int
    busiest: tuple[tuple[str, int], ...]


def processes(proc: Path = Path("/proc")) -> Processes:
    """How many Ray heads run on the machine (their GCS servers), and which commands have
    the most runnable threads."""
    heads = 0
    running: Counter[str] = Counter()
    for pid in proc.glob("[0-9]*"):
        try:
            comm = (pid / "comm").read_text().strip()
            heads += comm == "gcs_server"
            for task in (pid / "task").glob("[0-9]*/stat"):
                # "pid (comm) S ...": the state follows the comm, which may hold spaces.
                if task.read_text().rpartition(")")[2].split()[0] == "R":
                    running[comm] += 1
        except (OSError, IndexError):
            continue  # the process or thread ended while it was read
    # Most first, ties by name: the same machine reads the same way.
    most = sorted(running.items(), key=lambda kv: (-kv[1], kv[0]))
    return Processes(heads, tuple(most[:BUSIEST]))


def sample() -> Sample:
    fields = Path("/proc/loadavg").read_text().split()
    now = processes()
    return Sample(
        time.monotonic(),
        float(fields[0]),
        int(fields[3].split("/")[0]),
        now.ray_heads,
        now.busiest,
    )


def busiest(s: Sample) -> str:
    return ", ".join(f"{comm} {n}" for comm, n in s.busiest) or "none"


class Sampler:
    def __init__(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=KEPT)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="machine-load", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            s = sample()
            with self._lock:
                self.samples.append(s)
            time.sleep(SAMPLE_S)

    def since(self, start: float) -> list[Sample]:
        with self._lock:
            return [s for s in self.samples if s.at >= start - SAMPLE_S]


def describe(samples: list[Sample], start: float, cores: int) -> str:
    """The section's text: the peak, then the samples (at most ``SHOWN``, evenly thinned,
    the peak among them)."""
    if not samples:
        return "no sample of the machine's load in the test's span"
    peak = max(samples, key=lambda s: s.load1)
    step = -(-len(samples) // SHOWN)
    samples = sorted({*samples[::step], peak}, key=lambda s: s.at)
    lines = [
        f"peak 1-min load {peak.load1:.1f} on {cores} cores at +{peak.at - start:.0f}s "
        f"({peak.runnable} runnable, {peak.ray_heads} Ray heads on the machine; "
        f"running: {busiest(peak)})"
    ]
    lines += [
        f"+{s.at - start:6.0f}s  load {s.load1:5.1f}  runnable {s.runnable:3d}  "
        f"Ray heads {s.ray_heads}  running: {busiest(s)}"
        for s in samples
    ]
    return "\n".join(lines)


SAMPLER = Sampler()


_STATE = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # The short summary names each test that ran again.
    if "R" not in config.option.reportchars and "A" not in config.option.reportchars:
        config.option.reportchars += "R"
    # Every suite a test runs (a copy of the profile, a release, a notification's run) keeps
    # its run in the default history, in the user's state folder, as a user's run does: a
    # test process's state is a folder of its own, removed when it ends, never the user's.
    state = Path(tempfile.mkdtemp(prefix="rlark-acceptance-state-"))
    os.environ["RLARK_ACCEPTANCE_STATE"] = str(state)
    config.stash[_STATE] = state


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        shutil.rmtree(state, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The tests here alone (a session may hold the acceptance suite too, whose scenarios'
    # verdicts are the product's and never run twice): once more, only on Ray's start-up
    # timeout, unless a test says otherwise.
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.is_relative_to(here) and item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=[RAY_START_TIMEOUT]))


def pytest_runtest_setup(item: pytest.Item) -> None:
    SAMPLER.start()
    item.stash[_STARTED] = time.monotonic()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    start = item.stash.get(_STARTED, None)
    if report.failed and start is not None:
        report.sections.append(
            ("machine load", describe(SAMPLER.since(start), start, os.cpu_count() or 1))
        )
    return report
