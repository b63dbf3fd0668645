"""The command line as CI pipelines use it: docs/contract.md §3 shapes, exit statuses, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "tests" / "data" / "rlinf-configs" / "examples"
PROFILE = ROOT / "profiles" / "local.yaml"


# docs/contract.md §3: the classification both `preflight --json` and `configs --json` carry.
CLASSIFICATION = {
    "numNodes",
    "gpusRequired",
    "gpusAll",
    "singleNode",
    "realRobot",
    "redirectReasons",
}


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # A generous bound only stops a hang from blocking the suite; speed is in bench/.
    return subprocess.run(
        [sys.executable, "-m", "rlark_acceptance.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_preflight_json_follows_the_contract() -> None:
    out = cli("preflight", "--profile", str(PROFILE), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    # docs/contract.md §3, plus the additive "coverage" (what was judged).
    assert set(data) == {"verdict", "rlinf", "findings", "coverage"}
    assert data["verdict"] == "pass"
    assert set(data["rlinf"]) == CLASSIFICATION | {"path", "logPath", "checkpointDir"}
    assert data["rlinf"]["checkpointDir"] == "/mnt/ckpt/logs/smoke_ppo_mlp/checkpoints"
    for f in data["findings"]:
        assert set(f) == {"check", "severity", "code", "message", "location"}


def test_preflight_redirect_exits_1_with_reasons() -> None:
    cfg = EXAMPLES / "reasoning/config/math/qwen2.5-1.5b-grpo-megatron.yaml"
    out = cli("preflight", "--rlinf-config", str(cfg), "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["verdict"] == "redirect"
    assert data["rlinf"]["redirectReasons"] == ["num_nodes=16"]


def test_preflight_override_changes_the_effective_value() -> None:
    cfg = EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"
    out = cli(
        "preflight", "--rlinf-config", str(cfg), "--override", "cluster.num_nodes=2", "--json"
    )
    data = json.loads(out.stdout)
    assert out.returncode == 1 and data["rlinf"]["numNodes"] == 2
    f = next(f for f in data["findings"] if f["check"] == "0.1")
    assert f["location"] == "--override"


def test_the_contract_example_job_loses_its_checkpoints(tmp_path: Path) -> None:
    """docs/contract.md §1's Job runs run_embodiment.sh with an override it never forwards."""
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: rlark.io/v1alpha1\nkind: Job\nmetadata: {name: rlinf-maniskill-ppo}\n"
        "spec:\n  taskType: custom\n  headRole: worker\n  runScript: |\n"
        "    cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh "
        "maniskill_ppo_openvlaoft runner.logger.log_path=/mnt/ckpt/logs\n"
        "  roles:\n  - name: worker\n    header: true\n    replicas: 1\n    cluster: gpu-a\n"
        "    gpus: 8\n    image: registry.example.com/rlinf:v0.3.0-cuda12.4\n"
        "    mounts:\n"
        "    - {name: ckpt, type: objectStorage, bucket: b, containerPath: /mnt/ckpt}\n"
    )
    cfg = EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"
    out = cli("preflight", "--rlinf-config", str(cfg), "--job", str(job), "--json")
    data = json.loads(out.stdout)
    codes = {(f["check"], f["code"]) for f in data["findings"]}
    assert ("3.7", "output-outside-mounts") in codes
    assert ("4.4", "launcher-drops-arguments") in codes
    assert data["rlinf"]["logPath"].startswith("/workspace/RLinf/logs/")
    loc = next(f["location"] for f in data["findings"] if f["code"] == "launcher-drops-arguments")
    assert loc.endswith("job.yaml:7")


def test_configs_audits_a_tree_and_survives_a_broken_file(tmp_path: Path) -> None:
    tree = tmp_path / "configs"
    tree.mkdir()
    (tree / "good.yaml").write_text(
        "cluster:\n  num_nodes: 1\n  component_placement:\n    actor,rollout: 0-3\n"
    )
    (tree / "broken.yaml").write_text("cluster:\n  num_nodes: [1\n")
    (tree / "reversed.yaml").write_text(
        "cluster:\n  num_nodes: 1\n  component_placement:\n    actor: 7-0\n"
    )
    (tree / "sub.yaml").write_text("just: a sub-config\n")
    out = cli("configs", str(tree), "--json")
    rows = {Path(r["path"]).name: r for r in json.loads(out.stdout)}
    assert set(rows) == {"good.yaml", "broken.yaml", "reversed.yaml"}
    assert all(set(r) == CLASSIFICATION | {"path", "error"} for r in rows.values())
    assert rows["good.yaml"]["gpusRequired"] == 4 and rows["good.yaml"]["error"] is None
    assert "broken.yaml:" in rows["broken.yaml"]["error"]
    assert "reversed range" in rows["reversed.yaml"]["error"]
    assert out.returncode == 1


