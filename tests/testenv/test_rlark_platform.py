"""The RLark platform stand-in does with a Job what the page says RLark does.

Rendering (no cluster): the Pod of ``testenv.rlark_platform_pod.worker_pod`` for the
repository's Kubernetes Job YAML, and its container command run by bash. On testenv's
cluster (marked ``cluster``): the controller's Pod on the real node, the Job status, the
s3fs mount as real object storage, and the garbage collector honouring the owner reference.
"""

from __future__ import annotations

import copy
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from testenv import rlark_platform_pod

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "profiles" / "kubernetes" / "job.yaml"


def job() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(JOB.read_text())
    data["metadata"]["uid"] = "0b8f5e0e-uid"
    return data


def render(data: dict[str, Any], s3: dict[str, str] | None = None) -> dict[str, Any]:
    worker = rlark_platform_pod.worker_of_object(data)
    dirs = s3 if s3 is not None else {"ckpt": "/n/ckpt", "data": "/n/data", "models": "/n/models"}
    return rlark_platform_pod.worker_pod(data, worker, dirs)


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
    with pytest.raises(rlark_platform_pod.Refused, match='volume "d": hostPath "data"'):
        render(data, {})
    other = copy.deepcopy(data)
    other["spec"]["roles"][0]["mounts"] = [{"name": "p", "type": "pvc", "containerPath": "/p"}]
    with pytest.raises(rlark_platform_pod.Refused, match="'pvc' is not supported"):
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
    with pytest.raises(rlark_platform_pod.Refused, match=r"spec\.headRole names no role"):
        render(data)


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


@pytest.mark.cluster
def test_on_the_cluster_the_job_gets_its_pod_status_and_a_real_object_storage_mount(
    kube_env: Any, s3_env: Any
) -> None:
    """The controller on testenv's cluster: Job → Pod on the real node, the Job's status
    follows it, the file the Worker wrote is an object in the bucket, and deleting the Job
    removes the Pod (garbage collector, owner reference) and the node's s3fs mount."""
    import time
    import uuid

    from testenv.paths import state_root

    data = job()
    del data["metadata"]["uid"]
    name = f"platform-{uuid.uuid4().hex[:6]}"
    prefix = f"platform-test/{name}"
    data["metadata"].update(name=name, namespace=kube_env.namespace)
    role = data["spec"]["roles"][0]
    role["mounts"] = [
        {"name": "ckpt", "type": "objectStorage", "bucket": s3_env.bucket, "prefix": prefix,
         "containerPath": "/mnt/ckpt"}
    ]  # fmt: skip
    data["spec"]["runScript"] = "echo written > /mnt/ckpt/marker.txt && echo done"
    custom, core = kube_env.custom(), kube_env.core()
    created = custom.create_namespaced_custom_object(
        "rlark.io", "v1alpha1", kube_env.namespace, "jobs", data
    )
    mount = state_root() / "platform" / "s3" / created["metadata"]["uid"] / "ckpt"
    try:
        deadline = time.monotonic() + 120
        phase = None
        while time.monotonic() < deadline and phase != "Succeeded":
            got = custom.get_namespaced_custom_object(
                "rlark.io", "v1alpha1", kube_env.namespace, "jobs", name
            )
            phase = (got.get("status") or {}).get("phase")
            time.sleep(0.3)
        assert phase == "Succeeded", got.get("status")
        assert got["status"]["pods"] == [f"{name}-worker-0"]
        pod = core.read_namespaced_pod(f"{name}-worker-0", kube_env.namespace)
        assert pod.spec.node_name == kube_env.real_node
        assert pod.metadata.owner_references[0].uid == created["metadata"]["uid"]
        assert os.path.ismount(mount)
        body = s3_env.client().get_object(Bucket=s3_env.bucket, Key=f"{prefix}/marker.txt")
        assert body["Body"].read() == b"written\n"
    finally:
        custom.delete_namespaced_custom_object(
            "rlark.io", "v1alpha1", kube_env.namespace, "jobs", name
        )
    sel = f"rlark.io/job-name={name}"
    deadline = time.monotonic() + 90
    while core.list_namespaced_pod(kube_env.namespace, label_selector=sel).items:
        assert time.monotonic() < deadline, "the garbage collector left the Pod"
        time.sleep(0.3)
    deadline = time.monotonic() + 30
    while mount.exists():
        assert time.monotonic() < deadline, "the s3fs mount outlived the Job"
        time.sleep(0.3)


def test_a_job_deleted_while_the_watch_was_away_is_released_on_the_next_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API server restart: the Jobs' watch lists again, and a Job deleted meanwhile sent
    no DELETED event; its mounts are released all the same, once."""
    from kubernetes import client

    from testenv import rlark_platform

    platform = rlark_platform.Platform(client.ApiClient(client.Configuration()), tmp_path)
    released: list[str] = []
    monkeypatch.setattr(platform, "_release", lambda job: released.append(job["metadata"]["uid"]))
    kept = {"metadata": {"uid": "u-kept", "name": "kept", "namespace": "ns"}}
    gone = {"metadata": {"uid": "u-gone", "name": "gone", "namespace": "ns"}}
    platform._seen.update({"u-kept": kept, "u-gone": gone})
    platform.on_jobs_listed([kept])
    platform.on_jobs_listed([kept])  # listed again: released once
    for _ in range(50):
        if released:
            break
        time.sleep(0.02)
    assert released == ["u-gone"]
