"""The kubernetes adapter against a real control plane (testenv: kube-apiserver 1.36, the
real scheduler and controller-manager, kwok-simulated nodes) and a real S3 server.

RLark's operator cannot run here: testenv's platform stand-in (``testenv.rlark_platform``,
a controller started by ``testenv up cluster``) turns each Job CR into its Worker Pod; here
the Pods go to kwok's simulated nodes. The Worker's own output (Ray's start-up, RLinf's
printed config and progress, its checkpoint) is played by the tests, marked as a stand-in
where it happens; everything else (scheduling, refusals, image pulls, Pod phases, Events,
log streaming, deletion through the garbage collector) is the real Kubernetes machinery.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import urllib3
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from safetensors.numpy import save

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.adapters import (
    EventSeen,
    Happening,
    JobRef,
    LogLines,
    Observation,
    PodChanged,
    SubmitRejected,
    TargetLost,
    open_adapter,
)
from rlark_acceptance.adapters.base import LeftoversRemoved, LeftoversUnchecked
from rlark_acceptance.adapters.kubernetes.adapter import KubernetesAdapter, KubernetesAdapterError
from rlark_acceptance.adapters.kubernetes.options import KubernetesOptions
from rlark_acceptance.adapters.kubernetes.stream import (
    MAX_ATTEMPTS,
    Stopper,
    call,
    list_then_watch,
    pod_status,
    worker_over,
)
from rlark_acceptance.model.job import JOB_NAME_LABEL, ROLE_LABEL, RUN_ID_LABEL, Job, read_job
from rlark_acceptance.model.profile import Profile, Target, load_profile
from rlark_acceptance.model.timeouts import Timeouts
from rlark_acceptance.model.training import OFF
from rlark_acceptance.preflight.entry import preflight_profile
from rlark_acceptance.run.acceptance import describe, manifest_of
from rlark_acceptance.run.step6 import RunRecord, build_plan, confirm_running
from rlark_acceptance.run.step6.run_id import for_run, new_run_id, run_job_name
from rlark_acceptance.storage import FileStore, S3Store
from testenv import rlark_platform, state

pytestmark = pytest.mark.cluster  # needs testenv's cluster and S3 server; never skipped

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "local.yaml"
NODE = "gpu-node-07"
IMAGE = "registry.example.com/rlinf:v0.3.0-cuda12.4"
RLARK_CLUSTER = "gpu-a"
TIMEOUT = 60.0
# What `ray start --head` prints in a Pod (not a terminal).
RAY_START = [
    "2026-11-30 13:13:35,847\tINFO usage_lib.py:448 -- Usage stats collection is disabled.",
    "2026-11-30 13:13:38,746\tSUCC scripts.py:1085 -- Ray runtime started.",
    "2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps",
]
PROGRESS = "Global Step:  20%|██        | 1/5 [00:02<00:08,  2.01s/it]"
# testenv narrows kwok's pod-complete stage to batch/v1 Jobs, so the Worker Pod of an
# rlark.io Job stays Running until it is deleted, as a real training Worker does.
STARTED = ("Running",)


# --- fixtures ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def platform(kube_env: KubeEnv) -> None:
    """The platform stand-in runs (testenv started it with the cluster)."""
    assert rlark_platform.healthy(state.load()), "testenv's RLark platform stand-in is down"


@pytest.fixture
def profile(kube_env: KubeEnv, kube_namespace: str) -> Profile:
    """The default profile, pointed at the cluster: one 8-GPU Worker on gpu-node-07."""
    prof = load_profile(PROFILE)
    prof.target = Target(
        adapter="kubernetes",
        kubeconfig=str(kube_env.kubeconfig),
        namespace=kube_namespace,
        cluster=(RLARK_CLUSTER,),
        options=KubernetesOptions(delete_timeout=30),
    )
    prof.run_info.gpus = 8
    prof.run_info.expected_node = NODE
    prof.timeouts = Timeouts.every(TIMEOUT)
    # kwok serves a scripted log and no Worker trains here: these tests observe the page's
    # phases through the adapter; the training checks have their own (tests/run/).
    prof.training = OFF
    return prof


@pytest.fixture
def adapter(profile: Profile, platform: None, s3_chain: S3Env) -> Iterator[Any]:
    ad = open_adapter(profile)
    assert isinstance(ad, KubernetesAdapter)
    try:
        yield ad
    finally:
        ad.close()


# --- helpers -------------------------------------------------------------------------------
def write_job(
    tmp_path: Path,
    namespace: str,
    bucket: str,
    *,
    gpus: int = 8,
    image: str = IMAGE,
    name: str | None = None,
) -> tuple[Path, str]:
    """The default target's Job YAML, for this cluster; returns its path and S3 prefix."""
    data = yaml.safe_load((REPO / "profiles" / "local" / "job.yaml").read_text())
    data["metadata"] = {"name": name or f"rlinf-k8s-{uuid.uuid4().hex[:6]}", "namespace": namespace}
    prefix = f"k8s-adapter/{uuid.uuid4().hex[:8]}"
    data["spec"]["roles"][0].update(
        cluster=RLARK_CLUSTER,
        nodeSelector={"kubernetes.io/hostname": NODE},
        gpus=gpus,
        image=image,
        mounts=[
            {
                "name": "ckpt",
                "type": "objectStorage",
                "bucket": bucket,
                "prefix": prefix,
                "containerPath": "/mnt/ckpt",
            }
        ],
    )
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path, prefix


