"""The local adapter end to end: real Worker processes, a real Ray head, a real S3 server.

Every Worker here is a real local Pod (mount + PID namespaces, s3fs for object storage);
the S3 server is testenv's (``-p fixtures.testenv``). Credentials reach the adapter only
through the standard AWS environment variables, as in a real run.

Over ~400 lines: every test drives the same real Worker and S3 fixtures, which are costly to
set up and belong to this module.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlark_acceptance.adapters import (
    EventSeen,
    Happening,
    JobRef,
    LogEnded,
    LogLines,
    Observation,
    PodChanged,
    PodStatus,
    cleanup,
    open_adapter,
)
from rlark_acceptance.adapters.clock import Clock
from rlark_acceptance.adapters.local.adapter import LocalAdapter, LocalAdapterError
from rlark_acceptance.adapters.local.leftovers import POD_MARKER_ENV, LeftoversRemoved
from rlark_acceptance.adapters.local.options import LocalOptions
from rlark_acceptance.model.job import JOB_NAME_LABEL, ROLE_LABEL, RUN_ID_LABEL, Job, read_job
from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.run.step6.engine import Engine
from rlark_acceptance.run.step6.record import RunRecord
from rlark_acceptance.run.step6.run_id import for_run, new_run_id
from rlark_acceptance.storage import S3Store, verify_checkpoints
from tests.processes import pids_with_environ

pytestmark = pytest.mark.cluster  # needs testenv's S3 server; fails (never skips) without it

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "local.yaml"
RUN_TIMEOUT = 120.0
RAY_STARTED = "Ray runtime started"


# --- fixtures ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(PROFILE)


@pytest.fixture
def adapter(profile: Profile, s3_chain: Any, tmp_path: Path) -> Iterator[LocalAdapter]:
    ad = open_adapter(profile, scratch_root=str(tmp_path / "pods"))
    assert isinstance(ad, LocalAdapter)
    try:
        yield ad
    finally:
        ad.close()


# --- helpers -------------------------------------------------------------------------------
@dataclass
class Trace:
    """What one observation stream delivered, in order."""

    pods: list[PodStatus] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    line_at: list[float] = field(default_factory=list)  # monotonic arrival of each line
    events: list[str] = field(default_factory=list)  # "Reason: message"
    phase_at: dict[str, float] = field(default_factory=dict)
    ended: bool = False

    def add(self, h: Happening) -> None:
        if isinstance(h, PodChanged):
            self.pods.append(h.pod)
            self.phase_at.setdefault(h.pod.phase, h.at)
        elif isinstance(h, LogLines):
            self.lines.extend(h.lines)
            self.line_at.extend(h.at for _ in h.lines)
        elif isinstance(h, EventSeen):
            self.events.append(f"{h.event.reason}: {h.event.message}")
        elif isinstance(h, LogEnded):
            self.ended = True

    @property
    def last(self) -> PodStatus:
        return self.pods[-1]

    def index(self, pattern: str) -> int:
        rx = re.compile(pattern)
        return next(i for i, line in enumerate(self.lines) if rx.search(line))

    def log(self) -> str:
        return "\n".join(self.lines)


def watch(obs: Observation, until: Any, timeout: float = RUN_TIMEOUT) -> Trace:
    """Read the stream until ``until(trace)`` holds; fail with the log tail on timeout."""
    trace = Trace()
    deadline = time.monotonic() + timeout
    while not until(trace):
        h = obs.next(deadline - time.monotonic())
        if h is None:
            pytest.fail(f"timed out; pods {trace.pods[-1:]}, log tail:\n{trace.log()[-3000:]}")
        trace.add(h)
    return trace


def terminal(t: Trace) -> bool:
    """The Pod is Succeeded/Failed and its log stream has ended."""
    return bool(t.pods) and t.last.terminal and t.ended


def write_job(
    folder: Path,
    name: str,
    run_script: str,
    *,
    prepare: str = "export PYTHONUNBUFFERED=1\n",
    selector: dict[str, str] | None = None,
    gpus: int = 1,
    mounts: list[dict[str, Any]] | None = None,
) -> tuple[Job, str]:
    """A Job YAML of docs/contract.md §1 in ``folder`` (relative hostPaths resolve against it)."""
    body = {
        "apiVersion": "rlark.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "rlinf-acceptance"},
        "spec": {
            "taskType": "custom",
            "headRole": "worker",
            "crossClusterNetwork": "none",
            "runScript": run_script,
            "roles": [
                {
                    "name": "worker",
                    "header": True,
                    "replicas": 1,
                    "cluster": "local",
                    "nodeSelector": selector or {"kubernetes.io/hostname": "local-node"},
                    "gpus": gpus,
                    "image": "rlark-acceptance/smoke:0.1.0",
                    "prepareScript": prepare,
                    "env": [{"name": "RLARK_TEST_VAR", "value": "from-role"}],
                    "mounts": mounts or [],
                    "resources": {},
                }
            ],
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    text = yaml.safe_dump(body, sort_keys=False)
    path.write_text(text)
    return read_job(str(path)), text


def marker_pids(uid: str) -> list[int]:
    """Processes of this machine that belong to the local Pod(s) of Job ``uid``."""
    return pids_with_environ(f"{POD_MARKER_ENV}={uid}")


def clear_prefix(store: S3Store) -> None:
    for obj in store.list():
        store.client.delete_object(Bucket=store.bucket, Key=store._full(obj.key))


def s3_mount(bucket: str, prefix: str) -> dict[str, Any]:
    """The Job's objectStorage mount "ckpt" at /mnt/ckpt."""
    return {
        "name": "ckpt",
        "type": "objectStorage",
        "bucket": bucket,
        "prefix": prefix,
        "containerPath": "/mnt/ckpt",
    }


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --- the happy path with the embedded default target ---------------------------------------
@dataclass
class HappyRun:
    ref: JobRef
    job: Job
    trace: Trace
    replay: Trace
    listed: list[str]
    pods: list[PodStatus]
    logs: str
    events: list[str]
    workspace_seen: bool
    scratch: Path
    store: S3Store
    submit_s: float
    running_s: float
    ray_s: float
    total_s: float
    delete_s: float
    leftovers: list[int]
    listed_after: list[str]


