"""Fields of the wrong type or form, in the Job, the profile and the node list.

A Job YAML is a console export under review: a wrong field is a finding of the check it
breaks, at its line. A profile or a node list is the harness's own input: a wrong field
is exit 2 with the file and line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlark_acceptance.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "profiles" / "local.yaml"
JOB = ROOT / "profiles" / "local" / "job.yaml"
CONFIG = ROOT / "tests" / "data" / "rlinf-configs" / "examples" / "embodiment" / "config"


def profile_copy(tmp: Path, job: Path | None = None) -> str:
    text = PROFILE.read_text().replace("../src/", str(ROOT / "src") + "/")
    return text.replace("job: local/job.yaml", f"job: {job or JOB}")


# (substitution in the Job YAML, check, text of the message)
JOB_CASES = [
    ("kind: Job", "kind: Pod", "5.1", "kind 'Pod'"),
    ("apiVersion: rlark.io/v1alpha1", "apiVersion: v9", "5.1", "apiVersion 'v9'"),
    ("    gpus: 2", "    gpus: 100000000000000000000", "3.3", "not a plausible count"),
    ("    prepareScript: |", "    prepareScript: {a: 1}\n    x: |", "3.5", "must be text"),
    ("    replicas: 1", "    replicas: [1]", "5.2", "must be a count"),
    ("  headRole: worker", "  headRole: {a: 1}", "4.1", "must be text"),
    ("  taskType: custom", "  taskType: [custom]", "2.2", "must be text"),
    ("    header: true", "    header: yes please", "2.4", "true or false"),
    ("    image: rlark-acceptance/smoke:0.1.0", "    image: [rlark]", "3.4", "must be text"),
    (
        "      kubernetes.io/hostname: local-node",
        "      kubernetes.io/hostname: [local-node]",
        "3.2",
        "label value must be text",
    ),
    ("    resources: {}", "    resources: [cpu]", "0.4", "must be a mapping"),
]


@pytest.mark.parametrize(("old", "new", "check", "text"), JOB_CASES, ids=[c[1] for c in JOB_CASES])
def test_a_job_field_of_the_wrong_shape_is_a_finding_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, check: str, text: str
) -> None:
    original = JOB.read_text()
    assert old in original
    job = tmp_path / "job.yaml"
    job.write_text(original.replace(old, new, 1))
    profile = tmp_path / "p.yaml"
    profile.write_text(profile_copy(tmp_path, job))
    status = main(["preflight", "--profile", str(profile), "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert status == 1
    line = original.splitlines().index(next(ln for ln in original.splitlines() if ln == old)) + 1
    hits = [f for f in findings if f["code"] == "yaml-shape" and f["check"] == check]
    assert any(text in f["message"] and f["location"] == f"{job}:{line}" for f in hits), findings


# (regex substitution in the profile, text of the message)
PROFILE_CASES = [
    (r"  adapter: local", "  adapter: nosuch", "target.adapter 'nosuch'"),
    (r"  scheduled: 30", "  scheduled: .nan", "timeouts.scheduled must be positive"),
    (r"  scheduled: 30", "  schedule: 30", "timeouts.schedule is not a timeout; did you mean"),
    (r"  config: \S+", "  config: null", "rlinf.config is missing"),
    (r"  realRobotConfirmed: false", '  realRobotConfirmed: "yes"', "true or false"),
    (r"^name: .*", "name: [a]", "name must be text"),
    (r"  namespace: rlinf-acceptance", "  namespace: [a]", "target.namespace must be text"),
    (r"    labels:", "    labels: [a]\n    xx:", "labels must be a mapping"),
    (r"  node:", "  node: [a]\n  xnode:", "target.node must be a mapping"),
    (r"    gpus: 2", "    gpus: 100000000000000000000", "target.node.gpus must be a count"),
    (r"  startCommand: .*", "  startCommand: {a: 1}", "runInfo.startCommand must be text"),
]


@pytest.mark.parametrize(
    ("pattern", "new", "text"), PROFILE_CASES, ids=[c[1] for c in PROFILE_CASES]
)
def test_a_profile_field_of_the_wrong_shape_exits_2_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pattern: str, new: str, text: str
) -> None:
    original = profile_copy(tmp_path)
    changed, n = re.subn(pattern, new, original, count=1, flags=re.M)
    assert n == 1
    line = original[: re.search(pattern, original, re.M).start()].count("\n") + 1  # type: ignore[union-attr]
    profile = tmp_path / "p.yaml"
    profile.write_text(changed)
    status = main(["preflight", "--profile", str(profile)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert f"{profile}:{line}:" in err[0] and text in err[0], err


NODE_CASES = [
    ("- {name: a, gpus: 8, labels: [x]}\n", 1, "labels must be a mapping"),
    ("- {gpus: 8}\n", 1, "name must be text"),
    ("- {name: a, gpus: -1}\n", 1, "gpus must be a count"),
    ("- {name: a, ready: maybe}\n", 1, "ready must be true or false"),
    ("kind: NodeList\nitems:\n- metadata: [1]\n", 3, "metadata must be a dict"),
    ("kind: NodeList\nitems:\n- metadata: {name: a, labels: [x]}\n", 3, "labels must be a dict"),
    ("kind: NodeList\nitems: 5\n", 2, "items must be a list"),
    (
        "kind: NodeList\nitems:\n- metadata: {name: a}\n"
        "  status: {allocatable: {nvidia.com/gpu: x}}\n",
        4,
        "is not a count",
    ),
    (
        "kind: NodeList\nitems:\n- metadata: {name: a}\n  status:\n    conditions:\n"
        "    - {type: Ready, status: true}\n",
        6,
        "status.conditions[0].status must be text",
    ),
    ("kind: NodeList\nitems:\n- metadata: {name: [a]}\n", 3, "metadata.name must be text"),
    ("kind: Node\nmetadata: {name: a, labels: {x: {y: 1}}}\n", 2, "a label value must be text"),
]


@pytest.mark.parametrize(("content", "line", "text"), NODE_CASES)
def test_a_node_list_of_the_wrong_shape_exits_2_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, line: int, text: str
) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(content)
    cfg = CONFIG / "frankasim_ppo_mlp.yaml"
    status = main(["preflight", "--rlinf-config", str(cfg), "--nodes", str(nodes)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert f"{nodes}:{line}:" in err[0] and text in err[0], err


def test_a_config_dir_that_does_not_exist_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = CONFIG / "frankasim_ppo_mlp.yaml"
    missing = tmp_path / "nope"
    status = main(["preflight", "--rlinf-config", str(cfg), "--config-dir", str(missing)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err == [f"rlark-acceptance: --config-dir {missing}: no such directory"]
