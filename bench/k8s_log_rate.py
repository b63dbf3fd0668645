"""Benchmark: the harness's Kubernetes log observation against ``kubectl logs -f``, reading
one loud Worker's log at the same time on the real node.

    python bench/k8s_log_rate.py [--sizes 10,300,1000] [--case-timeout 900]

Needs `testenv/testenv up all` (the cluster with its real node gpu-node-09, and S3).

For each size (N MB: N * 10,000 numbered lines of ~100 bytes, every 2000th one 40 KB, the
Worker of ``test_every_line_of_300_mb_is_read_once_in_order``, printing as fast as it can,
then exiting 0) one Job is submitted, and once its Pod is Running two readers start on its
log together:

* **harness**: ``adapter.observe`` in a process of its own (this script with ``--observe``),
  so that its memory and its open files are only the observation's; it consumes
  ``obs.next()`` until ``LogEnded`` and prints what it read as JSON;
* **kubectl**: ``kubectl logs -f <pod>`` with the cluster's kubeconfig, its output read and
  counted here the same way.

Each reader's count: distinct numbered lines (of N), lines doubled, lines out of order,
numbered lines not whole (a cut one), and MB/s: its bytes over the time from its first line
to its last. The node keeps 2 files of 10 MiB (``containerLogMaxSize``), so a reader more
than a file behind the Worker loses lines: counted, and for the harness, whether it said
so (its warnings from ``rlark-acceptance``). While they run, the harness process is sampled
from outside: its RSS (``VmRSS``; peak, and at 10 % and 90 % of its run) and the size of the
unnamed temporary files it holds open (the spools of ``logspool.Spool``; the largest total).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from bench.k8s_faults import cleared, kube_env  # noqa: E402
from fixtures.testenv import KubeEnv  # noqa: E402
from rlark_acceptance.adapters import EventSeen, LogEnded, LogLines, TargetLost, open_adapter  # noqa: E402
from rlark_acceptance.adapters.base import HARNESS_SOURCE, LOG_READ_AHEAD, JobRef  # noqa: E402
from rlark_acceptance.model.job import JOB_NAME_LABEL, read_job  # noqa: E402
from rlark_acceptance.model.profile import load_profile  # noqa: E402
from rlark_acceptance.run.step6.plan import manifest_of  # noqa: E402
from rlark_acceptance.run.step6.run_id import for_run, new_run_id  # noqa: E402
from testenv import cluster  # noqa: E402
from tests.adapters.k8s_suite import (  # noqa: E402
    LONG,
    LONG_EVERY,
    NUMBERED,
    Site,
)

SAMPLE_S = 0.1  # how often the harness process's RSS and spool are sampled
CHUNK = 1 << 20  # kubectl's output is read a megabyte at a time


def written_bytes(n: int) -> int:
    """What the Worker prints for ``n`` numbered lines, newlines included."""
    long = (n + LONG_EVERY - 1) // LONG_EVERY  # line 0 is a long one
    return (n - long) * 101 + long * (LONG + 1)


@dataclass
class Tally:
    """One reader's count of the numbered lines. Both readers count alike, in batches (the
    time taken once per batch, not per line), so neither is slowed more by the counting."""

    n: int
    got: int = 0  # distinct numbered lines
    doubled: int = 0
    out_of_order: int = 0  # lower than the line before it, and not read before
    cut: int = 0  # numbered lines not whole, or a line's end alone
    nbytes: int = 0
    first: int | None = None
    last: int | None = None
    first_at: float | None = None  # monotonic: one clock for every process of the machine
    last_at: float | None = None
    seen: bytearray = field(default_factory=bytearray, repr=False)
    cut_lines: list[str] = field(default_factory=list)  # the first few, shortened

    def _cut(self, line: str) -> None:
        if len(self.cut_lines) < 5:
            self.cut_lines.append(f"{len(line)} chars: {line[:24]!r}...{line[-24:]!r}")

    def __post_init__(self) -> None:
        self.seen = bytearray(self.n)

    def add(self, lines: list[str] | tuple[str, ...], at: float) -> None:
        if not lines:
            return
        if self.first_at is None:
            self.first_at = at
        self.last_at = at
        seen, prev, n = self.seen, self.last, self.n
        got = doubled = order = cut = size = 0
        for line in lines:
            size += len(line) + 1
            if line[:1] == "L" and line[1:10].isdigit():
                i = int(line[1:10])
                if i >= n:
                    cut += 1
                    self._cut(line)
                    continue
                if seen[i]:
                    doubled += 1
                else:
                    seen[i] = 1
                    got += 1
                    if prev is not None and i < prev:
                        order += 1
                if len(line) != (100 if i % LONG_EVERY else LONG):
                    cut += 1
                    self._cut(line)
                if self.first is None:
                    self.first = i
                prev = i
            elif line and set(line) == {"x"}:  # the end of a line cut in two, alone
                cut += 1
                self._cut(line)
        self.last = prev
        self.got += got
        self.doubled += doubled
        self.out_of_order += order
        self.cut += cut
        self.nbytes += size

    def seconds(self) -> float:
        if self.first_at is None or self.last_at is None:
            return 0.0
        return self.last_at - self.first_at

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "seen"}
        out["seconds"] = self.seconds()
        return out


# --- the harness's observation, in a process of its own ------------------------------------
def observe(namespace: str, name: str, profile_path: str, n: int, timeout: float) -> int:
    """Observe the Job until its log ends; print one JSON object. Opens the adapter first and
    prints READY, then waits for ``go`` on stdin: the observation starts when kubectl does,
    not after this process's imports and its adapter's set-up."""
    adapter = open_adapter(load_profile(Path(profile_path)))
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "go":
        adapter.close()
        return 1
    started = time.monotonic()
    tally, said, ended = Tally(n), [], "timeout"
    warnings: list[str] = []
    ahead = ""  # the observation's own account of its read-ahead
    try:
        obs = adapter.observe(JobRef(name, namespace))
        deadline = started + timeout
        while (left := deadline - time.monotonic()) > 0:
            item = obs.next(min(left, 1.0))
            if item is None:
                continue
            if isinstance(item, LogEnded):
                ended = "LogEnded"
                break
            if isinstance(item, TargetLost):
                ended = f"TargetLost: {item.cause}"
                break
            if isinstance(item, LogLines):
                tally.add(list(item.lines), time.monotonic())
            elif isinstance(item, EventSeen) and item.event.type == "Warning":
                warnings.append(f"{item.event.source}: {item.event.reason}")
                if item.event.source == HARNESS_SOURCE:
                    said.append(item.event.message[:300])
            elif isinstance(item, EventSeen) and item.event.reason == LOG_READ_AHEAD:
                ahead = item.event.message
        ended_at = time.monotonic()
        # Read before the adapter is closed: the peak the kernel kept, not a sample's.
        hwm = _status_kib(os.getpid(), "VmHWM")
    finally:
        adapter.close()
    out = tally.summary() | {
        "ended": ended,
        "started_at": started,
        "ended_at": ended_at,
        "said_lost": said,
        "warnings": warnings,
        "read_ahead": ahead,
        "hwm_kib": hwm,
    }
    print(json.dumps(out), flush=True)
    return 0


# --- sampling a process from outside -------------------------------------------------------
def _status_kib(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):  # the process has exited
        return None
    return None


def spool_bytes(pid: int) -> int | None:
    """Total size of the regular files the process holds open that are deleted (unnamed
    temporary files: the observation's spool)."""
    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, ProcessLookupError):
        return None
    for fd in fds:
        path = f"/proc/{pid}/fd/{fd}"
        try:
            if not os.readlink(path).endswith("(deleted)"):
                continue
            st = os.stat(path)  # the open file itself, through its descriptor's link
        except (FileNotFoundError, ProcessLookupError):  # closed meanwhile
            continue
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total


