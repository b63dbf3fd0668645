"""Turns at a shared test service: a test that stops part of it takes it alone.

Tests in several processes (pytest-xdist's workers, or two sessions of one checkout) share
one cluster. Most only use it, and can use it together. A few stop part of it on purpose:
the API server killed for an outage, the real node's kubelet killed, the node brought
down. A test using the cluster beside one of those would fail for a reason that is not its
own, so such a test waits for every current user to finish, and the others wait for it.

Two ``flock`` files per service make a readers-writer lock with no starvation of the
writer: a user passes through the turnstile (exclusive, held for an instant) and then
holds the use lock shared; a sole user holds the turnstile while it waits for the use lock
exclusively, so no new user starts while it waits. The kernel drops both locks when a
process ends, however it ends.

    with turns.shared("cluster"):   # a test that uses the cluster
        ...
    with turns.sole("cluster"):     # a test that kills the API server
        ...
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testenv.paths import state_root


def _lock_file(service: str, name: str) -> Path:
    # Beside the leases, kept out of `down`'s clean-up like them: a lock must stay one file.
    path = state_root() / "leases" / service / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def shared(service: str) -> Iterator[None]:
    """Use ``service`` beside other users, never beside a sole user."""
    with _flock(_lock_file(service, ".turnstile"), fcntl.LOCK_EX):
        use = _lock_file(service, ".use").open("a")
        try:
            fcntl.flock(use, fcntl.LOCK_SH)
        except BaseException:  # interrupted while waiting: no lock held, the file closed
            use.close()
            raise
    try:
        yield
    finally:
        fcntl.flock(use, fcntl.LOCK_UN)
        use.close()


@contextmanager
def sole(service: str) -> Iterator[None]:
    """Use ``service`` alone: wait for its current users, keep new ones waiting."""
    with (
        _flock(_lock_file(service, ".turnstile"), fcntl.LOCK_EX),
        _flock(_lock_file(service, ".use"), fcntl.LOCK_EX),
    ):
        yield
