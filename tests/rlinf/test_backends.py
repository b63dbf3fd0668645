"""The config's logger backends decide what 4.5 and T.2 expect: TensorBoard events only
where RLinf writes them; wandb online only with a key and a way out of the Pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.model.findings import Finding
from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.training import TrainingSpec
from rlark_acceptance.preflight.entry import preflight_files
from rlark_acceptance.rlinf.backends import backends_of, in_config
from rlark_acceptance.run.step6.plan import training_plan
from tests.rlinf.jobs import diffusion_tree, job

LAUNCH = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"


@pytest.mark.parametrize(
    ("value", "present", "names"),
    [
        (None, False, ("tensorboard",)),  # RLinf's default
        ("wandb", True, ("wandb",)),
        (None, True, ()),
        (["wandb", "tensorboard"], True, ("wandb", "tensorboard")),
    ],
)
def test_the_backends_are_read_as_rlinf_reads_them(
    value: object, present: bool, names: tuple[str, ...]
) -> None:
    assert backends_of(value, present=present).names == names


def four_five(tmp: Path, backends: str, env: str = "") -> list[Finding]:
    config = diffusion_tree(tmp)
    text = config.read_text().replace('["tensorboard"]', backends)
    config.write_text(text)
    result = preflight_files(config, job=job(tmp, LAUNCH, env=env))
    return [f for f in result.findings if f.check == "4.5"]


def test_a_wandb_only_config_is_not_promised_tensorboard_events(tmp_path: Path) -> None:
    found = {
        f.code: f for f in four_five(tmp_path, '["wandb"]', "{name: WANDB_MODE, value: offline}")
    }
    assert set(found) == {"tensorboard-not-written"}
    said = found["tensorboard-not-written"]
    assert "logger_backends is [wandb]" in said.message and "RLinf writes no" in said.message
    assert said.location is not None and said.location.line == 17  # the logger_backends line


def test_wandb_online_without_a_key_is_a_warning_with_its_remedy(tmp_path: Path) -> None:
    (said,) = [
        f for f in four_five(tmp_path, '["wandb", "tensorboard"]') if f.code == "wandb-online"
    ]
    assert "WANDB_MODE=offline" in said.message and "WANDB_API_KEY" in said.message


def test_a_backend_rlinf_does_not_know_stops_it(tmp_path: Path) -> None:
    found = {f.code: f for f in four_five(tmp_path, '["tensorbaord"]')}
    assert found["logger-backend-unknown"].severity == "error"
    assert "tensorbaord" in found["logger-backend-unknown"].message


def test_t2_says_why_it_cannot_judge_a_run_without_events(tmp_path: Path) -> None:
    the_job = read_job(str(job(tmp_path, LAUNCH)))
    spec = TrainingSpec(checks=frozenset({"T.2"}))
    wandb = {"runner": {"logger": {"log_path": "/mnt/ckpt/logs", "logger_backends": ["wandb"]}}}
    plan = training_plan(spec, wandb, "/mnt/ckpt/logs", the_job)
    assert plan is not None and plan.tensorboard is None
    assert plan.no_events is not None and "logger_backends is [wandb]" in plan.no_events
    default = {"runner": {"logger": {"log_path": "/mnt/ckpt/logs"}}}
    plan = training_plan(spec, default, "/mnt/ckpt/logs", the_job)
    assert plan is not None and plan.tensorboard == "/mnt/ckpt/logs/tensorboard"
    assert in_config(default).tensorboard
