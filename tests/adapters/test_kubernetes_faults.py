"""The world misbehaving under the acceptance suite on the Kubernetes target, as a release
engineer meets it: ``pytest features/ --profile <kubernetes profile>`` on testenv's real
control plane and real node (gpu-node-09), a fault injected while Step 6 waits, and the
record read back (``run-summary.json``, the terminal's last lines).

- the API server SIGKILLed during 6.4 and during 6.5 and started again ~12 s later: passes;
- the API server killed for good: red at the check waited for within ``timeouts.apiServer``
  (plus the time to notice), naming the API server and what may be left;
- the node's kubelet SIGKILLed during 6.4: red within seconds naming the node; the
  teardown bounded, attributed to no scenario;
- a Role without ``create`` on jobs: 6.1 with the API server's 403; without ``delete``: the
  run passes and the record warns of what is left;
- a Worker that prints 300 MB before its printed config and first signal (the kubelet
  rotates at 10 MiB and serves the log slower than the Worker writes it): passes, and an
  observation of 3 M numbered lines reads each once, in order.

Each waits, when it needs a window, on a run script that prints one line and sleeps before
the smoke workload: 6.3 passes on the line, 6.4 waits through the sleep.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import JUnitXml
from kubernetes import client

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.adapters import EventSeen, LogEnded, LogLines, TargetLost, open_adapter
from rlark_acceptance.adapters.base import HARNESS_SOURCE, LOG_READ_AHEAD
from rlark_acceptance.adapters.kubernetes import logspool
from rlark_acceptance.model.job import JOB_NAME_LABEL, read_job
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.run.step6.plan import manifest_of
from rlark_acceptance.run.step6.run_id import for_run, new_run_id
from tests.adapters.k8s_suite import REPO, STARTING, Site, SuiteRun, schedulable_again, waits_for

# Alone at the cluster: its tests kill the API server or the kubelet, and the fixture removes
# every Job of the shared namespace, another test's too.
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.cluster_alone]

JOB = "rlinf-smoke-ppo-mlp"
RUNTIME_AFTER_61 = ("6.2", "6.3", "6.4", "6.5")
OUTAGE_S = 12.0


@pytest.fixture
def cluster(kube_env: KubeEnv, s3_env: S3Env) -> Iterator[KubeEnv]:
    """The cluster, whole again after the test (the API server and the kubelet running,
    no Job of the profile left)."""
    schedulable_again(kube_env)  # an earlier test's outage may still be in the cluster's way
    try:
        yield kube_env
    finally:
        with contextlib.suppress(Exception):  # any: it may be running; the next test checks
            kube_env.start_apiserver()
        with contextlib.suppress(Exception):  # as above
            kube_env.start_kubelet()
        remove_jobs(kube_env, kube_env.namespace)
        schedulable_again(kube_env)


def remove_jobs(kube_env: KubeEnv, ns: str, within: float = 90.0) -> None:
    """Every Job of the profile and its Pods gone, waited for: a restarted API server refuses
    at first (its RBAC caches load), and a Pod still listed keeps the node's GPUs from the
    next test's Worker (6.2 Pending)."""
    custom, core = kube_env.custom(), kube_env.core()
    deadline = time.monotonic() + within
    while True:
        try:
            jobs = custom.list_namespaced_custom_object("rlark.io", "v1alpha1", ns, "jobs")
            for item in jobs["items"]:
                custom.delete_namespaced_custom_object(
                    "rlark.io", "v1alpha1", ns, "jobs", item["metadata"]["name"]
                )
            core.delete_collection_namespaced_pod(
                ns, label_selector=JOB_NAME_LABEL, grace_period_seconds=0
            )
            if not core.list_namespaced_pod(ns, label_selector=JOB_NAME_LABEL).items:
                return
        except Exception:  # any: the API server may be restarting; past the deadline, raised
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"the profile's Pods are still in {ns} after {within:.0f} s")
        time.sleep(0.5)


