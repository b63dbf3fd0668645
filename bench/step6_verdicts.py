"""Benchmark: how fast Step 6 goes red at the right check, against a timeout-based harness.

    python bench/step6_verdicts.py [--features] [--storage]

For each deliberately broken Job of 首次运行问题排查 on the embedded local target, prints the
time from the moment the Worker showed the fault (its log ended, or the Pod became
unschedulable) to the red verdict, and the ratio of the timeout a harness that simply waits
for the signal would have spent (docs/contract.md §2's default timeouts) to that time. Then the
storage faults, against a private S3 server of the test services (its own state directory,
so the shared one is never touched): an endpoint that refuses connections from the start,
and the S3 server killed while 6.5 waits for the checkpoint (time from the kill to the red
verdict). Then the lag between the first-signal line reaching the harness and 6.4 passing on
the happy path, and, with ``--features``, the wall time of ``pytest features/``.

Needs the S3 server of the test services (``testenv/testenv up s3``); it uses its
credentials through the environment, as the acceptance suite does.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from fixtures.workspace import Workspace  # noqa: E402
from rlark_acceptance.adapters import open_adapter  # noqa: E402
from rlark_acceptance.model.profile import load_profile  # noqa: E402
from rlark_acceptance.model.timeouts import Bound, Timeouts  # noqa: E402
from rlark_acceptance.preflight.entry import preflight_profile  # noqa: E402
from rlark_acceptance.run.acceptance import accept, submit_and_confirm  # noqa: E402
from testenv.state import S3State, from_json  # noqa: E402

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

    use_s3(state.load().s3)


def use_s3(s3: S3State | None) -> None:
    assert s3 is not None, "testenv up s3 first"
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": s3.access_key,
            "AWS_SECRET_ACCESS_KEY": s3.secret_key,
            "AWS_REGION": s3.region,
            "AWS_DEFAULT_REGION": s3.region,
            "AWS_ENDPOINT_URL_S3": s3.endpoint,
        }
    )


def private_s3(state: Path, verb: str = "up") -> S3State | None:
    """An S3 server of the test services that only this script uses (and may kill)."""
    env = {**os.environ, "RLARK_TESTENV_STATE": str(state)}
    testenv = [str(ROOT / "testenv" / "testenv"), verb, "s3"]
    subprocess.run(testenv, check=True, env=env, stdout=subprocess.DEVNULL)
    if verb != "up":
        return None
    return from_json(json.loads((state / "state.json").read_text())).s3


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def storage_faults(tmp: Path) -> int:
    """Rows for a store that cannot be reached at start, and one that dies while 6.5 waits."""
    shared = {k: os.environ[k] for k in os.environ if k.startswith("AWS_")}
    state = tmp / "s3-private"
    s3 = private_s3(state)
    try:
        use_s3(s3)
        path = Workspace.copy_of(PROFILE, tmp / "ws-storage").write()
        profile = load_profile(path)
        pre = preflight_profile(path)
        at: dict[str, float] = {}

        def watch(p: Any) -> None:
            if p.status == "failed":
                at.setdefault("red", time.perf_counter())
            if p.check == "6.4" and p.status == "passed" and "kill" in at:
                assert s3 is not None
                os.kill(s3.pid, signal.SIGKILL)
                at["fault"] = time.perf_counter()

        def confirm() -> Any:
            adapter = open_adapter(profile)
            try:
                return submit_and_confirm(adapter, pre, on_phase=watch)
            finally:
                adapter.close()

        os.environ["AWS_ENDPOINT_URL_S3"] = f"http://127.0.0.1:{closed_port()}"
        at["fault"] = time.perf_counter()  # the fault is there from the start
        if not row("S3 endpoint unreachable at start", "6.3", "rayHead", confirm(), at):
            return 1
        use_s3(s3)
        at = {"kill": 0.0}
        if not row("S3 server dies while 6.5 waits", "6.5", "output", confirm(), at):
            return 1
    finally:
        private_s3(state, "down")
        os.environ.update(shared)
    return 0


def row(name: str, check: str, timeout: str, rec: Any, at: dict[str, float]) -> bool:
    """Print one verdict row; False when the verdict is not the expected check."""
    first = rec.earliest_failure
    if first is None or first.check != check or first.at is None or "fault" not in at:
        print(f"{name:34} expected {check}, got {first}")
        return False
    lag = at["red"] - at["fault"]
    waited = Timeouts()[Bound(timeout)]
    print(
        f"{name:34} {check:5} {first.at:9.2f}s {lag * 1000:8.0f}ms "
        f"{waited:17.0f}s {waited / max(lag, 1e-3):7.0f}x"
    )
    print(f"{'':34} {first.message[:160]}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--features", action="store_true", help="also time pytest features/")
    ap.add_argument("--storage", action="store_true", help="only the storage-fault rows")
    args = ap.parse_args()
    s3_environment()
    print(
        f"{'fault':34} {'check':5} {'submit→red':>10} {'fault→red':>10} "
        f"{'waited by timeout':>18} {'ratio':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, check, timeout, fault) in enumerate([] if args.storage else FAULTS):
            ws = Workspace.copy_of(PROFILE, Path(tmp) / f"ws{i}")
            fault(ws)
            path = ws.write()
            profile = load_profile(path)
            adapter = open_adapter(profile)
            try:
                rec = submit_and_confirm(adapter, preflight_profile(profile))
            finally:
                adapter.close()
            first = rec.earliest_failure
            if first is None or first.check != check or first.at is None:
                print(f"{name:34} expected {check}, got {first}")
                return 1
            lag = first.at - (rec.fault_at if rec.fault_at is not None else first.at)
            waited = Timeouts()[Bound(timeout)]
            ratio = waited / max(lag, 1e-3)
            print(
                f"{name:34} {check:5} {first.at:9.2f}s {lag * 1000:8.0f}ms "
                f"{waited:17.0f}s {ratio:7.0f}x"
            )
        if storage_faults(Path(tmp)):
            return 1
        adapter = open_adapter(load_profile(PROFILE))
        try:
            run = accept(load_profile(PROFILE), adapter)
        finally:
            adapter.close()
        assert run.record is not None, "nothing was submitted"
        assert run.record.signal_lag is not None, run.record.phases
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
