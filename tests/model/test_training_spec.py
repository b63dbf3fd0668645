"""The profile's ``training:`` (docs/contract.md §2): the defaults, what a profile may set, and
each mistake as one line at its ``file:line`` (exit status 2 on the command line)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.training import (
    DEFAULT_CHECKS,
    DEFAULT_RESUME_STEPS,
    DEFAULT_STEP_PATTERN,
    OFF,
    OPT_IN,
    TRAINING_IDS,
    Expectation,
    TrainingSpec,
    parse_training,
)
from rlark_acceptance.model.yamlsrc import load_yaml

ROOT = Path(__file__).resolve().parents[2]


def parsed(tmp_path: Path, text: str) -> TrainingSpec:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return parse_training(load_yaml(path))


def test_every_training_check_but_the_opt_in_one_is_on_by_default_and_false_turns_them_off(
    tmp_path: Path,
) -> None:
    spec = parsed(tmp_path, "name: p\n")
    assert spec.checks == frozenset(DEFAULT_CHECKS) == frozenset({"T.1", "T.2", "T.3"})
    assert TRAINING_IDS == ("T.1", "T.2", "T.3", "T.4") and OPT_IN == ("T.4",)
    assert spec.steps is None and spec.step_pattern.pattern == DEFAULT_STEP_PATTERN
    assert spec.resume_steps == DEFAULT_RESUME_STEPS == 2
    assert parsed(tmp_path, "training: false\n") == OFF
    assert parsed(tmp_path, "training: true\n") == TrainingSpec()
    assert parsed(tmp_path, "training:\n  checks: []\n").checks == frozenset()


@pytest.mark.parametrize(
    ("text", "checks", "steps"),
    [
        ("training:\n  resume: true\n", {"T.1", "T.2", "T.3", "T.4"}, 2),
        ("training:\n  resume: {steps: 3}\n", {"T.1", "T.2", "T.3", "T.4"}, 3),
        ("training:\n  resume: {}\n", {"T.1", "T.2", "T.3", "T.4"}, 2),
        ("training:\n  checks: [T.1, T.4]\n", {"T.1", "T.4"}, 2),
        ("training:\n  checks: [T.1]\n  resume: true\n", {"T.1", "T.4"}, 2),
        ("training:\n  checks: []\n  resume: {steps: 1}\n", {"T.4"}, 1),
        ("training:\n  resume: false\n", {"T.1", "T.2", "T.3"}, 2),
    ],
)
def test_the_resume_check_is_turned_on_by_resume_or_by_naming_it(
    tmp_path: Path, text: str, checks: set[str], steps: int
) -> None:
    spec = parsed(tmp_path, text)
    assert spec.checks == frozenset(checks) and spec.resume_steps == steps
    assert spec.on("T.4") == ("T.4" in checks)


def test_the_default_step_pattern_reads_rlinfs_table_and_its_tqdm_bar() -> None:
    pattern = re.compile(DEFAULT_STEP_PATTERN)
    for line, step, total in (
        ("│ Global Step:    2/5 │ Progress: ████ │ 40.0%", "2", "5"),
        ("Global Step:  40%|████      | 2/5 [00:01<00:02,  1.20it/s]", "2", "5"),
    ):
        m = pattern.search(line)
        assert m is not None and (m.group(1), m.group(2)) == (step, total), line


def test_a_profile_sets_steps_pattern_location_and_expectations(tmp_path: Path) -> None:
    spec = parsed(
        tmp_path,
        "training:\n"
        "  checks: [T.1, T.3]\n"
        "  steps: 7\n"
        "  stepPattern: 'iter (\\d+)'\n"
        "  tensorboard: /mnt/ckpt/tb\n"
        "  expect:\n"
        "    - {tag: rollout/reward, last: 3, above: 0}\n"
        "    - {tag: time/step, agg: max, below: 30}\n",
    )
    assert spec.checks == frozenset({"T.1", "T.3"}) and spec.steps == 7
    assert spec.step_pattern.pattern == r"iter (\d+)" and spec.tensorboard == "/mnt/ckpt/tb"
    assert spec.expect == (
        Expectation("rollout/reward", "mean", 3, above=0.0, where=f"{tmp_path}/p.yaml:7"),
        Expectation("time/step", "max", None, below=30.0, where=f"{tmp_path}/p.yaml:8"),
    )
    assert spec.expect[0].text() == "mean of the last 3 rollout/reward > 0"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("training: 3\n", 1, "training must be a mapping, true or false"),
        ("training:\n  step: 5\n", 2, "training.step is not a setting of training; did you mean"),
        (
            "training:\n  checks: [T.1, 6.5]\n",
            2,
            "6.5 is not a training check: one of T.1, T.2, T.3, T.4",
        ),
        ("training:\n  resume: 3\n", 2, "training.resume must be true, false or {steps: N}"),
        ("training:\n  resume:\n    stepz: 3\n", 3, "training.resume.stepz is not a setting"),
        ("training:\n  resume: {steps: 0}\n", 2, "resume.steps must be a positive whole number"),
        ("training:\n  resume: {steps: true}\n", 2, "resume.steps must be a positive whole"),
        (
            "training:\n  checks: [T.1, T.4]\n  resume: false\n",
            3,
            "training.resume is false, but training.checks names T.4",
        ),
        ("training:\n  steps: 0\n", 2, "training.steps must be a positive whole number"),
        ("training:\n  stepPattern: '('\n", 2, "training.stepPattern is not a regex"),
        ("training:\n  stepPattern: 'step'\n", 2, "needs a group for the step"),
        ("training:\n  tensorboard: tb\n", 2, "must be an absolute path in the Worker"),
        ("training:\n  expect:\n    - {tag: a}\n", 3, "give a bound (above, below or both)"),
        ("training:\n  expect:\n    - {tag: a, agg: p99, above: 1}\n", 3, "agg must be min"),
        ("training:\n  expect:\n    - {tag: a, above: .nan}\n", 3, "above must be a finite number"),
        ("training:\n  expect:\n    - {tag: a, bound: 1}\n", 3, "expect[0].bound is not an expect"),
    ],
)
def test_each_mistake_is_one_line_at_its_place(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    with pytest.raises(InputError) as e:
        parsed(tmp_path, text)
    assert e.value.where == f"{tmp_path}/p.yaml:{line}", e.value.where
    assert message in e.value.reason, e.value.reason


def test_the_command_line_refuses_a_misspelt_training_setting_with_exit_2(tmp_path: Path) -> None:
    profile = (ROOT / "profiles" / "local.yaml").read_text(encoding="utf-8")
    profile = profile.replace("config: ../src/", f"config: {ROOT / 'src'}/")
    profile = profile.replace("job: local/job.yaml", f"job: {ROOT / 'profiles/local/job.yaml'}")
    path = tmp_path / "p.yaml"
    path.write_text(profile + "training:\n  stepz: 5\n", encoding="utf-8")
    line = len(profile.splitlines()) + 2
    res = subprocess.run(
        [sys.executable, "-m", "rlark_acceptance.cli", "preflight", "--profile", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    out = (res.stdout + res.stderr).strip().splitlines()
    assert out == [
        f"rlark-acceptance: {path}:{line}: training.stepz is not a setting of training; "
        "did you mean `steps`?"
    ], out
