"""What a Job becomes on RLark (``model.worker``), on the repository's real Job YAML, and the
one entry script both targets run, run here by bash."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from rlark_acceptance.model.job import Job, read_job
from rlark_acceptance.model.worker import (
    WorkerMount,
    WorkerRefused,
    entry_script,
    head_role,
    ray_head,
    worker_of,
)

REPO = Path(__file__).resolve().parents[2]
JOBS = sorted((REPO / "profiles").glob("*/job.yaml"))
LOCAL_JOB = REPO / "profiles" / "local" / "job.yaml"


def job(path: Path = LOCAL_JOB) -> Job:
    return read_job(str(path))


def test_every_profile_job_becomes_one_worker_for_its_head_role() -> None:
    assert len(JOBS) >= 4  # local, kubernetes, and both real-RLinf profiles
    for path in JOBS:
        j = job(path)
        w = worker_of(j, namespace="elsewhere")
        role = head_role(j)
        assert role is not None and role.name == j.head_role == w.role, path
        assert w.pod == f"{j.name}-{role.name}-0"
        assert w.namespace == j.namespace  # the Job's own namespace wins
        assert (w.image, w.gpus, w.cluster) == (role.image, role.gpus, role.cluster)
        assert dict(w.node_selector) == role.node_selector
        assert dict(w.env) == {e.name: e.value for e in role.env}
        assert (w.prepare_script, w.run_script) == (role.prepare_script, j.run_script)
        assert w.labels == {"rlark.io/job-name": j.name, "rlark.io/role": role.name}


def test_the_local_jobs_mounts_relative_host_paths_from_the_job_folder() -> None:
    w = worker_of(job(), "rlinf-acceptance")
    base = LOCAL_JOB.parent
    assert w.mounts(host_base=base) == [
        WorkerMount("ckpt", "objectStorage", "/mnt/ckpt", False, bucket="rlinf-ckpt",
                    prefix="acceptance/smoke"),
        WorkerMount("data", "hostPath", "/mnt/data", True, str((base / "data").resolve())),
        WorkerMount("models", "hostPath", "/mnt/models", True, str((base / "models").resolve())),
    ]  # fmt: skip
    # On a cluster node nothing is relative to anything: RLark refuses it.
    with pytest.raises(WorkerRefused, match='volume "data": hostPath "data" is not an absolute'):
        w.mounts(host_base=None)


@pytest.mark.parametrize(
    ("mount", "refusal"),
    [
        ("{name: d, type: hostPath, hostPath: /srv, containerPath: mnt}", "containerPath must be"),
        ("{name: d, type: hostPath, containerPath: /d}", "hostPath without a path"),
        ("{name: d, type: objectStorage, containerPath: /d}", "objectStorage without a bucket"),
        ("{name: d, type: pvc, claimName: c, containerPath: /d}", "type 'pvc' is not supported"),
    ],
)
def test_a_volume_the_platform_cannot_make_is_refused_by_name(
    tmp_path: Path, mount: str, refusal: str
) -> None:
    text = LOCAL_JOB.read_text()
    start = text.index("    mounts:\n")
    end = text.index("    resources:")
    path = tmp_path / "job.yaml"
    path.write_text(text[:start] + f"    mounts:\n    - {mount}\n" + text[end:])
    w = worker_of(job(path), "ns")
    with pytest.raises(WorkerRefused, match=f'^volume "d": {refusal}'):
        w.mounts(host_base=tmp_path)


def test_a_job_whose_head_role_names_no_role_gets_no_worker(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(LOCAL_JOB.read_text().replace("headRole: worker", "headRole: master"))
    with pytest.raises(WorkerRefused, match=r'"rlinf-smoke-ppo-mlp" is invalid: spec\.headRole'):
        worker_of(job(path), "ns")


def test_ray_head_stays_on_loopback_with_no_gpus_and_the_dashboard_as_asked() -> None:
    base = ray_head(dashboard=None)
    assert base[:4] == ["ray", "start", "--head", "--node-ip-address=127.0.0.1"]
    assert "--num-gpus=0" in base and "--disable-usage-stats" in base
    assert "--dashboard-host=127.0.0.1" in base and not any("include-dashboard" in a for a in base)
    assert "--include-dashboard=false" in ray_head(dashboard=False)
    assert "--no-monitor" not in base and "--no-monitor" in ray_head(dashboard=None, monitor=False)
    on = ray_head(dashboard=True, num_cpus=3, temp_dir="/tmp/ray", ports={"--port": 20001})
    assert {
        "--include-dashboard=true",
        "--num-cpus=3",
        "--temp-dir=/tmp/ray",
        "--port=20001",
    } <= set(on)


def run_entry(tmp_path: Path, prepare: str, run: str) -> subprocess.Popen[str]:
    """The entry script as the platform stand-in runs it ($1, $2), `ray` a recorder."""
    (tmp_path / "ray").write_text('#!/bin/sh\necho "ray $*"\n')
    (tmp_path / "ray").chmod(0o755)
    script = entry_script('eval "$1"', 'eval "$2"', ray_head(dashboard=None))
    return subprocess.Popen(
        ["bash", "-c", script, "worker", prepare, run],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )


def test_prepare_then_ray_then_run_and_the_exports_reach_the_run_script(tmp_path: Path) -> None:
    p = run_entry(tmp_path, "export GREETING=prepared", 'echo "run sees $GREETING"; exit 7')
    out, _ = p.communicate(timeout=20)
    lines = out.splitlines()
    assert lines[0].startswith("ray start --head --node-ip-address=127.0.0.1")
    assert lines[1:] == ["run sees prepared"]
    assert p.returncode == 7


def test_a_failing_prepare_script_ends_the_worker_before_ray(tmp_path: Path) -> None:
    p = run_entry(tmp_path, "echo before; exit 3", "echo never")
    out, _ = p.communicate(timeout=20)
    assert (out, p.returncode) == ("before\n", 3)


def test_sigterm_reaches_the_run_script_at_once(tmp_path: Path) -> None:
    run = "trap 'echo run got TERM; exit 0' TERM; echo started; while :; do sleep 0.1; done"
    p = run_entry(tmp_path, "true", run)
    assert p.stdout is not None
    while "started" not in p.stdout.readline():
        pass
    sent = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=20)
    assert "run got TERM" in out
    assert p.returncode == 143
    print(f"SIGTERM to exit: {time.monotonic() - sent:.2f} s")
