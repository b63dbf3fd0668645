"""Benchmark: ``rlark-acceptance diagnose`` on a 1 GB Worker log, against ``grep -c Error``.

    python bench/diagnose.py [--gb 1.0] [--keep]

The log is made in a temporary folder (removed after, unless ``--keep``): real RLinf 0.3.0's
passing Pod log (``tests/fidelity/rlinf-0.3.0/worker.log``: Ray's start-up, coloured actor
prefixes, tqdm bars, the metric tables) repeated to the size asked, with a warning that
names an Error every 20 copies (a line the classifier must look at and let go), then the
real failing run's end (``tests/fidelity/failures/real/actor-start-up.log``: the actor's
read-only error and the knock-ons after it). The cause is the log's last few hundred lines:
diagnose reads the whole file in its searching state, its slowest.

The anchor is ``grep -c Error FILE`` (one pass of a C program that looks at every byte); both
read the same file, from the page cache (grep runs once first to warm it). Prints each wall
time, the ratio, and diagnose's peak RSS (the child's ``ru_maxrss`` from ``wait4``) and the
RSS of the same command on a 10 MB log, which should be the same: memory is flat.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIDELITY = ROOT / "tests" / "fidelity"
WARNING = (
    "\x1b[36m(EnvWorker pid=411)\x1b[0m ~/site-packages/gym/core.py:311: UserWarning: the "
    "render mode raised no Error, falling back to rgb_array\n"
)


def command() -> list[str]:
    installed = Path(sys.executable).parent / "rlark-acceptance"
    if installed.exists():
        return [str(installed), "diagnose"]
    return [sys.executable, "-m", "rlark_acceptance.cli", "diagnose"]


def make_log(path: Path, size: int) -> None:
    body = (FIDELITY / "rlinf-0.3.0" / "worker.log").read_bytes()
    failing = (FIDELITY / "failures" / "real" / "actor-start-up.log").read_text(encoding="utf-8")
    lines = [line for line in failing.splitlines() if not line.startswith("# ")]
    start = next(i for i, line in enumerate(lines) if "Exception occurred while" in line) - 5
    end = "\n".join(lines[start:]).encode() + b"\n"
    block = (body + b"\n") * 20 + WARNING.encode()
    with path.open("wb") as out:
        written = 0
        while written < size - len(end):
            out.write(block)
            written += len(block)
        out.write(end)


def timed(argv: list[str]) -> tuple[float, float, int, bytes]:
    """Wall time, CPU time (user and system: what a loaded machine's other work does not
    add to), peak RSS in KiB and standard output of one child."""
    r, w = os.pipe()
    start = time.perf_counter()
    pid = os.posix_spawn(
        argv[0], argv, dict(os.environ), file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)]
    )
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        out = pipe.read()
    _, status, usage = os.wait4(pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv}: exit {os.waitstatus_to_exitcode(status)}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--gb", type=float, default=1.0, help="the log's size (default 1.0)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args()
    grep = shutil.which("grep") or "/usr/bin/grep"
    folder = Path(tempfile.mkdtemp(prefix="diagnose-bench-"))
    try:
        small, big = folder / "small.log", folder / "big.log"
        make_log(small, 10 * 10**6)
        t0 = time.perf_counter()
        make_log(big, int(args.gb * 10**9))
        size = big.stat().st_size
        print(f"log: {size / 1e9:.2f} GB written in {time.perf_counter() - t0:.1f} s")
        _, _, small_rss, _ = timed([*command(), str(small), "--json"])
        timed([grep, "-c", "Error", str(big)])  # warms the page cache
        g, g_cpu, grep_rss, counted = timed([grep, "-c", "Error", str(big)])
        d, d_cpu, rss, out = timed([*command(), str(big), "--json"])
        found = json.loads(out)
        lines = counted.decode().strip()
        print(
            f"grep -c Error: {g:.2f} s wall, {g_cpu:.2f} s CPU ({lines} lines), "
            f"peak RSS {grep_rss / 1024:.0f} MiB"
        )
        print(
            f"diagnose:      {d:.2f} s wall, {d_cpu:.2f} s CPU ({size / d / 1e6:.0f} MB/s), "
            f"peak RSS {rss / 1024:.0f} MiB (on 10 MB of the same log: {small_rss / 1024:.0f} MiB)"
        )
        print(f"ratio diagnose / grep: {d / g:.1f} wall, {d_cpu / g_cpu:.1f} CPU")
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        cause = found["firstCause"]
        at = f"log line {cause['line']} of {found['lines']}"
        print(f"named: {found['class']} at {at}: {cause['text']}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
