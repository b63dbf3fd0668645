"""Atomic file writes: a reader never sees a half-written checkpoint file as complete."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from safetensors.numpy import save as safetensors_bytes


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write to a temporary file in the same directory, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            # mkstemp makes 0600 files; checkpoints are read by other users of the volume.
            # Best effort: some FUSE mounts (s3fs without metadata) refuse chmod.
            with contextlib.suppress(OSError):
                os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX within one filesystem
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_safetensors(
    path: Path, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str]
) -> Path:
    contiguous = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    return write_bytes_atomic(path, safetensors_bytes(contiguous, metadata=dict(metadata)))
