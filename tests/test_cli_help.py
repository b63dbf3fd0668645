"""The command line as a user reads it: each help whole and ending with the command's exit
status, the check IDs ``--cluster`` names those the cluster's inputs decide (and the docs
say), ``--override`` applied with ``--profile`` as with ``--rlinf-config``, and
``./run --help`` a request answered with status 0."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from rlark_acceptance.cli import build_parser, main
from rlark_acceptance.model.findings import Severity
from rlark_acceptance.model.profile import NodeSpec
from rlark_acceptance.preflight.entry import preflight_profile

REPO = Path(__file__).resolve().parents[1]
LOCAL = REPO / "profiles" / "local.yaml"


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


@pytest.mark.parametrize("name", list(_commands()))
def test_each_help_is_whole_and_ends_with_its_exit_status(name: str) -> None:
    command = _commands()[name]
    assert command.description and command.description.rstrip().endswith("."), name
    text = command.format_help()
    said = text[text.index("exit status") :]
    for status in ("0", "1", "2"):
        assert re.search(rf"^\s+{status}\b", said, re.M) or f" {status} " in said, (name, said)


def _cluster_ids_in(text: str) -> set[str]:
    return set(re.findall(r"\b\d\.\d\b", text))


def test_the_cluster_help_names_the_checks_the_cluster_decides_as_the_docs_do() -> None:
    """The IDs whose verdict the cluster's inputs (its clusters, its nodes) can turn, found
    by giving the pre-flight of the default profile a cluster that fails each way."""
    elsewhere = {"kubernetes.io/hostname": "local-node"}
    cases: list[dict[str, object]] = [
        {"clusters": ["elsewhere"]},  # the Job's cluster is not one it has
        {"nodes": []},  # no node for the selection
        {"nodes": [NodeSpec("local-node", dict(elsewhere), gpus=1)]},  # too few GPUs
        {"nodes": [NodeSpec("gpu-node-2", dict(elsewhere), gpus=8)]},  # not the expected one
    ]
    turned: set[str] = set()
    for case in cases:
        result = preflight_profile(LOCAL, **case)  # type: ignore[arg-type]
        turned |= {f.check for f in result.findings if f.severity == Severity.ERROR}
    assert turned == {"3.1", "3.2", "3.3", "5.5", "5.7"}
    help_text = next(
        a.help for a in _commands()["preflight"]._actions if "--cluster" in a.option_strings
    )
    assert _cluster_ids_in(help_text or "") == turned
    for page in ("contract.md", "how-to/site-profile.md"):
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        said = re.search(r"cluster checks \(([^)]*)", text)
        assert said and _cluster_ids_in(said.group(1)) == turned, page


def test_an_override_applies_with_a_profile_as_with_an_rlinf_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["preflight", "--profile", str(LOCAL)]) == 0
    capsys.readouterr()
    status = main(["preflight", "--profile", str(LOCAL), "--override", "cluster.num_nodes=2"])
    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith("pre-flight: REDIRECT"), out
    assert "effective cluster.num_nodes=2" in out
    assert "0.1 num-nodes-not-1  --override" in out


def test_run_help_is_answered_on_standard_output_with_status_0() -> None:
    asked = subprocess.run(
        [str(REPO / "run"), "--help"], capture_output=True, text=True, timeout=30
    )
    assert (asked.returncode, asked.stderr) == (0, "")
    assert "./run acceptance" in asked.stdout and "Exit status" in asked.stdout
    wrong = subprocess.run(
        [str(REPO / "run"), "nosuch"], capture_output=True, text=True, timeout=30
    )
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert "unknown command 'nosuch'" in wrong.stderr
