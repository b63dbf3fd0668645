"""Benchmark: Step 6's phases on real RLinf beside the smoke workload's, and the harness's
overhead on top of RLinf's own run time.

    python bench/rlinf_phases.py [--runs N]

Needs the S3 server (``testenv/testenv up s3``, ``eval "$(testenv/testenv env)"``) and RLinf's
environment (``./run tests`` builds it). For each of profiles/local.yaml (the smoke workload)
and profiles/rlinf-embodied.yaml it runs ``pytest features/`` on the profile as it is and
reads the Step 6 durations from run-summary.json (seconds after submission: Pod scheduled,
Ray head's line, first signal, checkpoint read back). The baseline is RLinf alone: the same
``ray start --head`` and run script in the same environment, with the GPU stand-in, and no
harness (no pre-flight, no Pod, no mounts, a local log path). Prints each run's figures,
the ratio real RLinf / smoke per phase, and the whole suite's wall time / RLinf alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rlark_acceptance.adapters.local import images  # noqa: E402
from rlark_acceptance.adapters.local.worker import GPU_STANDIN_SOURCE, SITECUSTOMIZE  # noqa: E402

AS_IT_IS = "not negative and not variant and not fault-injection and not modified-job"
PHASES = ("scheduled", "rayHead", "firstSignal", "output")
LOCK = ROOT / "profiles" / "rlinf-embodied" / "rlinf-0.3.0.lock"
RUN = (
    "python examples/embodiment/train_embodied_agent.py --config-path {repo}/tests/e2e_tests/"
    "embodied --config-name dosw1_dummy_sac_mlp_pick runner.logger.log_path={logs} "
    "runner.save_interval=1 weight_syncer.type=bucket "
    "'+weight_syncer.bucket={{bucket_size:536870912,bucket_dtype:null,is_agent:false,"
    "load_instant:true}}'"
)


def suite(profile: str) -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as reports:
        t0 = time.monotonic()
        cmd = [sys.executable, "-m", "pytest", "features/", "-q", "-p", "no:cacheprovider"]
        cmd += ["--profile", profile, "--reports-dir", reports, "-m", AS_IT_IS]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - t0
        summary = json.loads((Path(reports) / "run-summary.json").read_text())
    if summary["verdict"] != "passed":
        sys.exit(f"{profile}: {summary['verdict']}\n{proc.stdout[-3000:]}")
    return wall, summary["durations"]


def rlinf_alone() -> float:
    """ray start + RLinf's entry point + ray stop, as the Worker runs them, no harness."""
    prefix = images.locked_env_dir(LOCK)
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp, "site")
        site.mkdir()
        (site / "gpu_standin.py").write_bytes(GPU_STANDIN_SOURCE.read_bytes())
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        repo = ROOT / "third_party" / "rlinf-v0.3"
        env = {
            "PATH": f"{prefix}/bin:/usr/bin:/bin",
            "HOME": tmp,
            "PYTHONPATH": str(site),
            "REPO_PATH": str(repo),
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        ray = f"--temp-dir={tmp}/ray --port=29511 --dashboard-port=29512"
        script = (
            f"ray start --head --node-ip-address=127.0.0.1 --num-cpus=1 --num-gpus=0 "
            f"--dashboard-host=127.0.0.1 --disable-usage-stats {ray} >/dev/null && "
            f"cd {shlex.quote(str(repo))} && {RUN.format(repo=repo, logs=f'{tmp}/logs')} "
            ">/dev/null 2>&1; code=$?; ray stop --force >/dev/null 2>&1; exit $code"
        )
        t0 = time.monotonic()
        code = subprocess.run(["bash", "-c", script], env=env).returncode
        took = time.monotonic() - t0
        if code != 0:
            sys.exit(f"RLinf alone failed: exit {code}")
        return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    if "AWS_ACCESS_KEY_ID" not in os.environ:
        sys.exit('the S3 server\'s environment: eval "$(testenv/testenv env)"')
    for i in range(args.runs):
        alone = rlinf_alone()
        smoke_wall, smoke = suite("profiles/local.yaml")
        real_wall, real = suite("profiles/rlinf-embodied.yaml")
        print(f"run {i + 1}: seconds after submission   smoke   real RLinf   ratio")
        for phase in PHASES:
            ratio = real[phase] / smoke[phase] if smoke[phase] else float("nan")
            print(f"  {phase:<12} {smoke[phase]:>26.1f} {real[phase]:>12.1f} {ratio:>7.1f}")
        print(
            f"  whole suite {smoke_wall:>27.1f} {real_wall:>12.1f} {real_wall / smoke_wall:>7.1f}"
        )
        print(
            f"  RLinf alone (ray start + entry point): {alone:.1f} s; the suite on real RLinf "
            f"{real_wall:.1f} s = {real_wall / alone:.2f} x RLinf alone "
            f"(harness overhead {real_wall - alone:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
