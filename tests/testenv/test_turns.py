"""Turns at a shared service across processes (testenv/turns.py): a sole user waits for the
current users and keeps new ones waiting; users share."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Holds a turn, writing "<name> in" when it has it and "<name> out" when it gives it up.
HOLD = """
import sys, time
from pathlib import Path
from testenv import turns
kind, name, log, release = sys.argv[1:5]
with getattr(turns, kind)("cluster"):
    with open(log, "a") as fh: fh.write(f"{name} in\\n")
    while not Path(release).exists(): time.sleep(0.02)
    with open(log, "a") as fh: fh.write(f"{name} out\\n")
"""


def holder(tmp_path: Path, kind: str, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RLARK_TESTENV_STATE": str(tmp_path / "state"), "PYTHONPATH": str(REPO)}
    args = [kind, name, str(tmp_path / "log"), str(tmp_path / f"release-{name}")]
    return subprocess.Popen([sys.executable, "-c", HOLD, *args], env=env, cwd=REPO)


def lines(tmp_path: Path) -> list[str]:
    log = tmp_path / "log"
    return log.read_text().splitlines() if log.exists() else []


def turnstile_held(tmp_path: Path) -> bool:
    path = tmp_path / "state" / "leases" / "cluster" / ".turnstile"
    if not path.exists():
        return False
    with path.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def wait_for(tmp_path: Path, line: str) -> None:
    deadline = time.monotonic() + 30
    while line not in lines(tmp_path):
        assert time.monotonic() < deadline, (line, lines(tmp_path))
        time.sleep(0.02)


def test_users_share_a_sole_user_waits_for_them_and_new_users_wait_for_it(
    tmp_path: Path,
) -> None:
    procs = [holder(tmp_path, "shared", "a"), holder(tmp_path, "shared", "b")]
    try:
        wait_for(tmp_path, "a in")
        wait_for(tmp_path, "b in")  # both at once
        procs.append(holder(tmp_path, "sole", "s"))
        deadline = time.monotonic() + 30
        while not turnstile_held(tmp_path):  # s waits, holding the turnstile
            assert time.monotonic() < deadline, "the sole user never came to wait"
            time.sleep(0.02)
        procs.append(holder(tmp_path, "shared", "c"))  # comes after the sole user
        time.sleep(1.0)
        assert sorted(lines(tmp_path)) == ["a in", "b in"], lines(tmp_path)  # s waits, c too
        (tmp_path / "release-a").touch()
        wait_for(tmp_path, "a out")
        time.sleep(0.5)
        assert "s in" not in lines(tmp_path)  # b still uses it
        (tmp_path / "release-b").touch()
        wait_for(tmp_path, "s in")
        time.sleep(0.5)
        assert "c in" not in lines(tmp_path)  # not beside the sole user
        (tmp_path / "release-s").touch()
        wait_for(tmp_path, "c in")
        (tmp_path / "release-c").touch()
        for p in procs:
            assert p.wait(timeout=30) == 0
        seen = lines(tmp_path)
        assert sorted(seen[:2]) == ["a in", "b in"], seen  # a and b together, in either order
        assert seen[2:] == ["a out", "b out", "s in", "s out", "c in", "c out"], seen
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def test_a_sole_user_killed_gives_its_turn_back(tmp_path: Path) -> None:
    sole = holder(tmp_path, "sole", "s")
    try:
        wait_for(tmp_path, "s in")
        sole.kill()  # SIGKILL: no clean-up of its own runs
        sole.wait(timeout=30)
        after = holder(tmp_path, "shared", "a")
        wait_for(tmp_path, "a in")
        (tmp_path / "release-a").touch()
        assert after.wait(timeout=30) == 0
    finally:
        if sole.poll() is None:
            sole.kill()
