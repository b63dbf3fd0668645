"""0.4's redirect points at what to change: the line that makes the job multi-node (an
override in the run script or the profile, where one set ``cluster.num_nodes``; the config's
own line otherwise; the Job's roles or a role's resources when they are the reason), never
the config's ``cluster:`` line for a value it does not hold."""

from __future__ import annotations

from pathlib import Path

from rlark_acceptance.model.findings import Location
from rlark_acceptance.preflight.entry import preflight_profile

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "local.yaml"
JOB = REPO / "profiles" / "local" / "job.yaml"
CONFIG = REPO / "src" / "rlark_acceptance" / "smoke" / "config" / "smoke_ppo_mlp.yaml"


def _profile(tmp_path: Path, *, job: str | None = None, config: str | None = None) -> Path:
    """A copy of the default profile, its Job YAML and RLinf config replaced when given."""
    text = PROFILE.read_text(encoding="utf-8").replace("../", f"{REPO}/")
    if job is not None:
        (tmp_path / "job.yaml").write_text(job, encoding="utf-8")
        text = text.replace("job: local/job.yaml", f"job: {tmp_path / 'job.yaml'}")
    else:
        text = text.replace("job: local/job.yaml", f"job: {JOB}")
    if config is not None:
        (tmp_path / "smoke_ppo_mlp.yaml").write_text(config, encoding="utf-8")
        text = text.replace(f"config: {CONFIG}", f"config: {tmp_path / 'smoke_ppo_mlp.yaml'}")
    out = tmp_path / "p.yaml"
    out.write_text(text, encoding="utf-8")
    return out


def _redirect(profile: Path) -> Location:
    result = preflight_profile(profile)
    [found] = [f for f in result.findings if f.code == "redirect-multi-node"]
    assert found.location is not None
    return found.location


def _line(path: Path, text: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if text in t)


def _assert_redirect_at(profile: Path, file: Path, text: str) -> None:
    """The redirect of ``profile`` names ``file`` at the line holding ``text``."""
    where = _redirect(profile)
    assert (where.file, where.line) == (str(file), _line(file, text))


def test_a_run_script_override_is_blamed_at_its_line(tmp_path: Path) -> None:
    job = JOB.read_text(encoding="utf-8").replace(
        "log_path=/mnt/ckpt/logs\n", "log_path=/mnt/ckpt/logs cluster.num_nodes=2\n", 1
    )
    _assert_redirect_at(_profile(tmp_path, job=job), tmp_path / "job.yaml", "cluster.num_nodes=2")


def test_a_profile_override_is_blamed_at_its_line(tmp_path: Path) -> None:
    profile = _profile(tmp_path)
    profile.write_text(
        profile.read_text().replace("  overrides: []", "  overrides:\n  - cluster.num_nodes=3")
    )
    _assert_redirect_at(profile, profile, "cluster.num_nodes=3")


def test_the_configs_own_value_is_blamed_at_its_line(tmp_path: Path) -> None:
    config = CONFIG.read_text(encoding="utf-8")
    assert "  num_nodes: 1\n" in config
    profile = _profile(tmp_path, config=config.replace("  num_nodes: 1\n", "  num_nodes: 2\n"))
    where = _redirect(profile)  # the config as the pre-flight shows it: its path from here
    assert where.line == _line(tmp_path / "smoke_ppo_mlp.yaml", "num_nodes: 2")


def test_two_workers_are_blamed_on_the_jobs_roles(tmp_path: Path) -> None:
    job = JOB.read_text(encoding="utf-8").replace("    replicas: 1\n", "    replicas: 2\n", 1)
    _assert_redirect_at(_profile(tmp_path, job=job), tmp_path / "job.yaml", "  roles:")


def test_resources_are_blamed_at_the_roles_resources(tmp_path: Path) -> None:
    job = JOB.read_text(encoding="utf-8").replace(
        "    resources: {}\n", "    resources:\n      memory: 64Gi\n", 1
    )
    _assert_redirect_at(_profile(tmp_path, job=job), tmp_path / "job.yaml", "    resources:")