def load_job(path: Path) -> tuple[Job, str]:
    job = read_job(str(path))
    return job, manifest_of(job)


def next_until(
    obs: Observation, pred: Callable[[Happening], bool], timeout: float = 30
) -> Happening:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        item = obs.next(left)
        if item is not None and pred(item):
            return item
    raise AssertionError(f"nothing matching within {timeout} s")


def log_lines(obs: Observation, n: int, timeout: float = 30) -> list[str]:
    """The next ``n`` log lines of the observation (the adapter hands them on in batches)."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        item = next_until(
            obs, lambda h: isinstance(h, LogLines | TargetLost), deadline - time.monotonic()
        )
        assert isinstance(item, LogLines), item
        got.extend(item.lines)
    return got


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_pods(kube_env: KubeEnv, ns: str, name: str) -> list[Any]:
    return list(
        kube_env.core().list_namespaced_pod(ns, label_selector=f"{JOB_NAME_LABEL}={name}").items
    )


def run_in_thread(fn: Callable[[], RunRecord]) -> tuple[threading.Thread, dict[str, RunRecord]]:
    out: dict[str, RunRecord] = {}
    t = threading.Thread(target=lambda: out.update(rec=fn()), daemon=True)
    t.start()
    return t, out


def safetensors_bytes() -> bytes:
    return save({"actor.weight": np.arange(16, dtype=np.float32).reshape(4, 4)})


# --- Step 6 end to end -----------------------------------------------------------------------
def test_happy_path_passes_step6_through_the_real_observer(
    adapter: KubernetesAdapter,
    profile: Profile,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    path, prefix = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    profile.job = path
    pre = preflight_profile(profile)  # the validated config and what RLinf would print
    assert pre.job is not None and pre.validated is not None and pre.rlinf is not None
    assert pre.validated is not None
    validated = pre.validated.config.resolved()
    job, manifest = pre.job, manifest_of(pre.job)
    run_id = new_run_id()
    name = run_job_name(str(job.name), run_id)  # the Job as this run submits it
    pod_name = f"{name}-worker-0"
    log_file = kube_env.pod_log_file(kube_namespace, pod_name)  # kwok serves it as the Pod log
    validated = pre.validated.config.resolved()
    thread, out = run_in_thread(
        lambda: confirm_running(
            adapter,
            build_plan(profile, job, manifest=manifest, validated=validated, run_id=run_id),
        )
    )
    core = kube_env.core()
    pod = wait_for(
        "the Worker Pod started",
        lambda: next((p for p in job_pods(kube_env, kube_namespace, name)
                      if p.status.phase in STARTED), None),
    )  # fmt: skip
    assert pod.metadata.name == pod_name and pod.spec.node_name == NODE
    # STAND-IN for the Worker (no container runs under kwok): its checkpoint, then its log.
    # RLinf saves global_step_1 under <log_path>/<experiment>/checkpoints in the mount ...
    key = (  # under the run's own prefix
        f"{prefix}/{run_id}/logs/smoke_ppo_mlp/checkpoints/global_step_1/actor/model_state_dict/"
        "full_weights.safetensors"
    )
    s3_chain.client().upload_fileobj(io.BytesIO(safetensors_bytes()), s3_chain.bucket, key)
    # ... and its log: Ray's start-up line, the resolved config as RLinf prints it at
    # start-up, then its progress bar.
    printed = json.dumps(pre.rlinf.config.resolved(), indent=2).splitlines()
    kube_env.write_log(log_file, [*RAY_START, *printed, PROGRESS])
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    rec = out["rec"]
    for check in ("6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5"):
        assert rec.status(check) == "passed", (check, rec.phases[check].message)
    assert rec.phases["6.2"].message == f"one Pod, {pod_name}, on node {NODE}"
    assert list(rec.log)[: len(RAY_START)] == RAY_START and rec.log.last == PROGRESS
    assert rec.checkpoint_after_delete is not None and rec.checkpoint_after_delete.ok
    assert any(e.reason == "Scheduled" and NODE in e.message for e in rec.events)
    assert job_pods(kube_env, kube_namespace, name) == []  # delete() waited for it
    assert not core.list_namespaced_pod(kube_namespace).items
    # What the cluster says the Worker ran on, once it is gone (the record's provenance).
    assert rec.pods == [] and rec.worker is not None and rec.worker.node == NODE
    said = describe(adapter, rec)
    info = core.read_node(NODE).status.node_info
    node_said = {
        "kubeletVersion": info.kubelet_version,
        "containerRuntimeVersion": info.container_runtime_version,
    }
    assert said == {
        "apiServerVersion": client.VersionApi(kube_env.api_client()).get_code().git_version,
        **{k: v for k, v in node_said.items() if v},
    }
    assert said["kubeletVersion"], node_said  # the simulated node says its kubelet's


def test_too_many_gpus_fails_6_2_at_once_with_the_schedulers_reason(
    adapter: KubernetesAdapter,
    profile: Profile,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket, gpus=16)
    job, manifest = load_job(path)
    rec = confirm_running(adapter, build_plan(profile, job, manifest=manifest))
    assert rec.status("6.1") == "passed"
    assert rec.status("6.2") == "failed"
    msg = rec.phases["6.2"].message
    # From the Pod's PodScheduled condition, in the real scheduler's words, not a timeout.
    assert "Unschedulable" in msg and "Insufficient nvidia.com/gpu" in msg, msg
    assert "timeouts." not in msg
    assert any(e.reason == "FailedScheduling" for e in rec.events)
    assert rec.status("6.3") == "skipped"


def test_an_image_that_cannot_be_pulled_fails_6_2(
    adapter: KubernetesAdapter,
    profile: Profile,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    image = kube_env.bad_image()
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket, image=image)
    job, manifest = load_job(path)
    rec = confirm_running(adapter, build_plan(profile, job, manifest=manifest))
    msg = rec.phases["6.2"].message
    assert rec.status("6.2") == "failed"
    assert "ErrImagePull" in msg or "ImagePullBackOff" in msg, msg
    assert "timeouts." not in msg


def test_a_worker_that_fails_before_its_first_signal_fails_at_once(
    adapter: KubernetesAdapter,
    profile: Profile,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    """Pod Failed (exit 1) after Ray started: red at 6.4 at once, not after firstSignal's
    timeout, although kwok's followed log never closes (the Pod's end is what counts)."""
    profile.timeouts = dataclasses.replace(profile.timeouts, first_signal=600.0)
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    pre = preflight_profile(dataclasses.replace(profile, job=path))
    assert pre.job is not None and pre.rlinf is not None
    job, manifest = pre.job, manifest_of(pre.job)
    run_id = new_run_id()
    name = run_job_name(str(job.name), run_id)
    pod_name = f"{name}-worker-0"
    log_file = kube_env.pod_log_file(kube_namespace, pod_name)
    thread, out = run_in_thread(
        lambda: confirm_running(adapter, build_plan(profile, job, manifest=manifest, run_id=run_id))
    )
    wait_for(
        "the Worker Pod running",
        lambda: any(p.status.phase == "Running" for p in job_pods(kube_env, kube_namespace, name)),
    )
    # STAND-IN for the Worker: Ray's start-up and the run script's first lines, then exit 1.
    printed = json.dumps(pre.rlinf.config.resolved(), indent=2).splitlines()
    kube_env.write_log(log_file, [*RAY_START, *printed, "Traceback: boom"])
    time.sleep(0.5)
    kube_env.core().patch_namespaced_pod(
        pod_name,
        kube_namespace,
        {
            "metadata": {
                "labels": {kube_env.fail_label: "true"},
                "annotations": {kube_env.fail_exit_code_annotation: "1"},
            }
        },
    )
    failed_at = time.monotonic()
    thread.join(60)
    assert not thread.is_alive(), "the observer waited for the stream / the timeout"
    rec = out["rec"]
    assert rec.status("6.3") == "passed"
    assert rec.status("6.4") == "failed"
    msg = rec.phases["6.4"].message
    assert "exit code 1" in msg and "timeouts." not in msg, msg
    # Red well before any timeout (speed itself is measured in bench/).
    assert time.monotonic() - failed_at < 60


def test_a_missing_permission_is_named_not_waited_for(
    kube_env: KubeEnv, profile: Profile, s3_chain: S3Env, tmp_path: Path
) -> None:
    """Under the harness's ServiceAccount in a namespace where its Role does not apply,
    the API server's refusal is the verdict: which verb on which resource."""
    assert kube_env.harness_kubeconfig is not None
    ns = kube_env.create_namespace("norbac")
    try:
        profile.target = Target(
            adapter="kubernetes", kubeconfig=str(kube_env.harness_kubeconfig), namespace=ns
        )
        path, _ = write_job(tmp_path, ns, s3_chain.bucket)
        job, manifest = load_job(path)
        # Not even the look for a dead run's Jobs is allowed: said, not taken for "none".
        with pytest.warns(LeftoversUnchecked, match=f'in {ns} .*cannot list resource "jobs"'):
            ad = open_adapter(profile)
        try:
            rec = confirm_running(ad, build_plan(profile, job, manifest=manifest))
        finally:
            ad.close()
        msg = rec.phases["6.1"].message
        assert rec.status("6.1") == "failed", msg
        assert 'cannot create resource "jobs" in API group "rlark.io"' in msg, msg
        # The repository's Role without the Worker's log: 6.1 and 6.2 pass, 6.3 names the
        # refused read at once (the Role is applied as a site would, from the manifest).
        docs = list(yaml.safe_load_all((REPO / "deploy" / "harness-rbac.yaml").read_text()))
        role = next(d for d in docs if d["kind"] == "Role")
        rules = [r for r in role["rules"] if r["resources"] != ["pods/log"]]
        assert len(rules) == len(role["rules"]) - 1
        rbac = client.RbacAuthorizationV1Api(kube_env.api_client())
        rbac.create_namespaced_role(ns, {"metadata": {"name": "no-logs"}, "rules": rules})
        subject = {
            "kind": "ServiceAccount",
            "name": "rlark-acceptance",
            "namespace": kube_env.namespace,
        }
        rbac.create_namespaced_role_binding(
            ns,
            {
                "metadata": {"name": "no-logs"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "no-logs",
                },
                "subjects": [subject],
            },
        )
        profile.timeouts = Timeouts.every(600.0)
        ad = open_adapter(profile)
        try:
            rec = confirm_running(ad, build_plan(profile, job, manifest=manifest))
        finally:
            ad.close()
        assert rec.status("6.1") == "passed", rec.phases["6.1"].message
        assert rec.status("6.2") == "passed", rec.phases["6.2"].message
        msg = rec.phases["6.3"].message
        assert rec.status("6.3") == "failed", msg
        assert 'cannot get resource "pods/log"' in msg and "Forbidden" in msg, msg
        assert "timeouts." not in msg
    finally:
        kube_env.delete_namespace(ns)


