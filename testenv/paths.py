"""Where the test environment keeps its binaries (cache) and its running state."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The repository root: this file lives in <root>/testenv/.
REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """Built binaries, shared by every checkout on this machine and keyed by version."""
    override = os.environ.get("RLARK_TESTENV_CACHE")
    if override:
        return Path(override).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlark-acceptance" / "testenv"


def state_root() -> Path:
    """Pids, logs, env file and data of the running set; one per checkout (gitignored)."""
    override = os.environ.get("RLARK_TESTENV_STATE")
    if override:
        return Path(override).resolve()
    return REPO_ROOT / ".testenv"


@contextmanager
def dir_lock(root: Path) -> Iterator[None]:
    """An exclusive lock on ``root`` (a ``.lock`` file in it), held for the block."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
