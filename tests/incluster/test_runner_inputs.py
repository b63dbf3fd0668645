"""What ``--in-cluster`` sends to the cluster, and its usage errors, without a cluster.

The ConfigMap holds the profile line for line (only the connection commented out) and the
files it names at their relative places; the Job references Secrets and never holds a
value; a profile it cannot run is one line naming the file and line, exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rlark_acceptance.incluster import bundle, manifests
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.profile import load_profile

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "profiles" / "kubernetes.yaml"


def test_the_profile_is_kept_line_for_line_without_its_kubeconfig() -> None:
    pack = bundle.bundle(load_profile(K8S))
    original = K8S.read_text().splitlines()
    sent = pack.files[pack.profile].decode().splitlines()
    assert len(sent) == len(original)
    changed = [(a, b) for a, b in zip(original, sent, strict=True) if a != b]
    assert [a.strip() for a, _ in changed] == ["kubeconfig: ../.testenv/harness.kubeconfig"]
    assert "kubeconfig" not in yaml.safe_load("\n".join(sent))["target"]
    # The files it names, where its relative paths find them.
    assert set(pack.files) >= {
        "profiles/kubernetes.yaml",
        "profiles/kubernetes/job.yaml",
        "src/rlark_acceptance/smoke/config/smoke_ppo_mlp.yaml",
    }


def test_a_kubeconfig_not_on_a_line_of_its_own_is_named(tmp_path: Path) -> None:
    text = K8S.read_text().replace(
        "kubeconfig: ../.testenv/harness.kubeconfig", "kubeconfig: |\n    x"
    )
    (tmp_path / "kubernetes").mkdir()
    (tmp_path / "kubernetes" / "job.yaml").write_text(
        (REPO / "profiles/kubernetes/job.yaml").read_text()
    )
    profile = tmp_path / "p.yaml"
    profile.write_text(text.replace("config: ../src/", f"config: {REPO / 'src'}/"))
    with pytest.raises(InputError, match=r"p\.yaml:11: --in-cluster needs target.kubeconfig"):
        bundle.bundle(load_profile(profile))


def test_the_job_references_secrets_only() -> None:
    pack = bundle.bundle(load_profile(K8S))
    spec = manifests.RunnerSpec(
        image="registry.rlark.test/rlark-acceptance:0.1.0",
        namespace="rlinf-acceptance",
        record="s3://b/p/x",
        secrets=["site-object-store"],
        secret_keys=[manifests.SecretKey("TOKEN", "site-token", "token")],
    )
    job = manifests.job("rlark-runner-x-000000", "x", pack, spec)
    cm = manifests.config_map("rlark-runner-x-000000", pack, spec)
    # Only references: no field of the Job or the ConfigMap holds a credential's value.
    assert "valueFrom" in json.dumps(job) and "AWS_SECRET" not in json.dumps([job, cm])
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["envFrom"] == [{"secretRef": {"name": "site-object-store"}}]
    refs = [e["valueFrom"] for e in container["env"] if "valueFrom" in e]
    assert {"secretKeyRef": {"name": "site-token", "key": "token"}} in refs
    assert pod["serviceAccountName"] == "rlark-acceptance-runner"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # Every ConfigMap key is mounted at the file's relative path.
    paths = {i["path"] for i in pod["volumes"][0]["configMap"]["items"]}
    assert paths == set(pack.files) and set(cm["data"]) == {
        i["key"] for i in pod["volumes"][0]["configMap"]["items"]
    }


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_local_profile_is_refused_at_its_adapter_line(tmp_path: Path) -> None:
    res = _command("--profile", "profiles/local.yaml", "--in-cluster", "--record-store", "s3://b/p")
    assert res.returncode == 2, res.stdout[-2000:]
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and "--in-cluster runs a profile of the kubernetes adapter" in lines[0]
    assert "local.yaml" in lines[0] and "Traceback" not in res.stdout + res.stderr


def test_no_record_store_is_a_usage_error() -> None:
    res = _command("--profile", str(K8S), "--in-cluster")
    assert res.returncode == 2
    assert res.stdout.strip() == "error: --in-cluster needs --record-store s3://bucket/prefix"


def _runner_spec(*args: str) -> manifests.RunnerSpec:
    """The runner's settings as ``pytest features/ ARGS`` makes them (pytest's own parsing of
    the command line, with the project's plugins)."""
    from _pytest.config import _prepareconfig

    from fixtures.incluster import runner_spec

    argv = ["features/", "-p", "no:cacheprovider", "--profile", str(K8S), "--in-cluster", *args]
    config = _prepareconfig(argv)
    try:
        return runner_spec(config)
    finally:
        config._ensure_unconfigure()