def test_an_invalid_name_is_refused_by_the_api_server(
    adapter: KubernetesAdapter, kube_namespace: str, s3_chain: S3Env, tmp_path: Path
) -> None:
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket, name="RLinf-Maniskill")
    job, manifest = load_job(path)
    with pytest.raises(SubmitRejected) as info:
        adapter.submit(job, manifest)
    assert "metadata.name" in str(info.value) and "RLinf-Maniskill" in str(info.value)
    assert adapter.list_jobs(kube_namespace) == []


def test_a_job_created_after_close_is_deleted_at_once(
    adapter: KubernetesAdapter,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A self-check's submission in its own thread is creating its Job when the interrupt's
    clean-up closes the target: close lists what it removes before the create lands. The Job
    is then deleted by the submission, which is refused, and a later one is refused before
    anything is created. Left, it would hold the GPU node until a later run swept it."""
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket, name="rlinf-closed")
    job, manifest = load_job(path)
    real_create = adapter.custom.create_namespaced_custom_object

    def create_after_close(*args: Any, **kwargs: Any) -> Any:
        adapter.close()  # the clean-up, between the request's start and its answer
        return real_create(*args, **kwargs)

    monkeypatch.setattr(adapter.custom, "create_namespaced_custom_object", create_after_close)
    with pytest.raises(KubernetesAdapterError, match="closed"):
        adapter.submit(job, manifest)
    assert adapter.list_jobs(kube_namespace) == []
    # A Pod the platform made for the Job just as it went is collected with it (owned by it).
    wait_for(
        "no Pod of the Job", lambda: not job_pods(kube_env, kube_namespace, "rlinf-closed"), 60
    )
    monkeypatch.setattr(adapter.custom, "create_namespaced_custom_object", real_create)
    with pytest.raises(KubernetesAdapterError, match="closed"):
        adapter.submit(job, manifest)
    assert adapter.list_jobs(kube_namespace) == []


# --- the protocol's reads ------------------------------------------------------------------------
def test_reads_map_the_cluster_and_a_late_observer_sees_everything(
    adapter: KubernetesAdapter,
    profile: Profile,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    nodes = {n.name: n for n in adapter.node_inventory()}
    assert {k: n.gpus for k, n in nodes.items()} == {
        "gpu-node-07": 8,
        "gpu-node-08": 8,
        "cpu-node-01": 0,
        "gpu-node-09": 8,  # the real node
    }
    assert nodes[NODE].labels["rlark.io/pool"] == "gpu-a" and nodes[NODE].ready
    assert adapter.clusters() == [RLARK_CLUSTER]

    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    job, manifest = load_job(path)
    pod_name = f"{job.name}-worker-0"
    log_file = kube_env.pod_log_file(kube_namespace, pod_name)
    ref = adapter.submit(job, manifest)
    assert ref == JobRef(job.name, kube_namespace, ref.uid) and ref.uid
    assert adapter.list_jobs(kube_namespace) == [job.name]
    obs = adapter.observe(ref)
    started = next_until(obs, lambda h: isinstance(h, PodChanged) and h.pod.phase in STARTED)
    assert isinstance(started, PodChanged) and started.pod.node == NODE
    kube_env.write_log(log_file, ["first line", "second line"])  # stand-in Worker output
    assert log_lines(obs, 2) == ["first line", "second line"]

    [pod] = adapter.pods(ref)
    assert (pod.name, pod.node, pod.restarts) == (pod_name, NODE, 0)
    assert (pod.phase, pod.reason, pod.exit_code) == ("Running", None, None)
    assert pod.labels[JOB_NAME_LABEL] == job.name and pod.labels[ROLE_LABEL] == "worker"
    # The scheduler records its event asynchronously: wait for it, bounded.
    scheduled = wait_for(
        "the Scheduled event",
        lambda: [e for e in adapter.events(ref) if e.reason == "Scheduled"],
        10,
    )
    assert scheduled[0].involved == f"pod/{pod_name}"
    assert scheduled[0].source == "default-scheduler" and NODE in scheduled[0].message
    assert adapter.logs(ref, pod_name) == "first line\nsecond line\n"

    # Started late: the current Pod state, then the log from its start, then what follows.
    late = adapter.observe(ref)
    changed = next_until(late, lambda h: isinstance(h, PodChanged))
    assert isinstance(changed, PodChanged) and changed.pod == pod
    assert log_lines(late, 2) == ["first line", "second line"]
    kube_env.write_log(log_file, ["third line"])
    assert log_lines(late, 1) == ["third line"]
    assert log_lines(obs, 1) == ["third line"]

    adapter.close()  # removes the Job it created, and waits for its Pod to be gone
    assert job_pods(kube_env, kube_namespace, job.name) == []
    wait_for("the Job CR gone", lambda: job.name not in adapter.list_jobs(kube_namespace), 20)
    wait_for("the observers' threads stopped", lambda: not observer_threads(job.name), 5)


def test_two_runs_of_one_job_at_once_are_both_listed_and_each_removes_only_its_own(
    adapter: KubernetesAdapter,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    """The one Job YAML submitted by two runs at once (a CI retry): two Jobs, named and
    labelled for their runs, each with its own Pod; deleting one leaves the other."""
    path, prefix = write_job(tmp_path, kube_namespace, s3_chain.bucket, name="rlinf-twice")
    job, manifest = load_job(path)
    runs = [for_run(job, manifest, new_run_id(), "/mnt/ckpt/logs") for _ in range(2)]
    refs = [adapter.submit(j, m) for j, m in runs]
    names = [str(j.name) for j, _ in runs]
    assert names[0] != names[1] and all(n.startswith("rlinf-twice-") for n in names)
    assert sorted(adapter.list_jobs(kube_namespace)) == sorted(names)
    for (run_job, run_manifest), ref in zip(runs, refs, strict=True):
        run_id = yaml.safe_load(run_manifest)["metadata"]["labels"][RUN_ID_LABEL]
        assert ref.name == run_job.name and run_job.name.endswith(run_id)
        cr = adapter._get_job(kube_namespace, ref.name)
        assert cr["metadata"]["labels"][RUN_ID_LABEL] == run_id
        ckpt = cr["spec"]["roles"][0]["mounts"][0]
        assert ckpt["prefix"] == f"{prefix}/{run_id}", "each run writes under its own prefix"
    wait_for(
        "a Pod for each run",
        lambda: all(job_pods(kube_env, kube_namespace, n) for n in names),
    )
    adapter.delete(refs[0])
    assert job_pods(kube_env, kube_namespace, names[0]) == []
    assert adapter.list_jobs(kube_namespace) == [names[1]], "the other run's Job stays"
    assert job_pods(kube_env, kube_namespace, names[1]), "the other run's Pod stays"
    adapter.delete(refs[1])
    assert job_pods(kube_env, kube_namespace, names[1]) == []
    wait_for("both Jobs gone", lambda: not adapter.list_jobs(kube_namespace), 20)


def test_store_for_reads_object_storage_and_host_paths(
    adapter: KubernetesAdapter, kube_namespace: str, s3_chain: S3Env, tmp_path: Path
) -> None:
    path, prefix = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    job, _ = load_job(path)
    ckpt = job.roles[0].mounts[0]
    store = adapter.store_for(job, ckpt)
    assert isinstance(store, S3Store) and store.describe() == f"s3://{s3_chain.bucket}/{prefix}"
    s3_chain.client().put_object(Bucket=s3_chain.bucket, Key=f"{prefix}/x.txt", Body=b"abc")
    assert store.read("x.txt") == b"abc"
    # A hostPath is the node's directory, read here (kwok's nodes are this machine).
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "y.txt").write_text("node file")
    host = dataclasses.replace(ckpt, type="hostPath", host_path=str(tmp_path / "data"), bucket=None)
    files = adapter.store_for(job, host)
    assert isinstance(files, FileStore) and files.read("y.txt") == b"node file"
    for unreadable in (
        dataclasses.replace(ckpt, type="pvc", claim_name="models", bucket=None),
        dataclasses.replace(host, host_path="relative/dir"),
    ):
        with pytest.raises(KubernetesAdapterError):
            adapter.store_for(job, unreadable)


def observer_threads(job: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("k8s-") and t.name.endswith(job)]


CHILD = textwrap.dedent("""
    import sys, time
    from rlark_acceptance.run.acceptance import manifest_of
    from rlark_acceptance.adapters import open_adapter
    from rlark_acceptance.model.job import read_job
    from rlark_acceptance.model.profile import Target, load_profile

    profile_path, kubeconfig, namespace, job_path = sys.argv[1:]
    profile = load_profile(profile_path)
    profile.target = Target(adapter="kubernetes", kubeconfig=kubeconfig, namespace=namespace)
    adapter = open_adapter(profile)
    job = read_job(job_path)
    ref = adapter.submit(job, manifest_of(job))
    adapter.observe(ref)
    print("READY", ref.name, flush=True)
    time.sleep(300)
    """)


@contextlib.contextmanager
def run_submitting_child(
    kube_env: KubeEnv, namespace: str, bucket: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Another harness process that has submitted a Job and watches it; yields it and the
    Job's name once the Worker Pod exists. Killed at the end if it still runs."""
    path, _ = write_job(tmp_path, namespace, bucket)
    argv = [str(PROFILE), str(kube_env.kubeconfig), namespace, str(path)]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        ready = child.stdout.readline().split()
        assert ready[:1] == ["READY"], [*ready, child.stdout.read()[-2000:]]
        name = ready[1]
        wait_for("the Worker Pod", lambda: job_pods(kube_env, namespace, name))
        yield child, name
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_deletes_what_the_adapter_created(
    platform: None,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_env: S3Env,
    tmp_path: Path,
    sig: signal.Signals,
) -> None:
    with run_submitting_child(kube_env, kube_namespace, s3_env.bucket, tmp_path) as (child, name):
        child.send_signal(sig)
        out, _ = child.communicate(timeout=30)
    # The cleanup ran, then the previous handler: SIGTERM's default action, or Python's
    # KeyboardInterrupt, which ends the interpreter by the same signal.
    assert child.returncode == -sig, out
    assert job_pods(kube_env, kube_namespace, name) == []
    jobs = kube_env.custom().list_namespaced_custom_object(
        "rlark.io", "v1alpha1", kube_namespace, "jobs"
    )
    assert all(j["metadata"].get("deletionTimestamp") for j in jobs["items"])  # going or gone


def test_the_next_run_removes_what_a_killed_run_left_on_the_cluster(
    platform: None,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_env: S3Env,
    profile: Profile,
    tmp_path: Path,
) -> None:
    """SIGKILL runs no handler: the Job and its Worker stay until a later run removes them."""
    with run_submitting_child(kube_env, kube_namespace, s3_env.bucket, tmp_path) as (child, name):
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    jobs = kube_env.custom().list_namespaced_custom_object(
        "rlark.io", "v1alpha1", kube_namespace, "jobs"
    )
    assert [j["metadata"]["name"] for j in jobs["items"]] == [name], "the killed run's Job stays"
    # A Job of a live run (this process) in the same namespace is never touched.
    (tmp_path / "live").mkdir()
    live, _ = write_job(tmp_path / "live", kube_namespace, s3_env.bucket, name="rlinf-live")
    job, manifest = load_job(live)
    with pytest.warns(LeftoversRemoved, match=f"removed 1 Job.*: {name}$"):
        first = open_adapter(profile)
    try:
        assert job_pods(kube_env, kube_namespace, name) == []
        first_ref = first.submit(job, manifest)
        with warnings.catch_warnings():
            warnings.simplefilter("error", LeftoversRemoved)  # a live run's Job is not one
            open_adapter(profile).close()
        left = kube_env.custom().list_namespaced_custom_object(
            "rlark.io", "v1alpha1", kube_namespace, "jobs"
        )
        assert {j["metadata"]["name"] for j in left["items"]} == {first_ref.name}
    finally:
        first.close()


def test_standard_loading_rules_find_the_cluster(
    kube_env: KubeEnv, profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kube_env.kubeconfig))
    profile.target = Target(adapter="kubernetes", namespace=profile.target.namespace)
    ad = KubernetesAdapter(profile, install_signal_handlers=False)
    try:
        contexts = yaml.safe_load(kube_env.kubeconfig.read_text())["contexts"]
        assert ad.clusters() == [contexts[0]["context"]["cluster"]]
        assert len(ad.node_inventory()) == 4  # kwok's three and the real node
    finally:
        ad.close()


