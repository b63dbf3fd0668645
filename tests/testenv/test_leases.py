"""The S3 server is shared by lease: real holder processes on a state dir of the test's own,
the real server of testenv, `testenv down` and `testenv status` as a user runs them.

A holder is a Python process that enters ``testenv_cli.held("s3")`` (what the ``s3_env``
fixture does) and stays in it until its stdin closes; a crash is a SIGKILL of it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from fixtures.testenv import S3Env
from testenv import build, lease, proc, s3, state
from testenv.paths import REPO_ROOT

pytestmark = pytest.mark.cluster

# Enters the lease, says so with the server's pid, and leaves when told (stdin closes); or,
# given a file, leaves when that file appears (holders that all leave at one moment). Also
# given "check": says whether the server still answers a second after the file appeared,
# then leaves when told (it must outlast a holder still starting on a busy machine).
_HOLDER = """
import os, sys, time
import testenv.__main__ as testenv_cli
from testenv import s3, state
gate = sys.argv[1] if len(sys.argv) > 1 else None
with testenv_cli.held("s3"):
    print("held", state.load().s3.pid, flush=True)
    if gate:
        while not os.path.exists(gate):
            time.sleep(0.002)
        if "check" in sys.argv:
            time.sleep(1.0)  # the others leave meanwhile: is it still up under this one?
            print("still up" if s3.ready(state.load().s3) else "stopped under me", flush=True)
            sys.stdin.readline()
    else:
        sys.stdin.readline()
print("left", flush=True)
"""


class Holder:
    """A real process holding the S3 server of ``root`` by its lease."""

    def __init__(self, root: Path, gate: Path | None = None, check: bool = False) -> None:
        args = [str(gate), *(["check"] if check else [])] if gate else []
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, *args],
            cwd=REPO_ROOT,
            env={**os.environ, "RLARK_TESTENV_STATE": str(root), "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.server = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def held(self) -> Holder:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("held "), (line, self.proc.stderr and self.proc.stderr.read())
        self.server = int(line.split()[1])
        return self

    def leave(self) -> str:
        out, err = self.proc.communicate(input="", timeout=120)
        assert self.proc.returncode == 0, err[-3000:]
        return out

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state dir of the test's own: no server of another run is seen or touched."""
    root = tmp_path / "state"
    monkeypatch.setenv("RLARK_TESTENV_STATE", str(root))
    yield root
    run_testenv(root, "down", "--force")


def run_testenv(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testenv", *args],
        cwd=REPO_ROOT,
        env={**os.environ, "RLARK_TESTENV_STATE": str(root)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def status(root: Path) -> dict[str, Any]:
    out = run_testenv(root, "status", "--json").stdout
    report: dict[str, Any] = json.loads(out)
    return report


def holder_pids(root: Path) -> list[int]:
    return sorted(h["pid"] for h in status(root)["s3"]["holders"] if not h["kept"])


def serving(pid: int) -> bool:
    return proc.alive(pid, build.RECIPES["versitygw"].bin("versitygw"))


def gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while serving(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not serving(pid)


def test_the_server_stays_up_until_the_last_holder_goes(root: Path) -> None:
    first = Holder(root).held()
    second = Holder(root).held()
    third = Holder(root).held()
    server = first.server
    assert second.server == server and third.server == server  # one server, shared
    assert holder_pids(root) == sorted([first.pid, second.pid, third.pid])

    first.leave()  # ends normally, others still hold it
    assert serving(server) and s3.ready(state.load().s3)
    second.kill()  # a crash releases its lease, stops nothing
    assert serving(server) and s3.ready(state.load().s3)
    assert holder_pids(root) == [third.pid]

    assert "left" in third.leave()  # the last one
    assert gone(server), "the last holder left the server running"
    assert state.load().s3 is None
    assert status(root)["s3"]["holders"] == []


def test_a_killed_last_holder_leaves_it_to_the_next_one(root: Path) -> None:
    killed = Holder(root).held()
    killed.kill()
    assert serving(killed.server)  # nobody was left to stop it ...
    assert holder_pids(root) == []  # ... but its lease is gone with it
    nxt = Holder(root).held()
    assert nxt.server == killed.server  # reused, not started again
    nxt.leave()
    assert gone(killed.server)


def test_down_names_the_holders_and_refuses_without_force(root: Path) -> None:
    a, b = Holder(root).held(), Holder(root).held()
    down = run_testenv(root, "down", "s3")
    assert down.returncode == 2, down.stderr
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    for line, holder in zip(lines, (a, b), strict=True):
        assert line.startswith(f"testenv: s3 still held by pid {holder.pid} (started "), line
        assert "-c" in line and "--force" in line
    assert serving(a.server)
    shown = run_testenv(root, "status").stdout
    assert f"held by pid {a.pid} " in shown and f"held by pid {b.pid} " in shown

    forced = run_testenv(root, "down", "s3", "--force")
    assert forced.returncode == 0, forced.stderr
    assert gone(a.server)
    a.leave()
    b.leave()  # the holders' end stops nothing more and fails nothing
    assert status(root)["s3"] == {"running": False, "holders": []}


def test_up_by_hand_keeps_it_after_every_holder_until_down(root: Path) -> None:
    session = Holder(root).held()  # the session started it
    up = run_testenv(root, "up", "s3")
    assert up.returncode == 0, up.stderr
    (kept,) = [h for h in status(root)["s3"]["holders"] if h["kept"]]
    assert kept["command"][-3:] == ["testenv", "up", "s3"]
    session.leave()
    assert serving(session.server)  # kept by `up`
    assert run_testenv(root, "status").returncode == 0

    down = run_testenv(root, "down", "s3")  # no run holds it: `down` is not refused
    assert down.returncode == 0, down.stderr
    assert gone(session.server)
    assert status(root)["s3"]["holders"] == []


def test_holders_ending_together_stop_it_once_and_never_under_another(
    root: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "leave-now"
    leaving = [Holder(root, gate).held() for _ in range(3)]
    staying = Holder(root, gate, check=True).held()
    server = staying.server
    gate.touch()  # three leave at one moment ...
    arriving = Holder(root).held()  # ... while a fourth takes its lease
    for holder in leaving:
        assert holder.proc.wait(timeout=120) == 0
    out = staying.leave()
    assert "still up" in out, out  # never stopped under one that still held it
    assert arriving.server == server and serving(server) and s3.ready(state.load().s3)
    arriving.leave()  # the last one
    assert gone(server), "left running after the last holder"
    assert holder_pids(root) == []
    assert not list(lease.service_dir("s3").glob("*.lease"))


def test_the_next_up_makes_a_bucket_that_is_missing(root: Path) -> None:
    assert run_testenv(root, "up", "s3").returncode == 0
    info = state.load().s3
    assert info is not None
    client = S3Env(
        info.endpoint, info.bucket, info.region, info.access_key, info.secret_key
    ).client()
    client.delete_bucket(Bucket=info.bucket)
    with pytest.raises(ClientError):
        client.head_bucket(Bucket=info.bucket)
    assert not s3.ready(info)  # a server without its bucket is not ready for the tests

    up = run_testenv(root, "up", "s3")
    assert up.returncode == 0, up.stderr
    assert state.load().s3 == info  # the same server, not another one
    client.head_bucket(Bucket=info.bucket)
    assert s3.ready(info)