def test_configs_on_the_real_sample() -> None:
    out = cli("configs", str(EXAMPLES), "--json")
    rows = json.loads(out.stdout)
    assert len(rows) == 50  # the top-level configs: sub-configs have no cluster section
    broken = [r for r in rows if r["error"]]
    # The sample lacks the training_backend/ folder one config composes from.
    assert [Path(r["path"]).name for r in broken] == ["libero_spatial_dagger_openpi_lerobot.yaml"]


# -- bad input: one line naming the file (and line), exit 2, never a traceback ---------------

BAD_INPUTS = {
    "missing": None,
    "directory": "<dir>",
    "binary": b"\x00\x01\x02cluster",
    "malformed": "cluster:\n  num_nodes: 1\n   bad: [\n",
    "not-a-mapping": "- just\n- a list\n",
    "empty": "",
    "alias-bomb": "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "cluster: {num_nodes: 1, x: *f}\n",
    "recursive": "a: &a [*a]\n",
    "not-utf8": b"cluster:\n  name: \xff\xfe\n",
    "huge": "x",
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_unreadable_config_exits_2_naming_the_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.yaml"
    content = BAD_INPUTS[kind]
    if content == "<dir>":
        path.mkdir()
    elif kind == "huge":
        with path.open("w") as fh:
            fh.write("cluster:\n  num_nodes: 1\n" + "# padding\n" * 1_000_000)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    out = cli("preflight", "--rlinf-config", str(path))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], out.stderr
    if kind == "malformed":
        assert f"{path}:4" in lines[0] or f"{path}:3" in lines[0]


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("cluster:\n  num_nodes: many\n  component_placement: {actor: 0-1}\n", "num-nodes-invalid"),
        ("cluster:\n  num_nodes: 1\n  component_placement: {actor: 7-0}\n", "placement-invalid"),
    ],
)
def test_readable_but_invalid_content_is_a_finding_with_exit_1(
    tmp_path: Path, content: str, code: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content)
    job = tmp_path / "job.yaml"
    job.write_text("spec:\n  roles:\n  - name: worker\n    gpus: 2\n")
    out = cli("preflight", "--rlinf-config", str(path), "--job", str(job), "--json")
    assert out.returncode == 1, out.stderr
    findings = json.loads(out.stdout)["findings"]
    hit = next(f for f in findings if f["code"] == code)
    assert hit["location"].startswith(str(path) + ":")


