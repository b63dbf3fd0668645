"""Benchmark: the in-cluster runner's overhead against the same profile run from here.

    python bench/incluster_overhead.py [--runs N]

Needs testenv's cluster with the real node and S3 (``testenv/testenv up``) and the harness
image on the node (``testenv/testenv image harness``). Baseline: ``pytest features/
--profile profiles/kubernetes.yaml`` (Step 6's scenarios) from this machine. Against it:
the same with ``--in-cluster`` (runner Pod on gpu-node-09, S3 credentials from a Secret made
here). Prints per run the whole command's wall time, the runner's start (Job created →
container running, the image's start included), its record upload (runner's own figure) and
the command's fetch, then the median ratio in-cluster / from here.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testenv import state  # noqa: E402
from tests.run.suite_runs import STEP6_ONLY as STEP6  # noqa: E402

SECRET = "bench-object-store"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG"))}
    env.update({k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")})
    return env


def _run(argv: list[str]) -> tuple[float, str, int]:
    t0 = time.monotonic()
    res = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True)
    return time.monotonic() - t0, res.stdout + res.stderr, res.returncode


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    s3 = state.load().s3
    if s3 is None:
        raise SystemExit("no S3 server in this checkout: run `testenv/testenv up` first")
    kubectl = [str(ROOT / ".testenv" / "kubeconfig")]
    env_k = {**os.environ, "KUBECONFIG": kubectl[0]}
    subprocess.run(
        ["kubectl", "-n", "rlinf-acceptance", "create", "secret", "generic", SECRET,
         f"--from-literal=AWS_ACCESS_KEY_ID={s3.access_key}",
         f"--from-literal=AWS_SECRET_ACCESS_KEY={s3.secret_key}"],
        env=env_k, capture_output=True, check=False,
    )  # fmt: skip
    base = [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider", "-q"]
    base += ["--profile", "profiles/kubernetes.yaml", "-m", STEP6]
    here, there = [], []
    try:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory() as d:
                wall, out, rc = _run([*base, "--reports-dir", d])
                print(f"run {i + 1} from here: {wall:.1f}s exit {rc}", flush=True)
                here.append(wall)
            with tempfile.TemporaryDirectory() as d:
                wall, out, rc = _run(
                    [*base, "--reports-dir", d, "--in-cluster",
                     "--record-store", "s3://rlinf-ckpt/bench-records",
                     "--runner-secret", SECRET,
                     "--runner-env", "AWS_ENDPOINT_URL=http://$(S3_SERVICE_HOST):$(S3_SERVICE_PORT)",
                     "--runner-env", "AWS_DEFAULT_REGION=us-east-1",
                     "--runner-node-selector", "kubernetes.io/hostname=gpu-node-09"]
                )  # fmt: skip
                start = re.search(r"on node \S+ \(([\d.]+)s\)", out)
                upload = re.search(r"record uploaded .*\(\d+ files, ([\d.]+)s\)", out)
                fetch = re.search(r"record of pod \S+ fetched into .* \(([\d.]+)s\)", out)
                figures = [m.group(1) if m else "?" for m in (start, upload, fetch)]
                print(
                    f"run {i + 1} in-cluster: {wall:.1f}s exit {rc}; runner running after "
                    f"{figures[0]}s, record upload {figures[1]}s, fetch {figures[2]}s",
                    flush=True,
                )
                there.append(wall)
    finally:
        subprocess.run(
            ["kubectl", "-n", "rlinf-acceptance", "delete", "secret", SECRET],
            env=env_k, capture_output=True, check=False,
        )  # fmt: skip
    h, t = statistics.median(here), statistics.median(there)
    load = os.getloadavg()[0]
    print(f"median from here {h:.1f}s, in-cluster {t:.1f}s: ratio {t / h:.2f} (load {load:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
