"""``rlark-acceptance diagnose --pod`` as an engineer on call runs it, on Pods of testenv's
real node (a kubelet, containerd and runc): one the kernel OOM-killed, one whose volume did
not mount. What it printed is in the output of ``-s``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from fixtures.testenv import KubeEnv
from tests.testenv.test_testenv_node import real_pod, wait_for

pytestmark = pytest.mark.cluster
COMMAND = Path(sys.executable).parent / "rlark-acceptance"


@pytest.fixture
def made(kube_env: KubeEnv) -> Iterator[list[str]]:
    """The Pods a test made on the real node, deleted after it."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(client.ApiException):
            kube_env.core().delete_namespaced_pod(name, kube_env.namespace, grace_period_seconds=0)


def diagnose_pod(kube_env: KubeEnv, name: str) -> tuple[int, str, Any]:
    args = ["--pod", name, "--kubeconfig", str(kube_env.kubeconfig), "-n", kube_env.namespace]
    words = subprocess.run(
        [str(COMMAND), "diagnose", *args], capture_output=True, text=True, timeout=120
    )
    done = subprocess.run(
        [str(COMMAND), "diagnose", *args, "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.stderr == "" and words.returncode == done.returncode, (words, done)
    print(f"\n$ rlark-acceptance diagnose {' '.join(args)}\n{words.stdout}")
    return done.returncode, words.stdout, json.loads(done.stdout)


def test_a_worker_the_kernel_oom_killed(kube_env: KubeEnv, made: list[str]) -> None:
    """The Worker prints, then allocates past its 64 MiB limit: its log has no error at all
    (the kernel's kill prints nothing); the Pod says OOMKilled, and that is the cause."""
    script = (
        "print('Ray runtime started.', flush=True)\nb = [bytearray(16 << 20) for _ in range(64)]"
    )
    memory = {"memory": "64Mi"}
    resources = {"resources": {"limits": memory, "requests": memory}}
    name = real_pod(kube_env, made, ["python", "-c", script], container=resources)
    core = kube_env.core()

    def failed() -> bool:
        return bool(core.read_namespaced_pod(name, kube_env.namespace).status.phase == "Failed")

    wait_for("the Pod to fail", failed, timeout=120)
    status, words, out = diagnose_pod(kube_env, name)
    assert status == 1, words
    assert out["class"] == "worker-oom-killed" and out["firstCause"]["source"] == "pod", out
    assert out["check"] == "6.4" and out["fixAt"] == "0.4", out
    assert out["pod"]["reason"] == "OOMKilled" and out["pod"]["exitCode"] == 137, out
    assert out["lines"] == 1 and out["logCause"] is None, out
    assert "first cause in the Pod's status and events: OOMKilled" in words
    # The node's conditions, as the real kubelet reports them.
    node = out["pod"]["nodeConditions"]
    assert {"Ready", "MemoryPressure", "DiskPressure"} <= {c["type"] for c in node["conditions"]}
    assert f"node {node['name']}: " in words


def test_a_worker_whose_volume_did_not_mount(kube_env: KubeEnv, made: list[str]) -> None:
    """A secret volume whose secret is not there: the kubelet keeps the Pod Pending and says
    FailedMount; the container never ran, so there is no log, and the run fails at 6.3."""
    mount = {"volumeMounts": [{"name": "creds", "mountPath": "/mnt/creds"}]}
    volumes = [{"name": "creds", "secret": {"secretName": "s3-creds"}}]
    name = real_pod(kube_env, made, ["python", "-c", "0"], container=mount, volumes=volumes)
    core = kube_env.core()

    def failed_mount() -> bool:
        events = core.list_namespaced_event(
            kube_env.namespace, field_selector=f"involvedObject.name={name}"
        ).items
        return any(e.reason == "FailedMount" for e in events)

    wait_for("the FailedMount event", failed_mount, timeout=120)
    status, words, out = diagnose_pod(kube_env, name)
    assert status == 1, words
    assert out["class"] == "volume-mount-failed" and out["check"] == "6.3", out
    assert 'secret "s3-creds" not found' in out["firstCause"]["text"], out
    assert out["pod"]["phase"] == "Pending" and out["lines"] == 0, out
    assert "(no log: its container never ran)" in words
