"""Removing what adapters submitted when the run ends or is interrupted.

Every adapter registers itself while it may have something submitted. At exit, and on
SIGINT / SIGTERM, every registered adapter is closed; the signal then goes on to the handler
that was there before (Python's KeyboardInterrupt, pytest's), or kills the process as it
would have without us.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from types import FrameType
from typing import Any, Protocol


class _Closable(Protocol):
    def close(self) -> None: ...


# Strong references: an adapter dropped without close() must still be cleaned up at exit.
_LIVE: set[_Closable] = set()
_PREVIOUS: dict[int, Any] = {}
_closing = threading.Lock()


def register(adapter: _Closable, *, signals: bool = True) -> None:
    _LIVE.add(adapter)
    if signals:
        _install_handlers()


def unregister(adapter: _Closable) -> None:
    _LIVE.discard(adapter)


def close_all() -> None:
    """Close every registered adapter (idempotent)."""
    if not _closing.acquire(blocking=False):
        return  # a second signal while closing: let the first cleanup finish
    try:
        for adapter in list(_LIVE):
            with contextlib.suppress(Exception):
                adapter.close()
    finally:
        _closing.release()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    close_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        previous(signum, frame)  # e.g. Python's SIGINT handler: KeyboardInterrupt
    elif previous in (signal.SIG_DFL, None):
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal, as without this handler


def _install_handlers() -> None:
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


atexit.register(close_all)
