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
import os
import re
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


# -- the bad-input classes, one generated shape each ------------------------------------

SMALL = settings(
    max_examples=40,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
keys = st.sampled_from(["a", "b", "c", "d", "loop", "x_1"])
SMOKE = ROOT / "src" / "rlark_acceptance" / "smoke" / "config" / "smoke_ppo_mlp.yaml"


def preflight_json(args: list[str]) -> tuple[int, dict[str, Any], str]:
    status, out, err = run([*args, "--json"])
    return status, (json.loads(out) if status in (0, 1) else {}), err


@st.composite
def cycles(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Keys ``k0: ${k1}``, ``k1: ${k2}``, ..., ``kn: ${k0}``, each possibly inside a string
    (``p_${k1}``) or under a section; and the lines they are written on."""
    members = draw(st.lists(keys, min_size=1, max_size=4, unique=True))
    section = draw(st.sampled_from([None, "extra"]))
    full = [f"{section}.{k}" if section else k for k in members]
    lines = [f"{section}:"] if section else []
    indent = "  " if section else ""
    for i, key in enumerate(members):
        ref = "${" + full[(i + 1) % len(full)] + "}"
        value = draw(st.sampled_from([ref, f"p_{ref}", f"{ref}/x"]))
        lines.append(f"{indent}{key}: '{value}'")
    return full, lines


@SMALL
@given(cycles(), st.booleans())
def test_an_interpolation_cycle_anywhere_fails_at_its_line(
    cycle: tuple[list[str], list[str]], on_log_path: bool
) -> None:
    """RLinf's entry point prints the whole config resolved: a cycle on any key fails it."""
    members, lines = cycle
    text = SMOKE.read_text()
    if on_log_path:  # a key the pre-flight reads (where checkpoints land) refers to it
        text = text.replace('log_path: "results"', "log_path: ${" + members[0] + "}")
    base = text.count("\n")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "c.yaml"
        cfg.write_text(text + "\n".join(lines) + "\n")
        status, out, err = preflight_json(["preflight", "--rlinf-config", str(cfg)])
        assert status == 1, err
        where = {f"{cfg}:{base + 1 + i}" for i, ln in enumerate(lines) if ": '" in ln}
        bad = [f for f in out["findings"] if f["code"] == "config-unloadable"]
        assert all(f["check"] == "1.1" and f["severity"] == "error" for f in bad)
        assert any(f["location"] in where and "never resolves" in f["message"] for f in bad), bad
        if on_log_path:
            assert any("runner.logger.log_path: ${" in f["message"] for f in bad), bad


@st.composite
def invalid_images(draw: st.DrawFn) -> str:
    """References the distribution grammar refuses, each for one named reason."""
    repo = draw(st.sampled_from(["rlinf", "team/rlinf", "registry.example.com/rlinf/rlinf"]))
    tag = draw(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,10}", fullmatch=True))
    hex64 = draw(st.from_regex(r"[0-9a-f]{64}", fullmatch=True))
    return draw(
        st.sampled_from(
            [
                "UPPER_Case:::x",
                f"{repo}:{tag}:{tag}",
                f"{repo.upper()}x/Y:{tag}",
                f"{repo}:.{tag}",
                f"{repo}:-{tag}",
                f"{repo}:{tag * 20}{'x' * 128}",
                f"{repo}:",
                f"{repo} :{tag}",
                f"{repo}@sha256:{hex64[:40]}",
                f"{repo}@sha256:{hex64.upper()}",
                f"{repo}@md5:{hex64[:32]}",
                f"{repo}__-x:{tag}",
                f"{repo}/:{tag}",
                hex64,
            ]
        )
    )


@st.composite
def valid_images(draw: st.DrawFn) -> str:
    component = st.from_regex(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+){0,2}", fullmatch=True)
    path = "/".join(draw(st.lists(component, min_size=1, max_size=3)))
    host = draw(st.sampled_from(["", "registry.example.com/", "localhost:5000/", "Reg.IO:443/"]))
    tag = draw(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True))
    digest = draw(st.sampled_from(["", "@sha256:" + "ab" * 32, "@sha512:" + "0f" * 64]))
    return f"{host}{path}:{tag}{digest}"


def _image_findings(image: str) -> tuple[int, list[dict[str, Any]], str]:
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.yaml"
        job.write_text(JOB.read_text().replace("rlark-acceptance/smoke:0.1.0", json.dumps(image)))
        profile = Path(tmp) / "p.yaml"
        text = PROFILE.read_text().replace("../src/", str(ROOT / "src") + "/")
        text = text.replace("job: local/job.yaml", f"job: {job}")
        profile.write_text(text.replace("rlark-acceptance/smoke:0.1.0", json.dumps(image)))
        status, out, err = preflight_json(["preflight", "--profile", str(profile)])
        return status, out.get("findings", []), err


@SMALL
@given(invalid_images())
def test_an_image_the_reference_grammar_refuses_fails_p1_and_3_4(image: str) -> None:
    status, findings, err = _image_findings(image)
    assert status == 1, err
    invalid = {f["check"] for f in findings if f["code"] == "image-invalid"}
    assert invalid == {"P.1", "3.4"}, findings
    assert all(": " in f["message"] for f in findings if f["code"] == "image-invalid")


@SMALL
@given(valid_images())
def test_an_image_the_reference_grammar_accepts_is_judged_by_its_tag(image: str) -> None:
    status, findings, err = _image_findings(image)
    assert status in (0, 1), err
    assert not [f for f in findings if f["code"] == "image-invalid"], (image, findings)


# What the shape of a field is about, not what YAML can quote: plain words and numbers.
words = st.text("abcXYZ019 _-", max_size=6)
plain = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | words
non_scalars = st.lists(plain, max_size=3) | st.dictionaries(words, plain, max_size=3)


def _flow(value: Any) -> str:
    return json.dumps(value)  # JSON is YAML's flow style, on one line


@SMALL
@given(
    st.lists(
        st.tuples(st.sampled_from(["name", "value", "map"]), non_scalars), min_size=1, max_size=4
    )
)
def test_env_entries_that_are_not_text_are_yaml_shape_findings_at_their_line(
    bad: list[tuple[str, Any]],
) -> None:
    as_map = all(kind == "map" for kind, _ in bad)
    lines = []
    for i, (kind, value) in enumerate(bad):
        if as_map:
            lines.append(f"      V{i}: {_flow(value)}")
        elif kind == "name":
            lines.append(f"    - {{name: {_flow(value)}, value: x}}")
        else:
            lines.append(f"    - {{name: V{i}, value: {_flow(value)}}}")
    original = JOB.read_text()
    head, _, rest = original.partition("    env:\n")
    tail = rest[rest.index("    mounts:") :]
    body = "    env:\n" + "\n".join(lines) + "\n"
    first = head.count("\n") + 2
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.yaml"
        job.write_text(head + body + tail)
        status, out, err = preflight_json(
            ["preflight", "--rlinf-config", str(SMOKE), "--job", str(job)]
        )
        assert status == 1, err
        shapes = {f["location"] for f in out["findings"] if f["code"] == "yaml-shape"}
        assert all(f["check"] == "3.6" for f in out["findings"] if f["code"] == "yaml-shape")
        assert shapes == {f"{job}:{first + i}" for i in range(len(bad))}, out["findings"]


@SMALL
@given(st.lists(plain | st.lists(plain, max_size=2), min_size=1, max_size=3))
def test_node_conditions_that_are_not_mappings_exit_2_at_their_line(bad: list[Any]) -> None:
    text = "kind: NodeList\nitems:\n- metadata: {name: n}\n  status:\n    conditions:\n"
    text += "    - {type: Ready, status: 'True'}\n"
    text += "".join(f"    - {_flow(c)}\n" for c in bad)
    with tempfile.TemporaryDirectory() as tmp:
        nodes = Path(tmp) / "nodes.yaml"
        nodes.write_text(text)
        status, _, err = run(["preflight", "--rlinf-config", str(SMOKE), "--nodes", str(nodes)])
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1, err
        assert f"{nodes}:7: node status.conditions[1]" in lines[0], err


def _profile_text(job: str | Path = JOB) -> str:
    text = PROFILE.read_text().replace("../src/", str(ROOT / "src") + "/")
    return text.replace("job: local/job.yaml", f"job: {job}")


def _line_of(text: str, prefix: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(prefix))


@SMALL
@given(
    st.sampled_from(["name: null", "name: ~", "name: ''", "name: '  '", "name:"]),
    st.text(st.characters(whitelist_categories=("Ll", "Nd")), min_size=1, max_size=12),
)
def test_a_profile_without_a_name_or_with_a_missing_config_dir_exits_2_at_the_line(
    name: str, missing: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "p.yaml"
        text = _profile_text()
        profile.write_text(re.sub(r"^name: .*$", name, text, count=1, flags=re.M))
        status, _, err = run(["preflight", "--profile", str(profile)])
        assert status == 2 and err.count("\n") == 1, err
        assert f"{profile}:{_line_of(text, 'name:')}: name must be text" in err, err
        text = text.replace("configDir: null", f"configDir: nope-{missing}")
        profile.write_text(text)
        status, _, err = run(["preflight", "--profile", str(profile)])
        assert status == 2 and err.count("\n") == 1, err
        line = _line_of(text, "  configDir:")
        assert (
            f"{profile}:{line}: rlinf.configDir {Path(tmp)}/nope-{missing}: no such directory"
            in err
        )


@SMALL
@given(st.sampled_from(["job", "rlinf.config"]), st.sampled_from(["missing", "fifo", "device"]))
def test_a_file_the_profile_names_that_cannot_be_read_names_the_profile_line(
    slot: str, kind: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bad = Path(tmp) / "named.yaml"
        if kind == "fifo":
            os.mkfifo(bad)
        elif kind == "device":
            bad.symlink_to("/dev/null")
        text = _profile_text(bad if slot == "job" else JOB)
        if slot == "rlinf.config":
            text = re.sub(r"^  config: .*$", f"  config: {bad}", text, count=1, flags=re.M)
        profile = Path(tmp) / "p.yaml"
        profile.write_text(text)
        status, _, err = run(["preflight", "--profile", str(profile)])
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1, err
        line = _line_of(text, "job:" if slot == "job" else "  config:")
        reason = {"missing": "no such file", "fifo": "a FIFO", "device": "a device"}[kind]
        assert f"{profile}:{line}: {slot} {bad}: " in lines[0] and reason in lines[0], err
