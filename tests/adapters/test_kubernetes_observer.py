"""The end of a Worker's log once the Worker is over, as the log machine decides it
(``logmachine.py``): which reader is cut when idle, and when. Driven event by event on the
test's clock, no thread and no wait; the same on the real node's kubelet, a Worker printing
3 M numbered lines through several rotations, is in ``test_kubernetes_loud_worker.py``.
"""

from __future__ import annotations

from rlark_acceptance.adapters.kubernetes import logfiles
from rlark_acceptance.adapters.kubernetes.logcursor import Gap
from rlark_acceptance.adapters.kubernetes.logmachine import (
    IDLE_SECONDS,
    Begin,
    Ended,
    Finish,
    Held,
    Lines,
    LogMachine,
    Lost,
    Open,
    Opened,
    Over,
    Probe,
    Probed,
    Read,
    Resume,
    Shut,
    Tick,
    Wait,
)

T0 = 1_796_118_000.0  # 2026-12-01T09:40:00Z


def at(s: str) -> str:
    return f"2026-12-01T09:40:{s}Z"


class Run:
    """A log machine and the test's clock: ``feed`` at the current time, ``wait`` moves it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.m = LogMachine(0.0, T0)

    def feed(self, ev: object) -> list[object]:
        return list(self.m.feed(ev, self.now, T0 + self.now))  # type: ignore[arg-type]

    def wait(self, seconds: float) -> list[object]:
        """Ticks every quarter second for ``seconds``: what they gave."""
        out: list[object] = []
        for _ in range(round(seconds / 0.25)):
            self.now += 0.25
            out += self.feed(Tick())
        return out

    def reading(self, k: int, *stamps: str) -> None:
        self.feed(Opened(k))
        self.feed(Lines(k, [f"{at(s)} line {s}" for s in stamps]))

    def answer(self, first: str | None) -> list[object]:
        body = None if first is None else f"{first} line"
        return self.feed(Probed(None, T0 + self.now, T0 + self.now, body))


def two_segments() -> Run:
    run = Run()
    run.feed(Begin(0))
    run.reading(0, "01")
    assert run.answer(at("05")) == [Read(1)]
    run.feed(Begin(1))
    run.reading(1, "05", "06")
    return run


def test_only_the_newest_reader_is_cut_when_idle_on_the_current_file() -> None:
    """A loaded machine: the rotated file's reader and the newest one both delivered nothing
    for longer than the idle bound after the Worker ended. Cutting the rotated file's reader
    would lose the rest of its file (a CI run lost 268,345 lines so): only the newest one is
    cut, and reads the rest of the current file in one request."""
    run = two_segments()
    run.feed(Over())
    asked = run.wait(IDLE_SECONDS + 0.25)
    assert Probe(None) in asked
    assert run.answer(at("05")) == [Shut(1)]
    assert run.m.segments[1].final and not run.m.segments[0].final


def test_a_newest_reader_behind_the_current_file_goes_on_and_the_file_gets_its_own() -> None:
    """The kubelet rotated while the newest reader was held off the CPU: the current file is
    a later one. It gets a reader of its own; the reader behind is not cut (it reads on to
    its file's end, where the kubelet closes it), and the new one is cut once idle there."""
    run = Run()
    run.feed(Begin(0))
    run.reading(0, "01")
    run.feed(Over())
    assert Probe(None) in run.wait(IDLE_SECONDS + 0.25)
    assert run.answer(at("05")) == [Read(1)]
    assert not run.m.segments[0].final and run.m.segments[0].end is not None
    run.feed(Begin(1))
    run.feed(Opened(1))
    # The new reader's idle time counts from its start: it is given the bound to deliver.
    assert Probe(None) not in run.wait(IDLE_SECONDS - 0.25)
    assert Probe(None) in run.wait(0.5)
    assert run.answer(at("05")) == [Shut(1)]
    assert run.m.segments[1].final


def test_a_reader_handing_lines_on_is_not_cut_and_its_idle_time_counts_from_then() -> None:
    """Step 6 busy elsewhere (reading a checkpoint) keeps the newest reader waiting to hand
    lines on, longer than the idle bound: it is not idle meanwhile."""
    run = Run()
    run.feed(Begin(0))
    run.reading(0, "01")
    run.feed(Over())
    run.feed(Held(0, True))
    assert Probe(None) not in run.wait(4 * IDLE_SECONDS)
    run.feed(Held(0, False))
    assert Probe(None) not in run.wait(IDLE_SECONDS - 0.25)
    assert Probe(None) in run.wait(0.5)
    assert run.answer(at("01")) == [Shut(0)]


def test_a_reader_made_final_is_not_cut_again_in_its_last_read() -> None:
    """Cut once for its last read, the newest reader reads the rest in one request: cut
    again, the line it was reading would be put cut short."""
    run = Run()
    run.feed(Begin(0))
    run.reading(0, "01")
    run.feed(Over())
    run.wait(IDLE_SECONDS + 0.25)
    assert run.answer(at("01")) == [Shut(0)]
    assert run.feed(Ended(0)) == [Open(0, "2026-12-01T09:40:01Z", follow=False)]
    run.feed(Opened(0))
    assert Probe(None) not in run.wait(4 * IDLE_SECONDS)


def ended_before(run: Run, seconds: float) -> list[object]:
    """The rotated file's reader (segment 0 of two) ended cleanly, then the Worker is told
    over, its container finished ``seconds`` after that end."""
    assert run.feed(Ended(0)) == [Wait(0, 0.2)]
    finished = T0 + run.now + seconds
    run.feed(Over(finished))
    run.now += 0.2
    return run.feed(Resume(0))


def test_a_clean_end_before_the_container_finished_is_a_cut_and_what_is_left_is_said() -> None:
    """An API server restarting ends streams cleanly: seconds before the Worker ended, that
    is no end of the rotated file its reader was on, whose rest can no longer be read."""
    run = two_segments()
    acts = ended_before(run, 3.0)
    assert acts == [Lost(Gap(at("01"), at("05"))), Finish(0)]


def test_a_clean_end_after_the_container_finished_is_the_files_end() -> None:
    run = two_segments()
    assert ended_before(run, -1.0) == [Finish(0)]


def test_a_segment_with_no_line_of_its_own_says_its_file_lost() -> None:
    """Its reader came late: its file was rotated meanwhile, and the read is served a later
    file, whose first line is the next segment's."""
    run = Run()
    run.feed(Begin(0))
    run.reading(0, "01")
    assert run.answer(at("05")) == [Read(1)]
    run.feed(Begin(1))
    assert run.answer(at("09")) == [Read(2)]
    run.feed(Opened(1))
    acts = run.feed(Lines(1, [f"{at('09')} line 09"]))
    assert acts == [Lost(Gap(at("05"), at("09"))), Finish(1)]


def test_a_later_files_text_at_a_cut_is_not_taken_for_the_files_last_line() -> None:
    """A reader at its rotated file's end is cut; its stream had begun a line of a later
    file (a read resumed after its own was rotated is served one). That text is the next
    segment's, not the head of a line its own file ended inside."""
    run = two_segments()
    run.wait(logfiles.FILE_IDLE_SECONDS + 0.25)
    run.feed(Lines(1, [f"{at('07')} line 07"]))
    assert Shut(0) in run.wait(0.25)
    assert run.feed(Ended(0, f"{at('05')} li")) == [Finish(0)]
    assert run.m.segments[0].tail is None