@pytest.fixture(scope="module")
def happy(
    profile: Profile, s3_chain: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HappyRun]:
    assert profile.job is not None
    # A run id of its own, as every acceptance run has: its outputs go under a prefix no
    # other run on this machine writes to (clearing the profile's prefix instead would
    # remove what runs on other test workers are writing there right now).
    job, manifest = for_run(
        read_job(str(profile.job)),
        profile.job.read_text(),
        new_run_id(),
        profile.run_info.paths.get("output"),
    )
    ad = open_adapter(profile, scratch_root=str(tmp_path_factory.mktemp("happy")))
    assert isinstance(ad, LocalAdapter)
    ckpt = next(m for m in job.roles[0].mounts if m.name == "ckpt")
    store = ad.store_for(job, ckpt)
    assert isinstance(store, S3Store) and store.list() == []  # this run writes all of it
    try:
        yield _happy_run(ad, job, manifest, store)
    finally:
        clear_prefix(store)  # the run's own prefix: nothing of another run's


def _happy_run(ad: LocalAdapter, job: Job, manifest: str, store: S3Store) -> HappyRun:
    """The run, its adapter closed before the tests read it (nothing of it runs on)."""
    try:
        t0 = time.monotonic()
        ref = ad.submit(job, manifest)
        submit_s = time.monotonic() - t0
        listed = ad.list_jobs(job.namespace or "")
        trace = watch(ad.observe(ref), terminal)
        pod = trace.last.name
        scratch = ad.pod_dir(ref, pod)
        assert scratch is not None
        workspace_seen = (scratch / "workspace" / "smoke").is_dir()
        replay = watch(ad.observe(ref), terminal, timeout=5)  # a late observer gets it all
        logs, events = ad.logs(ref, pod), [f"{e.reason}: {e.message}" for e in ad.events(ref)]
        pods = ad.pods(ref)
        t1 = time.monotonic()
        ad.delete(ref)
        delete_s = time.monotonic() - t1
        # Not started: the log's end says why (Ray's own start-up timeout on a loaded
        # machine is run again by tests/conftest.py, only if quoted here).
        assert any(RAY_STARTED in line for line in trace.lines), trace.log()[-3000:]
        ray_at = trace.line_at[trace.index(RAY_STARTED)]
        run = HappyRun(
            ref,
            job,
            trace,
            replay,
            listed,
            pods,
            logs,
            events,
            workspace_seen,
            scratch,
            store,
            submit_s,
            running_s=trace.phase_at["Running"] - t0,
            ray_s=ray_at - trace.phase_at["Running"],
            total_s=trace.phase_at[trace.last.phase] - t0,
            delete_s=delete_s,
            leftovers=marker_pids(ref.uid or "?"),
            listed_after=ad.list_jobs(job.namespace or ""),
        )
        print(
            f"\nlocal happy path: submit {run.submit_s:.2f}s, Running after {run.running_s:.2f}s, "
            f"Ray head {run.ray_s:.1f}s, terminal after {run.total_s:.1f}s, delete {delete_s:.2f}s"
        )
        return run
    finally:
        ad.close()


def test_job_is_listed_with_one_labelled_pod_on_the_node(happy: HappyRun) -> None:
    assert happy.job.name in happy.listed  # 6.1
    assert happy.job.name not in happy.listed_after
    assert len(happy.pods) == 1  # 6.2
    pod = happy.pods[0]
    assert pod.name == f"{happy.job.name}-worker-0"
    assert pod.node == "local-node"
    run_id = happy.job.name.removeprefix("rlinf-smoke-ppo-mlp-")
    assert pod.labels == {
        JOB_NAME_LABEL: happy.job.name,
        ROLE_LABEL: "worker",
        RUN_ID_LABEL: run_id,
    }
    assert any(e.startswith("Scheduled: Successfully assigned") for e in happy.events)


