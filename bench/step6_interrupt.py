"""Benchmark: how fast an interrupted acceptance run ends, and what it leaves behind.

    python bench/step6_interrupt.py [SIGINT|SIGTERM ...]

SIGINT is also sent to a run started as a shell's background job (SIGINT ignored there).
With SIGKILL, the leftovers are counted, then removed as the next run's start does.

Starts ``pytest features/`` on the embedded default target, waits until the shared Worker
runs (a process carrying the local Pod marker), sends the signal to pytest, and prints the
time from the signal to pytest's exit, its exit status, whether the run record says
interrupted, and any Worker process or scratch directory left behind.

Needs the S3 server of the test services (``testenv/testenv up s3``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def workers(scratch: Path) -> list[int]:
    """Pids of the processes of this run's local Pods: those rooted in its scratch."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                root = os.readlink(f"/proc/{entry}/root")
            except OSError:
                continue
            if root.startswith(str(scratch) + "/"):
                found.append(int(entry))
    return found


def ignore_sigint() -> None:
    # What a shell does to a job it starts in the background: SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def one(sig: signal.Signals, tmp: Path, background: bool) -> int:
    # A private temporary directory: the local target's scratch root lies under it.
    scratch = tmp / "rlark-local"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "features/", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TMPDIR": str(tmp)},
        preexec_fn=ignore_sigint if background else None,
    )
    deadline = time.monotonic() + 120
    while not workers(scratch):
        if proc.poll() is not None or time.monotonic() > deadline:
            print(f"{sig.name}: no Worker started")
            return 1
        time.sleep(0.05)
    time.sleep(1.0)  # the Worker is busy starting Ray
    t0 = time.perf_counter()
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=300)
    took = time.perf_counter() - t0
    time.sleep(0.5)
    left = workers(scratch)
    after = list(scratch.iterdir()) if scratch.is_dir() else []
    summary = ROOT / "reports" / "run-summary.json"
    interrupted = json.loads(summary.read_text()).get("interrupted") if summary.is_file() else None
    tail = out.decode(errors="replace").strip().splitlines()[-1:]
    if sig == signal.SIGKILL:  # nothing ran in the killed run: the next run's start cleans up
        sys.path[:0] = [str(ROOT / "src")]
        from rlark_acceptance.adapters.local.leftovers import sweep_stale

        print(f"SIGKILL: left {len(workers(scratch))} Worker processes, {len(after)} scratch dirs")
        t1 = time.perf_counter()
        removed = sweep_stale(scratch)
        left, after = workers(scratch), list(scratch.iterdir())
        print(f"  the next run's start removed {removed} in {time.perf_counter() - t1:.2f} s")
    how = f"{sig.name}{' (a background job)' if background else ''}"
    print(
        f"{how}: exit {proc.returncode} after {took:.2f} s; "
        f"run-summary interrupted={interrupted}; Worker processes left {len(left)}; "
        f"scratch dirs left {len(after)}; last line: {tail}"
    )
    return 0


def main() -> int:
    sigs = [signal.Signals[s] for s in sys.argv[1:]] or [signal.SIGINT, signal.SIGTERM]
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(s, False) for s in sigs] + [(signal.SIGINT, True)] * (signal.SIGINT in sigs)
        return max(one(s, Path(tmp), bg) for s, bg in runs)


if __name__ == "__main__":
    raise SystemExit(main())