@dataclass
class Samples:
    at: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    spool: list[int] = field(default_factory=list)
    kubectl_rss_kib: list[int] = field(default_factory=list)

    def rss_at(self, t: float) -> int | None:
        """The sample nearest to monotonic time ``t``."""
        if not self.at:
            return None
        i = min(range(len(self.at)), key=lambda k: abs(self.at[k] - t))
        return self.rss_kib[i]


# --- one case ------------------------------------------------------------------------------
def read_kubectl(out: IO[bytes], tally: Tally) -> None:
    """Count kubectl's output a megabyte at a time (the same batches the harness gets)."""
    rest = b""
    while chunk := out.read(CHUNK):
        data = rest + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        tally.add(data[:cut].decode("utf-8", "replace").split("\n"), time.monotonic())
    if rest:
        tally.add([rest.decode("utf-8", "replace")], time.monotonic())


def pod_started(env: KubeEnv, name: str, within: float = 300.0) -> tuple[str, Any]:
    """The Worker Pod's name once its container has started (Running, or already over)."""
    core, deadline = env.core(), time.monotonic() + within
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(
            env.namespace, label_selector=f"{JOB_NAME_LABEL}={name}"
        ).items
        for pod in pods:
            if pod.status.phase in ("Running", "Succeeded", "Failed"):
                return pod.metadata.name, pod
        time.sleep(0.05)
    raise TimeoutError(f"no Pod of {name} started within {within:.0f} s")


