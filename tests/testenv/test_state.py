"""testenv's record is typed: what `up` writes reads back as it was, a file that is not one
is a one-line error naming it (never an empty record), and `down` still stops what runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testenv import build, proc, state
from testenv.paths import REPO_ROOT
from testenv.recover import Process, recover
from testenv.state import (
    ClusterState,
    NodeState,
    PlatformState,
    S3State,
    State,
    StateCorrupt,
    from_json,
)

TESTENV = str(REPO_ROOT / "testenv" / "testenv")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLARK_TESTENV_STATE", str(tmp_path))
    return tmp_path


def test_the_record_reads_back_as_written_and_owner_only(root: Path) -> None:
    st = State(
        s3=S3State("http://127.0.0.1:1", 1, "b", "r", "AK", "SK", "/d", "/l", 42),
        cluster=ClusterState("/k", "ns", {"etcd": 2}, {"etcd": 3}, "/h", True),
        node=NodeState(netns="n", pids={"kubelet": 5}, sysctls={"a": "1"}, worker_key="w"),
        platform=PlatformState(7),
    )
    state.save(st)
    assert state.load() == st
    assert (root / "state.json").stat().st_mode & 0o777 == 0o600
    assert "SK" not in repr(st)  # the record's repr never shows the key pair
    state.save(State())
    assert state.load() == State() and json.loads((root / "state.json").read_text()) == {}


def test_no_record_is_an_empty_one(root: Path) -> None:
    assert state.load() == State()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"s3": {"pid": 4', "Expecting"),  # cut short
        ('{"s3": {"pid": "4"}}', "s3.pid is not int"),
        ('{"node": {"pids": {"kubelet": true}}}', "node.pids is not dict"),
        ('{"s3": {"pid": 4}, "minio": {}}', "unknown field minio"),
        ("[]", "the record is not an object"),
    ],
)
def test_a_record_that_is_not_one_is_one_line_naming_the_file(
    root: Path, text: str, why: str
) -> None:
    (root / "state.json").write_text(text)
    with pytest.raises(StateCorrupt) as e:
        state.load()
    message = str(e.value)
    assert message.startswith(f"{root / 'state.json'}: not testenv's record (")
    assert why in message and "\n" not in message


def test_recover_finds_only_this_checkouts_processes(root: Path) -> None:
    kubelet = str(build.RECIPES["kubelet"].bin("kubelet"))
    gw = str(build.RECIPES["versitygw"].bin("versitygw"))
    other = "/elsewhere/.testenv"
    found = recover(
        [
            Process(11, (gw, "--port", "127.0.0.1:1", "posix", f"{root}/s3/data"), None),
            Process(12, (gw, "--port", "127.0.0.1:2", "posix", f"{other}/s3/data"), None),
            Process(13, (kubelet, f"--root-dir={root}/node/kubelet"), None),
            Process(14, ("python", "-m", "testenv.forward", "10.0.0.1"), str(root)),
            # The same checkout's modules for another state dir, or for none, are not ours.
            Process(15, ("python", "-m", "testenv.forward", "10.0.0.5"), other),
            Process(16, ("python", "-m", "testenv.rlark_platform", "k"), None),
            Process(17, ("python", "-m", "testenv.rlark_platform", "k"), str(root)),
        ]
    )
    assert found.s3 == S3State(pid=11)
    assert found.node is not None and found.node.pids == {"kubelet": 13, "forward": 14}
    assert found.platform == PlatformState(17)


def run_testenv(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RLARK_TESTENV_STATE": str(root)}
    return subprocess.run(
        [TESTENV, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.cluster
def test_down_stops_the_s3_server_of_a_corrupt_record(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A user's view: `up s3`, the record is damaged, `status` says so in one line, and
    `down` still stops the server (found by its arguments) and clears the state, and
    nothing of another state dir of the same checkout."""
    other = tmp_path_factory.mktemp("other-state")
    assert run_testenv(other, "up", "s3").returncode == 0
    theirs = from_json(json.loads((other / "state.json").read_text())).s3
    assert theirs is not None
    try:
        _down_with_a_corrupt_record(root)
        assert proc.alive(theirs.pid, build.RECIPES["versitygw"].bin("versitygw"))
    finally:
        run_testenv(other, "down")


def _down_with_a_corrupt_record(root: Path) -> None:
    up = run_testenv(root, "up", "s3")
    assert up.returncode == 0, up.stderr
    pid = state.load().s3.pid  # type: ignore[union-attr]
    exe = build.RECIPES["versitygw"].bin("versitygw")
    assert proc.alive(pid, exe)
    (root / "state.json").write_text('{"s3": {"endpoint": ')
    try:
        status = run_testenv(root, "status")
        assert status.returncode == 1
        assert status.stderr.strip().splitlines() == [
            f"testenv: error: {root / 'state.json'}: not testenv's record (Expecting value: "
            "line 1 column 21 (char 20)); `testenv down` stops what it finds by pid files "
            "and process arguments"
        ]
        down = run_testenv(root, "down")
        assert down.returncode == 0, down.stderr
        assert f"warning: {root / 'state.json'}: not testenv's record" in down.stderr
        assert not proc.alive(pid, exe)
        assert not (root / "state.json").exists()
    finally:
        proc.stop(pid, exe)


def test_status_to_a_reader_that_went_away_ends_without_a_traceback(root: Path) -> None:
    """``testenv status | head -3``: the rest of its lines have no reader."""
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [TESTENV, "status"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "RLARK_TESTENV_STATE": str(root)},
        )
    finally:
        os.close(w)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
