"""What a run script really starts: config, working directory, overrides, dropped arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.model.findings import Location
from rlark_acceptance.rlinf.launch import parse_run_script
from rlark_acceptance.rlinf.launcher import read_launcher


def texts(script: str) -> list[str]:
    launch = parse_run_script(script)
    assert launch is not None
    return [o.text for o in launch.overrides]


def test_python_entry_point_with_cd_and_overrides() -> None:
    launch = parse_run_script(
        "source /opt/venv/bin/activate\n"
        "cd /workspace/RLinf && python examples/embodiment/train_embodied_agent.py \\\n"
        "  --config-path examples/embodiment/config --config-name maniskill_ppo_openvlaoft \\\n"
        "  runner.logger.log_path=/mnt/ckpt/logs cluster.num_nodes=1 +x=1 ~y\n",
        Location("job.yaml", 12),
    )
    assert launch is not None
    assert launch.workdir == "/workspace/RLinf"
    assert launch.config_name == "maniskill_ppo_openvlaoft"
    assert launch.config_dir == "/workspace/RLinf/examples/embodiment/config"
    assert [o.text for o in launch.overrides] == [
        "runner.logger.log_path=/mnt/ckpt/logs",
        "cluster.num_nodes=1",
        "+x=1",
        "~y",
    ]
    assert launch.overrides[0].origin == Location("job.yaml", 13)
    assert launch.relative_without_cd == []


def test_run_embodiment_forces_the_log_path_into_the_image_and_drops_overrides() -> None:
    launch = parse_run_script(
        "cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh "
        "maniskill_ppo_openvlaoft runner.logger.log_path=/mnt/ckpt/logs"
    )
    assert launch is not None and launch.launcher is not None
    assert launch.config_name == "maniskill_ppo_openvlaoft"
    assert launch.config_dir == "/workspace/RLinf/examples/embodiment/config"
    assert [o.text for o in launch.overrides] == [
        "runner.logger.log_path=/workspace/RLinf/logs/TIMESTAMP-maniskill_ppo_openvlaoft"
    ]
    # Its second argument is the robot platform: the override never reaches RLinf.
    assert launch.ignored == ["runner.logger.log_path=/mnt/ckpt/logs"]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("cd /r && NODES=2 bash examples/embodiment/run_embodiment.sh x", "cluster.num_nodes=2"),
        (
            "export NODES=2\ncd /r && bash examples/embodiment/run_embodiment.sh x",
            "cluster.num_nodes=2",
        ),
        ("cd /r && STEPS=5 bash examples/embodiment/run_embodiment.sh x", "runner.max_steps=5"),
    ],
)
def test_launch_script_environment_becomes_overrides(script: str, expected: str) -> None:
    assert expected in texts(script)


def test_sentinel_minus_two_means_no_override() -> None:
    assert texts("cd /r && NODES=-2 bash examples/embodiment/run_embodiment.sh x") == [
        "runner.logger.log_path=/r/logs/TIMESTAMP-x"
    ]


def test_reasoning_launcher_keeps_the_config_log_path() -> None:
    launch = parse_run_script("cd /w && bash examples/reasoning/run_main_grpo_math.sh qwen-1")
    assert launch is not None
    assert launch.overrides == [] and launch.config_dir == "/w/examples/reasoning/config/math"


def test_relative_paths_without_cd_are_named() -> None:
    launch = parse_run_script("bash examples/embodiment/run_embodiment.sh x")
    assert launch is not None
    assert launch.relative_without_cd == ["examples/embodiment/run_embodiment.sh"]
    assert launch.resolve("logs") is None


def test_relative_cd_builds_on_the_previous_one() -> None:
    launch = parse_run_script("cd /workspace\ncd RLinf\npython train.py --config-name a k=1")
    assert launch is not None and launch.workdir == "/workspace/RLinf"
    assert launch.resolve("../results") == "/workspace/results"


def test_no_rlinf_command() -> None:
    assert parse_run_script("echo hello && sleep 1") is None


def test_python_dash_m_entry_point() -> None:
    launch = parse_run_script("python -m rlark_acceptance.smoke --config-name=s a.b=1")
    assert launch is not None
    assert launch.config_name == "s" and [o.text for o in launch.overrides] == ["a.b=1"]


def test_rlinf_s_own_launch_script_read_says_what_the_table_says() -> None:
    # The reader and the fallback table agree on RLinf 0.3's run_embodiment.sh as shipped.
    root = Path(__file__).resolve().parents[2] / "third_party" / "rlinf-v0.3"
    text = (root / "examples" / "embodiment" / "run_embodiment.sh").read_text()
    script = "/workspace/RLinf/examples/embodiment/run_embodiment.sh"
    read = read_launcher(text, script, ["x", "LIBERO", "a=1"], {})
    table = parse_run_script("cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh x")
    assert read is not None and table is not None
    assert read.config_dir == table.config_dir and read.config_name == "x"
    assert [o.text for o in table.overrides] == list(read.fixed)
    assert read.forwards_from is None and read.reads == 2  # NAME, ROBOT_PLATFORM