def test_phases_go_pending_running_succeeded(happy: HappyRun) -> None:
    phases = [p.phase for p in happy.trace.pods]
    assert phases[0] == "Pending" and phases[-1] == "Succeeded"
    assert "Running" in phases
    assert phases.index("Running") < len(phases) - 1
    assert happy.trace.last.reason == "Completed" and happy.trace.last.exit_code == 0
    # Running comes before the first line the Worker printed.
    assert happy.trace.phase_at["Running"] <= happy.trace.line_at[0]


def test_log_shows_ray_then_config_then_progress(happy: HappyRun, profile: Profile) -> None:
    t = happy.trace
    ray_at = t.index(RAY_STARTED)  # 6.3
    start, end = t.lines.index("{"), t.lines.index("}")
    config = json.loads("\n".join(t.lines[start : end + 1]))
    assert config["cluster"]["num_nodes"] == 1  # 1.1, from what the run printed
    assert config["runner"]["logger"]["log_path"] == "/mnt/ckpt/logs"
    first_signal = t.index(str(profile.run_info.first_signal))  # 6.4
    assert ray_at < start < first_signal
    assert len([line for line in t.lines if line.startswith("│ Global Step:")]) == 5
    assert t.lines[-1] == "Smoke training finished."


def test_logs_and_late_observers_see_the_same_stream(happy: HappyRun) -> None:
    assert happy.logs == happy.trace.log() + "\n"
    assert happy.replay.lines == happy.trace.lines
    assert [p.phase for p in happy.replay.pods] == [p.phase for p in happy.trace.pods]


def test_checkpoints_are_in_the_bucket_after_the_pod_is_gone(happy: HappyRun) -> None:
    report = verify_checkpoints(happy.store, "logs/smoke_ppo_mlp/checkpoints", all_steps=True)
    assert report.ok, report.problems  # 6.5
    assert report.steps == [2, 4, 5]
    keys = {o.key for o in happy.store.list("logs/tensorboard/")}
    assert any("events.out.tfevents" in k for k in keys)


def test_delete_removes_every_process_and_the_scratch(happy: HappyRun) -> None:
    assert happy.workspace_seen  # the image's /workspace/smoke existed while the Pod ran
    assert not happy.scratch.exists()
    assert happy.leftovers == []


# --- failures ------------------------------------------------------------------------------
def test_failing_prepare_script_fails_the_pod_without_ray(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    job, text = write_job(
        tmp_path,
        unique("prep-fail"),
        "echo run-script-ran\n",
        prepare="echo preparing\nexit 3\necho not-reached\n",
    )
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), terminal)
    assert (t.last.phase, t.last.reason, t.last.exit_code) == ("Failed", "Error", 3)
    assert t.lines == ["preparing"]  # neither Ray nor the run script started
    assert "Running" in [p.phase for p in t.pods]


def test_a_pods_happenings_are_stamped_on_the_adapters_clock_and_step6_judges_by_it(
    profile: Profile, s3_chain: Any, tmp_path: Path
) -> None:
    """The run has one clock: given one (here a day ahead of this process's), the adapter
    stamps every happening with it, and Step 6's engine, given none, takes the adapter's."""
    ahead = Clock(monotonic=lambda: time.monotonic() + 86_400.0)
    ad = open_adapter(profile, scratch_root=str(tmp_path / "pods"), clock=ahead)
    try:
        job, text = write_job(tmp_path, unique("clock"), "true\n", prepare="echo p\nexit 3\n")
        began = ahead.monotonic()
        obs = ad.observe(ad.submit(job, text))
        seen: list[Happening] = []
        while not (seen and isinstance(seen[-1], LogEnded)):
            h = obs.next(RUN_TIMEOUT)
            assert h is not None, seen
            seen.append(h)
        assert {type(h).__name__ for h in seen} >= {"PodChanged", "LogLines", "LogEnded"}
        assert all(began <= h.at <= ahead.monotonic() for h in seen), [h.at for h in seen]
        engine = Engine(ad, RunRecord(job=job, run_id="r"), profile.timeouts, signal=None)
        assert engine.clock is ahead.monotonic
    finally:
        ad.close()


def test_run_script_crash_fails_the_pod_and_lines_arrive_at_once(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    script = textwrap.dedent("""\
        for i in 1 2 3; do echo "tick $(date +%s.%N)"; sleep 0.2; done
        python -c 'import sys; print("about to crash", flush=True); sys.exit(7)'
        """)
    job, text = write_job(tmp_path, unique("crash"), script)
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), terminal)
    assert (t.last.phase, t.last.reason, t.last.exit_code) == ("Failed", "Error", 7)
    assert t.index(RAY_STARTED) < t.index("^tick ") < t.index("about to crash")
    # Each line reaches the observer right after it is printed (not at the end).
    offset = time.time() - time.monotonic()
    lags = [
        t.line_at[i] + offset - float(line.split()[1])
        for i, line in enumerate(t.lines)
        if line.startswith("tick ")
    ]
    print(f"\nlog line lag (print to observer): max {max(lags) * 1000:.0f} ms")
    assert len(lags) == 3 and max(lags) < 0.5, lags


