"""testenv's builds as ``./run`` starts them: beside the virtualenv's install, with python3."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from testenv import build
from testenv.services import SERVICES

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_module_needs_only_the_standard_library() -> None:
    # -S: no site-packages, as a python3 with nothing installed has it. ./run starts the
    # builds that way while .venv is still being made.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import testenv.build as b; "
        "print(','.join(b.needed('all')))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe, str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().split(",") == list(build.needed("all"))


def test_all_builds_what_every_service_needs_and_not_the_bench() -> None:
    # And the trace collector, which each test that reads a trace back starts for itself.
    services = tuple(r for svc in SERVICES.values() for r in svc.needs)
    assert build.needed("all") == (*services, "otelcol")
    assert "chainsaw" not in build.needed("all")
    assert build.needed("chainsaw") == ("chainsaw",)


def test_run_stops_before_the_suite_when_the_build_beside_the_venv_fails(tmp_path: Path) -> None:
    # No go on PATH and an empty cache: the S3 server's build fails at once. The suite must
    # not start on a missing binary, and the status is the build's.
    path = [
        str(Path(found).parent)
        for tool in ("bash", "python3", "dpkg-query", "sha256sum", "sed", "cat", "id")
        if (found := shutil.which(tool)) is not None
    ]
    go = shutil.which("go")
    assert go is None or str(Path(go).parent) not in path, "go shares a directory with bash"
    env = {
        **os.environ,
        "PATH": os.pathsep.join(dict.fromkeys(path)),
        "RLARK_TESTENV_CACHE": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [str(ROOT / "run"), "acceptance", "--co", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "the 'go' command is not on PATH" in out.stderr
    assert "the test services' build failed (status 1)" in out.stderr
    assert "collected" not in out.stdout and "Traceback" not in out.stderr


# A go command that answers the version check and then builds forever (its pid written).
FAKE_GO = """#!/bin/sh
if [ "$1 $2" = "env GOVERSION" ]; then echo go1.26.0; exit 0; fi
echo $$ > "$FAKE_GO_PID"
exec sleep 120
"""


def test_a_build_stopped_by_sigterm_leaves_no_go_running_and_no_half_built_tree(
    tmp_path: Path,
) -> None:
    # What ./run does to the builds beside the virtualenv's install when the install fails.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    go = bindir / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    pid_file, cache = tmp_path / "go.pid", tmp_path / "cache"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "RLARK_TESTENV_CACHE": str(cache),
        "FAKE_GO_PID": str(pid_file),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "testenv.build", "s3"],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not pid_file.is_file() or not pid_file.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        go_pid = int(pid_file.read_text())
        assert list(cache.glob(".tmp-*")), "no build under way"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(cache.glob(".tmp-*")) == [], "the half-built tree was left in the cache"
    try:
        os.kill(go_pid, 0)
    except ProcessLookupError:
        pass  # gone, as it must be
    else:
        os.kill(go_pid, signal.SIGKILL)
        raise AssertionError("the go command went on building after the build was stopped")


def test_a_recipe_is_keyed_by_the_content_of_the_repositorys_files_it_builds(
    tmp_path: Path,
) -> None:
    # The S3 server's command is a file of this repository: an edit of it must build anew,
    # not reuse the binary the old text made.
    source = tmp_path / "main.go"
    source.write_text("package main\n")
    recipe = build.Recipe("s3gw", "v1", 1, ("versitygw",), lambda *_: None, inputs=(source,))
    before = recipe.key
    assert before.startswith("s3gw-v1-r1-") and recipe.key == before
    source.write_text("package main\n\nfunc main() {}\n")
    assert recipe.key != before
    assert build.Recipe("etcd", "v1", 1, ("etcd",), lambda *_: None).key == "etcd-v1-r1"
    assert build.RECIPES["versitygw"].inputs == (ROOT / "testenv" / "s3gw" / "main.go",)
