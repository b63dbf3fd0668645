"""Benchmark: a release of N profiles against the sum of N sequential runs and against
its slowest profile alone, and projected for a machine with one core per profile.

    python bench/release.py [--profiles 2 4] [--select EXPR] [--jobs N]

Needs the S3 server (``testenv/testenv up s3``, ``eval "$(testenv/testenv env)"``). For each
N it makes N copies of profiles/local.yaml (named ``bench-1`` … ``bench-N``: one site's
variants), then runs, as whole processes:

- each copy alone, one after the other: ``pytest features/ --profile COPY -m SELECT`` (the
  sequential baseline is their sum, "slowest alone" the longest of them);
- the release of all N: ``pytest features/ --profile COPY ... -m SELECT`` (``--jobs``: the
  release's default, one per core, unless given).

and prints wall and CPU seconds (the process and its children, from ``wait4``), the ratios
release / sequential and release / slowest alone, and the projection for one core per
profile: the slowest profile alone plus the release's own time (its wall time outside the
span its sessions covered, first start to last end, as release-summary.json times them:
its start-up, loading the profiles, the release record and the Allure merge). The
projection holds when each profile's session needs at most one core (its CPU seconds /
wall seconds ≤ 1, printed). The load average before and after each N is printed: the
machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AS_IT_IS = "not negative and not variant and not fault-injection and not modified-job"


@dataclass
class Timed:
    code: int
    wall: float
    cpu: float  # user + system seconds of the process and the children it waited for


def timed(argv: list[str], log: Path) -> Timed:
    t0 = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Timed(proc.returncode, time.monotonic() - t0, usage.ru_utime + usage.ru_stime)


def copies(tmp: Path, n: int) -> list[Path]:
    out = []
    for i in range(1, n + 1):
        root = tmp / f"bench-{i}"
        root.mkdir(parents=True)
        shutil.copytree(ROOT / "profiles" / "local", root / "local")
        text = (ROOT / "profiles" / "local.yaml").read_text(encoding="utf-8")
        text = text.replace("name: smoke-ppo-mlp-local\n", f"name: bench-{i}\n")
        text = text.replace("config: ../src/", f"config: {ROOT / 'src'}/")
        text = text.replace("environment: ../.venv", f"environment: {ROOT / '.venv'}")
        (root / "local.yaml").write_text(text, encoding="utf-8")
        out.append(root / "local.yaml")
    return out


def pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider", "-q", *args]


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def bench(n: int, select: str, jobs: int | None, tmp: Path) -> None:
    profiles = copies(tmp / f"n{n}", n)
    print(f"\nN = {n}  (load average before: {load()})", flush=True)
    alone: list[Timed] = []
    for i, p in enumerate(profiles, 1):
        t = timed(
            pytest(
                "--profile",
                str(p),
                "--reports-dir",
                str(tmp / f"n{n}" / f"alone-{i}"),
                "-m",
                select,
            ),
            tmp / f"n{n}-alone-{i}.log",
        )
        assert t.code == 0, (tmp / f"n{n}-alone-{i}.log").read_text()[-3000:]
        alone.append(t)
        print(
            f"  alone bench-{i}: {t.wall:6.1f} s wall, {t.cpu:6.1f} s CPU "
            f"({t.cpu / t.wall:.2f} cores)",
            flush=True,
        )
    reports = tmp / f"n{n}" / "release"
    argv = pytest("--reports-dir", str(reports), "-m", select)
    argv += ["--jobs", str(jobs)] if jobs else []
    for p in profiles:
        argv += ["--profile", str(p)]
    rel = timed(argv, tmp / f"n{n}-release.log")
    assert rel.code == 0, (tmp / f"n{n}-release.log").read_text()[-3000:]
    summary = json.loads((reports / "release-summary.json").read_text(encoding="utf-8"))
    # The release's own time: its wall time outside the span its sessions covered (the first
    # start to the last end, queue included), from release-summary.json.
    starts = [_epoch(p["startedAt"]) for p in summary["profiles"]]
    ends = [t + p["elapsed"] for t, p in zip(starts, summary["profiles"], strict=True)]
    span = max(ends) - min(starts)
    sequential = sum(t.wall for t in alone)
    slowest = max(t.wall for t in alone)
    overhead = rel.wall - span
    projected = slowest + overhead
    print(
        f"  release of {n} (--jobs {summary['jobs']}): {rel.wall:6.1f} s wall, "
        f"{rel.cpu:6.1f} s CPU; its sessions span {span:.1f} s "
        f"(longest {max(p['elapsed'] for p in summary['profiles']):.1f} s), "
        f"the release's own time {overhead:.1f} s"
    )
    print(
        f"  sequential sum {sequential:.1f} s -> release / sequential = {rel.wall / sequential:.2f}"
    )
    print(f"  slowest alone {slowest:.1f} s -> release / slowest = {rel.wall / slowest:.2f}")
    per_core = max(t.cpu / t.wall for t in alone)
    print(
        f"  projected, one core per profile: {projected:.1f} s = slowest alone + overhead "
        f"({projected / slowest:.2f} x slowest; each session needs <= {per_core:.2f} cores)"
    )
    print(f"  load average after: {load()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--select", default=AS_IT_IS, help="pytest -m for every run")
    ap.add_argument("--jobs", type=int, default=None, help="default: the release's own")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores; -m {args.select!r}")
    with tempfile.TemporaryDirectory(prefix="release-bench-") as tmp:
        for n in args.profiles:
            bench(n, args.select, args.jobs, Path(tmp))


if __name__ == "__main__":
    main()
