"""``pytest features/ --profile profiles/kubernetes.yaml --in-cluster`` on testenv's real node.

The runner Job runs the harness image (``testenv image harness``) on ``gpu-node-09`` under
the runner's ServiceAccount; it reaches the API server by in-cluster config (the
``kubernetes`` Service) and the S3 server by the cluster's ``s3`` Service, with the S3
credentials from a Secret of the namespace (the site's; made here, never in the ConfigMap).
The command streams its log and fetches its record back; the record is read as a user
reads it (run-summary.json, JUnit). Then: nothing of the run is left on the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.incluster.manifests import LABEL
from rlark_acceptance.storage.store import S3Store
from testenv import harness_image, state
from tests.adapters.k8s_suite import CHECKOUT, Site, schedulable_again
from tests.run.suite_runs import STEP6_ONLY

# Alone at the cluster: each test holds that nothing at all is left in the shared namespace.
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.cluster_alone]

REPO = Path(__file__).resolve().parents[2]
SECRET = "site-object-store"
RECORDS = "s3://rlinf-ckpt/acceptance-records"


@pytest.fixture(scope="module")
def runner_image(kube_env: KubeEnv, s3_env: S3Env) -> str:
    harness_image.import_into_node()
    return harness_image.HARNESS_IMAGE


@pytest.fixture
def site_secret(kube_env: KubeEnv, s3_env: S3Env) -> Iterator[str]:
    """The object store's credentials as the site keeps them: a Secret of the namespace."""
    core = kube_env.core()
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET},
        "stringData": {
            "AWS_ACCESS_KEY_ID": s3_env.access_key,
            "AWS_SECRET_ACCESS_KEY": s3_env.secret_key,
        },
    }
    core.create_namespaced_secret(kube_env.namespace, body)
    try:
        yield SECRET
    finally:
        core.delete_namespaced_secret(SECRET, kube_env.namespace)


def command(tmp_path: Path, profile: Path, secret: str, *extra: str) -> tuple[list[str], Path]:
    run = tmp_path / "checkout"
    run.mkdir(exist_ok=True)
    for name in CHECKOUT:
        if not (run / name).exists():
            (run / name).symlink_to(REPO / name)
    reports = run / "reports"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "features/",
        "--profile",
        str(profile),
        "--in-cluster",
        "--record-store",
        RECORDS,
        "--runner-secret",
        secret,
        # The cluster's own way to the object store: its Service, by the variables the
        # kubelet sets for it.
        "--runner-env",
        "AWS_ENDPOINT_URL=http://$(S3_SERVICE_HOST):$(S3_SERVICE_PORT)",
        "--runner-env",
        "AWS_DEFAULT_REGION=us-east-1",
        "--runner-node-selector",
        "kubernetes.io/hostname=gpu-node-09",
        "--reports-dir",
        str(reports),
        "-m",
        STEP6_ONLY,
        *extra,
    ]
    return argv, reports


