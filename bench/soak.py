"""Soak: many acceptance runs on one machine, staggered and overlapping, each with one random
platform fault at a random moment of Step 6, every verdict held to the one its faults call for.

    python bench/soak.py [--runs 60] [--at-once 2] [--seed 1] [--minutes 90]
                         [--targets local,kubernetes] [--faults NAME,...]
                         [--keep DIR] [--json FILE]

Needs `testenv/testenv up` (the cluster with its real node gpu-node-09, and the S3 server);
it talks to loopback only. Each run is the suite's Step 6 scenarios on a copy of
profiles/local.yaml or profiles/kubernetes.yaml (``pytest features/ -m "runtime and ..."``,
as the fault tests start it), its run script sleeping first so the fault lands while Step 6
waits for 6.4. Runs start ``--stagger`` seconds apart at most and up to ``--at-once`` are in
Step 6 together, so they start and end in any order.

The faults, drawn per run (a fault of a shared service reaches every run in flight):
  none           nothing happens (the control)
  api-restart    kube-apiserver SIGKILLed, started again on its etcd data after 5-40 s
  kubelet-kill   the real node's kubelet SIGKILLed (started again after the run)
  containerd-kill the real node's containerd SIGKILLed, started again after 3-15 s
  s3-restart     the S3 server SIGKILLed, started again on its port and data after 1-8 s
  log-burst      the run script prints 200 MB before the workload
  second-run     a second run of the same profile starts beside it
  pod-evicted    the Worker's Pod evicted through the Eviction API
  release-beside a release of two local profiles started beside it (their Step 6)

The verdict each calls for: a fault the platform recovers from passes (an outage shorter
than ``timeouts.apiServer`` minus a margin, a burst, a second run); one it cannot names its
component in the earliest failure (the API server, the kubelet, the Worker's eviction); an
S3 server or a containerd that comes back may be ridden out or named (s3fs may or may not
retry through the gap; the kubelet may report its runtime down). A release beside a run is
accepted on every profile. A run a shared fault overlapped may also fail naming that
fault's component.

Afterwards, one run of each target with no fault (the next run a user starts, which removes
what runs that could not clean up left: a Worker not deleted, a store that refused), then
the leftovers (Jobs, Pods, local Pod processes, s3fs mounts, the runs' objects, local
scratch), the harness's peak RSS per run (first and last tenth), each wrong verdict
with its record kept under ``--keep``. Prints a Markdown table; ``--json`` writes it all.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from bench.k8s_faults import kube_env  # noqa: E402
from fixtures.testenv import KubeEnv  # noqa: E402
from rlark_acceptance.adapters.local.leftovers import POD_MARKER_ENV  # noqa: E402
from rlark_acceptance.model.job import JOB_NAME_LABEL  # noqa: E402
from testenv import s3 as testenv_s3  # noqa: E402
from testenv import state  # noqa: E402
from tests.adapters import k8s_suite  # noqa: E402
from tests.adapters.k8s_suite import (  # noqa: E402
    LOUD,
    STARTING,
    SuiteRun,
    schedulable_again,
    waits_for,
)
from tests.release.release_runs import ReleaseRun, release_file, run_release, variant  # noqa: E402
from tests.run.suite_runs import STEP6_ONLY, site_copy  # noqa: E402

API_SERVER_BOUND_S = 30.0  # timeouts.apiServer, the default the sites keep
MARGIN_S = 6.0  # an outage this close to the bound may go either way
SLEEP_BEFORE_S = 12  # the run script's sleep before the workload: 6.4 waits through it
BURST_LINES = 2_000_000  # 200 MB of 100-byte lines

# What an earliest failure's message says when it names each component.
# Phrases of the harness's own naming, never a word any message may hold: every Kubernetes
# run's last warning says "kubelet does not have ClusterDNS IP configured", which names no
# fault.
NAMES: dict[str, re.Pattern[str]] = {
    # The API server named down, or 6.2's "nothing has considered the Pod (is the cluster's
    # scheduler running and connected to the API server?)" while the scheduler reconnects.
    "api": re.compile(
        r"API server (?:at )?\S+ (?:is unreachable|refuses|does not answer)"
        r"|scheduler running and connected to the API server"
    ),
    "kubelet": re.compile(r"(?:its|whose) kubelet "),
    "store": re.compile(r"the store behind|\[mount-io-error|MountVolume\.SetUp failed"),
    "runtime": re.compile(r"\[container-runtime-lost\]|container runtime is down"),
    "eviction": re.compile(r"\[worker-disrupted\]"),
}


@dataclass(frozen=True)
class Expect:
    """The verdicts that are right for a run: passing (``passes``), or a failure whose
    earliest check's message names one of ``names``' components."""

    passes: bool
    names: frozenset[str] = frozenset()

    def widened(self, component: str) -> Expect:
        """The same run, overlapped by another run's fault of ``component``."""
        return Expect(self.passes, self.names | {component})


