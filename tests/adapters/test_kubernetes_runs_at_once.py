"""Two whole runs of one Kubernetes profile at once (a CI retry beside an engineer's run) on
testenv's real control plane and real node: both pass, each with its own Job, Worker Pod and
outputs, and each removes only what it created.

Both are ``pytest features/ --profile <site>`` of the same profile file, started together;
their records are read back, then the namespace and the bucket.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.model.job import JOB_NAME_LABEL
from tests.adapters.k8s_suite import Site, SuiteRun, harness_role, site_namespace

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RUN_ID = re.compile(r"^\d{12}-[0-9a-f]{6}$")
PREFIX = "acceptance/smoke/"


def _keys(s3_env: S3Env, prefix: str) -> set[str]:
    got = s3_env.client().list_objects_v2(Bucket=s3_env.bucket, Prefix=prefix)
    return {o["Key"] for o in got.get("Contents", [])}


@pytest.fixture
def namespace(kube_env: KubeEnv) -> Iterator[str]:
    """The profile's namespace, the test's own (it holds that nothing is left there)."""
    with site_namespace(kube_env, "twice", harness_role()) as ns:
        yield ns


def test_two_runs_of_one_kubernetes_profile_at_once_both_pass_each_with_its_own(
    kube_env: KubeEnv, s3_env: S3Env, namespace: str, tmp_path: Path
) -> None:
    site = Site.make(tmp_path / "site", namespace=namespace)
    # What was there before: an object of this test's own under the runs' prefix (other
    # runs on the machine write and remove their own there meanwhile).
    there = f"{PREFIX}there-before-{secrets.token_hex(3)}/object"
    s3_env.client().put_object(Bucket=s3_env.bucket, Key=there, Body=b"kept")
    runs = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            runs.append(SuiteRun.start(tmp_path / name, site))
        for run in runs:
            run.finish()
    finally:
        for run in runs:
            run.kill()

    ids = []
    for run in runs:
        s = run.summary
        assert run.returncode == 0, run.tail()
        assert s["verdict"] == "passed" and s["earliestFailure"] is None, s
        assert RUN_ID.match(s["runId"]), s.get("runId")
        assert s["runId"] in run.output  # the terminal names it too
        # Its own outputs, found under its own prefix, and removed from there.
        assert f"/{PREFIX}{s['runId']}/" in s["outputs"]["checkpoint"], s["outputs"]
        assert s["outputs"]["removed"] > 0 and s["outputs"]["kept"] is None, s["outputs"]
        ids.append(s["runId"])
    assert ids[0] != ids[1]

    # Nothing of either run is left in the namespace or the bucket; what was there stays.
    jobs = kube_env.custom().list_namespaced_custom_object(
        "rlark.io", "v1alpha1", namespace, "jobs"
    )
    assert not [j["metadata"]["name"] for j in jobs["items"]]
    pods = kube_env.core().list_namespaced_pod(namespace, label_selector=JOB_NAME_LABEL)
    assert not [p.metadata.name for p in pods.items]
    assert _keys(s3_env, there) == {there}
    s3_env.client().delete_object(Bucket=s3_env.bucket, Key=there)
    for run_id in ids:
        assert not _keys(s3_env, f"{PREFIX}{run_id}")
