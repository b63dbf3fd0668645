"""This machine's processes by what their environment carries: how a test finds a Worker's
processes (the local target marks each Pod's; a test's site can mark its own) and proves
that none outlived what should have removed them."""

from __future__ import annotations

import os
from pathlib import Path


def pids_with_environ(entry: str) -> list[int]:
    """Processes (this one aside) whose environment holds ``entry`` (``NAME=value``)."""
    needle = entry.encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if needle in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
            except OSError:  # ended while read, or not ours to read
                continue
    return found