def test_pod_status_maps_a_crash_loop_with_its_last_exit_code() -> None:
    pod = {
        "metadata": {"name": "w-0", "labels": {ROLE_LABEL: "worker"}},
        "spec": {"nodeName": NODE},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {
                    "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
            ],
        },
    }
    st = pod_status(pod)
    assert (st.reason, st.exit_code, st.restarts, st.node) == ("CrashLoopBackOff", 137, 3, NODE)


def test_pod_status_carries_the_image_id_the_worker_container_ran() -> None:
    digest = "docker.io/rlinf/worker@sha256:" + "c" * 64
    pod = {
        "metadata": {"name": "w-0"},
        "spec": {"nodeName": NODE, "containers": [{"name": "worker"}, {"name": "sidecar"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [  # the kubelet lists them by name
                {"name": "sidecar", "imageID": "sha256:" + "d" * 64, "state": {"running": {}}},
                {"name": "worker", "imageID": digest, "state": {"running": {}}},
            ],
        },
    }
    assert pod_status(pod).image_id == digest
    pending = {"metadata": {"name": "w-0"}, "spec": {}, "status": {"phase": "Pending"}}
    assert pod_status(pending).image_id is None


def test_pod_status_names_why_a_pod_is_taken_away_over_its_exit() -> None:
    """An evicted Worker: its container ended by SIGTERM (143), the cause in its condition."""
    pod = {
        "metadata": {"name": "w-0"},
        "spec": {"nodeName": NODE, "restartPolicy": "Never"},
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "EvictionByEvictionAPI",
                    "message": "Eviction API: evicting",
                }
            ],
            "containerStatuses": [{"state": {"terminated": {"exitCode": 143, "reason": "Error"}}}],
        },
    }
    st = pod_status(pod)
    assert (st.reason, st.message, st.exit_code) == (
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
        143,
    )


