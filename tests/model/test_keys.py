"""Every key a user writes is known or answered (``model.keys``): a misspelt key of the
profile or the release file is one line at its ``file:line`` with the key meant, exit 2; in
the Job YAML, a key near a field the harness reads is a warning at its line, and the
console's own fields pass. Paths a profile names expand ``~`` and ``$VAR``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlark_acceptance.cli import main
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import closest, near_misses, refuse_unknown
from rlark_acceptance.model.paths import user_path
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.model.yamlsrc import parse_yaml

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("expectedNdoe", "expectedNode"),  # two letters swapped
        ("expectedNod", "expectedNode"),  # one dropped
        ("ExpectedNode", "expectedNode"),  # case
        ("expected_node", "expectedNode"),  # snake case
        ("expectedNodee", "expectedNode"),  # one doubled
        ("jb", "job"),  # a short key: one edit
        ("queue", None),  # nothing near
        ("jxx", None),  # ... nor two edits in a short key
    ],
)
def test_the_key_meant_is_the_nearest_one(typed: str, meant: str | None) -> None:
    known = ("job", "expectedNode", "expectedOutput", "name")
    assert closest(typed, known) == meant


def test_a_refusal_names_the_line_the_key_and_the_key_meant() -> None:
    doc = parse_yaml("runInfo:\n  gpus: 2\n  expectedNdoe: n\n", "p.yaml")
    with pytest.raises(InputError) as e:
        refuse_unknown(doc, "runInfo", doc.data["runInfo"], ("gpus", "expectedNode"))
    assert str(e.value) == (
        "p.yaml:3: runInfo.expectedNdoe is not a setting of runInfo; did you mean `expectedNode`?"
    )
    doc = parse_yaml("a: 1\nzzz: 2\n", "r.yaml")
    with pytest.raises(InputError) as e:
        refuse_unknown(doc, (), doc.data, ("a", "b"), what="a key of a release file")
    assert str(e.value) == "r.yaml:2: zzz is not a key of a release file: one of a, b"


def test_near_misses_leave_far_keys_alone() -> None:
    raw = {"nodeSelecter": {}, "annotations": {}, "gpus": 1}
    assert list(near_misses(raw, ("nodeSelector", "gpus"))) == [("nodeSelecter", "nodeSelector")]


def _copy(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """``profiles/<name>`` with ``old`` replaced once, its relative paths made absolute."""
    text = (PROFILES / name).read_text(encoding="utf-8")
    assert old in text, old
    out = tmp_path / name
    out.write_text(text.replace(old, new, 1).replace("../", f"{REPO}/"), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("timeouts:", "timeout:", "timeout is not a key of a profile; did you mean `timeouts`?"),
        ("expectedNode:", "expectedNdoe:", "did you mean `expectedNode`?"),
        ("  namespace:", "  namespce:", "target.namespce is not a target setting of the local"),
        ("    gpus: 2", "    gpsu: 2", "target.node.gpsu is not a node setting"),
        ("  configDir:", "  configdir:", "did you mean `configDir`?"),
        ("paths: {data:", "paths: {dta:", "runInfo.paths.dta is not a setting of runInfo.paths"),
        ("realRobotConfirmed:", "realRobotConfirm:", "did you mean `realRobotConfirmed`?"),
    ],
)
def test_the_pre_flight_refuses_a_misspelt_profile_key_in_one_line_exit_2(
    tmp_path: Path, old: str, new: str, says: str
) -> None:
    profile = _copy(tmp_path, "local.yaml", old, new)
    line = next(
        i for i, text in enumerate(profile.read_text().splitlines(), 1) if new.strip() in text
    )
    out = subprocess.run(
        [sys.executable, "-m", "rlark_acceptance.cli", "preflight", "--profile", str(profile)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == ""
    [said] = out.stderr.strip().splitlines()
    assert said.startswith(f"rlark-acceptance: {profile}:{line}: "), said
    assert says in said, said


def test_a_plugin_adapter_that_declares_nothing_still_refuses_a_near_miss(tmp_path: Path) -> None:
    """Its options are its own business, but ``namespce`` is a slip of a key every target
    has. (Loading stops before the adapter is looked up for a key it does not know.)"""
    doc = parse_yaml("target:\n  queue: gpu-a\n  namespce: x\n", "p.yaml")
    from rlark_acceptance.model.profile import _target_keys

    _target_keys(doc, {"queue": "gpu-a"}, "site-queue")  # its own option: taken
    with pytest.raises(InputError, match=r"^p\.yaml:3: target\.namespce .*`namespace`\?$"):
        _target_keys(doc, doc.data["target"], "site-queue")


def test_a_near_miss_in_the_job_yaml_is_a_warning_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nodeSelecter`` would leave the Worker's node unchosen in silence; a field the
    console adds (``annotations``, ``status``) is not the harness's to judge."""
    job_text = (PROFILES / "local" / "job.yaml").read_text(encoding="utf-8")
    job_text = job_text.replace("    nodeSelector:", "    nodeSelecter:", 1)
    job_text = job_text.replace("  namespace: rlinf", "  annotations: {a: b}\n  namespace: rlinf")
    job_text += "status: {phase: Pending}\n"
    job = tmp_path / "job.yaml"
    job.write_text(job_text, encoding="utf-8")
    profile = _copy(tmp_path, "local.yaml", "job: local/job.yaml", f"job: {job}")
    status = main(["preflight", "--profile", str(profile), "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    line = job_text.splitlines().index("    nodeSelecter:") + 1
    slips = [f for f in findings if f["code"] == "field-near-miss"]
    assert slips == [
        {
            **slips[0],
            "check": "3.2",
            "severity": "warning",
            "location": f"{job}:{line}",
            "message": "spec.roles[0].nodeSelecter is not a field the harness reads; "
            "did you mean `nodeSelector`?",
        }
    ], findings
    assert status == 0  # the declared node is the only one: nothing else is wrong


def test_paths_expand_home_and_variables_relative_ones_stay_by_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SITE", str(tmp_path / "site"))
    base = tmp_path / "profiles"
    assert user_path("~/.kube/config", base, ValueError) == tmp_path / "home/.kube/config"
    assert user_path("$SITE/a.yaml", base, ValueError) == tmp_path / "site/a.yaml"
    assert user_path("${SITE}/a.yaml", base, ValueError) == tmp_path / "site/a.yaml"
    assert user_path("conf/a.yaml", base, ValueError) == base / "conf/a.yaml"
    with pytest.raises(ValueError, match=r"^\$NOT_SET_49 is not set in the environment$"):
        user_path("$NOT_SET_49/a.yaml", base, ValueError)


def test_a_profile_reads_its_kubeconfig_and_config_through_home_and_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RLARK_REPO_49", str(REPO))
    profile = _copy(
        tmp_path, "kubernetes.yaml", "kubeconfig: ../.testenv", "kubeconfig: ~/.testenv"
    )
    text = profile.read_text().replace(f"config: {REPO}/src", "config: $RLARK_REPO_49/src")
    profile.write_text(text)
    loaded = load_profile(profile)
    assert loaded.target.kubeconfig == str(tmp_path / ".testenv" / "harness.kubeconfig")
    assert loaded.rlinf_config == REPO / "src/rlark_acceptance/smoke/config/smoke_ppo_mlp.yaml"
    profile.write_text(text.replace("$RLARK_REPO_49", "$NOT_SET_49"))
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "$RLARK_REPO_49" in t)
    with pytest.raises(InputError) as e:
        load_profile(profile)
    assert e.value.where == f"{profile}:{line}"
    assert e.value.reason.endswith("$NOT_SET_49 is not set in the environment")
