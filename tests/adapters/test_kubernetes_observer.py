"""The observer's end of a Worker's log, once the Worker is over (``observer.py``): which of
its readers is cut when idle, and when. Scripted: the current file's first line and the
readers' streams are given by the test; the same on the real node's kubelet, a Worker
printing 3 M numbered lines through several rotations, is in ``test_kubernetes_faults.py``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, cast

from rlark_acceptance.adapters.kubernetes.logfiles import Chain, Segment
from rlark_acceptance.adapters.kubernetes.observer import IDLE_SECONDS, Observer
from rlark_acceptance.adapters.kubernetes.stream import Stopper


def at(s: str) -> str:
    return f"2026-12-01T09:40:{s}Z"


class Stream:
    """A reader's open stream: whether it was shut down under its reader."""

    def __init__(self) -> None:
        self.shut = False

    def shutdown(self) -> None:
        self.shut = True


class Scripted(Observer):
    """The observer with the current file's first line given by the test, and the readers it
    would start recorded instead of started."""

    def __init__(self, current: str | None) -> None:
        super().__init__(cast(Any, None), cast(Any, None), cast(Any, None), Stopper(), None)
        self.current = current
        self.started: list[Segment] = []

    def _current_first(self, pod: str, chain: Chain) -> tuple[bool, str | None]:
        return True, self.current

    def _thread(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        seg = args[-1]
        assert isinstance(seg, Segment)
        seg.resp = Stream()
        self.started.append(seg)


def reading(chain: Chain, seg: Segment, *stamps: str) -> Stream:
    chain.take(seg, [f"{at(s)} line {s}" for s in stamps])
    seg.resp = Stream()
    seg.arrived = time.monotonic() - IDLE_SECONDS - 0.1
    return cast(Stream, seg.resp)


def test_only_the_newest_reader_is_cut_when_idle_on_the_current_file() -> None:
    """A loaded machine: the rotated file's reader and the newest one both delivered nothing
    for longer than the idle bound after the Worker ended. Cutting the rotated file's reader
    would lose the rest of its file (a CI run lost 268,345 lines so): only the newest one is
    cut, and reads the rest of the current file in one request."""
    chain = Chain()
    older = reading(chain, chain.head, "01")
    seg = chain.add(at("05"))
    assert seg is not None
    newest = reading(chain, seg, "05", "06")
    obs = Scripted(current=at("05"))
    obs._cut_when_idle("worker-0", chain)
    assert newest.shut and seg.final
    assert not older.shut and not chain.segments[0].final


def test_a_newest_reader_behind_the_current_file_goes_on_and_the_file_gets_its_own() -> None:
    """The kubelet rotated while the newest reader was held off the CPU: the current file is
    a later one. It gets a reader of its own; the reader behind is not cut (it reads on to
    its file's end, where the kubelet closes it), and the new one is cut once idle there."""
    chain = Chain()
    behind = reading(chain, chain.head, "01")
    obs = Scripted(current=at("05"))
    started = time.monotonic()
    obs._cut_when_idle("worker-0", chain)
    assert [s.stamp for s in obs.started] == [at("05")]
    assert not behind.shut and not chain.segments[0].final
    assert chain.segments[0].end is not None  # it stops where the later file begins
    new = obs.started[0]
    assert new.final and cast(Stream, new.resp).shut
    # The new reader's idle time counts from its start: it was given the bound to deliver.
    assert time.monotonic() - started >= IDLE_SECONDS


def test_a_reader_handing_lines_on_is_not_cut_and_its_idle_time_counts_from_then() -> None:
    """Step 6 busy elsewhere (reading a checkpoint) keeps the newest reader waiting to hand
    lines on, longer than the idle bound: it is not idle meanwhile."""
    chain = Chain()
    stream = reading(chain, chain.head, "01")
    obs = Scripted(current=at("01"))
    cutter = threading.Thread(target=obs._cut_when_idle, args=("worker-0", chain))
    with chain.handing(chain.head):
        cutter.start()
        time.sleep(2 * IDLE_SECONDS)
        assert not stream.shut
    handed = time.monotonic()
    cutter.join(5 * IDLE_SECONDS)
    assert stream.shut and time.monotonic() - handed >= IDLE_SECONDS
