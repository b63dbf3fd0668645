"""Ctrl-C reported as an interrupt wherever it lands (``fixtures/interrupts.py``)."""

from __future__ import annotations

import sys
import types

import pytest

from fixtures.interrupts import pytest_keyboard_interrupt


def _frame_and_unnumbered_offset() -> tuple[types.FrameType, int]:
    """A frame, and an instruction of its code that has no line number (an exception
    handler's own instructions have none)."""

    def body() -> types.FrameType:
        try:
            raise KeyError
        except KeyError:
            pass
        return sys._getframe()

    frame = body()
    offsets = [start for start, _, line in frame.f_code.co_lines() if line is None]
    assert offsets, "no instruction without a line number to land on"
    return frame, offsets[0]


def _interrupted_there() -> pytest.ExceptionInfo[BaseException]:
    """A KeyboardInterrupt whose traceback goes on to such an instruction."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        excinfo = pytest.ExceptionInfo.from_current()
    frame, offset = _frame_and_unnumbered_offset()
    landed = types.TracebackType(None, frame, offset, -1)
    assert landed.tb_lineno is None
    excinfo.tb.tb_next = landed
    return excinfo


def test_an_interrupt_landing_on_an_instruction_without_a_line_is_reported() -> None:
    """CPython gives the traceback entry of such an instruction no line number, and pytest's
    report of the interrupt then failed with a TypeError (seen once in CI: the interrupted
    run exited 1 with pytest's traceback, not 2)."""
    with pytest.raises(TypeError):
        _interrupted_there().getrepr(funcargs=True)
    excinfo = _interrupted_there()
    pytest_keyboard_interrupt(excinfo)  # before pytest's own report, as it runs
    report = str(excinfo.getrepr(funcargs=True))
    assert "KeyboardInterrupt" in report
