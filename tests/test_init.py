"""``rlark-acceptance init``: a profile from a console Job YAML and its RLinf config, filled
in where they say and marked where they do not; the pre-flight on it passes or names only
what is left."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rlark_acceptance.cli import main
from rlark_acceptance.preflight.entry import preflight_profile

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("kubernetes", "rlinf-embodied", "rlinf-embodied-k8s")
NODES = """\
- {name: gpu-node-09, gpus: 8, labels: {kubernetes.io/hostname: gpu-node-09, rlark.io/pool: gpu-b}}
- {name: gpu-node-10, gpus: 8, labels: {kubernetes.io/hostname: gpu-node-10, rlark.io/pool: gpu-b}}
- {name: local-node, gpus: 1, labels: {kubernetes.io/hostname: local-node}}
"""


def config_of(profile: str) -> Path:
    data = yaml.safe_load((ROOT / "profiles" / f"{profile}.yaml").read_text())
    return (ROOT / "profiles" / data["rlinf"]["config"]).resolve()


def init(tmp: Path, profile: str, *extra: str, status: int = 0) -> Path:
    out = tmp / "site" / f"{profile}.yaml"
    job = ROOT / "profiles" / profile / "job.yaml"
    args = ["init", "--job", str(job), "--rlinf-config", str(config_of(profile)), "-o", str(out)]
    assert main([*args, *extra]) == status
    return out


@pytest.mark.parametrize("profile", SHIPPED)
def test_with_a_node_inventory_the_profile_written_passes(tmp_path: Path, profile: str) -> None:
    (tmp_path / "nodes.yaml").write_text(NODES)
    out = init(tmp_path, profile, "--nodes", str(tmp_path / "nodes.yaml"))
    assert "TO FILL" not in out.read_text()
    result = preflight_profile(out)
    assert result.exit_status == 0, [f.message for f in result.findings]
    shipped = yaml.safe_load((ROOT / "profiles" / f"{profile}.yaml").read_text())
    written = yaml.safe_load(out.read_text())
    for key in ("image", "gpus", "expectedOutput", "expectedNode"):
        assert written["runInfo"][key] == shipped["runInfo"][key], key


@pytest.mark.parametrize("profile", SHIPPED)
def test_without_one_only_the_nodes_gpus_are_left_and_named_at_their_line(
    tmp_path: Path, profile: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = init(tmp_path, profile, status=1)
    text = out.read_text()
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if "TO FILL" in t]
    assert text.splitlines()[line - 1].strip().startswith("gpus: null")
    said = capsys.readouterr().out
    assert f"{out.name}:{line}: target.node.gpus" in said


def test_a_sparse_export_marks_each_value_it_does_not_say(tmp_path: Path) -> None:
    job = (ROOT / "profiles" / "kubernetes" / "job.yaml").read_text()
    job = re.sub(r"    nodeSelector:\n(?:      .*\n)+", "", job)
    job = re.sub(r"  namespace: .*\n", "", job, count=1)
    (tmp_path / "job.yaml").write_text(job)
    out = tmp_path / "p.yaml"
    config = config_of("kubernetes")
    args = ["init", "--job", str(tmp_path / "job.yaml"), "--rlinf-config", str(config)]
    assert main([*args, "-o", str(out)]) == 1
    marked = [t.split(":")[0].strip() for t in out.read_text().splitlines() if "TO FILL" in t]
    assert marked == ["namespace", "name", "gpus", "expectedNode"]


def test_an_existing_profile_is_not_replaced_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = init(tmp_path, "kubernetes", status=1)
    before = out.read_text()
    job = str(ROOT / "profiles" / "kubernetes" / "job.yaml")
    args = ["init", "--job", job, "--rlinf-config", str(config_of("kubernetes")), "-o", str(out)]
    assert main(args) == 2
    assert out.read_text() == before
    assert "--force" in capsys.readouterr().err