def judge(summary: dict[str, Any], expect: Expect) -> str | None:
    """None when the run's record is a right verdict for ``expect``; else why not."""
    verdict = summary.get("verdict")
    if verdict == "passed":
        return None if expect.passes else "passed, though its fault cannot be recovered from"
    first = summary.get("earliestFailure") or {}
    # A run that could not start (its target refused at the outset) says why in ``error``.
    message = str(first.get("message") or summary.get("error") or "")
    if message.startswith(("error in setup", "error in teardown")):
        # The harness's own error, whatever it names: never a verdict on the platform.
        return f"{verdict} at {first.get('check')} by an error of the harness: {message[:300]}"
    for component in sorted(expect.names):
        if NAMES[component].search(message):
            return None
    wanted = " or ".join(sorted(expect.names)) or "nothing (it should pass)"
    return f"{verdict} at {first.get('check')} naming {wanted!s} nowhere: {message[:300]}"


def outage_expect(outage_s: float, bound_s: float = API_SERVER_BOUND_S) -> Expect:
    """An API server outage: ridden out well within the bound, named well past it."""
    if outage_s <= bound_s - MARGIN_S:
        return Expect(True)
    if outage_s >= bound_s + MARGIN_S:
        return Expect(False, frozenset({"api"}))
    return Expect(True, frozenset({"api"}))


@dataclass(frozen=True)
class Fault:
    name: str
    targets: tuple[str, ...]
    shared: str | None  # the component every run in flight shares, if any
    weight: float


FAULTS = (
    Fault("none", ("local", "kubernetes"), None, 2.0),
    Fault("api-restart", ("kubernetes",), "api", 1.5),
    Fault("kubelet-kill", ("kubernetes",), "kubelet", 0.7),
    Fault("s3-restart", ("local", "kubernetes"), "store", 1.2),
    Fault("log-burst", ("local", "kubernetes"), None, 0.5),
    Fault("second-run", ("local", "kubernetes"), None, 1.0),
    Fault("pod-evicted", ("kubernetes",), None, 1.0),
    Fault("containerd-kill", ("kubernetes",), "runtime", 0.7),
    Fault("release-beside", ("local", "kubernetes"), None, 0.7),
)


@dataclass
class Run:
    index: int
    target: str
    fault: str
    expect: Expect
    started: float = 0.0
    ended: float = 0.0
    detail: str = ""  # the fault as it happened (an outage's length)
    verdict: str = ""
    earliest: str = ""
    wrong: str | None = None
    peak_rss_mib: float = 0.0
    run_ids: list[str] = field(default_factory=list)
    window: list[Any] | None = None  # the shared fault it struck, while it lasts
    message: str = ""  # the earliest failure's message
    release: threading.Thread | None = None  # the release started beside it
    released: ReleaseRun | None = None


