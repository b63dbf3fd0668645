"""hydra.searchpath as RLinf's launch scripts set it up: environment first, then the scripts."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from rlark_acceptance.rlinf.config import ConfigLoader
from rlark_acceptance.rlinf.searchpath import Checkout, script_exports

CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "rlinf-configs"
EVAL = CHECKOUT / "evaluations" / "libero" / "libero_10_openvlaoft_eval.yaml"
E2E = CHECKOUT / "tests" / "e2e_tests" / "embodied" / "calvin_ppo_openvlaoft.yaml"

# The shapes of export RLinf's launch scripts use (written here, not copied).
EVAL_SCRIPT = """#!/bin/bash
set -euo pipefail
export EVALUATIONS_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export REPO_PATH="$(dirname "$EVALUATIONS_PATH")"
export EMBODIED_PATH="${REPO_PATH}/examples/embodiment"
export PYTHONPATH="${REPO_PATH}:${PYTHONPATH:-}"
python "${EVALUATIONS_PATH}/eval.py" --config-path "$1"
"""


@pytest.fixture(autouse=True)
def no_launch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EMBODIED_PATH", "REPO_PATH", "EVALUATIONS_PATH"):
        monkeypatch.delenv(name, raising=False)


def fatal(path: Path) -> list[str]:
    return [p.message for p in ConfigLoader().load(path).problems if p.fatal]


def hydra(path: Path) -> dict[str, Any]:
    GlobalHydra.instance().clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with initialize_config_dir(config_dir=str(path.parent), version_base="1.1"):
                return OmegaConf.to_container(compose(config_name=path.stem))  # type: ignore[return-value]
    finally:
        GlobalHydra.instance().clear()


def checkout_with_script(tmp: Path, script: str) -> Path:
    """A checkout holding the sample's embodied configs, one eval config and a launch script."""
    shutil.copytree(
        CHECKOUT / "examples" / "embodiment" / "config", tmp / "examples/embodiment/config"
    )
    (tmp / "evaluations" / "libero").mkdir(parents=True)
    config = tmp / "evaluations" / "libero" / EVAL.name
    shutil.copy(EVAL, config)
    (tmp / "evaluations" / "run_eval.sh").write_text(script)
    return config


def test_an_unset_variable_names_itself_and_that_no_script_sets_it() -> None:
    problems = ConfigLoader().load(EVAL).problems
    (unset,) = [p for p in problems if "environment variable EMBODIED_PATH is not set" in p.message]
    assert "no launch script" in unset.message
    assert unset.location is not None and unset.location.line == 11
    # The eval config's defaults live only on the search path: RLinf could not start.
    assert any("not found" in m and "(EMBODIED_PATH not set)" in m for m in fatal(EVAL))


def test_an_unset_variable_the_config_does_not_need_is_only_noted() -> None:
    own = CHECKOUT / "examples" / "embodiment" / "config" / "maniskill_ppo_openvlaoft.yaml"
    cfg = ConfigLoader().load(own)
    assert [p for p in cfg.problems if p.fatal] == []
    assert any("EMBODIED_PATH" in p.message for p in cfg.problems)


def test_the_launch_script_of_the_checkout_sets_the_search_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = checkout_with_script(tmp_path, EVAL_SCRIPT)
    got = ConfigLoader().load(config)
    assert [p.message for p in got.problems if p.fatal] == []
    # Hydra composes the same once the variable is what the script exports.
    monkeypatch.setenv("EMBODIED_PATH", str(tmp_path / "examples" / "embodiment"))
    assert got.data == hydra(config)


def test_the_environment_wins_over_the_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = checkout_with_script(tmp_path, EVAL_SCRIPT)
    monkeypatch.setenv("EMBODIED_PATH", str(tmp_path / "elsewhere"))
    missing = [m for m in fatal(config) if "not found" in m]
    assert missing and all(str(tmp_path / "elsewhere" / "config") in m for m in missing)


def test_a_script_whose_export_cannot_be_told_offline_is_named(tmp_path: Path) -> None:
    config = checkout_with_script(tmp_path, "export EMBODIED_PATH=$(find_it --fast)\n")
    problems = ConfigLoader().load(config).problems
    (unset,) = [p.message for p in problems if "is not set" in p.message]
    assert "evaluations/run_eval.sh exports it" in unset


def test_variables_set_by_whoever_calls_the_script_are_unknown(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(
        "export EMBODIED_PATH=${REPO_PATH}/examples/embodiment\n"
        'REPO_PATH=${REPO_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}\n'
        "export REPO_PATH\n"
        'export TWO=$(dirname $(dirname "$REPO_PATH"))  # comment\n'
    )
    got = script_exports(script)
    assert "EMBODIED_PATH" not in got  # REPO_PATH comes from the caller at that point
    assert got["REPO_PATH"] == str(tmp_path.parent.parent)
    assert got["TWO"] == str(tmp_path.parent.parent.parent.parent)


def test_the_nearest_script_wins(tmp_path: Path) -> None:
    (tmp_path / "examples" / "a" / "config").mkdir(parents=True)
    (tmp_path / "examples" / "b").mkdir(parents=True)
    (tmp_path / "examples" / "a" / "run.sh").write_text('export P="a-side"\n')
    (tmp_path / "examples" / "b" / "run.sh").write_text('export P="b-side"\n')
    checkout = Checkout(tmp_path)
    near = checkout.lookup("P", tmp_path / "examples" / "a" / "config" / "x.yaml")
    assert near is not None and near.value == "a-side"
    other = checkout.lookup("P", tmp_path / "elsewhere.yaml")
    assert other is not None and other.value == "a-side"  # path order among the rest


def test_a_command_line_search_path_replaces_the_configs() -> None:
    from rlark_acceptance.rlinf.config import Override

    ov = Override.cli(f"hydra.searchpath=[file://{CHECKOUT}/examples/embodiment/config]")
    cfg = ConfigLoader().load(E2E, overrides=[ov])
    assert [p.message for p in cfg.problems if p.fatal] == []


@pytest.mark.parametrize(
    ("override", "accepted"),
    [
        ("hydra.run.dir=/tmp/out", True),
        ("hydra.job.chdir=true", True),
        ("hydra.no_such_key=1", False),
    ],
)
def test_overrides_of_hydras_own_config(
    override: str, accepted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlark_acceptance.rlinf.config import Override

    monkeypatch.setenv("EMBODIED_PATH", str(CHECKOUT / "examples" / "embodiment"))
    cfg = ConfigLoader().load(EVAL, overrides=[Override.cli(override)])
    assert ([p for p in cfg.problems if p.fatal] == []) is accepted


def test_a_variable_the_run_script_sets_is_named_with_it(tmp_path: Path) -> None:
    from rlark_acceptance.rlinf.effective import evaluate
    from rlark_acceptance.rlinf.launch import parse_run_script

    config = tmp_path / EVAL.name  # outside any checkout
    shutil.copy(EVAL, config)
    launch = parse_run_script(
        "cd /workspace/RLinf && EMBODIED_PATH=/workspace/RLinf/examples/embodiment "
        "python examples/embodiment/train_embodied_agent.py --config-path x "
        f"--config-name {config.stem}\n"
    )
    assert launch is not None and "EMBODIED_PATH" in launch.env
    eff = evaluate(ConfigLoader(), config, launch=launch)
    (unset,) = [p.message for p in eff.problems if "is not set" in p.message]
    assert "the run script sets it where RLinf runs" in unset
