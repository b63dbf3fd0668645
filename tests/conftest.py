"""A failing test's report says how loaded the machine was while it ran.

Tests here start real Ray heads, RLinf runs, a kubelet and its Pods on two cores, several
at once (``./run tests`` runs three workers). A Worker that fails at 6.3 with Ray's own
"The current node timed out during startup" met one of Ray's fixed start-up waits (its
raylet gives the dashboard agent 15 s) on a loaded machine, or a fault; only the load at the
time tells which. Every few seconds a thread of each test process reads the load average,
the runnable tasks and how many Ray heads (``gcs_server`` processes) the machine holds; a
failed test's report gets those of its own span as a section ("machine load"), beside its
captured output.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

SAMPLE_S = 5.0
# An hour of samples: a test longer than that reports its last hour.
KEPT = int(3600 / SAMPLE_S)
# Lines of samples a section shows at most (a long test's are thinned evenly, the peak kept).
SHOWN = 60
_STARTED = pytest.StashKey[float]()


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    load1: float
    runnable: int
    ray_heads: int


def ray_heads(proc: Path = Path("/proc")) -> int:
    """How many Ray heads run on the machine: their GCS servers."""
    n = 0
    for comm in proc.glob("[0-9]*/comm"):
        try:
            n += comm.read_text().strip() == "gcs_server"
        except OSError:
            continue  # the process ended while the list was read
    return n


def sample() -> Sample:
    fields = Path("/proc/loadavg").read_text().split()
    return Sample(time.monotonic(), float(fields[0]), int(fields[3].split("/")[0]), ray_heads())


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
        f"({peak.runnable} runnable, {peak.ray_heads} Ray heads on the machine)"
    ]
    lines += [
        f"+{s.at - start:6.0f}s  load {s.load1:5.1f}  runnable {s.runnable:3d}  "
        f"Ray heads {s.ray_heads}"
        for s in samples
    ]
    return "\n".join(lines)


SAMPLER = Sampler()


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
