"""The acceptance suite on the Kubernetes target, run as a release engineer runs it.

``python -m pytest features/ --profile profiles/kubernetes.yaml`` in a subprocess, against
testenv's real control plane and its real node (containerd + runc + kubelet running the
Worker image: prepare script → real Ray head → the smoke workload), under the harness's
least-privilege ServiceAccount, the checkpoint read back from testenv's S3 server after the
Pod is gone. It runs in a directory of this test that links to the checkout's files (its
rootdir), so its ``reports/`` are written there and the outer run's are left alone;
``run-summary.json`` is read back from there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml
from kubernetes import client

from fixtures.testenv import KubeEnv, S3Env
from testenv import state
from tests.adapters.k8s_suite import CHECKOUT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RUNTIME = ("6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5")


def run_features(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG"))}
    # What `eval "$(testenv/testenv env)"` gives a user: boto3's standard chain for the S3
    # server (the kubeconfig is the profile's own: the harness's ServiceAccount).
    env.update({k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    run = tmp_path / "checkout"
    run.mkdir()
    for name in CHECKOUT:
        (run / name).symlink_to(REPO / name)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "features/",
            "--profile",
            "profiles/kubernetes.yaml",
            "-p",
            "no:cacheprovider",
            "-q",
            *extra,
        ],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    summary_file = run / "reports" / "run-summary.json"
    assert summary_file.is_file(), res.stdout[-4000:] + res.stderr[-2000:]
    return res, json.loads(summary_file.read_text())


# Alone at the cluster: it holds that nothing at all is left in the shared namespace.
@pytest.mark.cluster_alone
def test_the_features_pass_on_the_real_node(
    kube_env: KubeEnv, s3_env: S3Env, tmp_path: Path
) -> None:
    """Every scenario, the @fault-injection ones included: each broken Job is red at its
    check with the platform's own cause (the real scheduler, runtime, exit codes)."""
    res, summary = run_features(tmp_path, "--fault-injection", "-rs")
    tail = res.stdout[-6000:]
    assert res.returncode == 0, tail
    last = res.stdout.strip().splitlines()[-1]
    assert "passed" in last and "skipped" not in last and "failed" not in last, last
    checks = summary["checks"]
    assert summary["verdict"] == "passed", summary.get("earliestFailure")
    for check in RUNTIME:
        assert checks.get(check) == "passed", (check, checks.get(check), tail)
    # All 41 checks of the page, the 3 of the training and B.1, and every self-check (the fault
    # injections among them, the training's included); T.4, opt-in, is not selected.
    assert len(checks) == 46 and checks.pop("T.4") == "skipped", checks
    assert set(checks.values()) == {"passed"}, checks
    assert summary["selfChecks"]["failed"] == [], summary["selfChecks"]
    assert summary.get("earliestFailure") is None, summary.get("earliestFailure")
    # Nothing is left on the cluster: the Job and its Pod were deleted.
    assert not kube_env.core().list_namespaced_pod(kube_env.namespace).items
    # What the run ran on, as the cluster said it: the real node's kubelet and containerd,
    # the API server, and the image ID containerd ran the Worker with.
    p = summary["provenance"]
    info = kube_env.core().read_node("gpu-node-09").status.node_info
    assert p["node"] == "gpu-node-09" and p["unread"] is None, p
    assert (p["kubeletVersion"], p["containerRuntimeVersion"]) == (
        info.kubelet_version,
        info.container_runtime_version,
    )
    assert p["containerRuntimeVersion"].startswith("containerd://"), p
    assert p["apiServerVersion"] == client.VersionApi(kube_env.api_client()).get_code().git_version
    assert re.fullmatch(r"(\S+@)?sha256:[0-9a-f]{64}", p["imageId"] or ""), p
    # The same where CI reads JUnit: the profile's suite's properties.
    junit = JUnitXml.fromfile(str(tmp_path / "checkout" / "reports" / "junit.xml"))
    (suite,) = [x for x in junit if "the profile as it is" in x.name]
    props = {q.name: q.value for q in suite.properties()}
    assert props["provenance.imageId"] == p["imageId"], props
    assert props["provenance.kubeletVersion"] == p["kubeletVersion"], props