def test_pod_filesystem_mounts_and_environment(
    adapter: LocalAdapter, tmp_path: Path, s3_chain: Any
) -> None:
    shared = tmp_path / "jobdir" / "shared"
    ro = tmp_path / "jobdir" / "ro-data"
    shared.mkdir(parents=True)
    ro.mkdir(parents=True)
    (ro / "input.txt").write_text("dataset\n")
    prefix = unique("acceptance/local-mounts")
    script = textwrap.dedent("""\
        echo "var=$RLARK_TEST_VAR aws=$(env | grep -c '^AWS_')"
        cat /mnt/ro/input.txt
        touch /mnt/ro/nope 2>/dev/null && echo ro-writable || echo ro-refused
        echo hello > /mnt/shared/out.txt
        mkdir -p /mnt/ckpt/sub && echo object > /mnt/ckpt/sub/obj.txt
        echo lost > /workspace/lost.txt
        echo "procs=$(ls /proc | grep -c '^[0-9]')"
        """)
    job, text = write_job(
        tmp_path / "jobdir",
        unique("mounts"),
        script,
        mounts=[
            s3_mount(s3_chain.bucket, prefix),
            {
                "name": "shared",
                "type": "hostPath",
                "hostPath": "shared",
                "containerPath": "/mnt/shared",
            },
            {
                "name": "ro",
                "type": "hostPath",
                "hostPath": "ro-data",
                "containerPath": "/mnt/ro",
                "readOnly": True,
            },
        ],
    )
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), terminal)
    assert t.last.phase == "Succeeded", t.log()[-2000:]
    assert "var=from-role aws=0" in t.lines  # role env exported; no S3 keys in the Pod
    assert "dataset" in t.lines and "ro-refused" in t.lines
    procs = int(next(line for line in t.lines if line.startswith("procs=")).split("=")[1])
    assert procs < 40  # its own PID namespace: the Pod's processes only, not the machine's
    scratch = adapter.pod_dir(ref, t.last.name)
    assert scratch is not None and (scratch / "workspace" / "lost.txt").is_file()
    # s3fs's passwd file is gone once the volume is up; the spec never held the keys.
    assert list((scratch / "secret").iterdir()) == []
    assert s3_chain.access_key not in (scratch / "spec.json").read_text()
    adapter.delete(ref)
    assert adapter.pods(ref) == [] and adapter.events(ref) == []  # gone, as a cluster says
    assert (shared / "out.txt").read_text() == "hello\n"  # hostPath: on the host
    assert not (ro / "nope").exists()
    assert not scratch.exists()  # /workspace content is gone with the Pod
    assert not Path("/workspace/lost.txt").exists() and not Path("/mnt/ckpt").exists()
    ckpt = next(m for m in job.roles[0].mounts if m.name == "ckpt")
    store = adapter.store_for(job, ckpt)
    assert store.read("sub/obj.txt") == b"object\n"
    assert s3_chain.secret_key not in t.log() and s3_chain.access_key not in t.log()
    clear_prefix(store)  # type: ignore[arg-type]


def test_a_worker_submitted_from_a_thread_that_blocks_signals_is_stopped_by_its_sigterm(
    adapter: LocalAdapter, s3_chain: Any, tmp_path: Path
) -> None:
    """Runs side by side are submitted from threads that block SIGINT and SIGTERM (only the
    main thread takes them: ``cleanup.spawn``), and a process inherits the signals its parent
    blocks, through ``unshare`` too. Deleted, such a Pod must still get its SIGTERM, as a
    Kubernetes Pod does: its run script's trap runs and s3fs flushes what it holds before
    the mount goes. Blocked, the init waited out its grace and was SIGKILLed, the Pod with it."""
    prefix = unique("acceptance/local-term")
    job, text = write_job(
        tmp_path,
        unique("term"),
        "trap 'echo stopped > /mnt/ckpt/on-term.txt; exit 0' TERM\necho waiting\n"
        "sleep 300 &\nwait\n",
        mounts=[s3_mount(s3_chain.bucket, prefix)],
    )
    refs: list[JobRef] = []
    cleanup.spawn("submit-side-by-side", lambda: refs.append(adapter.submit(job, text))).join(60)
    (ref,) = refs
    watch(adapter.observe(ref), lambda t: "waiting" in t.lines)
    adapter.delete(ref)
    from rlark_acceptance.adapters.local.s3 import client

    store = S3Store(client(), s3_chain.bucket, prefix)
    assert [o.key for o in store.list()] == ["on-term.txt"], "the run script's TERM trap never ran"
    assert store.read("on-term.txt") == b"stopped\n"
    clear_prefix(store)


