"""Benchmark: what a run's trace costs it, on and off, in whole runs.

    python bench/trace_cost.py [--runs 3] [-m EXPR]

Runs ``pytest features/`` on the embedded default ``--runs`` times with tracing off (no
collector named, the default) and as many times with it on (``OTEL_EXPORTER_OTLP_ENDPOINT``
naming the test services' collector, testenv/otelcol, started here), in pairs, so that both
meet the same load of a shared machine, the pairs alternating which goes first. It prints
the median wall time of each, their ratio, and the median of the trace's own seconds as
the record gives them (``trace.seconds``: the spans worked out and sent, the whole of what
tracing adds to a run's work).

The baseline is the run with tracing off. ``-m`` selects scenarios as pytest does (default:
all of them, the self-checks' submissions included, as ``./run acceptance`` runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]


def one(folder: Path, endpoint: str | None, select: str | None) -> tuple[float, dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACEPARENT"))}
    env["RLARK_ACCEPTANCE_STATE"] = str(folder / "state")  # not the user's history
    if endpoint:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    reports = folder / "reports"
    command = [sys.executable, "-m", "pytest", "features/", "-q", "-p", "no:cacheprovider"]
    command += ["--reports-dir", str(reports), *(["-m", select] if select else [])]
    t0 = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    summary = json.loads((reports / "run-summary.json").read_text(encoding="utf-8"))
    if done.returncode != 0:
        raise SystemExit(f"a run failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return seconds, summary


def main() -> int:
    from testenv.otelcol import collector

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-m", dest="select", default=None)
    args = parser.parse_args()
    off: list[float] = []
    on: list[float] = []
    exported: list[float] = []
    spans: list[int] = []
    summary: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, collector(Path(tmp) / "otelcol") as found:
        for i in range(args.runs):
            # Off first, then on first: a pair's second run meets warmer caches.
            for traced in (False, True) if i % 2 == 0 else (True, False):
                folder = Path(tmp) / f"{'on' if traced else 'off'}-{i}"
                seconds, got = one(folder, found.endpoint if traced else None, args.select)
                (on if traced else off).append(seconds)
                summary = got if traced else summary
            trace = summary.get("trace")
            assert isinstance(trace, dict) and trace.get("error") is None, trace
            exported.append(float(trace["seconds"]))
            spans.append(int(trace["spans"]))
            print(f"  run {i + 1}: off {off[-1]:.1f} s, on {on[-1]:.1f} s "
                  f"(the trace: {spans[-1]} spans, {exported[-1]:.3f} s)")  # fmt: skip
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"baseline, tracing off: median {m_off:.1f} s (min {min(off):.1f}, max {max(off):.1f})")
    print(f"tracing on:            median {m_on:.1f} s (min {min(on):.1f}, max {max(on):.1f})")
    print(f"on / off: {m_on / m_off:.3f}")
    m_trace = statistics.median(exported)
    print(f"the trace itself: median {m_trace:.3f} s, {100 * m_trace / m_on:.2f} % of the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