def earliest(run: SuiteRun) -> dict[str, Any]:
    first = run.summary.get("earliestFailure")
    assert first is not None, run.tail()
    return first


def start_waiting(tmp_path: Path, sleep_s: float, **site: Any) -> tuple[SuiteRun, float]:
    """The suite, started; returns once Step 6 waits for 6.4 (and when that was)."""
    s = Site.make(tmp_path / "site", before=f"{STARTING}; sleep {sleep_s:g}", **site)
    run = SuiteRun.start(tmp_path, s)
    try:
        return run, run.wait_for(waits_for("6.4"))
    except BaseException:
        run.kill()
        raise


# --- the API server ------------------------------------------------------------------------
@pytest.mark.parametrize("during", ["6.4", "6.5"])
def test_an_api_server_outage_of_12_s_is_ridden_out(
    cluster: KubeEnv, tmp_path: Path, during: str
) -> None:
    # During 6.5: with the training checks off, 6.5 waits for the checkpoint while the Worker
    # trains, as the page has it (with them on, the steps and the scalars are awaited first,
    # and 6.5 then finds the checkpoint at once). The step after the first signal, which
    # writes the first checkpoint, takes 6 s: on a busy machine a step's usual second was
    # over before 6.4 had read its line, and 6.5 found the checkpoint without a wait.
    slow = "smoke.step_seconds=6" if during == "6.5" else ""
    run, _ = start_waiting(
        tmp_path, 6 if during == "6.4" else 0, training=during == "6.4", overrides=slow
    )
    try:
        if during == "6.5":
            run.wait_for(waits_for("6.5"))
        time.sleep(1.0)
        cluster.kill_apiserver()
        killed = time.monotonic()
        time.sleep(OUTAGE_S)
        cluster.start_apiserver()
        outage = time.monotonic() - killed
        run.finish()
    finally:
        run.kill()
    s = run.summary
    print(
        f"API server outage during {during}: {outage:.1f} s -> {s['verdict']} ({run.elapsed:.0f} s)"
    )
    assert run.returncode == 0, run.tail()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None, s.get("earliestFailure")
    assert all(s["checks"][c] == "passed" for c in ("6.1", *RUNTIME_AFTER_61)), s["checks"]
    assert "warnings" not in s, s["warnings"]
    assert not cluster.core().list_namespaced_pod(cluster.namespace).items  # nothing left


def test_an_api_server_that_stays_down_is_named_within_its_bound(
    cluster: KubeEnv, tmp_path: Path
) -> None:
    bound = 20.0
    run, _ = start_waiting(tmp_path, 30, timeouts={"apiServer": bound})
    try:
        time.sleep(1.0)
        cluster.kill_apiserver()
        killed = time.monotonic()
        run.finish()
        ended = time.monotonic() - killed
    finally:
        run.kill()
    first = earliest(run)
    print(f"API server down for good: red after {ended:.1f} s; {first['message']}")
    assert run.returncode == 1, run.tail()
    assert first["check"] == "6.4", first
    msg = first["message"]
    assert "API server" in msg and "is unreachable" in msg and "timeouts.apiServer" in msg, msg
    job = f"{JOB}-{run.summary['runId']}"  # the run's own Job: its id is in the name
    assert f"job {job} and its Pods may be left in namespace {cluster.namespace}" in msg, msg
    assert "Worker ended" not in msg and "timeouts.firstSignal" not in msg, msg
    # Red once the API server was silent for its bound, by the harness's own clock, far from
    # 6.4's 120 s. (The suite ends later: its clean-up and the process's end come after, and
    # on 2 loaded cores that took 55 s after the kill in a clean-clone run.)
    silent = re.search(r"no answer for (\d+) s", msg)
    assert silent is not None and bound <= float(silent.group(1)) < bound + 10, msg
    # The clean-up could not reach the API server: a warning of the record, no scenario's.
    warnings = run.summary.get("warnings") or []
    assert any(JOB in w and "not removed" in w for w in warnings), run.summary
    assert "error in teardown" not in run.output and "Traceback" not in run.output, run.tail()
    assert run.summary["checks"]["6.5"] == "notReached"


