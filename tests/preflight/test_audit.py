"""``configs`` as a library call (``preflight/audit.py``): which files are rows, what a row
says, and that its messages go through the audit's redaction. The command line's face is in
``tests/test_cli.py``."""

from __future__ import annotations

from pathlib import Path

from rlark_acceptance.preflight.audit import audit, walk
from rlark_acceptance.secrets import Redactor
from tests.fake_secrets import FakeSecrets

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "rlinf-configs" / "examples"


def test_the_walk_finds_yaml_files_sorted_and_skips_hidden_folders(tmp_path: Path) -> None:
    for rel in ("b.yaml", "a/c.yml", ".git/d.yaml", "e.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x: 1\n")
    found = [p.relative_to(tmp_path).as_posix() for p in walk([tmp_path])]
    assert found == ["a/c.yml", "b.yaml"]


def test_rows_classify_real_configs_and_skip_sub_configs() -> None:
    rows = {Path(r["path"]).name: r for r in audit([EXAMPLES / "embodiment" / "config"])}
    assert len(rows) == 35  # env/, model/ and the other groups' files have no row of their own
    one = rows["maniskill_ppo_openvlaoft.yaml"]
    assert (one["numNodes"], one["gpusRequired"], one["singleNode"], one["error"]) == (
        1,
        8,
        True,
        None,
    )
    robot = rows["dosw1_pick_sac_flow.yaml"]
    assert robot["realRobot"] and not robot["singleNode"]
    assert robot["redirectReasons"] == ["num_nodes=2", "node_groups=2"]
    # A default that needs the launch script's environment stays in its row, named.
    assert "EMBODIED_PATH not set" in rows["libero_spatial_dagger_openpi_lerobot.yaml"]["error"]


def test_an_error_row_is_redacted_by_the_audits_redactor(tmp_path: Path) -> None:
    token = FakeSecrets(seed=3).format_tokens()["github-token"]
    (tmp_path / "c.yaml").write_text(
        f"cluster:\n  num_nodes: 1\n  component_placement:\n    actor: {token}\n"
    )
    run = Redactor()
    [row] = audit([tmp_path], redactor=run)
    assert "is not a number or a range" in row["error"] and token not in row["error"]
    assert token in run.remembered()  # the audit's run learnt it, and only that run
    assert Redactor().remembered() == []
