"""The acceptance suite on testenv's Kubernetes target, started as a user starts it, with a
hand on the world while it runs (the fault tests and ``bench/k8s_faults.py``).

``Site`` is a copy of ``profiles/kubernetes.yaml`` and its Job YAML that a test may change
(a run script that waits or prints a lot first, another namespace, another kubeconfig);
``SuiteRun`` is ``python -m pytest features/ --profile <site>`` in a directory linking to
the checkout's files (its ``reports/`` are its own), read line by line as it runs so a test
can act when Step 6 reaches a phase, then read back its ``run-summary.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from fixtures.testenv import KubeEnv
from rlark_acceptance.model.job import JOB_NAME_LABEL
from testenv import state
from tests.run.suite_runs import STEP6_ONLY, features_command

REPO = Path(__file__).resolve().parents[2]
# What a run of the suite reads from a checkout (everything else it writes is reports/).
CHECKOUT = (
    "features",
    "steps",
    "fixtures",
    "profiles",
    "src",
    "testenv",
    "conftest.py",
    "pyproject.toml",
    ".testenv",
)
RUN_SCRIPT = "cd /workspace/smoke && python -m rlark_acceptance.smoke"
# Printed by the run script before the smoke workload: 6.3 passes on it, then 6.4 waits.
STARTING = "echo fault-test, the run script starts"
# The record's warning when the kubelet may have rotated lines away unread.
ROTATED = "LogRotated: the kubelet rotated the Worker's log before it was read: lines written "
# A loud Worker: {n} lines of 100 bytes as fast as Python prints them.
LOUD = (
    "python -c \"import sys; line = 'x' * 99 + chr(10); "
    '[sys.stdout.write(line) for _ in range({n})]; sys.stdout.flush()"'
)
# Numbered lines of 100 bytes, every LONG_EVERY-th of LONG bytes: which ones were read, in
# what order and whether whole, is countable. A long line is over the runtime's 16 KiB
# maximum, stored as partial entries: a rotation falls between two of them now and then.
LONG_EVERY, LONG = 2000, 40_000
NUMBERED = (
    'python -c "import sys; w = sys.stdout.write; '
    f"[w('L%09d ' % i + 'x' * (i % {LONG_EVERY} and 89 or {LONG - 11}) + chr(10))"
    ' for i in range({n})]; sys.stdout.flush()"'
)


def waits_for(check: str) -> str:
    """The line the suite prints when Step 6 starts waiting for ``check`` (not a terminal)."""
    return f"Step 6 waits for {check} "


@dataclass
class Site:
    root: Path
    profile: Path
    job: Path

    @classmethod
    def make(
        cls,
        root: Path,
        *,
        before: str = "",
        namespace: str | None = None,
        kubeconfig: Path | None = None,
        timeouts: dict[str, float] | None = None,
        training: bool = True,
        overrides: str = "",
    ) -> Site:
        """The default Kubernetes profile; ``before`` runs in the run script before the
        smoke workload (the same text in the Job YAML and ``runInfo.startCommand``);
        ``training=False``: the training checks off (``training: false``); ``overrides``:
        added to the smoke workload's command line (in both places too)."""
        root.mkdir(parents=True, exist_ok=True)
        text = (REPO / "profiles" / "kubernetes.yaml").read_text()
        job = (REPO / "profiles" / "kubernetes" / "job.yaml").read_text()
        kube = kubeconfig or REPO / ".testenv" / "harness.kubeconfig"
        text = text.replace("kubeconfig: ../.testenv/harness.kubeconfig", f"kubeconfig: {kube}")
        text = text.replace("config: ../src/", f"config: {REPO / 'src'}/")
        text = text.replace("job: kubernetes/job.yaml", "job: job.yaml")
        if overrides:
            logs = "runner.logger.log_path=/mnt/ckpt/logs"
            assert text.count(logs) == 1 and job.count(logs) == 1
            text, job = (x.replace(logs, f"{logs} {overrides}") for x in (text, job))
        if before:
            text = text.replace(
                f"startCommand: {RUN_SCRIPT}", f"startCommand: {before}; {RUN_SCRIPT}"
            )
            # A JSON string is a YAML scalar whatever the command holds (": ", quotes).
            text = "\n".join(
                f"  startCommand: {json.dumps(line.split(': ', 1)[1])}"
                if line.startswith("  startCommand: ")
                else line
                for line in text.splitlines()
            )
            job = job.replace(f"    {RUN_SCRIPT}", f"    {before}; {RUN_SCRIPT}")
        if namespace:
            text = text.replace("namespace: rlinf-acceptance", f"namespace: {namespace}")
            job = job.replace("namespace: rlinf-acceptance", f"namespace: {namespace}")
        for key, seconds in (timeouts or {}).items():
            # Within timeouts: only (runInfo has a firstSignal of its own).
            head, sep, block = text.partition("\ntimeouts:\n")
            assert sep, "the profile has no timeouts: block"
            lines = block.splitlines()
            end = next((i for i, x in enumerate(lines) if not x.startswith("  ")), len(lines))
            found = [i for i in range(end) if lines[i].startswith(f"  {key}: ")]
            if found:
                lines[found[0]] = f"  {key}: {seconds:g}"
            else:
                lines.insert(end, f"  {key}: {seconds:g}")
            text = head + sep + "\n".join(lines) + "\n"
        if not training:
            text = text.rstrip("\n") + "\ntraining: false\n"
        site = cls(root, root / "profile.yaml", root / "job.yaml")
        site.profile.write_text(text)
        site.job.write_text(job)
        return site


