"""A Worker the cluster takes away, on the Kubernetes target as a release engineer meets it:
``pytest features/ --profile <kubernetes profile>`` on testenv's real control plane and real
node, the run's own Worker Pod evicted through the Eviction API while Step 6 waits for 6.4,
and the record read back in every form a user reads it (``run-summary.json``, JUnit as CI
parses it, the terminal). Only this run's Pod is touched: it shares the cluster."""

from __future__ import annotations

from pathlib import Path

import junitparser
import pytest
from kubernetes import client

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.model.job import JOB_NAME_LABEL
from tests.adapters.k8s_suite import STARTING, Site, SuiteRun, waits_for
from tests.run.junit_schema import problems

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_an_evicted_worker_is_red_at_6_4_with_the_clusters_remedy(
    kube_env: KubeEnv, s3_env: S3Env, tmp_path: Path
) -> None:
    site = Site.make(tmp_path / "site", before=f"{STARTING}; sleep 60")
    run = SuiteRun.start(tmp_path, site)
    try:
        run.wait_for(waits_for("6.4"))
        core = kube_env.core()
        pods = core.list_namespaced_pod(kube_env.namespace, label_selector=JOB_NAME_LABEL).items
        # The run id is in the Job's name and so in its Pod's: another test's Pod is not ours.
        mine = [p.metadata.name for p in pods if "worker" in p.metadata.name]
        ours = [n for n in mine if n.split("-worker")[0] in run.output]
        assert len(ours) == 1, (mine, run.tail())
        body = client.V1Eviction(
            metadata=client.V1ObjectMeta(name=ours[0], namespace=kube_env.namespace)
        )
        core.create_namespaced_pod_eviction(ours[0], kube_env.namespace, body)
        run.finish(600)
    finally:
        run.kill()
    assert run.returncode == 1, run.tail()
    first = run.summary["earliestFailure"]
    assert first["check"] == "6.4", first
    assert "EvictionByEvictionAPI [worker-disrupted]" in first["message"], first
    assert first["hint"].startswith("The Worker was stopped from outside"), first["hint"]
    assert "check the RLinf config" not in first["hint"].split("the doc's remedy")[0]
    # The terminal: the failure's check and the cluster's remedy.
    assert "The Worker was stopped from outside" in run.output, run.tail()
    # JUnit, as CI parses it: 6.4's testcase failed with the same message and remedy.
    junit = run.reports / "junit.xml"
    assert problems(junit) == [], problems(junit)
    failed = [
        (case.name, r)
        for suite in junitparser.JUnitXml.fromfile(str(junit))
        for case in suite
        for r in case.result
        if isinstance(r, junitparser.Failure)
    ]
    at_64 = [r for name, r in failed if name.startswith("[6.4]")]
    assert at_64, [name for name, _ in failed]
    text = " ".join(f"{r.message} {r.text}" for r in at_64)
    assert "[worker-disrupted]" in text and "stopped from outside" in text, text
