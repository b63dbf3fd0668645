"""Benchmark: how fast Step 6 goes red at the right check, against a timeout-based harness.

    python bench/step6_verdicts.py [--features]

For each deliberately broken Job of 首次运行问题排查 on the embedded local target, prints the
time from the moment the Worker showed the fault (its log ended, or the Pod became
unschedulable) to the red verdict, and the ratio of the timeout a harness that simply waits
for the signal would have spent (CONTRACT §2's default timeouts) to that time. Then the lag
between the first-signal line reaching the harness and 6.4 passing on the happy path, and,
with ``--features``, the wall time of ``pytest features/``.

Needs the S3 server of the test services (``testenv/testenv up s3``); it uses its
credentials through the environment, as the acceptance suite does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from fixtures.workspace import Workspace  # noqa: E402
from rlark_acceptance.adapters import open_adapter  # noqa: E402
from rlark_acceptance.model.profile import DEFAULT_TIMEOUTS, load_profile  # noqa: E402
from rlark_acceptance.preflight.entry import preflight_profile  # noqa: E402
from rlark_acceptance.run.acceptance import accept, submit_and_confirm  # noqa: E402

PROFILE = ROOT / "profiles" / "local.yaml"

FAULTS: list[tuple[str, str, str, Callable[[Workspace], None]]] = [
    (
        "first signal never appears",
        "6.4",
        "firstSignal",
        lambda ws: ws.add_override("runner.max_steps=0"),
    ),
    ("checkpoints outside every mount", "6.5", "output", lambda ws: ws.set_log_path("results")),
    (
        "prepare script fails",
        "6.3",
        "rayHead",
        lambda ws: ws.role.update(prepareScript="export PYTHONUNBUFFERED=1\nexit 3\n"),
    ),
    (
        "Worker dies before Ray starts",
        "6.3",
        "rayHead",
        lambda ws: ws.role.update(prepareScript="kill -KILL $$\n"),
    ),
    (
        "no node matches the selection",
        "6.2",
        "scheduled",
        lambda ws: ws.role.update(nodeSelector={"rlark.io/pool": "gpu-a"}),
    ),
]


def s3_environment() -> None:
    subprocess.run(
        [str(ROOT / "testenv" / "testenv"), "up", "s3"], check=True, stdout=subprocess.DEVNULL
    )
    from testenv import state

    s3 = state.load()["s3"]
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": s3["access_key"],
            "AWS_SECRET_ACCESS_KEY": s3["secret_key"],
            "AWS_REGION": s3["region"],
            "AWS_DEFAULT_REGION": s3["region"],
            "AWS_ENDPOINT_URL_S3": s3["endpoint"],
        }
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", action="store_true", help="also time pytest features/")
    args = ap.parse_args()
    s3_environment()
    print(
        f"{'fault':34} {'check':5} {'submit→red':>10} {'fault→red':>10} "
        f"{'waited by timeout':>18} {'ratio':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, check, timeout, fault) in enumerate(FAULTS):
            ws = Workspace.copy_of(PROFILE, Path(tmp) / f"ws{i}")
            fault(ws)
            path = ws.write()
            profile = load_profile(path)
            adapter = open_adapter(profile)
            try:
                rec = submit_and_confirm(adapter, profile, preflight_profile(path))
            finally:
                adapter.close()
            first = rec.earliest_failure
            if first is None or first.check != check or first.at is None:
                print(f"{name:34} expected {check}, got {first}")
                return 1
            lag = first.at - (rec.fault_at if rec.fault_at is not None else first.at)
            waited = DEFAULT_TIMEOUTS[timeout]
            ratio = waited / max(lag, 1e-3)
            print(
                f"{name:34} {check:5} {first.at:9.2f}s {lag * 1000:8.0f}ms "
                f"{waited:17.0f}s {ratio:7.0f}x"
            )
        adapter = open_adapter(load_profile(PROFILE))
        try:
            run = accept(load_profile(PROFILE), adapter)
        finally:
            adapter.close()
        assert run.record is not None and run.record.signal_lag is not None
        print(f"first signal in the log → 6.4 passed: {run.record.signal_lag * 1000:.1f} ms")
    if args.features:
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "features/", "-q", "-p", "no:cacheprovider"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        print(
            f"pytest features/ wall time: {time.perf_counter() - t0:.1f} s "
            f"({out.stdout.strip().splitlines()[-1]})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