# --- the node --------------------------------------------------------------------------------
def test_a_killed_kubelet_is_named_within_seconds_and_the_teardown_is_bounded(
    cluster: KubeEnv, tmp_path: Path
) -> None:
    run, _ = start_waiting(tmp_path, 60)
    try:
        time.sleep(1.0)
        cluster.kill_kubelet()
        killed = time.monotonic()
        run.finish(600)
        ended = time.monotonic() - killed
    finally:
        run.kill()
    first = earliest(run)
    msg = first["message"]
    print(f"kubelet killed: exit after {ended:.1f} s; {msg}")
    assert run.returncode == 1, run.tail()
    assert first["check"] == "6.4", first
    assert f"node {cluster.real_node}" in msg and "kubelet stopped answering" in msg, msg
    assert "Worker ended" not in msg, msg
    assert ended < 90, ended  # named within seconds; teardown bounded (no 2 × delete timeout)
    assert "error in teardown" not in run.output and "Traceback" not in run.output, run.tail()
    warnings = run.summary.get("warnings") or []
    assert any(cluster.real_node in w for w in warnings), run.summary


# --- RBAC ------------------------------------------------------------------------------------
def harness_role(without: str) -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all((REPO / "deploy" / "harness-rbac.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "Role")
    rules = []
    for r in role["rules"]:
        if r["resources"] == ["jobs"]:
            r = {**r, "verbs": [v for v in r["verbs"] if v != without]}
        rules.append(r)
    return rules


def bind(kube_env: KubeEnv, ns: str, rules: list[dict[str, Any]] | None) -> None:
    """The harness's ServiceAccount in ``ns``: bound to ``rules`` (None: to nothing)."""
    if rules is None:
        return
    rbac = client.RbacAuthorizationV1Api(kube_env.api_client())
    rbac.create_namespaced_role(ns, {"metadata": {"name": "harness"}, "rules": rules})
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "harness"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "harness"},
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": "rlark-acceptance",
                    "namespace": kube_env.namespace,
                }
            ],
        },
    )


@pytest.mark.parametrize("verb", ["create", "delete"])
def test_a_role_without_a_verb_on_jobs(cluster: KubeEnv, tmp_path: Path, verb: str) -> None:
    ns = cluster.create_namespace("rbac")
    try:
        bind(cluster, ns, harness_role(without=verb) if verb != "create" else None)
        run = SuiteRun.start(tmp_path, Site.make(tmp_path / "site", namespace=ns))
        try:
            run.finish()
        finally:
            run.kill()
        s = run.summary
        if verb == "create":
            first = earliest(run)
            msg = first["message"]
            print(f"no RBAC: {first['check']}: {msg}")
            assert run.returncode == 1, run.tail()
            assert first["check"] == "6.1", first
            assert "403 Forbidden" in msg and 'cannot create resource "jobs"' in msg, msg
            assert f'in the namespace "{ns}"' in msg and "system:serviceaccount:" in msg, msg
            assert "deploy/harness-rbac.yaml" in msg, msg
            assert all(s["checks"][c] == "notReached" for c in RUNTIME_AFTER_61), s["checks"]
            assert "cannot create resource" in run.output  # the terminal says it too
        else:
            warnings = s.get("warnings") or []
            print(f"no delete: {s['verdict']}; warnings: {warnings}")
            assert run.returncode == 0, run.tail()
            assert s["verdict"] == "passed", s.get("earliestFailure")
            assert any(
                "403 Forbidden" in w
                and 'cannot delete resource "jobs"' in w
                and f"job {JOB}-{s['runId']} and its Pods may be left in namespace {ns}" in w
                and "deploy/harness-rbac.yaml" in w
                for w in warnings
            ), warnings
            assert "warning: " in run.output and "error in teardown" not in run.output
    finally:
        remove_jobs(cluster, ns)
        cluster.delete_namespace(ns)


