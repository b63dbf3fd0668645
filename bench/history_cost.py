"""Benchmark: what keeping a run in the history costs it, against the run itself.

    python bench/history_cost.py [--earlier 5 50] [--repeats 5] [--run-seconds S]

A run that keeps a history (``--history``) reads the profile's earlier runs, appends its
own summary, draws the trend chart of the last ones and writes summary.md. Each repeat does
that in a fresh process, as every run is one (matplotlib's import is counted; boto3's is
not, a run has it for its own S3 reads), against a history of ``--earlier`` runs, in a
folder and, when the test services' S3 server is up (``testenv/testenv up s3``,
``eval "$(testenv/testenv env)"``), in a bucket; it prints the median and the ratio to the
run.

The baseline, "the run": the wall time of ``pytest features/`` on the embedded default's
Step 6 scenarios (``-m "runtime and (…)"``), measured once here unless ``--run-seconds``
gives it.
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
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

PROFILE = "smoke-ppo-mlp-local"
# What one run does with its history, in a fresh interpreter; prints its seconds. The
# matplotlib import is counted (only the chart needs it), boto3's is not.
CHILD = """
import json, sys, time
from datetime import UTC, datetime
from pathlib import Path
import boto3  # a run has it already: its Step 6 read the checkpoint through it
t0 = time.perf_counter()
from rlark_acceptance.run import summary_md
from rlark_acceptance.run.budgets import enough, evaluate
from rlark_acceptance.model.budgets import Budgets
from rlark_acceptance.run.history import open_history
location, out, summary = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
history = open_history(location, out)
durations = summary["durations"]
runs = history.read(summary["provenance"]["profileName"], enough(durations, 5))
report = evaluate(durations, Budgets({}), [e.durations for e in runs.entries], count=runs.count)
history.append(summary, summary["provenance"]["profileName"], datetime.now(UTC))
chart = summary_md.trend_chart(out / summary_md.CHART, runs.entries[-5:], summary)
text = summary_md.render(summary, report, [], chart.name if chart else None)
summary_md.write(out, text, environ={})
print(time.perf_counter() - t0, len(runs.entries))
"""


def summary(i: int) -> dict[str, object]:
    stages = {"submit": 0.3, "scheduled": 0.4, "rayHead": 5.1, "firstSignal": 7.1}
    return {
        "runId": f"bench-{i:04d}-{uuid.uuid4().hex[:6]}",
        "verdict": "passed",
        "checks": {},
        "earliestFailure": None,
        "durations": {k: v + 0.01 * i for k, v in stages.items()},
        "provenance": {"profileName": PROFILE, "node": "local-node"},
    }


def seed(location: str, base: Path, count: int) -> None:
    from datetime import UTC, datetime, timedelta

    from rlark_acceptance.run.history import open_history

    history = open_history(location, base)
    start = datetime.now(UTC) - timedelta(days=count)
    for i in range(count):
        history.append(summary(i), PROFILE, start + timedelta(days=i))


def one(location: str, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, location, str(out), json.dumps(summary(99_999))],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(done.stdout.split()[0])


def run_seconds() -> float:
    select = "runtime and (not negative and not variant and not fault-injection)"
    select += " and not modified-job"
    with tempfile.TemporaryDirectory() as reports:
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "pytest", "features/", "-q", "-p", "no:cacheprovider",
             "-m", select, "--reports-dir", reports],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )  # fmt: skip
        return time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--earlier", type=int, nargs="+", default=[5, 50])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run-seconds", type=float, default=None)
    args = parser.parse_args()
    run = args.run_seconds if args.run_seconds is not None else run_seconds()
    print(f"the run (pytest features/, the embedded default's Step 6 scenarios): {run:.1f} s")
    stores = ["folder"] + (["s3"] if os.environ.get("AWS_ENDPOINT_URL_S3") else [])
    for store in stores:
        for count in args.earlier:
            with tempfile.TemporaryDirectory() as tmp:
                base = Path(tmp)
                if store == "s3":
                    location = f"s3://rlinf-ckpt/bench-history/{uuid.uuid4().hex[:8]}"
                else:
                    location = str(base / "history")
                seed(location, base, count)
                times = []
                for r in range(args.repeats):
                    out = base / f"reports-{r}"
                    times.append(one(location, out))
                m = statistics.median(times)
                spread = f"min {min(times):.2f}, max {max(times):.2f}"
                print(
                    f"  {store:6s} {count:3d} earlier runs: median {m:.2f} s ({spread}), "
                    f"{100 * m / run:.1f} % of the run"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
