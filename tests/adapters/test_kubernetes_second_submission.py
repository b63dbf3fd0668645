"""T.4 on the Kubernetes target, as a release engineer turns it on (``training: resume:
true``): the profile's own run on testenv's real node, then a second submission of the same
Job with ``runner.resume_dir`` at the run's last checkpoint, on the same node, its outputs
on the same S3 prefix; the record read back (``run-summary.json``, JUnit as CI parses it).
Green as the profile is; red at T.4 when the Worker ignores ``runner.resume_dir``. Each run's
Jobs are its own (the run id is in their names): the cluster is shared."""

from __future__ import annotations

from pathlib import Path

import junitparser
import pytest

from fixtures.testenv import KubeEnv, S3Env
from tests.adapters.k8s_suite import Site, SuiteRun
from tests.run.junit_schema import problems

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LOG_PATH = "runner.logger.log_path=/mnt/ckpt/logs"


def resuming(root: Path, override: str = "") -> Site:
    """The Kubernetes profile with the resume check on, its run command given ``override``
    (in the Job's run script and the profile's start command alike, as 5.6 holds)."""
    site = Site.make(root)
    for f in (site.profile, site.job):
        text = f.read_text(encoding="utf-8")
        assert text.count(LOG_PATH) == 1, f
        if override:
            text = text.replace(LOG_PATH, f"{LOG_PATH} {override}")
        if f == site.profile:
            text = text.rstrip("\n") + "\ntraining:\n  resume: true\n"
        f.write_text(text, encoding="utf-8")
    return site


def t4_cases(run: SuiteRun) -> list[junitparser.TestCase]:
    junit = run.reports / "junit.xml"
    assert problems(junit) == [], problems(junit)
    cases = [c for s in junitparser.JUnitXml.fromfile(str(junit)) for c in s]
    return [c for c in cases if c.name.startswith("[T.4]")]


def test_a_second_submission_on_the_real_node_resumes_and_passes_t_4(
    kube_env: KubeEnv, s3_env: S3Env, tmp_path: Path
) -> None:
    run = SuiteRun.start(tmp_path, resuming(tmp_path / "site"))
    try:
        run.finish(900)
    finally:
        run.kill()
    s = run.summary
    assert run.returncode == 0 and s["verdict"] == "passed", (s.get("earliestFailure"), run.tail())
    assert s["checks"]["T.4"] == "passed", s["checks"]
    resume = s["training"]["resume"]
    assert resume["job"].endswith(f"{s['runId']}-resume"), resume
    assert resume["from"]["step"] >= 1, resume
    assert s["outputs"].get("removed", 0) > 0, s["outputs"]  # both runs' outputs gone
    cases = t4_cases(run)
    assert cases and not any(c.result for c in cases), [c.result for c in cases]


def test_a_second_submission_that_ignores_resume_dir_is_red_at_t_4(
    kube_env: KubeEnv, s3_env: S3Env, tmp_path: Path
) -> None:
    run = SuiteRun.start(tmp_path, resuming(tmp_path / "site", "smoke.ignore_resume=true"))
    try:
        run.finish(900)
    finally:
        run.kill()
    s = run.summary
    assert run.returncode == 1, run.tail()
    first = s["earliestFailure"]
    assert first["check"] == "T.4", first
    assert "runner.resume_dir was not honoured" in first["message"], first
    failed = [r for c in t4_cases(run) for r in c.result if isinstance(r, junitparser.Failure)]
    assert failed and "runner.resume_dir was not honoured" in f"{failed[0].message}", failed
    # The page's checks stand: the first run was accepted by them.
    assert all(s["checks"][c] == "passed" for c in ("6.4", "6.5")), s["checks"]
