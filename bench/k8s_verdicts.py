"""Benchmark: fault → red and signal → green on the Kubernetes target (the real node), side by
side with Kyverno Chainsaw in the two forms a Kubernetes engineer would write.

    python bench/k8s_verdicts.py [--skip-natural]

Needs `testenv/testenv up` (cluster with the real node, S3) and Chainsaw built by
`testenv/testenv build chainsaw`.

For every fault class the features inject on this target (a Worker the real scheduler
cannot place, an image the real runtime cannot pull, a failing prepare script, a Worker
that exits before its first signal), the same broken Job is run by:

* **adapter**: the harness (`submit_and_confirm` on profiles/kubernetes.yaml, the harness's
  ServiceAccount), red when the failing check is recorded;
* **chainsaw natural**: the test a Kubernetes engineer writes first: apply the Job, assert
  the Worker Pod Running on gpu-node-09, then wait for the signal in its log (5 min each);
* **chainsaw expert**: the fail-fast form: a wait loop that lists every fault state by hand
  and exits on it, then a log loop that exits on a terminal phase.

"Fault → red" is measured from one neutral observer for all three: a watch of the Worker
Pod by this script (the moment its status first shows the fault) to the red verdict (the
harness's failing check, Chainsaw's exit). "Signal → green": the signal line read from the
Pod's followed log by this script, to 6.4 passing / Chainsaw's exit. The natural form runs
all its tests in parallel, since each waits out its timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from fixtures.workspace import Workspace  # noqa: E402
from rlark_acceptance.adapters import open_adapter  # noqa: E402
from rlark_acceptance.model.profile import load_profile  # noqa: E402
from rlark_acceptance.preflight.entry import preflight_profile  # noqa: E402
from rlark_acceptance.run.acceptance import submit_and_confirm  # noqa: E402
from rlark_acceptance.run.step6.run_id import new_run_id, run_job_name  # noqa: E402
from testenv import build, cluster, state  # noqa: E402

PROFILE = ROOT / "profiles" / "kubernetes.yaml"
NODE = "gpu-node-09"
SIGNAL = r"Global Step: +[0-9]+%\|"

Fault = Callable[[Workspace], None]
FAULTS: list[tuple[str, str, Fault]] = [
    ("unschedulable", "6.2", lambda ws: ws.role.update(nodeSelector={"rlark.io/pool": "gpu-a"})),
    (
        "ErrImagePull",
        "6.2",
        lambda ws: ws.role.update(image="registry.rlark.test/rlinf-smoke:0.0.0-missing"),
    ),
    (
        "prepare script fails",
        "6.3",
        lambda ws: ws.role.update(prepareScript="export PYTHONUNBUFFERED=1\nexit 3\n"),
    ),
    (
        "exits before first signal",
        "6.4",
        lambda ws: ws.set_run_script(
            "cd /workspace/smoke && echo 'loading the model' && exit 1", also_start_command=True
        ),
    ),
]


# --- the neutral observer ---------------------------------------------------------------
WITNESS = r"""
import re, sys, threading, time
from kubernetes import client, config
from rlark_acceptance.adapters.kubernetes.stream import (
    Stopper, call, container_started, lines, list_then_watch)