def test_a_delete_while_the_worker_is_being_started_waits_and_removes_it(
    adapter: LocalAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt's clean-up deletes a Job whose Pod another thread is starting (a
    self-check submitted beside the run): the delete waits for the start, then stops the
    Worker it started and removes its scratch. It once removed the scratch first; the
    Worker then started in a folder that was gone, and its reader died on a traceback."""
    import rlark_acceptance.adapters.local.adapter as local_adapter

    entered, release = threading.Event(), threading.Event()
    real_copy = local_adapter.copy_image_workspace

    def held_copy(*args: Any, **kwargs: Any) -> None:
        entered.set()
        release.wait(30)
        real_copy(*args, **kwargs)

    monkeypatch.setattr(local_adapter, "copy_image_workspace", held_copy)
    name = unique("del-start")
    job, text = write_job(tmp_path, name, "echo started\nsleep 300\n")
    submitted: list[JobRef] = []
    failed: list[BaseException] = []

    def submit() -> None:
        try:
            submitted.append(adapter.submit(job, text))
        except BaseException as exc:  # said below, with the test's verdict
            failed.append(exc)

    starter = cleanup.spawn("submit-side-by-side", submit)
    assert entered.wait(30), "the submission never reached the Worker's start"
    ref = JobRef(name, "rlinf-acceptance", "")
    deleter = cleanup.spawn("delete", lambda: adapter.delete(ref))
    deleter.join(1.0)
    waited = deleter.is_alive()
    release.set()
    starter.join(60)
    deleter.join(60)
    assert not failed, failed
    assert waited, "the delete did not wait for the Worker's start"
    (ref,) = submitted
    assert marker_pids(ref.uid or "") == []
    assert list((tmp_path / "pods").rglob("pod.log")) == []


def test_an_interrupt_landing_in_a_submission_cleans_up_in_the_same_thread(
    adapter: LocalAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the main thread submits: the clean-up runs in that thread, inside the
    submission (Python runs signal handlers between its bytecodes), closes the target and
    raises KeyboardInterrupt there. It must not wait on the submission it interrupted."""
    import rlark_acceptance.adapters.local.adapter as local_adapter

    def interrupted_copy(*args: Any, **kwargs: Any) -> None:
        adapter.close()  # what the SIGINT handler does first (adapters.cleanup)
        raise KeyboardInterrupt

    monkeypatch.setattr(local_adapter, "copy_image_workspace", interrupted_copy)
    job, text = write_job(tmp_path, unique("int-submit"), "sleep 300\n")
    raised: list[BaseException] = []

    def submit() -> None:
        try:
            adapter.submit(job, text)
        except BaseException as exc:  # said below
            raised.append(exc)

    thread = cleanup.spawn("main-like", submit)
    thread.join(30)
    assert not thread.is_alive(), "the clean-up waited on the submission it interrupted"
    assert [type(e) for e in raised] == [KeyboardInterrupt], raised
    assert adapter.list_jobs("rlinf-acceptance") == []
    assert list((tmp_path / "pods").rglob("pod.log")) == []