def judge_release(run: Run, expect: Expect) -> str | None:
    """The release started beside ``run``: each profile's record judged as a run's (a shared
    fault may reach it too), and the release accepted when nothing could make it fail."""
    released = run.released
    if released is None:
        return run.wrong or "the release beside it wrote no release-summary.json"
    wrong = None
    for p in released.summary.get("profiles") or []:
        summary = released.run_summary(str(p["name"]))
        run.run_ids.append(str(summary.get("runId")))
        why = judge(summary, expect)
        wrong = wrong or (f"release profile {p['name']}: {why}" if why else None)
    verdict = released.summary.get("verdict")
    accepted = verdict == "accepted" and released.returncode == 0
    if wrong is None and expect.passes and not expect.names and not accepted:
        wrong = f"release {verdict} (exit {released.returncode}), every profile passing"
    run.detail = run.detail or f"release {verdict}"
    return wrong


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="rlark-soak-"))
        self.kube: KubeEnv | None = kube_env() if "kubernetes" in args.targets else None
        self.runs: list[Run] = []
        self.lock = threading.Lock()  # the runs list and the shared faults' windows
        self.shared = threading.Lock()  # one fault of a shared service at a time
        self.healing = threading.Event()  # set while a shared service is made whole again
        self.healing.set()
        # The shared faults: [component, from, to]; ``to`` is None while it lasts, and a
        # run that ends meanwhile was reached by it.
        self.windows: list[list[Any]] = []

    # --- one run ----------------------------------------------------------------------------
    def site(self, run: Run, before: str) -> Path:
        root = self.tmp / f"run-{run.index}"
        if run.target == "kubernetes":
            site = k8s_suite.Site.make(root / "site", before=before)
            profile = site.profile
        else:
            local = site_copy(root)
            script = "cd /workspace/smoke && python -m rlark_acceptance.smoke"
            for f in (local.profile, local.job):
                local.edit(f, script, f"{before}; {script}")
            profile = local.profile
        text = profile.read_text(encoding="utf-8")
        # What a red run wrote is not kept: every object left after the soak is a leftover.
        profile.write_text(text.replace("\ntarget:\n", "\ntarget:\n  keepOutputs: never\n", 1))
        return profile

    def start(self, run: Run, profile: Path, name: str) -> SuiteRun:
        where = self.tmp / f"run-{run.index}" / name
        where.mkdir(parents=True)
        return SuiteRun.start(where, k8s_suite.Site(profile.parent, profile, profile))

    def one(self, run: Run) -> None:
        before = f"{STARTING}; sleep {SLEEP_BEFORE_S}"
        if run.fault == "log-burst":
            before = f"{STARTING}; " + LOUD.format(n=BURST_LINES)
        profile = self.site(run, before)
        run.started = time.monotonic()
        suite = self.start(run, profile, "a")
        others: list[SuiteRun] = []
        try:
            if run.fault != "log-burst" and self.reached(suite, "6.4"):
                time.sleep(self.rng.uniform(0.5, 3.0))
                others = self.inject(run, suite, profile)
            elif run.fault != "log-burst":
                # Red before 6.4 (another run's fault of a shared service): judged as it is.
                run.detail = f"ended before 6.4: {run.fault} not struck"
                run.fault, run.expect = "none", Expect(True)
            for s in (suite, *others):
                s.finish(1200)
        except AssertionError as exc:  # the suite ended early or hung: a verdict all the same
            run.wrong = f"the suite did not run as a user's would: {str(exc)[:300]}"
        finally:
            for s in (suite, *others):
                s.kill()
            if run.release is not None:
                run.release.join()
        run.ended = time.monotonic()
        self.conclude(run, [suite, *others])

    @staticmethod
    def reached(suite: SuiteRun, check: str) -> bool:
        """Whether Step 6 began waiting for ``check``; False when the suite ended first."""
        try:
            suite.wait_for(waits_for(check), timeout=600)
        except AssertionError as exc:
            if "the suite ended before" not in str(exc):
                raise  # still running after the bound: that is the soak's to report
            return False
        return True

    def conclude(self, run: Run, suites: list[SuiteRun]) -> None:
        expect = run.expect
        with self.lock:
            for component, start, end in self.windows:
                if start < run.ended and (end is None or end > run.started):
                    expect = expect.widened(component)
        run.peak_rss_mib = max(s.peak_rss_mib for s in suites)
        for s in suites:
            if not s.summary:
                continue
            run.run_ids.append(str(s.summary.get("runId")))
            first = s.summary.get("earliestFailure") or {}
            run.verdict = run.verdict or str(s.summary.get("verdict"))
            run.earliest = run.earliest or str(first.get("check") or "")
            run.message = run.message or str(first.get("message") or "")
            why = judge(s.summary, expect)
            if why is not None and run.wrong is None:
                run.wrong = why
        if run.fault == "release-beside":
            run.wrong = run.wrong or judge_release(run, expect)
        if run.wrong is not None and self.args.keep:
            keep = Path(self.args.keep) / f"run-{run.index}"
            shutil.copytree(self.tmp / f"run-{run.index}", keep, symlinks=True)

    # --- the faults ---------------------------------------------------------------------------
    def inject(self, run: Run, suite: SuiteRun, profile: Path) -> list[SuiteRun]:
        fault = run.fault
        if fault == "second-run":
            return [self.start(run, profile, "b")]
        if fault == "release-beside":
            run.release = threading.Thread(target=self.release, args=(run,), daemon=True)
            run.release.start()
            return []
        if fault == "pod-evicted":
            run.detail = self.evict(suite)
            return []
        if fault in ("api-restart", "kubelet-kill", "s3-restart", "containerd-kill"):
            self.shared_fault(run)
        return []

    def release(self, run: Run) -> None:
        """A release of two copies of the local profile (their Step 6), as a user starts
        it from the checkout beside the run."""
        root = self.tmp / f"run-{run.index}" / "release"
        profiles: list[Path | str] = []
        for name in ("soak-release-a", "soak-release-b"):
            site = variant(root, name)
            text = site.profile.read_text(encoding="utf-8")
            site.profile.write_text(
                text.replace("\ntarget:\n", "\ntarget:\n  keepOutputs: never\n", 1),
                encoding="utf-8",
            )
            profiles.append(site.profile)
        path = release_file(
            root / "release.yaml", profiles, name=f"soak-{run.index}", select=STEP6_ONLY
        )
        try:
            run.released = run_release(ROOT, root / "reports", "--release", str(path), timeout=1200)
        except AssertionError as exc:  # no release record: the soak says so
            run.wrong = run.wrong or f"the release beside it: {str(exc)[:300]}"

    def shared_fault(self, run: Run) -> None:
        component = next(f.shared for f in FAULTS if f.name == run.fault)
        assert component is not None
        with self.shared:
            self.healing.clear()
            began = time.monotonic()
            window = [component, began, None]
            with self.lock:
                self.windows.append(window)
            run.window = window
            try:
                if run.fault == "api-restart":
                    outage = self.rng.uniform(5.0, 40.0)
                    self.kube_().kill_apiserver()
                    time.sleep(outage)
                    self.kube_().start_apiserver()
                    run.detail = f"{time.monotonic() - began:.0f} s outage"
                    run.expect = outage_expect(time.monotonic() - began)
                    schedulable_again(self.kube_())
                elif run.fault == "kubelet-kill":
                    self.kube_().kill_kubelet()
                    run.detail = "kubelet down until the run ended"
                    return  # started again once this run is over (``heal_kubelet``)
                elif run.fault == "containerd-kill":
                    gap = self.rng.uniform(3.0, 15.0)
                    self.kube_().kill_node_part("containerd")
                    time.sleep(gap)
                    self.kube_().start_node_part("containerd")
                    run.detail = f"{time.monotonic() - began:.0f} s without containerd"
                else:
                    gap = self.rng.uniform(1.0, 8.0)
                    with state.locked():
                        pid = state.load().s3.pid  # type: ignore[union-attr]
                    os.kill(pid, signal.SIGKILL)
                    time.sleep(gap)
                    with state.locked():
                        st = state.load()
                        testenv_s3.revive(st)
                        state.save(st)
                    run.detail = f"{gap:.0f} s without S3"
            finally:
                if run.fault != "kubelet-kill":
                    self.close_window(window)

    def close_window(self, window: list[Any]) -> None:
        with self.lock:
            # A run that started while the service was made whole again is reached too.
            window[2] = time.monotonic() + 5.0
        self.healing.set()

    def heal_kubelet(self, run: Run) -> None:
        """The kubelet started again; the Pods its run's clean-up marked for deletion then go
        by themselves (waited for, never removed by the soak: what stays is a leftover)."""
        kube = self.kube_()
        kube.start_kubelet()
        core = kube.core()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            pods = core.list_namespaced_pod(kube.namespace, label_selector=JOB_NAME_LABEL).items
            if not any(i in p.metadata.name for p in pods for i in run.run_ids if i):
                break
            time.sleep(1)
        schedulable_again(kube)
        if run.window is not None:
            self.close_window(run.window)

    # Another run's fault may have the API server down when this one's eviction is due: the
    # soak waits for it as a user's kubectl would be retried, for up to a minute.
    @retry(
        retry=retry_if_exception_type((urllib3.exceptions.HTTPError, ConnectionError)),
        wait=wait_fixed(2),
        stop=stop_after_delay(60),
        reraise=True,
    )
    def evict(self, suite: SuiteRun) -> str:
        from kubernetes import client

        kube = self.kube_()
        run_id = self.run_id_of(suite)
        core = kube.core()
        pods = core.list_namespaced_pod(kube.namespace, label_selector=JOB_NAME_LABEL).items
        mine = [p for p in pods if run_id and run_id in p.metadata.name]
        for p in mine:
            body = client.V1Eviction(
                metadata=client.V1ObjectMeta(name=p.metadata.name, namespace=kube.namespace)
            )
            core.create_namespaced_pod_eviction(p.metadata.name, kube.namespace, body)
        return f"{len(mine)} Pod(s) evicted"

    @staticmethod
    def run_id_of(suite: SuiteRun) -> str:
        """The run id the suite printed in its Job's name (``...-<yymmddHHMMSS>-<hex>``)."""
        found = re.search(r"rlinf-smoke-ppo-mlp-(\d{12}-[0-9a-f]{6})", suite.output)
        return found.group(1) if found else ""

    def kube_(self) -> KubeEnv:
        assert self.kube is not None, "a Kubernetes fault without the cluster"
        return self.kube

    # --- the soak ------------------------------------------------------------------------------
    def draw(self, index: int) -> Run:
        target = self.rng.choice(self.args.targets)
        faults = [f for f in FAULTS if target in f.targets and f.name in self.args.faults]
        if not faults:  # none of the chosen faults strikes this target: its control run
            faults = [FAULTS[0]]
        fault = self.rng.choices(faults, weights=[f.weight for f in faults])[0]
        expect = {
            "kubelet-kill": Expect(False, frozenset({"kubelet"})),
            "pod-evicted": Expect(False, frozenset({"eviction"})),
            "s3-restart": Expect(True, frozenset({"store"})),
            "containerd-kill": Expect(True, frozenset({"runtime"})),
        }.get(fault.name, Expect(True))
        return Run(index, target, fault.name, expect)

    def go(self) -> None:
        deadline = time.monotonic() + self.args.minutes * 60
        threads: list[threading.Thread] = []
        for i in range(self.args.runs):
            while sum(t.is_alive() for t in threads) >= self.args.at_once:
                time.sleep(0.5)
            if time.monotonic() > deadline:
                print(f"time is up after {i} runs", flush=True)
                break
            self.healing.wait()  # no run starts into a service being made whole again
            run = self.draw(i)
            self.runs.append(run)
            t = threading.Thread(target=self.guarded, args=(run,), daemon=True)
            t.start()
            threads.append(t)
            time.sleep(self.rng.uniform(0.0, self.args.stagger))
        for t in threads:
            t.join()

    def next_runs(self) -> None:
        """One run of each target with no fault, as the next run a user starts: it removes
        what the soak's runs could not (their journals, their Jobs), and must pass."""
        for target in self.args.targets:
            run = Run(len(self.runs), target, "next-run", Expect(True))
            self.runs.append(run)
            self.guarded(run)

    def guarded(self, run: Run) -> None:
        try:
            self.one(run)
        except Exception as exc:  # a soak bug or a fault that broke the soak: said, not lost
            run.wrong = run.wrong or f"the soak failed running it: {type(exc).__name__}: {exc}"
        finally:
            if run.fault == "kubelet-kill":
                self.heal_kubelet(run)
            print(self.line(run), flush=True)

    @staticmethod
    def line(run: Run) -> str:
        mark = "right" if run.wrong is None else f"WRONG: {run.wrong}"
        return (
            f"run {run.index:3d} {run.target:10s} {run.fault:12s} {run.detail:24s} "
            f"{run.verdict or '-':7s} {run.earliest or '-':4s} "
            f"{run.ended - run.started:5.0f} s  {mark}"
        )


