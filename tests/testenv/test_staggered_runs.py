"""Staggered runs on one machine share the S3 server: one ending never stops it under
another that is still in Step 6.

A short pytest session that only takes ``s3_env`` starts first (so it is the one that
starts the server), then ``pytest features/`` of the default profile's own Step 6
scenarios; once the features run is in Step 6 (its Worker writes to the bucket through its
s3fs mount), the short session ends. The features run must pass, and the server must stop
only once both have ended. Both run on a state dir of the test's own, so no server of
another run on the machine is running before, seen or touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from testenv import build, proc
from testenv.paths import REPO_ROOT
from tests.run.suite_runs import (
    STEP6_ONLY,
    Site,
    _read,
    features_command,
    output_until,
    site_copy,
)
from tests.run.test_red_runs import assert_rendered_red, junit_failure

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

_SHORT = """
import os
import signal
import time


def test_uses_the_s3_server_until_told(s3_env):
    print("short session holds the S3 server", flush=True)
    while not os.path.exists(os.environ["RLARK_STAGGER_GATE"]):
        time.sleep(0.01)
"""


def _env(state: Path, gate: Path | None = None) -> dict[str, str]:
    # No AWS_* of the outer session: the features run must use this state dir's server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    for var in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "RLARK_TESTENV_KEEP"):
        env.pop(var, None)
    if gate is not None:
        env["RLARK_STAGGER_GATE"] = str(gate)
    return env | {"RLARK_TESTENV_STATE": str(state), "PYTHONUNBUFFERED": "1"}


def _features(site: Site, reports: Path, state: Path) -> subprocess.Popen[bytes]:
    """``pytest features/`` on the copy's own Step 6 scenarios, on ``state``'s services."""
    return subprocess.Popen(
        features_command(site.profile, reports, ["-v", "-m", STEP6_ONLY]),
        cwd=REPO_ROOT,
        env=_env(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _server(state: Path) -> int:
    pid: int = json.loads((state / "state.json").read_text(encoding="utf-8"))["s3"]["pid"]
    return pid


def _serving(pid: int) -> bool:
    return proc.alive(pid, build.RECIPES["versitygw"].bin("versitygw"))


def _end(state: Path, *runs: subprocess.Popen[bytes] | None) -> None:
    """What a test leaves: its runs killed if still there, its state dir's services down."""
    for p in runs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(timeout=30)
    subprocess.run(
        [sys.executable, "-m", "testenv", "down", "--force"],
        cwd=REPO_ROOT,
        env={**os.environ, "RLARK_TESTENV_STATE": str(state)},
        capture_output=True,
        timeout=180,
        check=False,
    )


def _holders(state: Path) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-m", "testenv", "status", "--json"],
        cwd=REPO_ROOT,
        env={**os.environ, "RLARK_TESTENV_STATE": str(state)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    return sorted(h["pid"] for h in json.loads(out)["s3"]["holders"])


def test_a_session_ending_first_leaves_the_s3_server_to_the_run_in_step_6(
    tmp_path: Path,
) -> None:
    state, gate = tmp_path / "state", tmp_path / "short-session-may-end"
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "test_short.py").write_text(_SHORT, encoding="utf-8")
    env = _env(state, gate)
    assert not (state / "state.json").exists()  # no server before either run
    site = site_copy(tmp_path)
    reports = tmp_path / "reports"
    deadline = time.monotonic() + 600

    short = subprocess.Popen(
        [
            *(sys.executable, "-m", "pytest", str(tmp_path / "short"), "-s", "-q"),
            *("-p", "no:cacheprovider", "-p", "fixtures.testenv"),
            *("--rootdir", str(tmp_path / "short")),
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    run: subprocess.Popen[bytes] | None = None
    try:
        output_until(short, "short session holds the S3 server", deadline)
        server = _server(state)
        assert _serving(server)

        run = _features(site, reports, state)
        seen = output_until(run, "Step 6 waits for 6.", deadline)
        # Its output read on meanwhile: a full pipe would stall its Step 6.
        out = run.stdout
        assert out is not None
        rest: list[bytes] = []
        drain = threading.Thread(target=lambda: rest.append(out.read()))
        drain.start()
        assert _holders(state) == sorted([short.pid, run.pid])

        gate.touch()  # the short session ends while the other's Worker runs
        short_out = short.communicate(timeout=120)[0].decode(errors="replace")
        assert short.returncode == 0, short_out[-3000:]
        assert run.poll() is None, "the features run ended first: the runs were not staggered"
        assert _serving(server), "the first session to end stopped the server under the other"
        assert _holders(state) == [run.pid]

        run.wait(timeout=max(1.0, deadline - time.monotonic()))
        drain.join(timeout=30)
        output = (seen + b"".join(rest)).decode(errors="replace")
        assert run.returncode == 0, output[-4000:]
        summary = json.loads((reports / "run-summary.json").read_text(encoding="utf-8"))
        assert summary["verdict"] == "passed" and summary["earliestFailure"] is None, summary

        # The last holder gone: stopped, and nothing of it recorded.
        for _ in range(300):
            if not _serving(server):
                break
            time.sleep(0.1)
        assert not _serving(server), "the server outlived both runs"
        assert not (state / "state.json").exists()  # nothing of it recorded
        assert _holders(state) == []
    finally:
        gate.touch()
        _end(state, short, run)


def _s3fs_mounts_under(root: Path) -> list[str]:
    with open("/proc/self/mounts", encoding="utf-8") as f:
        return [line for line in f if " fuse.s3fs " in line and str(root) in line]


def test_the_s3_server_killed_by_hand_in_6_4_is_named_as_the_store(tmp_path: Path) -> None:
    """The embedded default's S3 server, SIGKILLed while the Worker runs and 6.4 waits for
    its first step (as whoever shares the machine might stop it): the run is red naming the
    store that stopped answering, with the store's remedy, not the RLinf config or where
    RLinf writes; and its mounts are gone after it."""
    state = tmp_path / "state"
    site = site_copy(tmp_path)
    reports = tmp_path / "reports"
    t0 = time.monotonic()
    deadline = t0 + 600
    run = _features(site, reports, state)
    try:
        seen = output_until(run, "Step 6 waits for 6.4", deadline)
        os.kill(_server(state), signal.SIGKILL)
        rest = run.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
        output = (seen + rest).decode(errors="replace")
        assert run.returncode == 1, output[-4000:]
        record = _read(run.returncode, output, reports, time.monotonic() - t0)
        summary = record.summary
        first = summary["earliestFailure"]
        assert summary["verdict"] == "failed" and first is not None, summary
        print(f"S3 server killed in 6.4: {first['check']}: {first['message'][:300]}")
        # 6.4 if the Worker hangs on its mount before its first step, 6.5 if that step was
        # printed (the smoke writes to the mount only at its checkpoint) and the listing of
        # the checkpoint found no store: either way the store is the cause, in its words.
        assert first["check"] in ("6.4", "6.5"), first
        assert "does not answer [mount-io-error]" in first["message"], first["message"]
        assert first["hint"].startswith("The mount's store stopped answering"), first
        assert "The mount's store stopped answering" in output, output[-4000:]
        # As CI reads junit.xml, and as a reader opens the rendered report.
        failure = junit_failure(record, first["check"])
        assert "The mount's store stopped answering" in failure, failure
        assert_rendered_red(record, first["check"])
        assert _s3fs_mounts_under(tmp_path) == []
    finally:
        _end(state, run)
