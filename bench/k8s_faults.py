"""Benchmark: the world's faults → the verdict, on the Kubernetes target (the real node).

    python bench/k8s_faults.py [--outages 5,12,25,40] [--sizes 10,100,300] [--skip-outages]
                               [--skip-logs]

Needs `testenv/testenv up all` (the cluster with its real node gpu-node-09, and S3).

Each case runs the acceptance suite as a user does (``pytest features/ --profile <copy of
profiles/kubernetes.yaml>``, Step 6's scenarios) and reads ``run-summary.json`` back:

* **API server outage vs verdict**: the API server SIGKILLed 1 s into the 6.4 wait (the
  run script sleeps 20 s before the smoke workload), started again on its etcd data after
  each outage length; the verdict, the earliest failure, and the time from the kill to the
  suite's exit. ``timeouts.apiServer`` is the default, 30 s.
* **log size vs memory and time**: the run script prints N MB of 100-byte lines before the
  smoke workload (the kubelet rotates the log at 10 MiB); the verdict, the harness's peak
  RSS (the kernel's accounting of the suite's process), and the Worker-writing → 6.4-passed
  ingest rate: N MB over the time from 6.3 passing (the first loud line) to 6.4 passing.
  Baseline on the same bytes in a file: ``grep -E`` of the first-signal regex, and a plain
  Python line loop with the same regex (ratios are ingest / baseline).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from fixtures.testenv import KubeEnv  # noqa: E402
from rlark_acceptance.model.job import JOB_NAME_LABEL  # noqa: E402
from testenv import state  # noqa: E402
from tests.adapters.k8s_suite import LOUD, STARTING, Site, SuiteRun, remove_jobs, waits_for  # noqa: E402  # noqa: E402

SIGNAL = r"Global Step: +[0-9]+%\|"
LINE = "x" * 99 + "\n"


def kube_env() -> KubeEnv:
    info = state.load().cluster
    assert info is not None, "testenv up cluster first"
    return KubeEnv(
        kubeconfig=Path(info.kubeconfig),
        namespace=info.namespace,
        harness_kubeconfig=Path(info.harness_kubeconfig),
    )


def cleared(env: KubeEnv) -> None:
    """No Job of the profile left, and no Pod of one still holding the node's GPUs: the next
    case is not Pending behind the last one's Worker."""
    remove_jobs(env, env.namespace)
    core, deadline = env.core(), time.monotonic() + 120
    while time.monotonic() < deadline:
        if not core.list_namespaced_pod(env.namespace, label_selector=JOB_NAME_LABEL).items:
            return
        time.sleep(1.0)


def outage(env: KubeEnv, seconds: float) -> tuple[str, str, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        site = Site.make(t / "site", before=f"{STARTING}; sleep 20")
        run = SuiteRun.start(t, site)
        try:
            run.wait_for(waits_for("6.4"))
            time.sleep(1.0)
            env.kill_apiserver()
            killed = time.monotonic()
            ended: float | None = None  # the suite ended while the API server was down
            while time.monotonic() - killed < seconds:
                if run.proc.poll() is not None:
                    ended = time.monotonic() - killed
                    break
                run.read(0.2)  # the suite's output keeps flowing
            env.start_apiserver()
            back = float("nan") if ended is not None else time.monotonic() - killed
            run.finish()
            to_exit = ended if ended is not None else time.monotonic() - killed
        finally:
            run.kill()
            env.start_apiserver()
            cleared(env)
        first = run.summary.get("earliestFailure") or {}
        why = f"{first.get('check')}: {first.get('message')}" if first else ""
        return run.summary["verdict"], why, back, to_exit


def baseline(mb: int, path: Path) -> tuple[float, float]:
    """MB/s of grep -E and of a Python line loop with the regex on the same bytes."""
    n = mb * 10_000  # 100-byte lines
    with path.open("w") as fh:
        fh.write("fault-test, the run script starts\n")
        block = LINE * 10_000
        for _ in range(n // 10_000):
            fh.write(block)
        fh.write("Global Step:  20%|██        | 1/5\n")
    size = path.stat().st_size / 1e6
    t0 = time.perf_counter()
    subprocess.run(["grep", "-cE", SIGNAL, str(path)], capture_output=True, check=True)
    grep = size / (time.perf_counter() - t0)
    rx = re.compile(SIGNAL)
    t0 = time.perf_counter()
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if rx.search(line):
                break
    loop = size / (time.perf_counter() - t0)
    path.unlink()
    return grep, loop


def loud(env: KubeEnv, mb: int) -> tuple[str, str, float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        before = f"{STARTING}; " + LOUD.format(n=mb * 10_000)
        run = SuiteRun.start(t, Site.make(t / "site", before=before))
        try:
            run.finish(1800)
        finally:
            run.kill()
            cleared(env)
        s = run.summary
        d = s.get("durations") or {}
        span = float(d.get("firstSignal", 0)) - float(d.get("rayHead", 0))
        rate = mb / span if span > 0 else 0.0
        rotated = sum(w.startswith("LogRotated: ") for w in s.get("warnings") or [])
        printed = f"{s['checks']['1.1']}/{s['checks']['1.2']}"
        printed += " (LogRotated)" if rotated else ""
        return f"{s['verdict']} {s['checks']['6.4']}", printed, run.peak_rss_mib, run.elapsed, rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outages", default="5,12,25,40")
    ap.add_argument("--sizes", default="10,100,300")
    ap.add_argument("--skip-outages", action="store_true")
    ap.add_argument("--skip-logs", action="store_true")
    args = ap.parse_args()
    env = kube_env()
    if not args.skip_outages:
        print("API server outage during 6.4 (timeouts.apiServer 30 s):")
        print(f"{'outage':>8} {'back at':>8} {'exit at':>8}  verdict  earliest failure")
        for s in (float(x) for x in args.outages.split(",")):
            verdict, why, back, to_exit = outage(env, s)
            came = "   down" if back != back else f"{back:>7.1f}s"  # NaN: not back before the exit
            print(f"{s:>7.0f}s {came:>8} {to_exit:>7.1f}s  {verdict:<7}  {why}", flush=True)
    if not args.skip_logs:
        print("\nWorker log before its first signal (kubelet rotates at 10 MiB):")
        print(
            f"{'log':>7} {'verdict, 6.4':>15} {'peak RSS':>9} {'suite':>7} {'ingest':>10} "
            f"{'grep -E':>10} {'py loop':>10} {'/grep':>6} {'/loop':>6}  1.1/1.2"
        )
        for mb in (int(x) for x in args.sizes.split(",")):
            verdict, printed, rss, elapsed, rate = loud(env, mb)
            with tempfile.TemporaryDirectory() as tmp:
                grep, loop = baseline(mb, Path(tmp) / "log")
            print(
                f"{mb:>5}MB {verdict:>15} {rss:>7.0f}MB {elapsed:>6.0f}s {rate:>6.1f}MB/s "
                f"{grep:>6.0f}MB/s {loop:>6.0f}MB/s {rate / grep:>6.3f} {rate / loop:>6.3f}  "
                f"{printed}",
                flush=True,
            )


if __name__ == "__main__":
    main()