def user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG"))}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    # The fetch reads the record with boto3's standard chain, as `testenv env` gives it.
    env.update({k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")})
    return env


def started_until(tmp_path: Path, argv: list[str], text: str) -> tuple[subprocess.Popen[str], str]:
    """The command started as a user starts it, read until a line shows ``text``."""
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path / "checkout",
        env=user_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    out = ""
    for line in proc.stdout:
        out += line
        if text in line:
            return proc, out
    proc.wait()
    raise AssertionError(
        f"the command ended (exit {proc.returncode}) before {text!r}:\n{out[-4000:]}"
    )


def left_on_cluster(kube: KubeEnv) -> list[str]:
    ns = kube.namespace
    batch = __import__("kubernetes").client.BatchV1Api(kube.api_client())
    left = [f"job/{j.metadata.name}" for j in batch.list_namespaced_job(ns).items]
    left += [f"pod/{p.metadata.name}" for p in kube.core().list_namespaced_pod(ns).items]
    left += [
        f"configmap/{c.metadata.name}"
        for c in kube.core().list_namespaced_config_map(ns, label_selector=LABEL).items
    ]
    jobs = kube.custom().list_namespaced_custom_object("rlark.io", "v1alpha1", ns, "jobs")
    left += [f"jobs.rlark.io/{j['metadata']['name']}" for j in jobs.get("items") or []]
    return left


def settle(kube: KubeEnv, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := left_on_cluster(kube)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def test_the_kubernetes_profile_passes_in_cluster(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    argv, reports = command(tmp_path, REPO / "profiles" / "kubernetes.yaml", site_secret)
    res = subprocess.run(
        argv, cwd=tmp_path / "checkout", env=user_env(), capture_output=True, text=True, timeout=900
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    # The runner ran on the real node, and its suite's output came through the command.
    assert "on node gpu-node-09" in out, out[-4000:]
    # The runner Pod wrote its record in a folder of its own under the Job's, and the command
    # read that Pod's back.
    followed = re.search(r"in-cluster: runner pod ((rlark-runner-\S+)-\w+) on node", out)
    assert followed is not None, out[-4000:]
    pod, job = followed[1], followed[2]
    assert f"runner: record uploaded to {RECORDS}/{job}/{pod} (" in out, out[-4000:]
    assert f"in-cluster: record of pod {pod} fetched into" in out, out[-4000:]
    summary = json.loads((reports / "run-summary.json").read_text())
    assert summary["verdict"] == "passed", summary.get("earliestFailure")
    for check in ("6.1", "6.2", "6.3", "6.4", "6.5"):
        assert summary["checks"][check] == "passed", (check, summary["checks"])
    # The runner read the profile from its ConfigMap; the record names the user's file.
    assert Path(summary["profile"]).resolve() == (REPO / "profiles" / "kubernetes.yaml").resolve()
    assert "/etc/rlark-acceptance/" not in (reports / "run-summary.json").read_text()
    xml = JUnitXml.fromfile(str(reports / "junit.xml"))
    cases = [case for suite in xml for case in suite]
    assert cases and all(case.is_passed or case.is_skipped for case in cases)
    assert any("[6.5]" in case.name and case.is_passed for case in cases)
    assert (reports / "allure-results").is_dir()
    assert "in-cluster: verdict passed" in out
    assert settle(kube_env) == []
    # No credential went into the log the user sees.
    s3 = state.load().s3
    assert s3 is not None and s3.secret_key not in out


def test_an_interrupted_in_cluster_run_leaves_nothing(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    """SIGINT to the command while the runner's Worker waits for its first signal: the
    runner Job is deleted, its SIGTERM clean-up removes the rlark Job and its Worker, and the
    record still comes back, ``interrupted``."""
    site = Site.make(tmp_path / "site", before="echo fault-test, the run script starts; sleep 600")
    argv, reports = command(tmp_path, site.profile, site_secret)
    proc, out = started_until(tmp_path, argv, "Step 6 waits for 6.4")
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    out += rest
    assert proc.returncode == 2, out[-4000:]
    assert settle(kube_env) == [], out[-3000:]
    summary = json.loads((reports / "run-summary.json").read_text())
    assert summary["verdict"] == "interrupted", summary["verdict"]


def test_a_second_interrupt_does_not_cut_the_clean_up_short(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    """SIGINT, and SIGINT again while the command waits for the runner's Pod to go (a user
    pressing Ctrl-C twice): the clean-up the first began goes on, nothing is left, the
    record comes back ``interrupted``, exit 2, and no traceback."""
    site = Site.make(tmp_path / "site", before="echo fault-test, the run script starts; sleep 600")
    argv, reports = command(tmp_path, site.profile, site_secret)
    proc, out = started_until(tmp_path, argv, "Step 6 waits for 6.4")
    proc.send_signal(signal.SIGINT)
    assert proc.stdout is not None
    for line in proc.stdout:
        out += line
        if "deleting runner job" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=300)
    out += rest
    assert proc.returncode == 2, out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    assert "SIGINT again: the clean-up goes on" in out, out[-4000:]
    assert settle(kube_env) == [], out[-3000:]
    summary = json.loads((reports / "run-summary.json").read_text())
    assert summary["verdict"] == "interrupted", summary["verdict"]


def passed_through_an_outage(
    kube_env: KubeEnv, tmp_path: Path, site: Site, secret: str, when: str
) -> str:
    """The command run with ``site``'s profile, the API server SIGKILLed once a line shows
    ``when`` and back 12 s later: the command exited 0 with the record's verdict passed,
    and nothing is left on the cluster. Its output, for what it said meanwhile."""
    argv, reports = command(tmp_path, site.profile, secret)
    proc, out = started_until(tmp_path, argv, when)
    try:
        kube_env.kill_apiserver()
        time.sleep(12)
    finally:
        kube_env.start_apiserver()
    rest, _ = proc.communicate(timeout=600)
    out += rest
    assert proc.returncode == 0, out[-6000:]
    summary = json.loads((reports / "run-summary.json").read_text())
    assert summary["verdict"] == "passed", summary.get("earliestFailure")
    assert settle(kube_env, timeout=120) == []
    schedulable_again(kube_env)  # the tests after this one start on a scheduler caught up
    return out


def test_an_api_server_outage_of_12_s_during_an_in_cluster_run_is_ridden_out(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    """The API server SIGKILLed while the runner's Worker waits for its first signal, back
    12 s later: the command's log stream breaks, it waits for the runner, whose own Step 6
    rides the outage out, and fetches its record: passed."""
    # The API server is away longer than the 12 s it is dead: it starts again, then refuses
    # (403) until its RBAC caches load; on a machine whose cores are busy that took the
    # whole default timeouts.apiServer (30 s). This test is of riding an outage out, the
    # bound is tests/adapters/test_kubernetes_faults.py's.
    site = Site.make(
        tmp_path / "site",
        before="echo fault-test, the run script starts; sleep 8",
        timeouts={"apiServer": 120},
    )
    out = passed_through_an_outage(kube_env, tmp_path, site, site_secret, "Step 6 waits for 6.4")
    assert "the runner's log stream broke" in out, out[-4000:]


def test_an_api_server_outage_while_the_runner_starts_is_ridden_out(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    """The API server SIGKILLed as soon as the runner Job is submitted, back 12 s later:
    the command waits for the runner's Pod through the outage (it is not unreachable past
    ``timeouts.apiServer``), follows it and fetches its record: passed, nothing left."""
    # The runner submits its Worker soon after the API server is back, when the scheduler
    # may still be reconnecting (it took over the default 30 s of timeouts.scheduled once,
    # after another outage: a right red 6.2, but not this test's subject).
    site = Site.make(tmp_path / "site", timeouts={"apiServer": 120, "scheduled": 120})
    out = passed_through_an_outage(kube_env, tmp_path, site, site_secret, "in-cluster: runner job")
    assert "unreachable" not in out and "may be left" not in out, out[-4000:]


def test_a_missing_secret_is_named(kube_env: KubeEnv, runner_image: str, tmp_path: Path) -> None:
    argv, _ = command(tmp_path, REPO / "profiles" / "kubernetes.yaml", "no-such-secret")
    res = subprocess.run(
        argv, cwd=tmp_path / "checkout", env=user_env(), capture_output=True, text=True, timeout=300
    )
    out = res.stdout + res.stderr
    assert res.returncode == 2, out[-4000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and 'secret "no-such-secret" not found' in errors[0], out[-3000:]
    assert "Traceback" not in out
    assert settle(kube_env) == []


def test_a_release_runs_its_kubernetes_profile_in_cluster(
    kube_env: KubeEnv, runner_image: str, site_secret: str, tmp_path: Path
) -> None:
    """``--release FILE --in-cluster``: the release's runner is the runner Job; its record,
    fetched back, is the profile's record of the release."""
    release = tmp_path / "release.yaml"
    profile = REPO / "profiles" / "kubernetes.yaml"
    release.write_text(f"name: in-cluster\nprofiles:\n  - {profile}\n", encoding="utf-8")
    argv, reports = command(tmp_path, profile, site_secret)
    at = argv.index("--profile")
    argv[at : at + 2] = ["--release", str(release)]
    res = subprocess.run(
        argv, cwd=tmp_path / "checkout", env=user_env(), capture_output=True, text=True, timeout=900
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    assert "release in-cluster: ACCEPTED on 1 of 1" in out, out[-4000:]
    data = json.loads((reports / "release-summary.json").read_text())
    assert (data["verdict"], data["runner"]) == ("accepted", "in-cluster"), data
    (entry,) = data["profiles"]
    assert entry["verdict"] == "passed" and entry["accepted"], entry
    summary = json.loads((reports / entry["record"] / "run-summary.json").read_text())
    assert Path(summary["profile"]).resolve() == profile.resolve(), summary["profile"]
    assert summary["checks"]["6.5"] == "passed", summary["checks"]
    suites = [suite.name for suite in JUnitXml.fromfile(str(reports / "junit.xml"))]
    assert suites == [entry["name"]], suites
    assert settle(kube_env) == []


CRONJOB = REPO / "deploy" / "nightly-cronjob.yaml"


def _site_release() -> dict[str, str]:
    """The ConfigMap ``rlark-acceptance-release`` as a site makes it for the CronJob: the
    release file and its profile, in-cluster (no kubeconfig: the launcher's ServiceAccount),
    with the files the profile names beside it."""
    profile = (REPO / "profiles" / "kubernetes.yaml").read_text(encoding="utf-8")
    lines = profile.splitlines(keepends=True)
    text = "".join(x for x in lines if not x.lstrip().startswith("kubeconfig:"))
    for old, new in [
        ("../src/rlark_acceptance/smoke/config/smoke_ppo_mlp.yaml", "smoke_ppo_mlp.yaml"),
        ("job: kubernetes/job.yaml", "job: job.yaml"),
    ]:
        assert old in text, old
        text = text.replace(old, new)
    smoke = REPO / "src" / "rlark_acceptance" / "smoke" / "config" / "smoke_ppo_mlp.yaml"
    return {
        "release.yaml": "name: nightly\nprofiles:\n  - kubernetes.yaml\n",
        "kubernetes.yaml": text,
        "job.yaml": (REPO / "profiles" / "kubernetes" / "job.yaml").read_text(encoding="utf-8"),
        "smoke_ppo_mlp.yaml": smoke.read_text(encoding="utf-8"),
    }


def _nightly(image: str, history: str) -> dict[str, Any]:
    """deploy/nightly-cronjob.yaml with what differs on testenv's cluster: the harness
    image as built here, the way to the S3 server (its Service), the real node for its
    Pod and the runner's, the profile's Step 6 scenarios only, a history of this test's
    own; suspended, so that its schedule never starts a second run beside the test's."""
    cron = yaml.safe_load(CRONJOB.read_text(encoding="utf-8"))
    cron["spec"]["suspend"] = True
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    # testenv's other nodes are kwok's: a Pod there never runs, it "completes" at once.
    pod["nodeSelector"] = {"kubernetes.io/hostname": "gpu-node-09"}
    (container,) = pod["containers"]
    container["image"] = image
    endpoint = "http://$(S3_SERVICE_HOST):$(S3_SERVICE_PORT)"
    container["env"] = [
        {"name": "AWS_ENDPOINT_URL", "value": endpoint},
        {"name": "AWS_DEFAULT_REGION", "value": "us-east-1"},
    ]
    args = container["args"]
    at = args.index("--history")
    assert args[at + 1] == "s3://rlinf-ckpt/acceptance-history", args
    args[at + 1] = history
    args += [
        "--runner-env",
        f"AWS_ENDPOINT_URL={endpoint}",
        "--runner-env",
        "AWS_DEFAULT_REGION=us-east-1",
        "--runner-node-selector",
        "kubernetes.io/hostname=gpu-node-09",
        "-m",
        STEP6_ONLY,
    ]
    return cron


def _pod_logs(core: Any, ns: str, selector: str) -> str:
    """The Pods' logs, or what their containers' states say where there is none."""
    from kubernetes import client

    out = []
    for pod in core.list_namespaced_pod(ns, label_selector=selector).items:
        try:
            out.append(core.read_namespaced_pod_log(pod.metadata.name, ns))
        except client.ApiException as exc:
            states = [c.state for c in pod.status.container_statuses or []]
            out.append(f"{pod.metadata.name}: no log ({exc.reason}); {states}")
    return "".join(out)


def test_the_nightly_cronjob_runs_the_release_and_its_run_is_found_in_the_history(
    kube_env: KubeEnv, s3_env: S3Env, runner_image: str, site_secret: str
) -> None:
    """deploy/nightly-cronjob.yaml applied and run once, as ``kubectl create job
    --from=cronjob/rlark-acceptance-nightly`` does: its Pod runs the release of the site's
    ConfigMap in-cluster (the launcher inside the cluster, a runner Job for the profile), and
    the profile's summary is found in the history store, passed, with its provenance."""
    from kubernetes import client

    ns = kube_env.namespace
    core, batch = kube_env.core(), client.BatchV1Api(kube_env.api_client())
    prefix = f"acceptance-history-{uuid.uuid4().hex[:8]}"
    history = f"s3://{s3_env.bucket}/{prefix}"
    config_map = {"metadata": {"name": "rlark-acceptance-release"}, "data": _site_release()}
    core.create_namespaced_config_map(ns, config_map)
    cron = batch.create_namespaced_cron_job(ns, _nightly(runner_image, history))
    name = f"{cron.metadata.name}-manual-{uuid.uuid4().hex[:5]}"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "CronJob",
                    "name": cron.metadata.name,
                    "uid": cron.metadata.uid,
                    "controller": True,
                }
            ],
        },
        "spec": _nightly(runner_image, history)["spec"]["jobTemplate"]["spec"],
    }
    try:
        batch.create_namespaced_job(ns, job)
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            status = batch.read_namespaced_job_status(name, ns).status
            if status.succeeded or status.failed:
                break
            time.sleep(2)
        log = _pod_logs(core, ns, f"job-name={name}")
        assert status.succeeded == 1, f"the nightly Job: {status}\n{log[-6000:]}"
        assert "release nightly: ACCEPTED on 1 of 1" in log, log[-4000:]
        store = S3Store(s3_env.client(), s3_env.bucket, prefix)
        kept = [o.key for o in store.list("smoke-ppo-mlp-kubernetes/")]
        assert len(kept) == 1, kept
        summary = json.loads(store.read(kept[0]))
        assert summary["verdict"] == "passed", summary.get("earliestFailure")
        assert summary["checks"]["6.5"] == "passed", summary["checks"]
        assert summary["provenance"]["node"] == "gpu-node-09", summary["provenance"]
        assert summary["budgets"]["history"] == history, summary["budgets"]
        s3 = state.load().s3
        assert s3 is not None and s3.secret_key not in log
    finally:
        batch.delete_namespaced_cron_job(cron.metadata.name, ns, propagation_policy="Foreground")
        with contextlib.suppress(client.ApiException):
            batch.delete_namespaced_job(name, ns, propagation_policy="Background")
        core.delete_namespaced_config_map("rlark-acceptance-release", ns)
        store = S3Store(s3_env.client(), s3_env.bucket, prefix)
        store.delete([o.key for o in store.list("")])
    assert settle(kube_env, timeout=120) == []
    assert not batch.list_namespaced_cron_job(ns).items