def _env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG", "PYTEST_"))
    }
    # What `eval "$(testenv/testenv env)"` gives a user: boto3's standard chain for the S3
    # server (the kubeconfig is the profile's own).
    env.update({k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")})
    return env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "CI": "1"}


@dataclass
class SuiteRun:
    """One ``pytest features/`` run, under way or finished."""

    proc: subprocess.Popen[bytes]
    reports: Path
    started: float
    output: str = ""
    returncode: int | None = None
    elapsed: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)
    peak_rss_mib: float = 0.0  # the suite's own process, from the kernel's accounting

    @classmethod
    def start(cls, tmp_path: Path, site: Site, *args: str) -> SuiteRun:
        run = tmp_path / "checkout"
        run.mkdir()
        for name in CHECKOUT:
            (run / name).symlink_to(REPO / name)
        reports = run / "reports"
        # The harness's peak RSS, as the kernel accounts it for this one child.
        argv = [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
            "print(f'peak-rss-kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}'); "
            "sys.exit(rc)",
            *features_command(site.profile, reports, ["-m", STEP6_ONLY, *args]),
        ]
        proc = subprocess.Popen(
            argv, cwd=run, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        return cls(proc, reports, time.monotonic())

    def read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once the output has ended."""
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return True
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        finally:
            sel.close()
        self.output += chunk.decode(errors="replace")
        return bool(chunk)

    def wait_for(self, text: str, timeout: float = 600) -> float:
        """Block until ``text`` shows on the output; returns when (monotonic)."""
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert time.monotonic() < deadline, f"{text!r} not within {timeout} s:\n{self.tail()}"
            assert self.read(min(1.0, deadline - time.monotonic())), (
                f"the suite ended before {text!r}:\n{self.tail()}"
            )
        return time.monotonic()

    def finish(self, timeout: float = 900) -> SuiteRun:
        deadline = time.monotonic() + timeout
        while self.read(max(0.1, min(1.0, deadline - time.monotonic()))):
            assert time.monotonic() < deadline, f"the suite still runs after {timeout} s"
        self.returncode = self.proc.wait(timeout=30)
        self.elapsed = time.monotonic() - self.started
        for line in self.output.splitlines():
            if line.startswith("peak-rss-kib "):
                self.peak_rss_mib = int(line.split()[1]) / 1024
        path = self.reports / "run-summary.json"
        assert path.is_file(), f"no run-summary.json:\n{self.tail()}"
        self.summary = json.loads(path.read_text(encoding="utf-8"))
        return self

    def tail(self, n: int = 6000) -> str:
        return f"exit {self.returncode}\n{self.output[-n:]}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def earliest(run: SuiteRun) -> dict[str, Any]:
    """The run's earliest failure, which it must have."""
    first = run.summary.get("earliestFailure")
    assert first is not None, run.tail()
    return first


def schedulable_again(kube_env: KubeEnv, within: float = 180.0) -> None:
    """A GPU Pod is placed on the real node again. After the API server is back, the node
    stays Ready and untainted, but kube-scheduler only sees new Pods once its watches
    reconnect, after their backoff: a Pod created then was placed 14 s and 35 s later in
    two runs, with no FailedScheduling Event in between. A test's Worker would otherwise
    wait at 6.2 on the previous test's outage. The probe asks what a Worker asks: one
    nvidia.com/gpu on that node."""
    core = kube_env.core()
    ns, name = kube_env.namespace, "schedulable-probe"
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            restart_policy="Never",
            node_selector={"kubernetes.io/hostname": kube_env.real_node},
            containers=[
                client.V1Container(
                    name="probe",
                    image=kube_env.worker_image,
                    command=["true"],
                    resources=client.V1ResourceRequirements(
                        limits={"nvidia.com/gpu": "1"}, requests={"nvidia.com/gpu": "1"}
                    ),
                )
            ],
        ),
    )
    deadline = time.monotonic() + within
    placed = False
    while not placed:
        with contextlib.suppress(Exception):  # any: the API server restarting; asked again
            try:
                got = core.read_namespaced_pod(name, ns)
            except client.ApiException as e:
                if e.status != 404:
                    raise
                got = core.create_namespaced_pod(ns, pod)
            placed = bool(got.spec.node_name)
        if not placed and time.monotonic() > deadline:
            raise AssertionError(f"no GPU Pod placed on {kube_env.real_node} in {within:.0f} s")
        if not placed:
            time.sleep(0.5)
    core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_pod(name, ns)
        except client.ApiException as e:
            if e.status == 404:
                return
        time.sleep(0.2)
    raise AssertionError(f"the probe Pod stayed in {ns}")


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


def harness_role(without: str = "") -> list[dict[str, Any]]:
    """The rules of deploy/harness-rbac.yaml's Role, ``without`` that verb on jobs."""
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


@contextlib.contextmanager
def site_namespace(
    kube_env: KubeEnv, prefix: str, rules: list[dict[str, Any]] | None
) -> Iterator[str]:
    """A namespace of the test's own, set up as a site sets up the profile's: the harness's
    ServiceAccount bound to ``rules`` there (None: to nothing). Its Jobs and Pods, then the
    namespace itself, are gone after. A test that runs the suite in it and holds that
    nothing of its run is left needs the cluster only beside the other tests, not alone."""
    ns = kube_env.create_namespace(prefix)
    try:
        bind(kube_env, ns, rules)
        yield ns
    finally:
        remove_jobs(kube_env, ns)
        kube_env.delete_namespace(ns)
