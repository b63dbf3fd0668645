"""Benchmark: a loud Worker on the embedded default target, against the log's size.

    python bench/step6_log_size.py [MB ...]          # default: 10 100 1000

For each size, a log file of that many MB of 100-byte lines is written, then the first
signal. A Worker of the local target (a real Ray head, as the default profile runs) prints
the file with ``cat``, as fast as it can, then the signal line; Step 6 runs in a fresh
harness process, which reports its own peak RSS. Printed per size:

- the harness's peak RSS and the time from the run script's first line (6.3) to the first
  signal's verdict (6.4): the Worker writing → the verdict, in MB/s;
- the named baselines on the same file: ``grep -m1 -E`` of the signal, and a plain Python
  line loop with the signal's regex (``for line in f: rx.search(line)``), with the
  harness's ratio to each.

Needs no test service (the Job mounts the file by hostPath and writes no checkpoint).
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PROFILE = ROOT / "profiles" / "local.yaml"
SIGNAL_LINE = "Global Step:   1%|          | 1/100"
LINE = ("loud worker output " * 6)[:99] + "\n"


def write_log(path: Path, mb: int) -> None:
    block = LINE * 10_000  # ~1 MB
    with path.open("w") as fh:
        for _ in range(mb):
            fh.write(block)
        fh.write(SIGNAL_LINE + "\n")


def grep_s(path: Path, pattern: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["grep", "-m1", "-E", pattern, str(path)], check=True, capture_output=True)
    return time.perf_counter() - t0


def python_loop_s(path: Path, pattern: str) -> float:
    rx = re.compile(pattern)
    t0 = time.perf_counter()
    with path.open() as fh:
        for line in fh:
            if rx.search(line):
                break
    return time.perf_counter() - t0


def harness(folder: Path) -> None:
    """One Step 6 of the loud Job in this process; prints its figures as JSON."""
    from rlark_acceptance.adapters import open_adapter
    from rlark_acceptance.model.job import read_job
    from rlark_acceptance.model.profile import load_profile
    from rlark_acceptance.run.step6 import build_plan, confirm_running

    profile = load_profile(PROFILE)
    job_path = folder / "job.yaml"
    job = read_job(str(job_path))
    adapter = open_adapter(profile, scratch_root=str(folder / "pods"))
    try:
        rec = confirm_running(adapter, build_plan(profile, job, manifest=job_path.read_text()))
    finally:
        adapter.close()
    phases = {c: (p.status, p.at) for c, p in rec.phases.items()}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"phases": phases, "lines": rec.log.count, "peak_mb": peak_mb}))


def job_yaml(folder: Path) -> None:
    body = yaml.safe_load((ROOT / "profiles" / "local" / "job.yaml").read_text())
    body["metadata"]["name"] = "loud-worker"
    body["spec"]["runScript"] = "cat /mnt/loud/log.txt\n"
    role = body["spec"]["roles"][0]
    role["mounts"] = [
        {"name": "loud", "type": "hostPath", "hostPath": str(folder), "containerPath": "/mnt/loud"}
    ]
    (folder / "job.yaml").write_text(yaml.safe_dump(body, sort_keys=False))


def one(mb: int, pattern: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rlark-bench-log-") as tmp:
        folder = Path(tmp)
        log = folder / "log.txt"
        write_log(log, mb)
        size_mb = log.stat().st_size / 1e6
        job_yaml(folder)
        grep, loop = grep_s(log, pattern), python_loop_s(log, pattern)
        proc = subprocess.run(
            [sys.executable, __file__, "--harness", str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"harness failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        phases = out["phases"]
        if phases["6.4"][0] != "passed":
            sys.exit(f"6.4 did not pass at {mb} MB: {phases}")
        took = phases["6.4"][1] - phases["6.3"][1]
        print(
            f"{size_mb:7.0f} MB  harness peak RSS {out['peak_mb']:6.0f} MB  "
            f"6.3→6.4 {took:6.2f} s = {size_mb / took:6.1f} MB/s  "
            f"(grep {size_mb / grep:6.0f} MB/s: ratio {grep / took:.3f}; "
            f"Python line loop {size_mb / loop:5.0f} MB/s: ratio {loop / took:.2f})  "
            f"{out['lines']} lines read",
            flush=True,
        )


def main(argv: list[str]) -> None:
    if argv[:1] == ["--harness"]:
        harness(Path(argv[1]))
        return
    from rlark_acceptance.model.profile import load_profile

    pattern = str(load_profile(PROFILE).run_info.first_signal)
    grep_pattern = pattern.replace(r"\d", "[0-9]")
    for mb in [int(a) for a in argv] or [10, 100, 1000]:
        one(mb, grep_pattern if grep_pattern else pattern)


if __name__ == "__main__":
    main(sys.argv[1:])
