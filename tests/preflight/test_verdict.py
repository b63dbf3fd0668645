"""The verdict says what was judged, and never passes what RLinf would refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "rlinf-configs" / "examples"
PROFILE = ROOT / "profiles" / "local.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    status = main([*args, "--json"])
    return status, json.loads(capsys.readouterr().out)


def config(tmp_path: Path, placement: str, extra: str = "") -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(
        f"cluster:\n  num_nodes: 1\n  component_placement:\n    actor: {placement}\n{extra}"
    )
    return path


@pytest.mark.parametrize("placement", ["'3-1'", "a-b", "'-1'", "1-0:0-1", "{node_group: nope}"])
def test_config_only_runs_refuse_a_placement_rlinf_cannot_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], placement: str
) -> None:
    path = config(tmp_path, placement)
    status, data = run(capsys, "preflight", "--rlinf-config", str(path))
    assert status == 1 and data["verdict"] == "fail"
    hits = [f for f in data["findings"] if f["code"] == "placement-invalid"]
    assert hits and all(h["check"] == "1.1" and h["location"] == f"{path}:4" for h in hits)


def test_config_only_runs_say_how_many_checks_need_more(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = EXAMPLES / "embodiment" / "config" / "frankasim_ppo_mlp.yaml"
    status, data = run(capsys, "preflight", "--rlinf-config", str(cfg))
    cov = data["coverage"]
    assert status == 0 and data["verdict"] == "pass"
    assert cov["static"] == 36
    assert cov["evaluated"] + cov["needJob"] + cov["needProfile"] + cov["needCluster"] == 36
    assert cov["evaluated"] >= 5 and cov["needJob"] > 0 and cov["needProfile"] > 0


def test_the_profile_run_judges_every_static_check(capsys: pytest.CaptureFixture[str]) -> None:
    status, data = run(capsys, "preflight", "--profile", str(PROFILE))
    assert status == 0
    assert data["coverage"]["needJob"] == 0 and data["coverage"]["needProfile"] == 0


def test_the_human_verdict_names_what_was_judged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = EXAMPLES / "embodiment" / "config" / "frankasim_ppo_mlp.yaml"
    main(["preflight", "--rlinf-config", str(cfg)])
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("pre-flight: PASS") and "of 36 static checks judged" in first
    assert "need the Job YAML (--job)" in out


def test_no_gpu_component_needs_zero_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "robot.yaml"
    path.write_text(
        "cluster:\n  num_nodes: 1\n  component_placement:\n"
        "    env: {node_group: franka, placement: 0}\n"
        "  node_groups:\n    - label: franka\n      node_ranks: 0\n"
        "      hardware: {type: Franka, configs: [{robot_ip: 10.0.0.2, node_rank: 0}]}\n"
    )
    _, data = run(capsys, "preflight", "--rlinf-config", str(path))
    assert data["rlinf"]["gpusRequired"] == 0 and data["rlinf"]["gpusAll"] is False


def test_a_finding_in_a_list_item_points_at_the_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(
        "cluster:\n"  # 1
        "  num_nodes: 1\n"  # 2
        "  component_placement:\n"  # 3
        "    actor: {node_group: gpu, placement: 0}\n"  # 4
        "  node_groups:\n"  # 5
        "    - label: gpu\n"  # 6
        "      node_ranks: 0\n"  # 7
        "    - label: gpu\n"  # 8: the same label twice
        "      node_ranks: 0\n"  # 9
    )
    _, data = run(capsys, "preflight", "--rlinf-config", str(path))
    locations = {f["location"] for f in data["findings"] if f["code"] == "placement-invalid"}
    assert locations and all(loc.startswith(f"{path}:") for loc in locations)
    assert any(int(loc.rsplit(":", 1)[1]) >= 8 for loc in locations), locations


@pytest.mark.parametrize("override", ["hydra.run.dir=/tmp/out", "hydra.job.chdir=true"])
def test_hydras_own_overrides_are_accepted(
    capsys: pytest.CaptureFixture[str], override: str
) -> None:
    cfg = EXAMPLES / "embodiment" / "config" / "frankasim_ppo_mlp.yaml"
    status, data = run(capsys, "preflight", "--rlinf-config", str(cfg), "--override", override)
    assert status == 0, data["findings"]


def test_an_unknown_job_normaliser_is_reported_at_the_profiles_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PROFILE.read_text().replace("../src/", str(ROOT / "src") + "/")
    text = text.replace("job: local/job.yaml", f"job: {ROOT / 'profiles' / 'local' / 'job.yaml'}")
    lines = text.splitlines()
    lines.insert(5, "jobNormaliser: site-x")
    profile = tmp_path / "p.yaml"
    profile.write_text("\n".join(lines) + "\n")
    status = main(["preflight", "--profile", str(profile)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert f"{profile}:6:" in err[0] and "site-x" in err[0]


def test_a_config_field_of_the_wrong_type_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, "0", "runner:\n  task_type: [x]\n  logger: {log_path: [1]}\n")
    status, data = run(capsys, "preflight", "--rlinf-config", str(path))
    assert status == 1
    codes = {(f["code"], f["location"]) for f in data["findings"]}
    assert ("config-unloadable", f"{path}:6") in codes, codes
