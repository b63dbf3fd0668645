"""Removing what adapters submitted when the run ends or is interrupted.

Every adapter registers itself while it may have something submitted. At exit, and on
SIGINT / SIGTERM, every registered adapter is closed; then the signal ends the run:

- a handler that was there before (Python's KeyboardInterrupt for SIGINT, a program's own)
  is called;
- SIGINT that was ignored (a run started in the background by a shell) raises
  KeyboardInterrupt all the same: once the Worker is gone, the run cannot go on;
- SIGTERM with its default action kills the process by the signal, as it would have without
  us, unless ``terminate_as_interrupt()`` was called (the acceptance suite does): then it
  raises KeyboardInterrupt, so ``finally`` blocks and pytest's own interrupt handling run.

A signal that arrives while the cleanup runs is ignored: it must not cut the cleanup short.
So is one after a signal has ended the run by KeyboardInterrupt (Ctrl-C pressed twice): the
run is then removing what it submitted and writing its record, which a second
KeyboardInterrupt would cut off, leaving no record or half of one. It is said, on stderr.
And once a signal has reached the process, one in the last moments of its exit is ignored:
Python puts the default handlers back after the ``atexit`` functions, so a second Ctrl-C
landing then killed a run that had written its ``interrupted`` record, and its exit status
was 130 instead of 2 (seen in CI under load, reproduced by a signal sent from a finalizer).

This module owns the process's SIGINT / SIGTERM handler: a part of the program that stops
otherwise while it runs (a release stops its profiles' sessions, the in-cluster launch
stops following its runner) says so with ``interrupts(on_signal)`` instead of a handler of
its own, so there is one handler and one place that decides what a signal does.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import warnings
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Protocol


class _Closable(Protocol):
    def close(self) -> None: ...


# Strong references: an adapter dropped without close() must still be cleaned up at exit.
_LIVE: set[_Closable] = set()
_PREVIOUS: dict[int, Any] = {}
_closing = threading.Lock()
_term_interrupts = False
# What could not be removed, in this process: warnings of the run's record.
_FAILURES: list[str] = []
# The ``interrupts`` scopes now open, innermost last: the signal is theirs while one is.
_SCOPES: list[Callable[[int], None]] = []
# A signal has ended the run by KeyboardInterrupt: it is writing its record.
_ended_by: list[str] = []
# A signal has reached this process's handler (whoever took it).
_signalled: list[int] = []


def register(adapter: _Closable, *, signals: bool = True) -> None:
    _LIVE.add(adapter)
    if signals:
        install_handlers()


def unregister(adapter: _Closable) -> None:
    _LIVE.discard(adapter)


def note_failure(text: str) -> None:
    """A clean-up that failed (what is left, and why): warned, and kept for the record."""
    from rlark_acceptance.adapters.base import CleanupFailed

    if text not in _FAILURES:
        _FAILURES.append(text)
        warnings.warn(CleanupFailed(text), stacklevel=2)


def failures() -> list[str]:
    """The clean-up failures noted so far in this process."""
    return list(_FAILURES)


def terminate_as_interrupt() -> None:
    """Make SIGTERM end the process as SIGINT does, after the cleanup (KeyboardInterrupt)."""
    global _term_interrupts
    _term_interrupts = True
    install_handlers()


def close_all() -> bool:
    """Close every registered adapter (idempotent); False if a cleanup is already running."""
    if not _closing.acquire(blocking=False):
        return False
    try:
        for adapter in list(_LIVE):
            with contextlib.suppress(Exception):  # close() never raises; if one does, go on
                adapter.close()
    finally:
        _closing.release()
    return True


@contextlib.contextmanager
def interrupts(on_signal: Callable[[int], None]) -> Iterator[None]:
    """While inside, SIGINT / SIGTERM call ``on_signal(signum)`` (which may raise) instead
    of closing every adapter and ending the run. Only from the main thread, where Python
    runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("signals are taken by the main thread only")
    install_handlers()
    _SCOPES.append(on_signal)
    try:
        yield
    finally:
        _SCOPES.remove(on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _signalled.append(signum)
    if _SCOPES:
        _SCOPES[-1](signum)
        return
    if _ended_by:
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):  # no stderr left to say it on
            os.write(
                2,
                f"rlark-acceptance: {name} again: the run interrupted by {_ended_by[0]} is "
                "removing what it submitted and writing its record; it ends once they are "
                "done\n".encode(),
            )
        return
    if not close_all():
        return  # a second signal while closing: let the first cleanup finish
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        if previous is signal.default_int_handler:  # it raises KeyboardInterrupt
            _ended_by.append(signal.Signals(signum).name)
        previous(signum, frame)  # e.g. Python's SIGINT handler: KeyboardInterrupt
    elif signum == signal.SIGINT or previous == signal.SIG_IGN or _term_interrupts:
        _ended_by.append(signal.Signals(signum).name)
        raise KeyboardInterrupt
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal, as without this handler


def install_handlers() -> None:
    """Install the SIGINT / SIGTERM handlers (once, and only from the main thread)."""
    if _PREVIOUS or threading.current_thread() is not threading.main_thread():
        return  # installed already, or not allowed here: atexit and close() still apply
    for sig in (signal.SIGINT, signal.SIGTERM):
        _PREVIOUS[sig] = signal.getsignal(sig)
        signal.signal(sig, _on_signal)


def spawn(name: str, fn: Any) -> threading.Thread:
    """A daemon thread that never takes SIGINT / SIGTERM: the kernel then delivers them to
    the main thread, the only one where Python runs handlers. Taken by a thread blocked in
    a read, a signal would leave a main thread in ``time.sleep`` asleep, and the cleanup
    waiting for it."""

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        fn()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def _quiet_exit() -> None:
    """An interrupted process that has done its clean-up ignores further signals while the
    interpreter exits (the module's docstring says why)."""
    if not _signalled or threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_IGN)


# atexit calls the last registered first: the clean-up, then the quiet exit.
atexit.register(_quiet_exit)
atexit.register(close_all)