@pytest.mark.parametrize(
    ("policy", "codes", "phase", "over"),
    [
        ("Never", [3], "Failed", True),
        ("Never", [0], "Succeeded", True),
        ("Always", [3], "Running", False),  # it restarts: not over
    ],
)
def test_a_pod_whose_containers_all_ended_is_over_before_its_phase_says_so(
    policy: str, codes: list[int], phase: str, over: bool
) -> None:
    """The kubelet reports the terminated container first and the phase at its next sync."""
    pod = {
        "metadata": {"name": "w-0"},
        "spec": {"nodeName": NODE, "restartPolicy": policy},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"state": {"terminated": {"exitCode": c, "reason": "Error"}}} for c in codes
            ],
        },
    }
    assert worker_over(pod) is over
    st = pod_status(pod)
    assert (st.phase, st.exit_code) == (phase, codes[0])


# --- the stream helpers' failure handling, with a scripted API ----------------------------------
class FakeResponse:
    def __init__(self, body: bytes) -> None:
        self.data = body

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield self.data

    def release_conn(self) -> None: ...

    def close(self) -> None: ...

    def shutdown(self) -> None: ...


def test_a_410_gone_watch_lists_again_and_replays() -> None:
    pod = {"metadata": {"name": "w-0", "resourceVersion": "7"}}
    calls: list[dict[str, Any]] = []
    stopper = Stopper()

    def list_pods(ns: str, **kw: Any) -> FakeResponse:
        calls.append(kw)
        if not kw.get("watch"):
            return FakeResponse(
                json.dumps({"metadata": {"resourceVersion": "5"}, "items": [pod]}).encode()
            )
        if len([c for c in calls if c.get("watch")]) == 1:
            gone = {
                "type": "ERROR",
                "object": {"kind": "Status", "code": 410, "message": "too old"},
            }
            return FakeResponse(json.dumps(gone).encode() + b"\n")
        added = {"type": "ADDED", "object": {"metadata": {"name": "w-1", "resourceVersion": "9"}}}
        return FakeResponse(json.dumps(added).encode() + b"\n")

    seen: list[tuple[str, str]] = []

    def on_item(kind: str, obj: dict[str, Any]) -> None:
        seen.append((kind, obj["metadata"]["name"]))
        if kind == "ADDED":
            stopper.stop()

    list_then_watch(list_pods, ("ns",), on_item, stopper, label_selector="a=b")
    assert seen == [("SYNC", "w-0"), ("SYNC", "w-0"), ("ADDED", "w-1")]
    watches = [c for c in calls if c.get("watch")]
    assert [c["resource_version"] for c in watches] == ["5", "5"]
    assert all(c["label_selector"] == "a=b" for c in calls)


