"""The command-line contract on generated input, valid and broken.

Whatever is handed in as RLinf config, Job YAML, profile, node list or override: the exit
status is 0, 1 or 2; on 2, stderr is one line naming the file; nothing escapes ``main``
(an exception would fail the test with its traceback); and each run ends within a bound
(Hypothesis' deadline, generous: speed is measured in bench/, this only catches hangs).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlark_acceptance.cli import main

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tests" / "data" / "rlinf-configs" / "examples" / "embodiment" / "config"
GOOD = CONFIG / "frankasim_ppo_mlp.yaml"
JOB = ROOT / "profiles" / "local" / "job.yaml"
PROFILE = ROOT / "profiles" / "local.yaml"

SETTINGS = settings(
    max_examples=150,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True)
    | st.text(max_size=20)
    | st.sampled_from(["0-7", "all", "3-1", "a-b", "-1", "1-0:0-1", "${x}", "${oc.env:NOPE}"])
)
trees = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "cluster",
                    "num_nodes",
                    "component_placement",
                    "node_groups",
                    "runner",
                    "spec",
                    "roles",
                    "gpus",
                    "image",
                    "name",
                    "labels",
                    "defaults",
                    "hydra",
                    "target",
                    "rlinf",
                    "metadata",
                    "kind",
                    "apiVersion",
                    "timeouts",
                    "runInfo",
                    "hardware",
                    "actor",
                ]
            )
            | st.text(max_size=6),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)

# Text edits that break YAML in the ways careless and hostile input does.
BREAKS = [
    "",
    "\n  bad: [\n",
    "\n!!python/object/apply:os.system [x]\n",
    "\ncluster: 1\ncluster: 2\n",
    "\n" + "[" * 500,
    "\x00",
    "\t\t: :",
    "\n---\nsecond: doc\n",
    "\na: &a [*a]\n",
]


def _dump(tree: Any) -> str:
    try:
        return yaml.safe_dump(tree, allow_unicode=True)
    except (yaml.YAMLError, ValueError, RecursionError):
        return repr(tree)


@st.composite
def documents(draw: st.DrawFn, base: Path | None = None) -> str:
    """A generated YAML document, a real one mutated, or either broken."""
    if base is not None and draw(st.booleans()):
        text = base.read_text()
        lines = text.splitlines()
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        replacement = draw(st.sampled_from(["", "  x: [", "gpus: [1]", "name: {a: 1}", "- 3"]))
        lines[i] = (
            lines[i][: len(lines[i]) // 2] + replacement if draw(st.booleans()) else (replacement)
        )
        text = "\n".join(lines) + "\n"
    else:
        text = _dump(draw(trees))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.sampled_from(BREAKS)) + text[cut:]
    return text


overrides = st.lists(
    st.sampled_from(
        [
            "cluster.num_nodes=2",
            "+x=1",
            "~runner",
            "hydra.run.dir=.",
            "a=[",
            "=",
            "x={a:{b:1}}",
            "cluster.component_placement={actor: 3-1}",
            "hydra.job.chdir=true",
            "k=${oc.env:X}",
        ]
    )
    | st.text(max_size=30),
    max_size=3,
)


def run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def assert_contract(status: int, err: str, named: list[Path]) -> None:
    assert status in (0, 1, 2), (status, err)
    assert "Traceback" not in err
    if status == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert any(str(p) in lines[0] for p in named) or "rlark-acceptance:" in lines[0], err


@SETTINGS
@given(documents(GOOD), overrides)
def test_any_config_and_overrides(text: str, ovs: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "c.yaml"
        cfg.write_text(text)
        args = ["preflight", "--rlinf-config", str(cfg), *(f"--override={o}" for o in ovs)]
        status, _, err = run(args)
        assert_contract(status, err, [cfg])
        if status == 2:
            assert str(cfg) in err  # an override problem is a finding, never exit 2


@SETTINGS
@given(documents(JOB))
def test_any_job_yaml(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.yaml"
        job.write_text(text)
        status, _, err = run(["preflight", "--rlinf-config", str(GOOD), "--job", str(job)])
        assert_contract(status, err, [job])
        if status == 2:
            assert str(job) in err


@SETTINGS
@given(documents(PROFILE))
def test_any_profile(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "p.yaml"
        profile.write_text(text.replace("../src/", str(ROOT / "src") + "/"))
        status, _, err = run(["preflight", "--profile", str(profile)])
        assert_contract(status, err, [profile])


@SETTINGS
@given(documents(ROOT / "tests" / "data" / "nodes" / "nodelist.yaml"))
def test_any_node_list(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        nodes = Path(tmp) / "nodes.yaml"
        nodes.write_text(text)
        args = ["preflight", "--rlinf-config", str(GOOD), "--nodes", str(nodes)]
        status, _, err = run(args)
        assert_contract(status, err, [nodes])
        if status == 2:
            assert str(nodes) in err


@SETTINGS
@given(st.lists(documents(GOOD), min_size=1, max_size=4))
def test_any_configs_tree_keeps_failures_in_rows(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(texts):
            (Path(tmp) / f"c{i}.yaml").write_text(text)
        status, out, err = run(["configs", tmp, "--json"])
        assert status in (0, 1), err
        assert err == ""
        rows = json.loads(out)
        assert all(Path(r["path"]).parent == Path(tmp) for r in rows)
        assert (status == 1) == any(r["error"] for r in rows)
