"""Ctrl-C while the S3 test server is starting leaves no server behind.

A pytest session of its own, with its own testenv state directory, asks for ``s3_env``; the
SIGINT is sent as soon as the server process exists (versitygw serves its data), while the
fixture still waits for it to answer. After pytest exits, the recorded process is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

_TEST = """
def test_needs_s3(s3_env):
    assert s3_env.endpoint
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].splitlines()[0].lower()
    except (OSError, IndexError):
        return "zombie"


def _pids_of(binary: str, data: Path) -> list[int]:
    """versitygw processes serving ``data`` (this test's own, never another session's)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(binary.encode()) and str(data).encode() in argv:
            out.append(int(proc.name))
    return out


def test_sigint_while_the_s3_server_starts_stops_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    (tmp_path / "test_s3.py").write_text(_TEST, encoding="utf-8")
    env = dict(os.environ, RLARK_TESTENV_STATE=str(state), PYTHONUNBUFFERED="1")
    env.pop("RLARK_TESTENV_KEEP", None)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", str(tmp_path / "test_s3.py")),
            *("-p", "no:cacheprovider", "-p", "fixtures.testenv", "--rootdir", str(tmp_path)),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    # The process itself, not its log file: the log is opened before the fork, and on a
    # busy machine the child may not yet have exec'd versitygw when the file appears.
    deadline = time.monotonic() + 120
    while not (started := _pids_of("versitygw", state / "s3" / "data")):
        assert proc.poll() is None, "pytest ended before the server started"
        assert time.monotonic() < deadline, "the S3 server never started"
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=120)[0].decode(errors="replace")

    assert proc.returncode == 2, output[-3000:]  # interrupted
    for pid in started:
        for _ in range(50):
            if not _alive(pid):
                break
            time.sleep(0.1)
        assert not _alive(pid), f"versitygw {pid} outlived the interrupted session"
    recorded = state / "state.json"
    if recorded.is_file():
        assert "s3" not in json.loads(recorded.read_text(encoding="utf-8")), "still recorded"