@pytest.mark.parametrize(
    ("error", "attempts"),
    [
        (ApiException(status=503), MAX_ATTEMPTS),
        (ApiException(status=429), MAX_ATTEMPTS),
        (urllib3.exceptions.ProtocolError("Connection reset by peer"), MAX_ATTEMPTS),
        (ApiException(status=403), 1),
        (ApiException(status=404), 1),
    ],
)
def test_only_transient_errors_are_retried_and_boundedly(
    error: Exception, attempts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tenacity.nap.time.sleep", lambda _s: None)  # the backoff, not its wait
    tries = 0

    def failing() -> None:
        nonlocal tries
        tries += 1
        raise error

    with pytest.raises(type(error)):
        call(failing)
    assert tries == attempts


def test_broken_streams_are_opened_again_without_repeating_lines(
    adapter: KubernetesAdapter,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    job, manifest = load_job(path)
    log_file = kube_env.pod_log_file(kube_namespace, f"{job.name}-worker-0")
    ref = adapter.submit(job, manifest)
    obs = adapter.observe(ref)
    next_until(obs, lambda h: isinstance(h, PodChanged) and h.pod.phase in STARTED)
    kube_env.write_log(log_file, ["before the break"])  # stand-in Worker output
    assert log_lines(obs, 1) == ["before the break"]
    # Cut every stream the observation holds open (Pod watch, Event watch, followed log)
    # as a connection reset would, without stopping it.
    [stopper] = adapter._stoppers[(ref.namespace, ref.name)]
    # The three open each in their own thread: wait until all are (bounded).
    streams = wait_for(
        "the Pod watch, the Event watch and the log open",
        lambda: list(stopper._open) if len(stopper._open) == 3 else None,
        10,
    )
    for resp in streams:
        resp.shutdown()
    wait_for("the streams opened again", lambda: len(stopper._open - set(streams)) == 3, 10)
    kube_env.write_log(log_file, ["after the break"])
    # The log was read again, the first line skipped.
    assert log_lines(obs, 1) == ["after the break"]
    events = [h.event for h in obs.drain() if isinstance(h, EventSeen)]
    failed = [e for e in events if e.reason == "ObserveFailed"]
    assert not failed, failed
    adapter.delete(ref)
    assert job_pods(kube_env, kube_namespace, job.name) == []
    wait_for("the observers' threads stopped", lambda: not observer_threads(job.name), 5)


@pytest.mark.cluster_alone
def test_an_api_server_killed_and_started_again_loses_and_doubles_no_log_line(
    adapter: KubernetesAdapter,
    kube_env: KubeEnv,
    kube_namespace: str,
    s3_chain: S3Env,
    tmp_path: Path,
) -> None:
    """The real API server SIGKILLed mid-follow, lines written while it is down, started
    again on its etcd data: the watches and the log resume (the log from the last line's
    stamp; lines written within one microsecond share a stamp), every line once, in order."""
    path, _ = write_job(tmp_path, kube_namespace, s3_chain.bucket)
    job, manifest = load_job(path)
    log_file = kube_env.pod_log_file(kube_namespace, f"{job.name}-worker-0")
    ref = adapter.submit(job, manifest)
    obs = adapter.observe(ref)
    next_until(obs, lambda h: isinstance(h, PodChanged) and h.pod.phase in STARTED)
    written = [f"before {i}" for i in range(200)]
    kube_env.write_log(log_file, written)
    got = log_lines(obs, len(written))
    kube_env.kill_apiserver()
    during = [f"during {i}" for i in range(200)]
    kube_env.write_log(log_file, during)
    time.sleep(3)
    kube_env.start_apiserver()
    after = [f"after {i}" for i in range(200)]
    kube_env.write_log(log_file, after)
    got += log_lines(obs, len(during) + len(after), 120)
    assert got == written + during + after
    failed = [
        h.event for h in obs.drain() if isinstance(h, EventSeen) and h.event.type == "Warning"
    ]
    assert not [e for e in failed if e.source == "rlark-acceptance"], failed
    adapter.delete(ref)
    assert job_pods(kube_env, kube_namespace, job.name) == []
