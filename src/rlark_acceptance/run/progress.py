"""Live progress while Step 6 waits, for whoever shows it (the pytest plugin, a console).

A waiting phase reports a ``Progress`` about once a second (the phase, elapsed time against
its timeout, the Pod's state, the latest Worker log line, not yet redacted); ``None`` says
the waiting is over. Listeners must be quick and must not raise: a display that fails is
dropped from that tick, never the run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.engine import Progress

Listener = Callable[["Progress | None"], None]
_LISTENERS: list[Listener] = []


def subscribe(listener: Listener) -> Callable[[], None]:
    """Add ``listener``; returns the function that removes it."""
    _LISTENERS.append(listener)

    def unsubscribe() -> None:
        with contextlib.suppress(ValueError):
            _LISTENERS.remove(listener)

    return unsubscribe


def emit(tick: Progress | None) -> None:
    for listener in list(_LISTENERS):
        with contextlib.suppress(Exception):  # a display must never break the run
            listener(tick)
