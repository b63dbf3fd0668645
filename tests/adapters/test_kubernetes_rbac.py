"""A Role of the harness's without a verb it needs, on the Kubernetes target: the suite run
as a release engineer runs it (``k8s_suite``), in a namespace of the test's own where the
harness's ServiceAccount is bound to less than ``deploy/harness-rbac.yaml`` grants.

- without ``create`` on jobs (no Role at all): 6.1 with the API server's 403, naming the
  namespace, the identity and the file that grants it;
- without ``delete``: the run passes and the record warns of what is left, and where.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.testenv import KubeEnv
from tests.adapters.k8s_suite import Site, SuiteRun, earliest, harness_role, site_namespace

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

JOB = "rlinf-smoke-ppo-mlp"
RUNTIME_AFTER_61 = ("6.2", "6.3", "6.4", "6.5")


@pytest.mark.parametrize("verb", ["create", "delete"])
def test_a_role_without_a_verb_on_jobs(kube_env: KubeEnv, tmp_path: Path, verb: str) -> None:
    rules = harness_role(without=verb) if verb != "create" else None
    with site_namespace(kube_env, "rbac", rules) as ns:
        run = SuiteRun.start(tmp_path, Site.make(tmp_path / "site", namespace=ns))
        try:
            run.finish()
        finally:
            run.kill()
        s = run.summary
        if verb == "create":
            first = earliest(run)
            msg = first["message"]
            print(f"no RBAC: {first['check']}: {msg}")
            assert run.returncode == 1, run.tail()
            assert first["check"] == "6.1", first
            assert "403 Forbidden" in msg and 'cannot create resource "jobs"' in msg, msg
            assert f'in the namespace "{ns}"' in msg and "system:serviceaccount:" in msg, msg
            assert "deploy/harness-rbac.yaml" in msg, msg
            assert all(s["checks"][c] == "notReached" for c in RUNTIME_AFTER_61), s["checks"]
            assert "cannot create resource" in run.output  # the terminal says it too
        else:
            warnings = s.get("warnings") or []
            print(f"no delete: {s['verdict']}; warnings: {warnings}")
            assert run.returncode == 0, run.tail()
            assert s["verdict"] == "passed", s.get("earliestFailure")
            assert any(
                "403 Forbidden" in w
                and 'cannot delete resource "jobs"' in w
                and f"job {JOB}-{s['runId']} and its Pods may be left in namespace {ns}" in w
                and "deploy/harness-rbac.yaml" in w
                for w in warnings
            ), warnings
            assert "warning: " in run.output and "error in teardown" not in run.output
