"""The one clock of a run: what the engine judges its timeouts by, what the adapters stamp
their happenings with and measure their own bounds by.

Two readings, because a run needs both: the monotonic one for every duration (a wall clock
set back by NTP must not end a phase early), the wall one where a time is compared with a
target's stamps (the kubelet stamps log lines with the node's wall clock). Production has
one ``SYSTEM``; a test gives the engine and the adapter the same one of its own, and every
time they read is the test's (the observer's threads still wait in real time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time


SYSTEM = Clock()


def clock_of(adapter: object) -> Clock:
    """The clock an adapter stamps its happenings with (``adapter.clock``; ``SYSTEM`` for a
    plugin that names none): the engine judges the adapter's stamps by the same one."""
    clock = getattr(adapter, "clock", SYSTEM)
    return clock if isinstance(clock, Clock) else SYSTEM