kubeconfig, ns, job, signal = sys.argv[1:]
cfg = client.Configuration()
config.load_kube_config(kubeconfig, client_configuration=cfg)
core = client.CoreV1Api(client.ApiClient(cfg))
WAITING = ("ErrImagePull", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError")
seen, following = set(), []

def say(*words):
    print(*words, flush=True)

def fault(pod):
    st = pod.get("status") or {}
    for c in st.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c.get("reason") or "Unschedulable"
    for cs in st.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if (state.get("waiting") or {}).get("reason") in WAITING:
            return state["waiting"]["reason"]
        if (state.get("terminated") or {}).get("exitCode"):
            return "exit %s" % state["terminated"]["exitCode"]
    return "Failed" if st.get("phase") == "Failed" else None

def follow(name):
    try:
        resp = call(core.read_namespaced_pod_log, name, ns, follow=True, _preload_content=False)
        for line in lines(resp):
            if re.search(signal, line):
                say("SIGNAL", time.monotonic())
                return
    except Exception:  # the container is gone already: no signal to see
        return

def on_pod(kind, pod):
    now = time.monotonic()
    what = fault(pod)
    if what and "fault" not in seen:
        seen.add("fault")
        say("FAULT", now, what.replace(" ", "_"))
    if not following and container_started(pod):
        following.append(1)
        threading.Thread(target=follow, args=(pod["metadata"]["name"],), daemon=True).start()

list_then_watch(core.list_namespaced_pod, (ns,), on_pod, Stopper(),
                on_list=lambda items: say("READY"), label_selector="rlark.io/job-name=" + job)
"""


class Witness:
    """Watches one Job's Worker Pod and follows its log from a process of its own (the same
    list-then-watch and line reading as the adapter, no shared interpreter), with the
    admin kubeconfig; reports when the fault first shows and when the signal line is read
    (CLOCK_MONOTONIC is one clock for every process)."""

    def __init__(self, job: str, namespace: str) -> None:
        self.job, self.ns = job, namespace
        self.fault_at: float | None = None
        self.fault: str | None = None
        self.signal_at: float | None = None
        argv = [str(cluster.kubeconfig_path()), namespace, job, SIGNAL]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WITNESS, *argv],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "READY"
        threading.Thread(target=self._read, daemon=True).start()
        time.sleep(0.5)  # listed, and its watch open, before anything is submitted

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            word, at, *rest = line.split()
            if word == "FAULT":
                self.fault_at, self.fault = float(at), rest[0]
            elif word == "SIGNAL":
                self.signal_at = float(at)

    def close(self) -> None:
        time.sleep(0.2)
        self.proc.terminate()
        self.proc.wait(5)


# --- Chainsaw ------------------------------------------------------------------------------
def _chainsaw_test(
    name: str, job: dict[str, Any], form: str, kubectl: str, kcfg: str
) -> dict[str, Any]:
    ns, jname = job["metadata"]["namespace"], job["metadata"]["name"]
    pod = f"{jname}-{job['spec']['headRole']}-0"
    k = f"{kubectl} --kubeconfig {kcfg} -n {ns}"
    if form == "natural":
        steps = [
            {"try": [{"apply": {"resource": job}}]},
            {
                "try": [
                    {
                        "assert": {
                            "resource": {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": pod, "namespace": ns},
                                "spec": {"nodeName": NODE},
                                "status": {"phase": "Running"},
                            }
                        }
                    }
                ]
            },
            {
                "try": [
                    {
                        "script": {
                            "timeout": "5m",
                            "content": f"{k} logs -f {pod} | grep -m1 -E '{SIGNAL}'",
                        }
                    }
                ]
            },
        ]
    else:
        jp = (
            "{.status.phase} {.spec.nodeName} "
            '{.status.conditions[?(@.type=="PodScheduled")].reason} '
            "{.status.containerStatuses[0].state.waiting.reason}"
        )
        wait_running = f"""
while :; do
  s=$({k} get pod {pod} -o jsonpath='{jp}' 2>/dev/null)
  case "$s" in
    *Unschedulable*|*ErrImagePull*|*ImagePullBackOff*|*InvalidImageName*|Failed*|Succeeded*)
      echo "fault: $s"; exit 1;;
    "Running {NODE}"*) exit 0;;
  esac
  sleep 0.2
done"""
        wait_signal = f"""
while :; do
  {k} logs {pod} 2>/dev/null | grep -qE '{SIGNAL}' && exit 0
  case "$({k} get pod {pod} -o jsonpath='{{.status.phase}}')" in
    Failed|Succeeded) echo "pod ended"; exit 1;;
  esac
  sleep 0.2
