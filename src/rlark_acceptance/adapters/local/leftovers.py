"""What a run that died without cleaning up (SIGKILL) left of its local Pods, and removing it.

Every Pod's scratch is locked by the adapter process that created it; a scratch whose lock
is free belongs to a dead run. Its processes may still run (``unshare`` outlives a killed
parent), so they are found by the Pod marker in their environment and killed first, which
takes the Pod's PID namespace and its mounts with them; then the scratch is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import warnings
from pathlib import Path

from rlark_acceptance.adapters.base import LeftoversRemoved
from rlark_acceptance.adapters.local.pod import LOCK_NAME, remove_scratch, scratch_is_orphaned

# Set in every process of a local Pod: how tests (and humans) find what a Pod left behind.
POD_MARKER_ENV = "RLARK_LOCAL_POD_UID"


def mounted_below(path: Path) -> bool:
    """Whether this process's mount namespace has a mount inside ``path``."""
    prefix = str(path.resolve()).rstrip("/") + "/"
    with open("/proc/self/mountinfo") as fh:
        return any(line.split()[4].startswith(prefix) for line in fh)


def _pod_processes(uid: str) -> list[int]:
    """Processes that carry the Pod marker of Job ``uid`` (unshare, the init, the Worker)."""
    needle = f"{POD_MARKER_ENV}={uid}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _kill_pod(scratch: Path) -> int:
    """SIGKILL what still runs of a dead run's Pod; returns how many processes there were."""
    try:
        uid = json.loads((scratch / "spec.json").read_text())["env"][POD_MARKER_ENV]
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # the Pod never started: nothing runs
    if not uid:
        return 0
    pids = _pod_processes(uid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10.0
    while _pod_processes(uid) and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel reaps a killed PID namespace asynchronously
    return len(pids)


def _pod_scratches(scratch_root: Path) -> list[Path]:
    """Every Pod scratch under the root: in a run's folder (``<run id>/<pod>-…``), or
    directly under the root as runs without an id left them."""
    found = []
    for entry in scratch_root.iterdir():
        if not entry.is_dir():
            continue
        if (entry / LOCK_NAME).exists():
            found.append(entry)
        else:
            found.extend(p for p in entry.iterdir() if p.is_dir() and (p / LOCK_NAME).exists())
    return found


def sweep_stale(scratch_root: Path) -> list[str]:
    """Remove the Pods of dead runs under ``scratch_root``; says so with a
    ``LeftoversRemoved`` warning, and returns what it removed."""
    removed: list[str] = []
    if not scratch_root.is_dir():
        return removed
    for scratch in _pod_scratches(scratch_root):
        if scratch_is_orphaned(scratch):
            killed = _kill_pod(scratch)
            with contextlib.suppress(RuntimeError, OSError):
                remove_scratch(scratch, mounted_below)
                removed.append(f"{scratch.name} ({killed} processes)" if killed else scratch.name)
            if scratch.parent != scratch_root:
                with contextlib.suppress(OSError):
                    scratch.parent.rmdir()  # the run's folder, once its last Pod is gone
    if removed:
        warnings.warn(
            LeftoversRemoved(
                f"removed {len(removed)} local Pod(s) left by a run that died without "
                f"cleaning up, under {scratch_root}: {', '.join(removed)}"
            ),
            stacklevel=2,
        )
    return removed