# --- a loud Worker ---------------------------------------------------------------------------
LOUD = (
    "python -c \"import sys; line = 'x' * 99 + chr(10); "
    '[sys.stdout.write(line) for _ in range({n})]; sys.stdout.flush()"'
)
# The record's warning when the kubelet may have rotated lines away unread.
ROTATED = "LogRotated: the kubelet rotated the Worker's log before it was read: lines written "
# Numbered lines of 100 bytes, every LONG_EVERY-th of LONG bytes: which ones were read, in
# what order and whether whole, is countable. A long line is over the runtime's 16 KiB
# maximum, stored as partial entries: a rotation falls between two of them now and then.
LONG_EVERY, LONG = 2000, 40_000
NUMBERED = (
    'python -c "import sys; w = sys.stdout.write; '
    f"[w('L%09d ' % i + 'x' * (i % {LONG_EVERY} and 89 or {LONG - 11}) + chr(10))"
    ' for i in range({n})]; sys.stdout.flush()"'
)


def test_a_worker_printing_300_mb_before_its_signal_passes(
    cluster: KubeEnv, tmp_path: Path
) -> None:
    """The kubelet rotates the Worker's log at 10 MiB (checked every 10 s) and serves it
    slower than the Worker writes: the printed config and the signal after 300 MB are
    read, from files rotated before the follow reached them, and the verdict is the
    Worker's."""
    before = f"{STARTING}; " + LOUD.format(n=3_000_000)
    run = SuiteRun.start(tmp_path, Site.make(tmp_path / "site", before=before))
    try:
        run.finish()
    finally:
        run.kill()
    s = run.summary
    print(
        f"loud Worker (300 MB): {s['verdict']} in {run.elapsed:.0f} s, "
        f"peak RSS {run.peak_rss_mib:.0f} MiB"
    )
    assert run.returncode == 0, run.tail()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None, s["earliestFailure"]
    assert all(s["checks"][c] == "passed" for c in ("1.1", "1.2", "6.4", "6.5")), s["checks"]
    # Whether every line was read is test_every_line_of_300_mb_is_read_once_in_order's to
    # count. Here the record may only say, in its own words, that lines may be missing: in
    # one CI run on the loaded 2 cores it said so of 54 s of lines (the harness could not
    # rule out a file rotated past unseen; whether lines were lost is not known).
    for warning in s.get("warnings", []):
        print(f"loud Worker (300 MB): {warning}")
        assert warning.startswith(ROTATED), warning
    assert run.peak_rss_mib < 600, run.peak_rss_mib
    # The follow fell behind by files (the Worker wrote 300 MB in seconds): their readers
    # ahead said so in the observation's own Event, which the record keeps beside the
    # target's, in the run's "Pods and events" evidence of the Allure results.
    ahead = [e for e in _evidence_events(run.reports) if e.get("reason") == LOG_READ_AHEAD]
    assert ahead, "no LogReadAhead Event in the run's evidence"
    print(f"loud Worker (300 MB): {ahead[0]['message']}")
    assert all(e["source"] == HARNESS_SOURCE and e["type"] == "Normal" for e in ahead), ahead
    said = ahead[0]["message"]
    assert re.match(r"\d+ of the Worker's log files were read while the follow", said), said


def _evidence_events(reports: Path) -> list[dict[str, Any]]:
    """The Events of every "Pods and events" attachment of the run's Allure results."""
    found = []
    for path in (reports / "allure-results").glob("*-attachment.json"):
        body = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(body, dict) and isinstance(body.get("events"), list):
            found.extend(body["events"])
    return found


