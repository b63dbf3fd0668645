"""The in-cluster record on testenv's S3 server: each runner Pod of a Job writes its own, the
command reads the one of the Pod it followed, and the Job's folder goes as a whole."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from fixtures.testenv import S3Env
from rlark_acceptance.adapters.clock import SYSTEM
from rlark_acceptance.incluster import launch, record
from testenv import state


def _record(root: Path, verdict: str) -> Path:
    """A record directory as a run leaves it: the summary and an Allure result."""
    root.mkdir(parents=True)
    (root / "run-summary.json").write_text(json.dumps({"verdict": verdict}), encoding="utf-8")
    (root / "allure-results").mkdir()
    (root / "allure-results" / "a-result.json").write_text("{}", encoding="utf-8")
    return root


def test_two_pods_of_one_runner_job_keep_a_record_each(s3_env: S3Env, tmp_path: Path) -> None:
    """The Job controller started a second runner Pod (an outage of the API server): the
    followed Pod's record is read whole and alone, the other's does not mix into it."""
    c = s3_env.client()
    job = f"s3://{s3_env.bucket}/records-{secrets.token_hex(3)}/rlark-runner-smoke-abc123"
    first = record.for_pod(job, "rlark-runner-smoke-abc123-aaaaa")
    second = record.for_pod(job, "rlark-runner-smoke-abc123-bbbbb")
    assert first == f"{job}/rlark-runner-smoke-abc123-aaaaa"
    assert record.for_pod(job, None) == job  # a runner started by hand: the folder given
    assert record.upload(_record(tmp_path / "a", "passed"), first, c) == 2
    partial = _record(tmp_path / "b", "interrupted")
    (partial / "junit.xml").write_text("<testsuites/>", encoding="utf-8")
    record.upload(partial, second, c)
    assert record.pods(job, c) == [
        "rlark-runner-smoke-abc123-aaaaa",
        "rlark-runner-smoke-abc123-bbbbb",
    ]

    reports = tmp_path / "reports"
    assert record.download(first, reports, c)
    summary = json.loads((reports / "run-summary.json").read_text(encoding="utf-8"))
    assert summary == {"verdict": "passed"}
    assert not (reports / "junit.xml").exists()  # the other Pod's file

    record.remove(job, c)
    assert record.pods(job, c) == []
    assert not record.download(second, tmp_path / "gone", c)


def test_a_pod_whose_upload_did_not_finish_has_no_record(s3_env: S3Env, tmp_path: Path) -> None:
    c = s3_env.client()
    job = f"s3://{s3_env.bucket}/records-{secrets.token_hex(3)}/rlark-runner-smoke-def456"
    pod = record.for_pod(job, "rlark-runner-smoke-def456-ccccc")
    bucket, prefix = record.parse(pod)
    c.put_object(Bucket=bucket, Key=f"{prefix}/run-summary.json", Body=b"{}")  # no marker
    assert record.pods(job, c) == []
    assert not record.download(pod, tmp_path / "reports", c)
    record.remove(job, c)


def test_the_command_reads_the_followed_pods_record_or_else_the_only_one(
    s3_env: S3Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the command fetches (``launch._fetch``, its S3 client from the standard chain
    as a user's is): the followed Pod's record; with no Pod followed (interrupted before
    the runner started), the one Pod's record if there is exactly one, else none."""
    for key, value in state.env_vars(state.load()).items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    c = s3_env.client()
    job = f"s3://{s3_env.bucket}/records-{secrets.token_hex(3)}/rlark-runner-smoke-0a1b2c"

    def fetch(pod: str) -> tuple[bool, dict[str, str], list[str]]:
        said: list[str] = []
        reports = tmp_path / secrets.token_hex(3)
        got = launch._fetch(job, pod, reports, said.append, (SYSTEM, {}))
        summary = reports / "run-summary.json"
        return got, json.loads(summary.read_text()) if summary.is_file() else {}, said

    for pod, verdict in (("p-aaaaa", "passed"), ("p-bbbbb", "interrupted")):
        record.upload(_record(tmp_path / pod, verdict), record.for_pod(job, pod), c)
    got, summary, said = fetch("p-bbbbb")
    assert got and summary == {"verdict": "interrupted"}, said
    assert any("record of pod p-bbbbb fetched" in line for line in said), said
    assert record.pods(job, c) == []  # the Job's folder, both Pods' records, removed

    record.upload(_record(tmp_path / "only", "passed"), record.for_pod(job, "p-ccccc"), c)
    got, summary, said = fetch("")
    assert got and summary == {"verdict": "passed"}, said

    for pod in ("p-ddddd", "p-eeeee"):
        record.upload(_record(tmp_path / pod, "passed"), record.for_pod(job, pod), c)
    got, summary, said = fetch("")
    assert not got and summary == {}, said
    assert said == [f"error: the runner's record at {job} is incomplete or missing"], said
    record.remove(job, c)