def test_the_history_and_the_budget_policy_go_to_the_runners_suite() -> None:
    """B.1 is decided in the runner's Pod: without them every run there was a first run."""
    spec = _runner_spec(
        *("--record-store", "s3://b/records", "--history", "s3://b/history"),
        *("--budgets", "strict", "-m", "runtime"),
    )
    assert spec.pytest_args == [
        "-m",
        "runtime",
        "--history",
        "s3://b/history",
        "--budgets",
        "strict",
    ]
    assert spec.pytest_args == manifests.runner_args(bundle.bundle(load_profile(K8S)), spec)[-6:]


def test_a_history_folder_is_a_usage_error_in_cluster(tmp_path: Path) -> None:
    res = _command(
        *("--profile", str(K8S), "--in-cluster", "--record-store", "s3://b/p"),
        *("--history", str(tmp_path)),
    )
    assert res.returncode == 2, res.stdout[-2000:]
    assert res.stdout.strip() == (
        f"error: --history {tmp_path}: the runner's Pod cannot reach a folder of this machine; "
        "with --in-cluster the history is s3://bucket/prefix"
    )


def test_inside_a_runner_what_it_submits_is_owned_by_its_pod(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlark_acceptance.adapters.kubernetes import owner

    body: dict[str, object] = {"metadata": {"name": "j"}}
    owner.own_by_runner(body)
    assert "ownerReferences" not in body["metadata"]  # type: ignore[operator]
    monkeypatch.setenv(owner.RUNNER_POD_ENV, "runner-abc")
    monkeypatch.setenv(owner.RUNNER_UID_ENV, "1234")
    owner.own_by_runner(body)
    assert body["metadata"]["ownerReferences"] == [  # type: ignore[index]
        {"apiVersion": "v1", "kind": "Pod", "name": "runner-abc", "uid": "1234"}
    ]


def test_a_fetched_record_names_the_users_files_at_their_lines(tmp_path: Path) -> None:
    from rlark_acceptance.incluster.launch import users_paths

    pack = bundle.bundle(load_profile(K8S))
    in_pod = pack.pod_path("profiles/kubernetes/job.yaml")
    summary = {
        "profile": pack.pod_path(pack.profile),
        "earliestFailure": {"check": "3.7", "location": f"{in_pod}:31"},
    }
    (tmp_path / "run-summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (tmp_path / "allure-results").mkdir()
    (tmp_path / "allure-results" / "r-result.json").write_text(f'{{"m": "{in_pod}:31"}}')
    users_paths(tmp_path, pack)
    back = json.loads((tmp_path / "run-summary.json").read_text(encoding="utf-8"))
    assert Path(back["profile"]).resolve() == K8S.resolve()
    where, line = back["earliestFailure"]["location"].rsplit(":", 1)
    assert (Path(where).resolve(), line) == (
        (REPO / "profiles/kubernetes/job.yaml").resolve(),
        "31",
    )
    assert bundle.MOUNT not in (tmp_path / "allure-results" / "r-result.json").read_text()


def _with_history(tmp_path: Path, history: str) -> tuple[Path, int]:
    """The Kubernetes profile with ``history:`` added (its relative files made absolute, so
    that it loads from elsewhere), and that line's number."""
    text = K8S.read_text(encoding="utf-8")
    for rel in ("../src/", "../.testenv/", "kubernetes/job.yaml"):
        text = text.replace(f" {rel}", f" {K8S.parent}/{rel}")
    profile = tmp_path / "site.yaml"
    profile.write_text(f"{text.rstrip()}\n{history}\n", encoding="utf-8")
    return profile, text.rstrip().count("\n") + 2


@pytest.mark.parametrize(
    "history", ["history: ../acceptance-history", "history: {path: ../h, last: 3}"]
)
def test_a_history_folder_of_the_profile_is_a_usage_error_in_cluster(
    tmp_path: Path, history: str
) -> None:
    """The runner's Pod would keep the runs in a folder of its own: each a first run."""
    profile, line = _with_history(tmp_path, history)
    res = _command("--profile", str(profile), "--in-cluster", "--record-store", "s3://b/p")
    assert res.returncode == 2, res.stdout[-2000:]
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {profile}:{line}") and "history ../" in lines[0], lines
    assert "with --in-cluster the history is s3://bucket/prefix" in lines[0]
    assert "Traceback" not in res.stdout + res.stderr
    # ``--history s3://…`` replaces it: the runner is given that one.
    from rlark_acceptance.incluster.launch import _history_reachable

    spec = _runner_spec("--record-store", "s3://b/p", "--history", "s3://b/h")
    assert "--history" in spec.pytest_args
    _history_reachable(load_profile(profile), spec)  # no error