def test_lines_rotated_away_while_the_api_server_is_down_are_named_in_every_form(
    cluster: KubeEnv, tmp_path: Path
) -> None:
    """The API server down for 20 s while the Worker prints ~4 MB/s through the kubelet's
    rotations (10 MiB, two files kept): what was written early in the outage is rotated
    away before anyone can read it. The printed config and the signal come after, so the
    run is accepted, and it says which lines may be missing (a ``LogRotated`` warning with
    their time span): in run-summary.json, on the terminal, in JUnit's profile suite and on
    the rendered report's overview."""
    loud = (
        'python -c "import sys, time; w = sys.stdout.write; '
        "[(w('L%09d ' % i + 'x' * 89 + chr(10)), i % 4000 == 3999 and "
        '(sys.stdout.flush(), time.sleep(0.1))) for i in range(1_400_000)]"'
    )
    site = Site.make(
        tmp_path / "site",
        before=f"{STARTING}; {loud}",
        timeouts={"apiServer": 120, "firstSignal": 600},
    )
    run = SuiteRun.start(tmp_path, site)
    try:
        run.wait_for(waits_for("6.4"))
        time.sleep(3.0)
        cluster.kill_apiserver()
        time.sleep(20.0)
        cluster.start_apiserver()
        run.finish()
    finally:
        run.kill()
    s = run.summary
    assert run.returncode == 0, run.tail()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None, s.get("earliestFailure")
    rotated = [w for w in s.get("warnings", []) if w.startswith(ROTATED)]
    assert rotated, s.get("warnings")
    print(f"lines rotated away in the outage: {rotated}")
    assert f"warning: {rotated[0]}" in run.output  # the terminal
    junit = JUnitXml.fromfile(str(run.reports / "junit.xml"))
    (suite,) = [x for x in junit if "the profile as it is" in x.name]
    assert rotated[0] in [p.value for p in suite.properties() if p.name == "warning"]
    report = str(Path(sys.executable).with_name("rlark-acceptance"))
    done = subprocess.run(
        [report, "report", "--reports-dir", str(run.reports)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (env,) = list((run.reports / "allure-report").rglob("allure_environment.json"))
    assert "LogRotated: the kubelet rotated" in env.read_text(encoding="utf-8")
    assert not cluster.core().list_namespaced_pod(cluster.namespace).items  # nothing left


# A consumer's stop, longer than the kubelet's 10 s between size checks, and than the 10 s
# within which a reader that delivers nothing is still chased (logfiles.ARRIVING_SECONDS): a
# reader held by its consumer is chased all the same.
BUSY_SECONDS = 12.0


@pytest.mark.xfail(
    strict=False,
    reason="a known loss of the kubelet's own follow on a loaded machine: beside real RLinf "
    "runs at a load of 10-37 on 2 cores, 3 of 8 runs failed, where 14 of 14 on a quiet "
    "machine (10 of them in a row) read every line once, whole, at 2.9-3.2 MB/s, and 38 of 40 "
    "since the observer reads what has arrived at once, at 6.6-8.1 MB/s. 5 lines at a file "
    "boundary, and in another run 33, were missing without a word, "
    "and a 40 KB line was split at a rotation: a follow at its file's end goes on to the "
    "new file as soon as it is created, while containerd's old logger still writes its "
    "buffered lines to the old file (docs/explanation/kubernetes.md). The third, a jump "
    "over files with readers of their own said as lost, is mended",
)
def test_every_line_of_300_mb_is_read_once_in_order(
    cluster: KubeEnv, s3_env: S3Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observation of a Worker printing 3 M numbered lines as fast as it can on the
    real node, through several rotations: each line once, whole, in order, and nothing said
    lost. A rotation cuts the line in flight into two partial entries, one in each file (and
    1,500 of the lines are 40 KB long, stored in partial entries anyway): its head is never
    a line of its own, nor its end a line again. The files read ahead of the consumer wait
    on disk within a bound of 4 MiB, about a seventieth of the log (under half of a file's
    lines), so later files' readers wait, streams open, and read on as the spools are put:
    that loses nothing either. The consumer stops for 12 s early on, as Step 6 does while it
    reads a checkpoint, and the follow, held meanwhile, falls far behind the Worker. Where
    the kubelet rotated the log while the Worker printed (it may print all 300 MB between
    two of the kubelet's size checks, into one file), later files are read ahead."""
    n = 3_000_000
    bound = 4 << 20
    monkeypatch.setattr(logspool, "SPOOL_AHEAD_BYTES", bound)
    site = Site.make(tmp_path / "site", before=f"{NUMBERED.format(n=n)}; exit 0")
    profile = load_profile(site.profile)
    adapter = open_adapter(profile)
    try:
        job = read_job(str(site.job))
        job, manifest = for_run(job, manifest_of(job), new_run_id(), None)
        ref = adapter.submit(job, manifest)
        obs = adapter.observe(ref)
        got, warned, noted, started = 0, [], [], time.monotonic()
        bad: list[tuple[int, str, list[str]]] = []  # (expected, read, the lines before)
        prev: list[str] = []
        deadline = started + 600
        busy = True  # the consumer's stop is still to come
        while (left := deadline - time.monotonic()) > 0:
            if busy and got >= n // 10:
                busy = False
                time.sleep(BUSY_SECONDS)
            item = obs.next(left)
            if item is None or isinstance(item, LogEnded | TargetLost):
                assert isinstance(item, LogEnded), item
                break
            if isinstance(item, EventSeen) and item.event.type == "Warning":
                warned.append(item.event)
            elif isinstance(item, EventSeen) and item.event.source == HARNESS_SOURCE:
                noted.append(item.event)
            for line in item.lines if isinstance(item, LogLines) else ():
                if line.startswith("L") and line[1:10].isdigit():
                    if int(line[1:10]) != got:
                        bad.append((got, line[:14], [x[:40] for x in prev[-3:]]))
                        got = int(line[1:10])
                    if len(line) != (100 if got % LONG_EVERY else LONG):
                        bad.append((got, f"{line[:14]}... of {len(line)} characters", []))
                    got += 1  # or out of order
                elif line and set(line) == {"x"}:  # the end of a line cut by a rotation, again
                    bad.append((got, f"a line of {len(line)} x alone", [x[:40] for x in prev[-3:]]))
                prev.append(line)
                del prev[:-4]
        elapsed = time.monotonic() - started
        print(
            f"{got} of {n} numbered lines in {elapsed:.0f} s ({got * 100 / elapsed / 1e6:.1f} MB/s)"
        )
        # Whether a loss was said, and where, goes with any failure: a loss said is the
        # record's own account, a silent one the worst the observation can do.
        said = [e.message[:200] for e in warned if e.source == HARNESS_SOURCE]
        assert not bad, f"{bad[:10]}; said: {said}"
        assert got == n, f"{got} of {n} lines, the last ones missing; said: {said}"
        assert not said
        # Where files were read ahead, it is said; their spools filled to the bound (so
        # readers waited) and held within it (twice it, and a megabyte a reader).
        # Said once the follow caught up with the files read ahead, and again at the end if
        # it fell behind by more files after that: the last one counts them all.
        for ahead in [e.message for e in noted if e.reason == LOG_READ_AHEAD][-1:]:
            print(ahead)
            m = re.match(r"(\d+) of .* at most ([\d.]+) MB", ahead)
            assert m is not None, ahead
            files, held = int(m[1]), float(m[2]) * 1e6
            assert files >= 1 and bound <= held <= 2 * bound + (files + 1) * 1.1e6
        adapter.delete(ref)
    finally:
        adapter.close()
        remove_jobs(cluster, cluster.namespace)