def leftovers(soak: Soak) -> dict[str, set[str]]:
    """What is there of the kinds a run may leave; after the soak, what was not there before
    is a leftover. Machine-wide kinds (processes, mounts, scratch) are taken as sets, so
    what other work on the machine starts or ends meanwhile is not counted for the soak."""
    out: dict[str, set[str]] = {}
    if soak.kube is not None:
        kube = soak.kube
        jobs = kube.custom().list_namespaced_custom_object(
            "rlark.io", "v1alpha1", kube.namespace, "jobs"
        )["items"]
        out["jobs"] = {j["metadata"]["name"] for j in jobs}
        pods = kube.core().list_namespaced_pod(kube.namespace, label_selector=JOB_NAME_LABEL)
        out["pods"] = {p.metadata.name for p in pods.items}
    needle = POD_MARKER_ENV.encode() + b"="
    out["local Pod processes"] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (entry / "environ").read_bytes():
                    out["local Pod processes"].add(entry.name)
    # The platform stand-in's s3fs mounts on the node, under this checkout's test state.
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    here = str(ROOT / ".testenv")
    out["s3fs mounts"] = {
        line.split()[4] for line in mounts if " fuse.s3fs " in line and here in line
    }
    s3 = state.load().s3
    assert s3 is not None
    client = testenv_s3._client(s3)
    out["objects"] = set()
    for run in soak.runs:
        for run_id in run.run_ids:
            listed = client.list_objects_v2(Bucket=s3.bucket, Prefix=f"acceptance/smoke/{run_id}/")
            out["objects"] |= {o["Key"] for o in listed.get("Contents", [])}
    scratch = Path(tempfile.gettempdir()) / "rlark-local"
    out["local scratch dirs"] = {p.name for p in scratch.iterdir()} if scratch.is_dir() else set()
    return out