def test_bad_profile_and_usage_exit_2(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("target:\n  adapter: local\ntimeouts:\n  scheduled: soon\n")
    out = cli("preflight", "--profile", str(prof))
    assert out.returncode == 2 and f"{prof}:4" in out.stderr and "Traceback" not in out.stderr
    out = cli("preflight")
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_human_output_groups_by_doc_step_with_the_remedy(tmp_path: Path) -> None:
    cfg = EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"
    out = cli("preflight", "--rlinf-config", str(cfg), "--override", "cluster.num_nodes=2")
    assert out.returncode == 1
    assert "§0 确认任务适合单节点运行" in out.stdout
    assert "→ §0: make the effective cluster.num_nodes 1" in out.stdout


def test_job_fields_of_the_wrong_type_are_findings_with_lines(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: rlark.io/v1alpha1\nkind: Job\nmetadata: {name: x}\nspec:\n"
        "  taskType: custom\n  headRole: worker\n  runScript: 42\n  roles:\n"
        "  - name: worker\n    header: true\n    gpus: eight\n    image: a:v1\n"
        '    env: "FOO=bar"\n    mounts: {ckpt: /mnt}\n'
    )
    cfg = EXAMPLES / "embodiment/config/frankasim_ppo_mlp.yaml"
    out = cli("preflight", "--rlinf-config", str(cfg), "--job", str(job), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    found = {(f["check"], f["code"], f["location"]) for f in json.loads(out.stdout)["findings"]}
    assert ("3.3", "gpus-invalid", f"{job}:11") in found
    assert ("3.6", "yaml-shape", f"{job}:13") in found
    assert ("3.7", "yaml-shape", f"{job}:14") in found
    assert ("4.4", "yaml-shape", f"{job}:7") in found


NODES = ROOT / "tests" / "data" / "nodes" / "nodelist.yaml"


@pytest.mark.parametrize(
    ("selector", "gpus", "expect"),
    [
        ("kubernetes.io/hostname: gpu-node-07", 8, set()),
        ("rlark.io/pool: gpu-a", 8, {("3.2", "selector-not-one-node")}),  # 07, 08 (09 cordoned)
        ("kubernetes.io/hostname: gpu-node-09", 8, {("3.2", "selector-not-one-node")}),
        ("kubernetes.io/hostname: gpu-node-07", 16, {("3.3", "gpus-over-capacity")}),
    ],
)
def test_node_selection_against_a_kubectl_node_list(
    tmp_path: Path, selector: str, gpus: int, expect: set[tuple[str, str]]
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: rlark.io/v1alpha1\nkind: Job\nmetadata: {name: x}\nspec:\n"
        "  taskType: custom\n  headRole: worker\n  runScript: |\n"
        "    cd /w && python t.py --config-name maniskill_ppo_openvlaoft "
        "runner.logger.log_path=/mnt/ckpt/logs\n  roles:\n  - name: worker\n    header: true\n"
        f"    cluster: gpu-a\n    nodeSelector: {{{selector}}}\n    gpus: {gpus}\n"
        "    image: r/rlinf:v1\n    mounts:\n"
        "    - {name: c, type: objectStorage, bucket: b, containerPath: /mnt/ckpt}\n"
    )
    cfg = EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"
    out = cli(
        "preflight", "--rlinf-config", str(cfg), "--job", str(job), "--nodes", str(NODES), "--json"
    )
    errors = {
        (f["check"], f["code"])
        for f in json.loads(out.stdout)["findings"]
        if f["severity"] == "error" and f["check"] in ("3.2", "3.3")
    }
    assert errors == expect


def test_an_unknown_job_normaliser_is_a_usage_error(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("spec: {}\n")
    cfg = EXAMPLES / "embodiment/config/frankasim_ppo_mlp.yaml"
    out = cli(
        "preflight", "--rlinf-config", str(cfg), "--job", str(job), "--job-normaliser", "site-x"
    )
    assert out.returncode == 2 and "site-x" in out.stderr and "Traceback" not in out.stderr


def test_without_a_job_yaml_the_console_preview_is_rendered_from_the_run_info(
    tmp_path: Path,
) -> None:
    """A profile with runInfo only: the Job is rendered as the console would render it."""
    import yaml

    prof = yaml.safe_load(PROFILE.read_text())
    prof.pop("job")
    prof["rlinf"]["config"] = str((PROFILE.parent / prof["rlinf"]["config"]).resolve())
    prof["target"]["cluster"] = "local"
    prof["target"]["mounts"] = [
        {
            "name": "ckpt",
            "type": "objectStorage",
            "bucket": "rlinf-ckpt",
            "containerPath": "/mnt/ckpt",
        },
        {
            "name": "data",
            "type": "hostPath",
            "hostPath": "/srv/data",
            "containerPath": "/mnt/data",
            "readOnly": True,
        },
        {
            "name": "models",
            "type": "hostPath",
            "hostPath": "/srv/models",
            "containerPath": "/mnt/models",
            "readOnly": True,
        },
    ]
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(prof))
    out = cli("preflight", "--profile", str(path), "--json")
    data = json.loads(out.stdout)
    assert out.returncode == 0, data["findings"]
    # The same profile with an unpinned image: the finding points into the rendered YAML.
    prof["runInfo"]["image"] = "registry.example.com/rlinf:latest"
    path.write_text(yaml.safe_dump(prof))
    data = json.loads(cli("preflight", "--profile", str(path), "--json").stdout)
    f = next(f for f in data["findings"] if f["check"] == "3.4")
    assert f["code"] == "image-latest" and "rendered Job YAML" in f["location"]
