"""Hostile and careless input in every slot: one line naming the file, exit 2, at once.

Run in-process (``main``): an exception escaping ``main`` fails the test with its
traceback, which is exactly what the contract forbids.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rlark_acceptance.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests" / "data" / "rlinf-configs" / "examples"
GOOD = EXAMPLES / "embodiment" / "config" / "maniskill_ppo_openvlaoft.yaml"


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _device(p: Path) -> None:
    p.symlink_to("/dev/zero")


def _loop(p: Path) -> None:
    other = p.with_name("other-" + p.name)
    p.symlink_to(other)
    other.symlink_to(p)


def _text(content: str) -> Callable[[Path], None]:
    def write(p: Path) -> None:
        p.write_text(content)

    return write


DEEP_FLOW = "cluster: " + "[" * 3000 + "]" * 3000 + "\n"
DEEP_BLOCK = "".join("  " * i + f"k{i}:\n" for i in range(400)) + "  " * 400 + "v: 1\n"
TAG = "cluster: !!python/object/apply:os.system [echo hi]\nspec: {}\n"
DUPLICATE = "cluster:\n  num_nodes: 1\ncluster:\n  num_nodes: 2\n"
MANY_NODES = "cluster:\n  x: [" + ", ".join(["1"] * 300_000) + "]\n"
MALFORMED_BIG = "cluster:\n" + "  - [1, 2, 3]\n" * 120_000 + " bad: [\n"

KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "device": (_device, "not a regular file (a device)"),
    "symlink-loop": (_loop, "symlink loop"),
    "deep-flow": (_text(DEEP_FLOW), "nest"),
    "deep-block": (_text(DEEP_BLOCK), "nested deeper than"),
    "tag": (_text(TAG), "YAML tag"),
    "duplicate-key": (_text(DUPLICATE), "duplicate key 'cluster'"),
    "many-nodes": (_text(MANY_NODES), "YAML nodes"),
    "malformed-big": (_text(MALFORMED_BIG), "YAML nodes"),
}


def slot_args(slot: str, bad: Path, tmp: Path) -> list[str]:
    if slot == "config":
        return ["preflight", "--rlinf-config", str(bad)]
    if slot == "job":
        return ["preflight", "--rlinf-config", str(GOOD), "--job", str(bad)]
    if slot == "nodes":
        return ["preflight", "--rlinf-config", str(GOOD), "--nodes", str(bad)]
    if slot == "profile":
        return ["preflight", "--profile", str(bad)]
    if slot == "profile-config":  # a profile naming the bad file as its RLinf config
        profile = tmp / "profile.yaml"
        profile.write_text(
            f"name: p\ntarget: {{adapter: local}}\nrlinf: {{config: {bad}}}\n"
            "runInfo: {image: 'img:1', gpus: 8, startCommand: 'echo'}\n"
        )
        return ["preflight", "--profile", str(profile)]
    raise AssertionError(slot)


@pytest.mark.parametrize("slot", ["config", "job", "nodes", "profile", "profile-config"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_input_slot_refuses_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slot: str, kind: str
) -> None:
    make, reason = KINDS[kind]
    bad = tmp_path / "bad.yaml"
    make(bad)
    t0 = time.perf_counter()
    status = main(slot_args(slot, bad, tmp_path))
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2, err
    assert len(err) == 1 and str(bad) in err[0] and reason in err[0], err
    # Not a speed assertion (bench/ measures speed): a hang would show as minutes.
    assert elapsed < 30


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_configs_keeps_each_failure_in_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    make, reason = KINDS[kind]
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a_good.yaml").write_text(GOOD.read_text().replace("defaults:", "old_defaults:"))
    make(tree / "b_bad.yaml")
    (tree / "c_good.yaml").write_text(
        "cluster:\n  num_nodes: 1\n  component_placement:\n    actor: 0-1\n"
    )
    status = main(["configs", str(tree), "--json"])
    out = capsys.readouterr().out
    import json

    rows = {Path(r["path"]).name: r for r in json.loads(out)}
    assert status == 1
    assert reason in rows["b_bad.yaml"]["error"]
    assert rows["c_good.yaml"]["error"] is None and rows["c_good.yaml"]["gpusRequired"] == 2
    assert "a_good.yaml" in rows


def test_an_override_nested_deeply_is_refused_as_a_finding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    deep = "cluster.x=" + "{a:" * 2000 + "1" + "}" * 2000
    status = main(["preflight", "--rlinf-config", str(GOOD), "--override", deep, "--json"])
    out = capsys.readouterr().out
    assert status == 1
    assert "config-unloadable" in out and "nested" in out
