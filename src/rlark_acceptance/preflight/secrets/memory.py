"""The values detected so far in this process, so that every later redaction removes them.

A secret found in the Job's prepare script (``echo apikey X``) reaches the Worker log as the
bare ``X``, with nothing around it that a rule would recognise; remembering what the scans
found lets the one redaction remove it there too. Only values, never where they came from.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

# Shorter values would blank ordinary words of a log; scans still redact them where found.
MIN_LENGTH = 4
# A bound on memory for long-lived processes; past it the oldest half is forgotten.
_LIMIT = 4096

_lock = threading.Lock()
_seen: dict[str, None] = {}  # insertion-ordered set


def remember(values: Iterable[str]) -> None:
    fresh = [v for v in values if len(v) >= MIN_LENGTH and v not in _seen]
    if not fresh:
        return
    with _lock:
        for v in fresh:
            _seen[v] = None
        if len(_seen) > _LIMIT:
            for v in list(_seen)[: _LIMIT // 2]:
                del _seen[v]


def remembered() -> list[str]:
    with _lock:
        return list(_seen)


def forget() -> None:
    """For tests: start from a clean memory."""
    with _lock:
        _seen.clear()
