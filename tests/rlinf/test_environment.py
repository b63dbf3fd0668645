"""The config composed with the Job's own environment: what the role's env, its prepare
script, the run script and the launch script it calls set; never this machine's or the
checkout's other scripts. The checkouts here have RLinf's shapes, written here."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rlark_acceptance.model.findings import Finding, Severity
from rlark_acceptance.preflight.audit import audit
from rlark_acceptance.preflight.entry import preflight_files, preflight_profile
from rlark_acceptance.rlinf.searchpath import run_shell
from tests.rlinf.jobs import (
    FORWARDING_DIFFUSION_SCRIPT,
    diffusion_tree,
    embodied_config,
    job,
)

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"


@pytest.fixture(autouse=True)
def machine_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # This machine setting the variables must not make a Job that does not pass.
    for name in ("REPO_PATH", "DIFFUSION_PATH", "EMBODIED_PATH"):
        monkeypatch.setenv(name, str(tmp_path))


def env_unset(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code == "env-unset"]


def profile_with(tmp_path: Path, was: str, now: str) -> Path:
    """A copy of the real-RLinf profile whose prepare script has ``now`` for ``was``."""
    profiles = tmp_path / "profiles"
    shutil.copytree(ROOT / "profiles" / "rlinf-embodied", profiles / "rlinf-embodied")
    (tmp_path / "third_party").symlink_to(ROOT / "third_party")
    (profiles / "rlinf-embodied.yaml").write_text(PROFILE.read_text().replace(was, now))
    job_yaml = profiles / "rlinf-embodied" / "job.yaml"
    job_yaml.write_text(job_yaml.read_text().replace(was, now))
    return profiles / "rlinf-embodied.yaml"


def test_the_real_rlinf_profile_passes_with_the_variables_its_job_sets() -> None:
    result = preflight_profile(PROFILE)
    assert env_unset(result.findings) == []
    assert [f for f in result.findings if f.severity == Severity.ERROR] == []


def test_a_prepare_script_that_no_longer_exports_repo_path_fails_naming_it(
    tmp_path: Path,
) -> None:
    result = preflight_profile(profile_with(tmp_path, " REPO_PATH=/workspace/RLinf", ""))
    assert result.exit_status == 1
    # One error: Hydra stops at the search path, so nothing it would compose after is said.
    (finding,) = [f for f in result.findings if f.severity == Severity.ERROR]
    assert finding.code == "env-unset" and finding.check == "1.1"
    assert "reads REPO_PATH" in finding.message and "export REPO_PATH" in finding.message
    config = "dosw1_dummy_sac_mlp_pick.yaml"
    line = next(
        i
        for i, t in enumerate(
            (ROOT / "third_party/rlinf-v0.3/tests/e2e_tests/embodied" / config)
            .read_text()
            .splitlines(),
            1,
        )
        if "oc.env:REPO_PATH" in t
    )
    assert str(finding.location).endswith(f"{config}:{line}")


def test_a_diffusion_config_run_directly_without_diffusion_path_fails(tmp_path: Path) -> None:
    config = diffusion_tree(tmp_path)
    run = (
        "cd /workspace/RLinf && python examples/embodiment/train_embodied_agent.py "
        "--config-path /workspace/RLinf/examples/diffusion/config --config-name diff"
    )
    result = preflight_files(config, job=job(tmp_path, run, "export REPO_PATH=/workspace/RLinf"))
    (finding,) = env_unset(result.findings)
    assert "reads DIFFUSION_PATH" in finding.message
    assert finding.location is not None and finding.location.line == 6


def test_the_launch_script_the_run_command_calls_sets_what_it_exports(tmp_path: Path) -> None:
    config = diffusion_tree(tmp_path)
    run = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"
    result = preflight_files(config, job=job(tmp_path, run))
    assert env_unset(result.findings) == []
    assert not [f for f in result.findings if f.check == "1.1"]


@pytest.mark.parametrize(
    ("prepare", "env", "run_prefix"),
    [
        ("export DIFFUSION_PATH=/workspace/RLinf/examples/diffusion", "", ""),
        ("true", "{name: DIFFUSION_PATH, value: /workspace/RLinf/examples/diffusion}", ""),
        ("true", "", "DIFFUSION_PATH=/workspace/RLinf/examples/diffusion "),
    ],
    ids=["prepare-script", "role-env", "run-command"],
)
def test_each_place_a_job_sets_a_variable_counts(
    tmp_path: Path, prepare: str, env: str, run_prefix: str
) -> None:
    config = diffusion_tree(tmp_path)
    run = (
        f"cd /workspace/RLinf && {run_prefix}REPO_PATH=/workspace/RLinf python "
        "examples/embodiment/train_embodied_agent.py "
        "--config-path /workspace/RLinf/examples/diffusion/config --config-name diff"
    )
    result = preflight_files(config, job=job(tmp_path, run, prepare, env))
    assert env_unset(result.findings) == []


def test_a_value_that_reads_a_variable_the_job_never_sets_is_named_at_its_key(
    tmp_path: Path,
) -> None:
    config = diffusion_tree(tmp_path)
    text = config.read_text() + (
        "  data_dir: ${oc.env:DATA_DIR}/ocr\n  cache_dir: ${oc.env:CACHE_DIR,/tmp/cache}\n"
    )
    config.write_text(text)
    run = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"
    (finding,) = env_unset(preflight_files(config, job=job(tmp_path, run)).findings)
    assert finding.message.startswith("RLinf would not start: runner.data_dir:")
    assert "reads DATA_DIR" in finding.message  # CACHE_DIR has a default
    assert (
        finding.location is not None
        and finding.location.line
        == text.splitlines().index("  data_dir: ${oc.env:DATA_DIR}/ocr") + 1
    )


def test_a_launcher_beside_the_config_that_never_sets_its_variable_fails_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # RLinf's e2e configs run through the run.sh beside them, which reads REPO_PATH from
    # its caller and sets no EMBODIED_PATH; examples/embodiment's script exports both.
    for name in ("REPO_PATH", "EMBODIED_PATH"):
        monkeypatch.delenv(name)
    tree = tmp_path / "RLinf"
    (tree / "examples" / "embodiment" / "config" / "env").mkdir(parents=True)
    (tree / "examples" / "embodiment" / "config" / "env" / "toy.yaml").write_text("name: toy\n")
    (tree / "examples" / "embodiment" / "run_embodiment.sh").write_text(
        'export EMBODIED_PATH="$( cd "$(dirname "${BASH_SOURCE[0]}" )" && pwd )"\n'
        'export REPO_PATH=$(dirname $(dirname "$EMBODIED_PATH"))\n'
    )
    e2e = tree / "tests" / "e2e_tests" / "embodied"
    e2e.mkdir(parents=True)
    (e2e / "run.sh").write_text(
        "export PYTHONPATH=${REPO_PATH}:$PYTHONPATH\n"
        "python ${REPO_PATH}/examples/embodiment/train_embodied_agent.py --config-name $1\n"
    )
    body = "\ncluster:\n  num_nodes: 1\n  component_placement:\n    actor,env,rollout: 0\n"
    for name, var, sub in (
        ("reads_embodied", "EMBODIED_PATH", ""),
        ("reads_repo", "REPO_PATH", "/examples/embodiment"),
    ):
        (e2e / f"{name}.yaml").write_text(
            f"defaults:\n  - env/toy@env.train\nhydra:\n  searchpath:\n"
            f"    - file://${{oc.env:{var}}}{sub}/config/\n" + body
        )
    # A launcher that exports it from what its caller sets (${REPO_PATH}/...) sets it.
    evals = tree / "tests" / "e2e_tests" / "evaluations"
    evals.mkdir(parents=True)
    (evals / "run.sh").write_text("export EMBODIED_PATH=${REPO_PATH}/examples/embodiment\n")
    shutil.copy(e2e / "reads_embodied.yaml", evals / "eval_reads_embodied.yaml")
    rows = {Path(str(r["path"])).stem: r for r in audit([e2e, evals])}
    assert rows["eval_reads_embodied"]["error"] is None
    error = str(rows["reads_embodied"]["error"])
    assert "EMBODIED_PATH is not set" in error and "run.sh" in error and "never sets" in error
    # A variable its launcher takes from its caller is what the checkout's scripts export.
    assert rows["reads_repo"]["error"] is None and rows["reads_repo"]["singleNode"]


def test_several_assignments_on_one_export_line_are_each_exported() -> None:
    got = run_shell(
        'export PYTHONUNBUFFERED=1 REPO_PATH=/workspace/RLinf DATA="$REPO_PATH/data"\n'
        "LOCAL=1 python x.py\n",
        {},
    )
    assert got == {
        "DATA": "/workspace/RLinf/data",
        "PYTHONUNBUFFERED": "1",
        "REPO_PATH": "/workspace/RLinf",
    }


def test_what_a_launch_script_passes_on_is_read_from_the_script_the_job_calls(
    tmp_path: Path,
) -> None:
    # run_diffusion.sh is in no table: its forced log path is read from it.
    config = diffusion_tree(tmp_path)
    (config.parents[1] / "run_diffusion.sh").write_text(FORWARDING_DIFFUSION_SCRIPT)
    run = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"
    result = preflight_files(config, job=job(tmp_path, run))
    assert result.rlinf is not None
    assert result.rlinf.log_path == "/workspace/RLinf/logs/TIMESTAMP-diff"
    outside = [f for f in result.findings if f.code == "output-outside-mounts"]
    assert outside and all(
        "run_diffusion.sh sets runner.logger.log_path" in f.message for f in outside
    )
    assert all(f.location is not None and f.location.file.endswith("job.yaml") for f in outside)
    # It forwards its arguments past the first: an override there wins over its own.
    forwarded = preflight_files(
        config, job=job(tmp_path, run + " runner.logger.log_path=/mnt/ckpt/logs")
    )
    assert forwarded.rlinf is not None and forwarded.rlinf.log_path == "/mnt/ckpt/logs"
    assert [f for f in forwarded.findings if f.code == "output-outside-mounts"] == []


def test_a_launch_script_that_forwards_nothing_drops_the_override_and_adds_its_own(
    tmp_path: Path,
) -> None:
    config = embodied_config(diffusion_tree(tmp_path).parents[3])
    run = (
        "cd /workspace/RLinf && NODES=2 bash examples/embodiment/run_embodiment.sh e LIBERO "
        "runner.logger.log_path=/mnt/ckpt/logs"
    )
    result = preflight_files(config, job=job(tmp_path, run))
    codes = {f.code for f in result.findings}
    assert {"launcher-drops-arguments", "output-outside-mounts"} <= codes
    assert result.rlinf is not None and result.rlinf.num_nodes == 2
    # Its own log path, as the script writes it (no dated folder: not the table's).
    assert result.rlinf.log_path == "/workspace/RLinf/logs/e"


def test_a_launch_script_that_is_not_on_this_machine_is_not_judged_as_setting_nothing(
    tmp_path: Path,
) -> None:
    config = diffusion_tree(tmp_path)
    script = config.parents[1] / "run_diffusion.sh"
    script.rename(script.with_name("other.sh"))
    run = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"
    result = preflight_files(config, job=job(tmp_path, run))
    assert env_unset(result.findings) == []
    assert result.rlinf is not None
    assert not [p for p in result.rlinf.problems if p.fatal]


def test_a_prepare_script_that_sources_an_unread_file_still_fails_the_unset_variable(
    tmp_path: Path,
) -> None:
    # Not the launch script: a file the prepare script sources does not make it unjudged.
    was = "export PYTHONUNBUFFERED=1 REPO_PATH=/workspace/RLinf"
    now = "source /opt/venv/bin/activate && export PYTHONUNBUFFERED=1"
    (finding,) = env_unset(preflight_profile(profile_with(tmp_path, was, now)).findings)
    assert "reads REPO_PATH" in finding.message


def test_the_launch_script_is_read_from_the_image_workspace_the_profile_declares(
    tmp_path: Path,
) -> None:
    # The site's own config lies outside any RLinf tree: the tree is where the profile says
    # the image's /workspace/RLinf comes from.
    config = diffusion_tree(tmp_path)
    (config.parents[1] / "run_diffusion.sh").write_text(FORWARDING_DIFFUSION_SCRIPT)
    site = tmp_path / "site"
    site.mkdir()
    (site / "diff.yaml").write_text(config.read_text())
    run = "cd /workspace/RLinf && bash examples/diffusion/run_diffusion.sh diff"
    job(site, run)
    text = PROFILE.read_text().replace("../third_party/rlinf-v0.3}", "../RLinf}")
    text = re.sub(r"(?m)^  config: .*$", "  config: diff.yaml", text)
    text = text.replace("job: rlinf-embodied/job.yaml", "job: job.yaml")
    (site / "p.yaml").write_text(text)
    result = preflight_profile(site / "p.yaml")
    assert env_unset(result.findings) == []
    assert result.rlinf is not None
    assert result.rlinf.log_path == "/workspace/RLinf/logs/TIMESTAMP-diff"