done"""
        steps = [
            {"try": [{"apply": {"resource": job}}]},
            {"try": [{"script": {"timeout": "5m", "content": wait_running}}]},
            {"try": [{"script": {"timeout": "5m", "content": wait_signal}}]},
        ]
    return {
        "apiVersion": "chainsaw.kyverno.io/v1alpha1",
        "kind": "Test",
        "metadata": {"name": name},
        "spec": {
            "namespace": ns,
            "skipDelete": True,
            "timeouts": {"apply": "30s", "assert": "5m", "exec": "5m"},
            "steps": steps,
        },
    }


def run_chainsaw(
    tests: list[tuple[str, dict[str, Any]]], tmp: Path
) -> dict[str, tuple[float, int]]:
    """Run each test directory; returns name → (monotonic end, exit status)."""
    chainsaw = str(build.RECIPES["chainsaw"].bin("chainsaw"))
    procs = {}
    for name, test in tests:
        d = tmp / name
        d.mkdir(parents=True)
        (d / "chainsaw-test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
        procs[name] = subprocess.Popen(
            [chainsaw, "test", "--test-dir", str(d), "--no-color"],
            env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path())},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ends: dict[str, tuple[float, int]] = {}
    while len(ends) < len(procs):
        for name, p in procs.items():
            if name not in ends and p.poll() is not None:
                ends[name] = (time.monotonic(), p.returncode)
        time.sleep(0.02)
    return ends


# --- the runs ----------------------------------------------------------------------------
def _workspace(tmp: Path, tag: str, fault: Fault | None) -> tuple[Workspace, Path, str]:
    ws = Workspace.copy_of(PROFILE, tmp / f"ws-{tag}")
    name = f"bench-{tag.lower()}-{uuid.uuid4().hex[:5]}"
    assert ws.job is not None
    ws.job["metadata"]["name"] = name
    target = ws.profile["target"]
    target["kubeconfig"] = str((PROFILE.parent / target["kubeconfig"]).resolve())
    if fault is not None:
        fault(ws)
    return ws, ws.write(), name


def run_adapter(tmp: Path, tag: str, fault: Fault | None) -> tuple[Witness, float | None, Any]:
    _ws, path, name = _workspace(tmp, tag, fault)
    profile = load_profile(path)
    pre = preflight_profile(path)
    run_id = new_run_id()  # the witness watches the Job as the run names it
    witness = Witness(run_job_name(name, run_id), profile.target.namespace)
    adapter = open_adapter(profile)
    try:
        t0 = time.monotonic()
        rec = submit_and_confirm(adapter, pre, run_id=run_id)
    finally:
        adapter.close()
        witness.close()
    return witness, t0, rec


def run_tool(
    tmp: Path, form: str, items: list[tuple[str, Fault | None]]
) -> list[tuple[Witness, float, int]]:
    tests, witnesses = [], {}
    kubectl = cluster.kubectl_bin()
    for tag, fault in items:
        ws, _, name = _workspace(tmp, f"{form}-{tag}", fault)
        assert ws.job is not None
        witnesses[tag] = Witness(name, ws.job["metadata"]["namespace"])
        tests.append(
            (
                tag,
                _chainsaw_test(
                    f"{form}-{tag}".lower(), ws.job, form, kubectl, str(cluster.kubeconfig_path())
                ),
            )
        )
    ends = run_chainsaw(tests, tmp / form)
    out = []
    for tag, _ in items:
        w = witnesses[tag]
        w.close()
        cluster.kubectl(
            "delete", "jobs.rlark.io", "-n", "rlinf-acceptance", w.job, "--wait=false", check=False
        )
        out.append((w, *ends[tag]))
    return out


def _num(x: object) -> float | None:
    return x if isinstance(x, float) else None


def _ratio(x: float | None, base: float | None) -> str:
    # A verdict at or before the watcher's sighting counts as 1 ms (the table's resolution).
    if x is None or base is None:
        return "—"
    return f"{max(x, 1e-3) / max(base, 1e-3):.0f}x"


def _fmt(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 0:  # red before the independent watcher saw the fault
        return "≤ 0"
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-natural", action="store_true", help="skip the 5-minute natural form")
    ap.add_argument("--adapter-only", action="store_true", help="run the harness only")
    args = ap.parse_args()
    os.environ.update(
        {k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")}
    )
    if not args.adapter_only and not build.RECIPES["chainsaw"].is_built():
        print("build Chainsaw first: testenv/testenv build chainsaw")
        return 2
    items: list[tuple[str, Fault | None]] = [(n.replace(" ", "-"), f) for n, _, f in FAULTS]
    items.append(("signal", None))
    rows: dict[str, dict[str, str | float | None]] = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for (tag, fault), (name, check, _) in zip(
            items, [*FAULTS, ("signal", "6.4", None)], strict=True
        ):
            w, t0, rec = run_adapter(tmp, tag, fault)
            first = rec.earliest_failure
            if fault is None:
                assert rec.status("6.4") == "passed", rec.phases["6.4"].message
                green = t0 + rec.phases["6.4"].at if t0 is not None else None
                rows[name] = {"adapter": green - w.signal_at if green and w.signal_at else None}
            else:
                if first is None or first.check != check:
                    print(f"{name}: expected red at {check}, got {first}")
                    return 1
                red = t0 + first.at if t0 is not None else None
                rows[name] = {
                    "adapter": red - w.fault_at if red and w.fault_at else None,
                    "fault": w.fault,
                    "check": check,
                    # after submission: the witness saw the fault / the harness was red
                    "witness_at": w.fault_at - t0 if w.fault_at and t0 is not None else None,
                    "red_at": first.at,
                }
        forms = (
            () if args.adapter_only else ("expert", *(() if args.skip_natural else ("natural",)))
        )
        for form in forms:
            for (_tag, fault), (w, end, code) in zip(
                items, run_tool(tmp, form, items), strict=True
            ):
                name = next((n for n, _, f in FAULTS if f is fault), "signal")
                ok = code == 0 if fault is None else code != 0
                at = w.signal_at if fault is None else w.fault_at
                rows[name][form] = (end - at) if at and ok else None
    print(json.dumps(rows, indent=2, default=str))
    head = ("case", "adapter", "expert", "natural", "natural/adapter", "expert/adapter")
    print("\n{:28} {:>10} {:>10} {:>10} {:>16} {:>15}".format(*head))
    for name, r in rows.items():
        a, e, n = r.get("adapter"), r.get("expert"), r.get("natural")
        cells = [_fmt(_num(x)) for x in (a, e, n)] + [_ratio(_num(x), _num(a)) for x in (n, e)]
        print("{:28} {:>10} {:>10} {:>10} {:>16} {:>15}".format(name, *cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
