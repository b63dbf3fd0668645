"""Real RLinf 0.3.0 as the Worker's workload: ``pytest features/`` on
profiles/rlinf-embodied.yaml, run as a user would, its record read back.

The profile as it is (its own config, Job and target) holds all 41 checks; the self-check
scenarios, which submit changed copies, are the smoke workload's to run (each would be
another ~2 min RLinf start on 2 cores)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.adapters.local import images
from tests.run.suite_runs import AS_IT_IS, ROOT, SuiteRun, _env, _read

pytestmark = pytest.mark.slow

PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"
LOCK = ROOT / "profiles" / "rlinf-embodied" / "rlinf-0.3.0.lock"


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def run_profile(reports: Path, *args: str, timeout: float = 900) -> SuiteRun:
    assert (images.locked_env_dir(LOCK) / images.BUILT_STAMP).is_file(), (
        "RLinf's environment is not built (./run tests builds it)"
    )
    command = [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider"]
    command += ["--profile", str(PROFILE), "--reports-dir", str(reports), *args]
    t0 = time.monotonic()
    proc = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    return _read(proc.returncode, proc.stdout + proc.stderr, reports, time.monotonic() - t0)


def test_real_rlinf_passes_every_check(tmp_path: Path) -> None:
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS)
    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and len(s["checks"]) == 41, s["checks"]
    assert set(s["checks"].values()) == {"passed"}, s["checks"]
    # RLinf wrote a checkpoint at each of its 2 global steps, read back from S3.
    assert s["outputs"]["steps"] == [1, 2], s["outputs"]
    assert s["outputs"]["checkpoint"].endswith("/logs/ci-test/checkpoints"), s["outputs"]
    print(f"\nreal RLinf: {run.elapsed:.0f} s whole suite, Step 6 durations {s['durations']}")
    log = global_attachment(run, "Step 6: Worker log (excerpt)")
    assert "│ Global Step:    1/2 │" in log, log[-2000:]  # RLinf's embodied metric table


def global_attachment(run: SuiteRun, name: str) -> str:
    results = run.reports / "allure-results"
    for path in results.glob("*-globals.json"):
        for a in json.loads(path.read_text(encoding="utf-8")).get("attachments", []):
            if a["name"] == name:
                return (results / a["source"]).read_text(encoding="utf-8")
    raise AssertionError(f"no global attachment {name!r}")