def test_a_closed_adapter_refuses_a_submission_and_starts_nothing(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    """A submission that comes after the clean-up closed the target (a thread beside an
    interrupted run) is refused: nothing would remove its Worker."""
    adapter.close()
    job, text = write_job(tmp_path, unique("closed"), "sleep 300\n")
    with pytest.raises(LocalAdapterError, match="closed"):
        adapter.submit(job, text)
    assert adapter.list_jobs("rlinf-acceptance") == []
    assert not (tmp_path / "pods").exists() or list((tmp_path / "pods").iterdir()) == []


def test_two_workers_at_once_each_have_a_ray_client_server_of_their_own(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    """The local Pods share this machine's network, so every port a Ray head binds is picked
    for it. The client server's default, 10001, is bound with SO_REUSEPORT: two heads on it
    do not fail, they share the connections to it, a Worker reaching the other's head."""
    script = "pgrep -af ray.util.client.server | grep -o -- ' --port=[0-9]*'\nsleep 300\n"
    refs: list[JobRef] = []
    ports: list[int] = []
    try:
        for i in range(2):
            job, text = write_job(tmp_path / f"w{i}", unique("client"), script)
            refs.append(adapter.submit(job, text))
        for ref in refs:
            t = watch(adapter.observe(ref), lambda t: any("--port=" in x for x in t.lines))
            ports += [int(x.split("=")[1]) for x in t.lines if "--port=" in x]
    finally:
        for ref in refs:
            adapter.delete(ref)
    assert len(ports) == 2 and len(set(ports)) == 2 and 10001 not in ports, ports


@pytest.mark.parametrize("monitor", [False, True], ids=["default", "rayMonitor"])
def test_the_ray_head_runs_the_autoscalers_monitor_only_when_asked(
    profile: Profile, s3_chain: Any, tmp_path: Path, monitor: bool
) -> None:
    """The one node is the whole cluster: the head leaves out the autoscaler's monitor unless
    ``target.rayMonitor`` asks for it. The log monitor, which every head runs, shows the
    Worker sees its own head's processes (the Pod's PID namespace holds only them)."""
    options = profile.target.options
    assert isinstance(options, LocalOptions)
    target = replace(profile.target, options=replace(options, ray_monitor=monitor))
    ad = open_adapter(replace(profile, target=target), scratch_root=str(tmp_path / "pods"))
    script = (
        "echo monitors=$(pgrep -fc autoscaler/_private/monitor.py)"
        " log_monitors=$(pgrep -fc _private/log_monitor.py)\nsleep 300\n"
    )
    try:
        job, text = write_job(tmp_path, unique("monitor"), script)
        ref = ad.submit(job, text)
        try:
            t = watch(ad.observe(ref), lambda t: any("monitors=" in x for x in t.lines))
        finally:
            ad.delete(ref)
    finally:
        ad.close()
    assert f"monitors={int(monitor)} log_monitors=1" in t.lines, t.lines


def test_missing_host_path_keeps_the_pod_from_starting(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    job, text = write_job(
        tmp_path,
        unique("nomount"),
        "echo never\n",
        mounts=[
            {"name": "data", "type": "hostPath", "hostPath": "absent", "containerPath": "/mnt/data"}
        ],
    )
    ref = adapter.submit(job, text)
    t = watch(
        adapter.observe(ref), lambda t: bool(t.pods) and t.last.reason is not None and t.ended
    )
    assert (t.last.phase, t.last.reason) == ("Pending", "CreateContainerError")
    assert 'volume "data"' in (t.last.message or "")
    assert any(
        e.startswith('FailedMount: MountVolume.SetUp failed for volume "data"') for e in t.events
    )
    assert t.lines == [] and "Running" not in [p.phase for p in t.pods]


def test_an_unreachable_store_keeps_the_pod_from_starting_naming_it(
    adapter: LocalAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    mount = s3_mount("rlinf-ckpt", "unreachable")
    job, text = write_job(tmp_path, unique("nostore"), "echo never\n", mounts=[mount])
    t0 = time.monotonic()
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), lambda t: bool(t.pods) and t.last.reason is not None)
    assert time.monotonic() - t0 < 10  # bounded retries, not s3fs's minutes
    assert (t.last.phase, t.last.reason, t.last.node) == (
        "Pending",
        "CreateContainerError",
        "local-node",
    )
    assert (t.last.message or "").startswith(
        'MountVolume.SetUp failed for volume "ckpt" : s3://rlinf-ckpt/unreachable at '
        f"http://127.0.0.1:{port} does not answer: EndpointConnectionError"
    )
    assert t.lines == [] and not list((tmp_path / "pods").rglob("s3fs.passwd"))


# --- scheduling ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("selector", "gpus", "message"),
    [
        (
            {"kubernetes.io/hostname": "gpu-node-07"},
            1,
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            {"kubernetes.io/hostname": "local-node"},
            3,
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        ),
    ],
    ids=["selector-mismatch", "gpus-over-capacity"],
)
def test_unschedulable_pod_stays_pending(
    adapter: LocalAdapter, tmp_path: Path, selector: dict[str, str], gpus: int, message: str
) -> None:
    job, text = write_job(tmp_path, unique("unsched"), "echo never\n", selector=selector, gpus=gpus)
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), lambda t: bool(t.pods) and bool(t.events), timeout=5)
    pod = t.last
    assert (pod.phase, pod.reason, pod.message, pod.node) == (
        "Pending",
        "Unschedulable",
        message,
        None,
    )
    assert t.events == [f"FailedScheduling: {message}"]
    assert adapter.pods(ref)[0].reason == "Unschedulable"
    assert adapter.pod_dir(ref, pod.name) is None  # no Worker was created
    assert not (tmp_path / "pods").exists() or not any((tmp_path / "pods").iterdir())


