"""Runs never collide: the Job a run submits carries its run id (run_id.py)."""

from __future__ import annotations

from typing import Any

import yaml

from rlark_acceptance.model.job import RUN_ID_LABEL
from rlark_acceptance.run.acceptance import manifest_of
from rlark_acceptance.run.step6.run_id import MAX_NAME, for_run, new_run_id, run_job_name


def test_the_job_name_labels_and_output_prefix_carry_the_run_id(base: Any) -> None:
    _, job = base
    run_id = new_run_id()
    run_job, manifest = for_run(job, manifest_of(job), run_id, "/mnt/ckpt/logs")
    data = yaml.safe_load(manifest)
    assert run_job.name == data["metadata"]["name"] == f"rlinf-smoke-ppo-mlp-{run_id}"
    assert data["metadata"]["labels"] == {RUN_ID_LABEL: run_id}
    prefixes = {m["name"]: m.get("prefix") for m in data["spec"]["roles"][0]["mounts"]}
    assert prefixes["ckpt"] == f"acceptance/smoke/{run_id}"
    assert {m.name: m.prefix for m in run_job.roles[0].mounts}["ckpt"] == prefixes["ckpt"]
    # The read-only inputs and the user's own Job are as they were.
    assert [m.host_path for m in run_job.roles[0].mounts[1:]] == ["data", "models"]
    assert job.name == "rlinf-smoke-ppo-mlp" and job.roles[0].mounts[0].prefix == "acceptance/smoke"
    assert "run-id" not in manifest_of(job)


def test_two_runs_have_two_names(base: Any) -> None:
    _, job = base
    names = {for_run(job, manifest_of(job), new_run_id(), "/mnt/ckpt")[0].name for _ in range(50)}
    assert len(names) == 50


def test_a_long_job_name_stays_a_label() -> None:
    name = run_job_name("a" * 60 + "-b", "261201093000-abcdef")
    assert len(name) <= MAX_NAME and name.endswith("-261201093000-abcdef")
    assert "--" not in name and name[0] == "a"


def test_an_output_on_no_writable_object_storage_keeps_its_place(base: Any) -> None:
    _, job = base
    run_job, manifest = for_run(job, manifest_of(job), "r1", "/mnt/data/out")  # read-only hostPath
    assert [m.prefix for m in run_job.roles[0].mounts] == [m.prefix for m in job.roles[0].mounts]
    assert yaml.safe_load(manifest)["metadata"]["name"] == "rlinf-smoke-ppo-mlp-r1"