def worker_run(env: KubeEnv, pod: str) -> tuple[float, float] | None:
    """The Worker container's start and end (seconds since the epoch, by the kubelet's
    stamps: whole seconds)."""
    p = env.core().read_namespaced_pod(pod, env.namespace)
    for cs in p.status.container_statuses or []:
        term = cs.state.terminated if cs.state else None
        if term and term.started_at and term.finished_at:
            return term.started_at.timestamp(), term.finished_at.timestamp()
    return None


def case(env: KubeEnv, mb: int, timeout: float) -> dict[str, Any]:
    n = mb * 10_000
    kubectl_bin, kubeconfig = cluster.kubectl_bin(), str(cluster.kubeconfig_path())
    with tempfile.TemporaryDirectory() as tmp:
        site = Site.make(Path(tmp) / "site", before=f"{NUMBERED.format(n=n)}; exit 0")
        adapter = open_adapter(load_profile(site.profile))
        runner: subprocess.Popen[str] | None = None
        kubectl: subprocess.Popen[bytes] | None = None
        try:
            job = read_job(str(site.job))
            job, manifest = for_run(job, manifest_of(job), new_run_id(), None)
            ns = job.namespace or env.namespace
            observe_cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--observe",
                ns,
                str(job.name),
                str(site.profile),
                str(n),
                str(timeout),
            ]
            runner = subprocess.Popen(
                observe_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            assert runner.stdin is not None and runner.stdout is not None
            assert runner.stdout.readline().strip() == "READY"
            ref = adapter.submit(job, manifest)
            pod, _ = pod_started(env, str(job.name))
            kubectl_cmd = [kubectl_bin, "logs", "-f", pod, "-n", ns, "--kubeconfig", kubeconfig]
            # Both start here, a few milliseconds apart.
            go = time.monotonic()
            runner.stdin.write("go\n")
            runner.stdin.flush()
            kubectl = subprocess.Popen(kubectl_cmd, stdout=subprocess.PIPE, bufsize=0)
            assert kubectl.stdout is not None
            ktally = Tally(n)
            reader = threading.Thread(target=read_kubectl, args=(kubectl.stdout, ktally))
            reader.start()
            samples = Samples()
            kubectl_end: float | None = None
            while runner.poll() is None or reader.is_alive():
                now = time.monotonic()
                if now - go > timeout + 30:  # the runner's own bound passed: stop both
                    break
                if kubectl_end is None and not reader.is_alive():
                    kubectl_end = now
                if runner.poll() is None:
                    rss, spool = _status_kib(runner.pid, "VmRSS"), spool_bytes(runner.pid)
                    if rss is not None and spool is not None:
                        samples.at.append(now)
                        samples.rss_kib.append(rss)
                        samples.spool.append(spool)
                if kubectl.poll() is None:
                    krss = _status_kib(kubectl.pid, "VmRSS")
                    if krss is not None:
                        samples.kubectl_rss_kib.append(krss)
                time.sleep(SAMPLE_S)
            if kubectl_end is None:
                kubectl_end = time.monotonic()
            if kubectl.poll() is None:  # past the bound: what it read so far counts
                kubectl.kill()
            reader.join(10)
            out, _ = runner.communicate(timeout=60)
            harness = json.loads(out.strip().splitlines()[-1])
            worker = worker_run(env, pod)
            adapter.delete(ref)
        finally:
            for proc in (runner, kubectl):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
            adapter.close()
            cleared(env)
    run = harness["ended_at"] - harness["started_at"]
    # Monotonic to the epoch (the kubelet stamps the Worker's end on the wall clock): how
    # long after the Worker's last line each reader had read its own last one.
    wall = time.time() - time.monotonic()
    end = worker[1] if worker else None
    harness["after_worker_s"] = None if end is None else harness["ended_at"] + wall - end
    return {
        "mb": mb,
        "n": n,
        "written": written_bytes(n),
        "worker_s": None if worker is None else worker[1] - worker[0],
        "observe_cmd": observe_cmd,
        "kubectl_cmd": kubectl_cmd,
        "harness": harness,
        "kubectl": ktally.summary()
        | {
            "end_s": kubectl_end - go,
            "after_worker_s": None if end is None else kubectl_end + wall - end,
            "peak_rss_kib": max(samples.kubectl_rss_kib, default=0),
        },
        "peak_rss_kib": max(samples.rss_kib, default=0),
        "rss10_kib": samples.rss_at(harness["started_at"] + 0.1 * run),
        "rss90_kib": samples.rss_at(harness["started_at"] + 0.9 * run),
        "spool_max": max(samples.spool, default=0),
        "samples": len(samples.at),
    }


def _rate(r: dict[str, Any]) -> float:
    return r["nbytes"] / 1e6 / r["seconds"] if r["seconds"] > 0 else 0.0


def _secs(s: float | None) -> str:
    return "?" if s is None else f"{s:.1f}s"


def report(c: dict[str, Any]) -> None:
    h, k = c["harness"], c["kubectl"]
    hr, kr = _rate(h), _rate(k)
    mib = 1024.0
    worker = f"{c['worker_s']:.0f}s" if c["worker_s"] is not None else "?"
    print(
        f"\n{c['mb']} MB: {c['written'] / 1e6:.1f} MB written, {c['n']} numbered lines, "
        f"the Worker ran {worker}"
    )
    print(
        f"  {'reader':<8} {'lines got':>17} {'MB got':>8} {'s':>6} {'MB/s':>7} "
        f"{'doubled':>7} {'order':>6} {'cut':>5}  end"
    )
    for name, r, rate in (("harness", h, hr), ("kubectl", k, kr)):
        end = h["ended"] if name == "harness" else f"EOF at {k['end_s']:.1f}s"
        print(
            f"  {name:<8} {r['got']:>9}/{c['n']:<7} {r['nbytes'] / 1e6:>8.1f} "
            f"{r['seconds']:>6.1f} {rate:>7.1f} {r['doubled']:>7} {r['out_of_order']:>6} "
            f"{r['cut']:>5}  {end}, {_secs(r['after_worker_s'])} after the Worker's end"
        )
    print(f"  harness MB/s / kubectl MB/s: {hr / kr if kr else float('nan'):.2f}")
    print(
        f"  harness RSS: peak {c['peak_rss_kib'] / mib:.0f} MiB sampled, "
        f"{(h['hwm_kib'] or 0) / mib:.0f} MiB VmHWM; at 10 % {(c['rss10_kib'] or 0) / mib:.0f} "
        f"MiB, at 90 % {(c['rss90_kib'] or 0) / mib:.0f} MiB ({c['samples']} samples); "
        f"kubectl peak {k['peak_rss_kib'] / mib:.0f} MiB"
    )
    print(f"  largest spool: {c['spool_max'] / 1e6:.1f} MB")
    print(f"  harness said: {h['read_ahead'] or 'no read-ahead'}")
    for name, r in (("harness", h), ("kubectl", k)):
        for line in r["cut_lines"]:
            print(f"  {name} cut: {line}")
    print(f"  harness warnings: {h['warnings']}, said lost: {len(h['said_lost'])}")
    for msg in h["said_lost"]:
        print(f"    {msg}")
    print(f"  harness: {' '.join(c['observe_cmd'])}")
    print(f"  kubectl: {' '.join(c['kubectl_cmd'])}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,300,1000", help="MB per case, comma-separated")
    ap.add_argument(
        "--case-timeout", type=float, default=900.0, help="seconds a case's readers may take"
    )
    ap.add_argument("--json", type=Path, help="write every case's figures here too")
    ap.add_argument(
        "--observe",
        nargs=5,
        metavar=("NAMESPACE", "JOB", "PROFILE", "LINES", "TIMEOUT"),
        help="(internal) the harness's observation of one Job, as JSON",
    )
    args = ap.parse_args()
    if args.observe:
        ns, name, profile, n, timeout = args.observe
        return observe(ns, name, profile, int(n), float(timeout))
    env = kube_env()
    cleared(env)  # an earlier run's Worker must not hold the node
    cases = []
    for mb in (int(x) for x in args.sizes.split(",")):
        c = case(env, mb, args.case_timeout)
        report(c)
        cases.append(c)
    if args.json:
        args.json.write_text(json.dumps(cases, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