def test_new_adapter_sweeps_scratch_left_by_a_dead_adapter(
    profile: Profile, tmp_path: Path
) -> None:
    import fcntl

    root = tmp_path / "pods"
    dead, alive = root / "dead-pod-x", root / "alive-pod-y"
    for d in (dead / "workspace", alive / "workspace"):
        d.mkdir(parents=True)
    (dead / ".owner.lock").touch()  # its owner is gone: nobody holds the lock
    fd = os.open(alive / ".owner.lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a live adapter's Pod
        with pytest.warns(LeftoversRemoved, match="removed 1 local Pod.*: dead-pod-x$"):
            LocalAdapter(profile, scratch_root=str(root), install_signal_handlers=False).close()
        assert not dead.exists() and alive.is_dir()
    finally:
        os.close(fd)


def test_node_inventory_and_clusters(adapter: LocalAdapter) -> None:
    [node] = adapter.node_inventory()
    assert (node.name, node.gpus) == ("local-node", 2)
    assert node.labels["rlark.io/pool"] == "local"
    assert adapter.clusters() == ["local"]


# --- interrupt -------------------------------------------------------------------------------
CHILD = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from rlark_acceptance.adapters import LogLines, PodChanged, open_adapter
    from rlark_acceptance.model.job import read_job
    from rlark_acceptance.model.profile import load_profile

    profile_path, job_path, scratch_root = sys.argv[1:4]
    adapter = open_adapter(load_profile(profile_path), scratch_root=scratch_root)
    job = read_job(job_path)
    ref = adapter.submit(job, Path(job_path).read_text())
    obs = adapter.observe(ref)
    while True:
        h = obs.next(120)
        if h is None or (isinstance(h, PodChanged) and h.pod.terminal):
            # Say why, with the Pod's log, so a failure here explains itself.
            print("UNEXPECTED", h, flush=True)
            print(adapter.logs(ref, f"{job.name}-worker-0")[-3000:], flush=True)
            sys.exit(9)
        if isinstance(h, LogLines) and "sleeping" in h.lines:
            break
    print("READY", ref.uid, adapter.pod_dir(ref, f"{job.name}-worker-0"), flush=True)
    time.sleep(300)
    """)


def run_child_until(job: Job, tmp_path: Path, sig: signal.Signals) -> tuple[str, str, Path, int]:
    """Run CHILD on ``job`` until its Worker sleeps, send ``sig``; (output, uid, scratch, code)."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(PROFILE), job.doc.path, str(tmp_path / "pods")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        ready = child.stdout.readline().split()
        # A string, which pytest does not shorten: the log's end says why (and Ray's own
        # start-up timeout there has the test run again, tests/conftest.py).
        assert ready[:1] == ["READY"], " ".join(ready) + "\n" + child.stdout.read()[-3000:]
        uid, scratch = ready[1], Path(ready[2])
        assert marker_pids(uid) and scratch.is_dir()
        child.send_signal(sig)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return out, uid, scratch, child.returncode


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_stops_and_removes_everything(
    s3_chain: Any, tmp_path: Path, sig: signal.Signals
) -> None:
    prefix = unique("acceptance/local-interrupt")
    job, _ = write_job(
        tmp_path,
        unique("intr"),
        "echo flushed > /mnt/ckpt/before-interrupt.txt\necho sleeping\nsleep 300\n",
        mounts=[s3_mount(s3_chain.bucket, prefix)],
    )
    out, uid, scratch, code = run_child_until(job, tmp_path, sig)
    # The previous handlers ran after the cleanup: SIGTERM's default action, and for SIGINT
    # Python's KeyboardInterrupt, which ends the interpreter by the same signal.
    assert code == -sig, out
    assert marker_pids(uid) == []
    assert not scratch.exists()
    from rlark_acceptance.adapters.local.s3 import client

    store = S3Store(client(), s3_chain.bucket, prefix)
    assert store.read("before-interrupt.txt") == b"flushed\n"
    clear_prefix(store)


def test_the_next_run_removes_what_a_killed_run_left_and_says_so(
    s3_chain: Any, profile: Profile, tmp_path: Path
) -> None:
    job, _ = write_job(tmp_path, unique("killed"), "echo sleeping\nsleep 300\n")
    # SIGKILL: no handler, no atexit, so everything the run started stays.
    _, uid, scratch, _ = run_child_until(job, tmp_path, signal.SIGKILL)
    assert marker_pids(uid) and scratch.is_dir()  # the Worker outlived the run
    with pytest.warns(LeftoversRemoved, match=f"removed 1 local Pod.*{scratch.name}"):
        fresh = LocalAdapter(
            profile, scratch_root=str(tmp_path / "pods"), install_signal_handlers=False
        )
    fresh.close()
    assert marker_pids(uid) == [] and not scratch.exists()
    [swept] = fresh.swept
    assert re.fullmatch(rf"{scratch.name} \(\d+ processes\)", swept), swept


def _run_killing_a_private_s3(
    profile: Profile,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    when: Callable[[Any], bool],
) -> tuple[Any, list[float], float]:
    """The profile's Step 6 against a private S3 server of the test services (built already
    for ``s3_chain``'s), SIGKILLed at the first phase result ``when`` holds for; the shared
    server is never touched. Returns the record, when it was killed and when it went red."""
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.acceptance import submit_and_confirm

    state = tmp_path / "s3-private"
    env = {**os.environ, "RLARK_TESTENV_STATE": str(state)}
    testenv = str(REPO / "testenv" / "testenv")
    subprocess.run([testenv, "up", "s3"], env=env, check=True, capture_output=True)
    try:
        s3 = json.loads((state / "state.json").read_text())["s3"]
        for key, value in {
            "AWS_ACCESS_KEY_ID": s3["access_key"],
            "AWS_SECRET_ACCESS_KEY": s3["secret_key"],
            "AWS_REGION": s3["region"],
            "AWS_ENDPOINT_URL_S3": s3["endpoint"],
        }.items():
            monkeypatch.setenv(key, value)
        killed: list[float] = []

        def kill(p: Any) -> None:
            if not killed and when(p):
                os.kill(int(s3["pid"]), signal.SIGKILL)
                killed.append(time.monotonic())

        ad = open_adapter(profile, scratch_root=str(tmp_path / "pods"))
        try:
            rec = submit_and_confirm(ad, preflight_profile(profile), on_phase=kill)
            red = time.monotonic()
        finally:
            ad.close()
    finally:
        subprocess.run([testenv, "down", "s3", "--force"], env=env, capture_output=True)
    return rec, killed, red


def test_a_store_that_dies_while_6_5_waits_fails_6_5_with_the_cause(
    s3_chain: Any, profile: Profile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, killed, red = _run_killing_a_private_s3(
        profile, tmp_path, monkeypatch, lambda p: p.check == "6.4" and p.status == "passed"
    )
    first = rec.earliest_failure
    assert killed and first is not None, f"{rec.phases}"  # whole: pytest shortens an object
    # The steps (T.1) wait on a Worker hung on its dead mount: named after two missed
    # answers of the store; then 6.5 cannot read the location either (its bounded retries).
    assert first.check == "6.5" and red - killed[0] < 30, (first, red - killed[0])
    assert "could not be read while the Worker ran" in first.message
    assert "EndpointConnectionError" in first.message and "after 4 attempts" in first.message
    assert "timeouts.output" not in first.message
    steps = rec.phases["T.1"]
    assert steps.status == "passed" or "does not answer [mount-io-error]" in steps.message, steps


def test_a_store_killed_before_the_first_signal_is_named_not_the_rlinf_config(
    s3_chain: Any, profile: Profile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The S3 server behind the checkpoint mount dies as the run script starts: the Worker
    hangs on its mount (or dies of an I/O error there), and 6.4's verdict names the store
    that does not answer and gives the store's remedy, not the doc's "check the RLinf
    config" nor a timeout."""
    from rlark_acceptance.run.report import hint

    rec, killed, red = _run_killing_a_private_s3(
        profile, tmp_path, monkeypatch, lambda p: p.check == "6.3" and p.status == "passed"
    )
    first = rec.earliest_failure
    assert killed and first is not None, f"{rec.phases}"  # whole: pytest shortens an object
    assert first.check == "6.4", (first, rec.log_excerpt())
    # The Worker hangs on its mount (s3fs retries) or dies of EIO: either way the store.
    assert "[mount-io-error" in first.message, first.message
    assert "the store behind" in first.message and "does not answer" in first.message
    assert hint(first.check, first.message).startswith("The mount's store stopped answering")
    assert "timeouts.firstSignal" not in first.message and red - killed[0] < 30


def test_the_worker_is_isolated_like_a_container(
    adapter: LocalAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own empty HOME and XDG dirs, the image's Python, nothing of the harness's env."""
    monkeypatch.setenv("RLARK_HARNESS_ONLY", "leaked")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    script = textwrap.dedent("""\
        echo "home=$HOME entries=$(ls -A "$HOME" | tr '\\n' ' ')"
        echo "xdg=$XDG_CONFIG_HOME,$XDG_CACHE_HOME"
        echo "leak=${RLARK_HARNESS_ONLY:-none} python=$(command -v python)"
        """)
    job, text = write_job(tmp_path / "jobdir", unique("isolated"), script)
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), terminal)
    assert t.last.phase == "Succeeded", t.log()[-2000:]
    # Its own HOME: what Ray's head wrote there, and the mount point of an interpreter that
    # lives under the user's /root (pyenv's), shown again read-only; nothing of the user's.
    home = next(x for x in t.lines if x.startswith("home="))
    assert home.startswith("home=/root entries="), t.log()
    assert set(home.split("=", 2)[2].split()) <= {".ray", ".pyenv"}, home
    assert "xdg=/root/.config,/root/.cache" in t.lines
    venv = REPO / ".venv" / "bin" / "python"
    assert f"leak=none python={venv}" in t.lines, t.log()
    adapter.delete(ref)


def test_an_image_the_profile_does_not_name_is_not_on_the_node(
    adapter: LocalAdapter, tmp_path: Path
) -> None:
    job, text = write_job(tmp_path / "jobdir", unique("noimage"), "echo never")
    job.worker.image = "registry.example.com/rlinf:v0.3.0"  # type: ignore[union-attr]
    ref = adapter.submit(job, text)
    t = watch(adapter.observe(ref), lambda t: bool(t.pods) and t.last.reason == "ErrImagePull")
    assert 'Failed to pull image "registry.example.com/rlinf:v0.3.0": not on this node' in str(
        t.last.message
    )
    assert "never" not in t.lines
    adapter.delete(ref)