def report(soak: Soak, left: dict[str, set[str]], baseline: dict[str, set[str]]) -> dict[str, Any]:
    runs = soak.runs
    right = [r for r in runs if r.wrong is None]
    tenth = max(1, len(runs) // 10)
    rss = [r.peak_rss_mib for r in runs if r.peak_rss_mib]
    by_fault: dict[str, list[int]] = {}
    for r in runs:
        by_fault.setdefault(f"{r.fault} ({r.target})", [0, 0])
        by_fault[f"{r.fault} ({r.target})"][0] += r.wrong is None
        by_fault[f"{r.fault} ({r.target})"][1] += 1
    grown = {k: sorted(left[k] - baseline.get(k, set())) for k in left}
    print(f"\n| soak (seed {soak.args.seed}) | |\n|---|---|")
    print(f"| right verdicts | {len(right)} of {len(runs)} |")
    for name, (ok, n) in sorted(by_fault.items()):
        print(f"| {name} | {ok} of {n} right |")
    print(f"| leftovers | {', '.join(f'{k} {len(v)}' for k, v in grown.items())} |")
    if rss:
        first, last = rss[:tenth], rss[-tenth:]
        print(
            f"| harness peak RSS | first {sum(first) / len(first):.0f} MiB, last "
            f"{sum(last) / len(last):.0f} MiB, max {max(rss):.0f} MiB |"
        )
    for r in runs:
        if r.wrong is not None:
            print(f"\nwrong: {Soak.line(r)}")
    return {
        "seed": soak.args.seed,
        "runs": [r.__dict__ | {"expect": str(r.expect)} for r in runs],
        "windows": soak.windows,
        "right": len(right),
        "leftovers": grown,
        "rssMiB": rss,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--at-once", type=int, default=2)
    p.add_argument("--stagger", type=float, default=20.0, help="most seconds between starts")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=90.0, help="no run starts after this")
    p.add_argument("--targets", default="local,kubernetes")
    p.add_argument(
        "--faults",
        default=",".join(f.name for f in FAULTS),
        help="the faults drawn from (default: all of them)",
    )
    p.add_argument("--keep", help="where the records of wrong verdicts are kept")
    p.add_argument("--json", help="write the whole soak here")
    args = p.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    args.faults = [f for f in args.faults.split(",") if f]
    unknown = sorted(set(args.faults) - {f.name for f in FAULTS})
    if unknown:
        p.error(f"--faults: no such fault: {', '.join(unknown)}")
    soak = Soak(args)
    before = leftovers(soak)
    try:
        soak.go()
        soak.next_runs()
    finally:
        # The platform releases a Job's mounts once its Pods are gone, a little later.
        settle = time.monotonic() + 60
        while (left := leftovers(soak))["s3fs mounts"] - before["s3fs mounts"]:
            if time.monotonic() > settle:
                break
            time.sleep(2)
        out = report(soak, left, before)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2, default=str), encoding="utf-8")
        shutil.rmtree(soak.tmp, ignore_errors=True)
    return 0 if out["right"] == len(soak.runs) and not any(out["leftovers"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
