"""The RLark platform stand-in renders a Job the way the page says RLark does.

Pure rendering (no cluster): the Pod of ``testenv.rlark_platform.worker_pod`` for the
repository's Kubernetes Job YAML. The behaviour on the cluster (s3fs mounts, owner
references honoured by the garbage collector, Job status) is exercised by the real-node
tests and the features.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testenv import rlark_platform

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "profiles" / "kubernetes" / "job.yaml"


def job() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(JOB.read_text())
    data["metadata"]["uid"] = "0b8f5e0e-uid"
    return data


def render(data: dict[str, Any], s3: dict[str, str] | None = None) -> dict[str, Any]:
    role = rlark_platform.head_role(data)
    assert role is not None
    dirs = s3 if s3 is not None else {"ckpt": "/n/ckpt", "data": "/n/data", "models": "/n/models"}
    return rlark_platform.worker_pod(data, role, dirs)


def test_one_pod_for_the_header_role_with_what_the_role_says() -> None:
    data = job()
    pod = render(data)
    role = data["spec"]["roles"][0]
    assert pod["metadata"]["name"] == "rlinf-smoke-ppo-mlp-worker-0"
    assert pod["metadata"]["labels"] == {
        "rlark.io/job-name": "rlinf-smoke-ppo-mlp",
        "rlark.io/role": "worker",
    }
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Job",
        "rlinf-smoke-ppo-mlp",
        "0b8f5e0e-uid",
        True,
    )
    spec = pod["spec"]
    assert spec["nodeSelector"] == role["nodeSelector"]
    assert spec["restartPolicy"] == "Never"
    assert spec["shareProcessNamespace"] is True  # the shell is not PID 1
    (c,) = spec["containers"]
    assert c["image"] == role["image"]
    assert c["resources"] == {
        "limits": {"nvidia.com/gpu": "2"},
        "requests": {"nvidia.com/gpu": "2"},
    }
    assert {e["name"]: e["value"] for e in c["env"]} == {
        "RAY_DEDUP_LOGS": "0",
        "TOKENIZERS_PARALLELISM": "false",
    }
    # Object storage reaches the Pod as the node's s3fs directory, at its container path.
    vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert vols == {"ckpt": "/n/ckpt", "data": "/n/data", "models": "/n/models"}
    mounts = {m["name"]: (m["mountPath"], m["readOnly"]) for m in c["volumeMounts"]}
    assert mounts == {
        "ckpt": ("/mnt/ckpt", False),
        "data": ("/mnt/data", True),
        "models": ("/mnt/models", True),
    }


def test_no_gpus_means_no_gpu_resources() -> None:
    data = job()
    data["spec"]["roles"][0]["gpus"] = 0
    assert render(data)["spec"]["containers"][0]["resources"] == {"limits": {}, "requests": {}}


def run_entry(pod: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The container command, run by bash here with `ray` replaced by a recorder."""
    (tmp_path / "ray").write_text('#!/bin/sh\necho "ray $*"\n')
    (tmp_path / "ray").chmod(0o755)
    c = pod["spec"]["containers"][0]
    # As the kubelet expands them: `$$` is one `$` (and no `$(VAR)` is left to expand).
    argv = [a.replace("$$", "$") for a in (*c["command"], *c["args"])]
    assert not any("$(" in a.replace("$$", "") for a in (*c["command"], *c["args"]))
    assert argv[0] == "/bin/bash"
    return subprocess.run(
        ["bash", *argv[1:]],
        capture_output=True,
        text=True,
        timeout=20,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )


def test_the_entrypoint_is_replaced_by_prepare_then_ray_then_the_run_script(
    tmp_path: Path,
) -> None:
    data = job()
    data["spec"]["roles"][0]["prepareScript"] = "export GREETING=prepared\necho prepare-ran\n"
    data["spec"]["runScript"] = 'echo "run sees $GREETING"\nexit 7\n'
    res = run_entry(render(data), tmp_path)
    lines = res.stdout.splitlines()
    assert lines[0] == "prepare-ran"
    assert lines[1].startswith("ray start --head --node-ip-address=127.0.0.1")
    assert lines[2] == "run sees prepared"  # the prepare script's exports reach it
    assert res.returncode == 7


# A shell killed by SIGKILL: -9 here, exit code 137 as the container runtime reports it.
@pytest.mark.parametrize(("prepare", "code"), [("exit 3", 3), ("kill -KILL $$", -9)])
def test_a_failing_prepare_script_ends_the_worker_before_ray(
    tmp_path: Path, prepare: str, code: int
) -> None:
    data = job()
    data["spec"]["roles"][0]["prepareScript"] = f"echo before\n{prepare}\n"
    res = run_entry(render(data), tmp_path)
    assert res.returncode == code
    assert "ray start" not in res.stdout


def test_a_relative_host_path_or_an_unknown_volume_is_refused() -> None:
    data = job()
    role = data["spec"]["roles"][0]
    role["mounts"] = [{"name": "d", "type": "hostPath", "hostPath": "data", "containerPath": "/d"}]
    with pytest.raises(rlark_platform.Refused, match='volume "d": hostPath "data"'):
        render(data, {})
    other = copy.deepcopy(data)
    other["spec"]["roles"][0]["mounts"] = [{"name": "p", "type": "pvc", "containerPath": "/p"}]
    with pytest.raises(rlark_platform.Refused, match="'pvc' is not supported"):
        render(other, {})
    abs_path = copy.deepcopy(data)
    abs_path["spec"]["roles"][0]["mounts"][0]["hostPath"] = "/srv/data"
    pod = render(abs_path, {})
    assert pod["spec"]["volumes"][0]["hostPath"] == {
        "path": "/srv/data",
        "type": "DirectoryOrCreate",
    }


def test_a_job_without_its_header_role_gets_no_pod() -> None:
    data = job()
    data["spec"]["headRole"] = "missing"
    assert rlark_platform.head_role(data) is None


def test_the_worker_goes_only_to_the_nodes_of_its_rlark_cluster() -> None:
    data = job()
    pod = render(data)
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "rlark.io/cluster", "operator": "In", "values": ["rlark-testenv"]}
            ]
        }
    ]
    del data["spec"]["roles"][0]["cluster"]
    assert "affinity" not in render(data)["spec"]
