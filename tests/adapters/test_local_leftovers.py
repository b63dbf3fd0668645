"""A run's sweep of local Pods left by dead runs removes only those: a Pod scratch locked by a
live run (any checkout on this machine) stays, one whose lock is free goes, and one being
created is never judged before its creator holds the lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlark_acceptance.adapters.base import LeftoversRemoved, PodStatus
from rlark_acceptance.adapters.local.leftovers import sweep_stale
from rlark_acceptance.adapters.local.pod import LOCK_NAME, PodRun


def _pod(root: Path, run_id: str, name: str) -> PodRun:
    scratch = root / run_id / f"{name}-0"
    scratch.mkdir(parents=True)
    return PodRun(PodStatus(name, "local-node", "Running"), "ns", scratch)


def test_a_live_runs_pod_stays_and_a_dead_runs_pod_goes(tmp_path: Path) -> None:
    live = _pod(tmp_path, "261201120000-aaaaaa", "live")
    live.hold_scratch()
    dead = tmp_path / "261201110000-bbbbbb" / "dead-0"
    dead.mkdir(parents=True)
    # The dead run held its lock in a process that is gone now.
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR); "
        "fcntl.flock(fd, fcntl.LOCK_EX)"
    )
    subprocess.run([sys.executable, "-c", code, str(dead / LOCK_NAME)], check=True)

    with pytest.warns(LeftoversRemoved, match=r"removed 1 local Pod\(s\) .*dead-0"):
        removed = sweep_stale(tmp_path)

    assert removed == ["dead-0"]
    assert not (tmp_path / "261201110000-bbbbbb").exists()  # its run's folder too
    assert live.scratch is not None and (live.scratch / LOCK_NAME).is_file()
    live.remove_scratch(lambda _: False)
    assert not live.scratch.exists()


def test_a_pod_being_created_is_not_judged_before_its_lock_is_held(tmp_path: Path) -> None:
    pod = _pod(tmp_path, "261201120000-cccccc", "new")
    assert pod.scratch is not None
    # The moment between creating the lock file and holding it: a lock file under the
    # creator's own name only, which the sweep does not read as a free lock.
    (pod.scratch / f"{LOCK_NAME}.{os.getpid()}").touch()
    assert sweep_stale(tmp_path) == []
    assert pod.scratch.is_dir()
    pod.hold_scratch()
    assert sorted(p.name for p in pod.scratch.iterdir()) == [LOCK_NAME]
    assert sweep_stale(tmp_path) == []
