"""Real RLinf 0.3.0 as the Worker's workload, run as a user would: ``pytest features/`` on
profiles/rlinf-embodied.yaml (or a copy of it with one change), its record read back. What the
two files of real-RLinf runs share; each run is another ~1-3 min RLinf start on 2 cores, so
they are split over two files, which the test workers run side by side."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.local import images
from tests.run.suite_runs import ROOT, SuiteRun, _env, _read, again_if_ray_start_timed_out

PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"
LOCK = ROOT / "profiles" / "rlinf-embodied" / "rlinf-0.3.0.lock"
TRAINING = ("T.1", "T.2", "T.3")


def run_profile(
    reports: Path, *args: str, profile: Path = PROFILE, timeout: float = 900
) -> SuiteRun:
    assert (images.locked_env_dir(LOCK) / images.BUILT_STAMP).is_file(), (
        "RLinf's environment is not built (./run tests builds it)"
    )
    command = [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider"]
    command += ["--profile", str(profile), "--reports-dir", str(reports), *args]

    def once() -> SuiteRun:
        t0 = time.monotonic()
        proc = subprocess.run(
            command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
        )
        return _read(proc.returncode, proc.stdout + proc.stderr, reports, time.monotonic() - t0)

    return again_if_ray_start_timed_out(once)


def global_attachment(run: SuiteRun, name: str) -> str:
    results = run.reports / "allure-results"
    for path in results.glob("*-globals.json"):
        for a in json.loads(path.read_text(encoding="utf-8")).get("attachments", []):
            if a["name"] == name:
                return (results / a["source"]).read_text(encoding="utf-8")
    raise AssertionError(f"no global attachment {name!r}")


def override_copy(tmp: Path, override: str) -> Path:
    """The profile and its Job, their run command with ``override`` added (both, so the
    pre-flight's comparison of the two still holds)."""
    root = tmp / "site" / "profiles"
    shutil.copytree(PROFILE.parent / "rlinf-embodied", root / "rlinf-embodied")
    shutil.copy(PROFILE, root / PROFILE.name)
    (tmp / "site" / "third_party").symlink_to(ROOT / "third_party")
    for f in (root / PROFILE.name, root / "rlinf-embodied" / "job.yaml"):
        text = f.read_text(encoding="utf-8")
        assert text.count("runner.save_interval=1 ") == 1, f
        f.write_text(text.replace("runner.save_interval=1 ", f"runner.save_interval=1 {override} "))
    return root / PROFILE.name


def profile_junit(run: SuiteRun) -> tuple[str, dict[str, Any]]:
    """The profile's JUnit suite name and its failed testcases by check id, as CI reads
    junit.xml (``[T.2] the run's metrics are real`` is T.2's)."""
    import junitparser

    cases = run.junit_cases()
    suite = next(name for name, _ in cases if name.endswith("the profile as it is"))
    failed = {
        c.name[1 : c.name.index("]")]: c
        for name, c in cases
        if name == suite and any(isinstance(r, junitparser.Failure) for r in c.result)
    }
    return suite, failed


def junit_text(case: Any) -> str:
    (failure,) = case.result
    return str(failure.message) + (failure.text or "")


def resume_copy(tmp: Path) -> Path:
    """The profile and its Job as they are, the profile turning T.4 on."""
    root = tmp / "site" / "profiles"
    shutil.copytree(PROFILE.parent / "rlinf-embodied", root / "rlinf-embodied")
    (tmp / "site" / "third_party").symlink_to(ROOT / "third_party")
    text = PROFILE.read_text(encoding="utf-8")
    assert "\ntraining:" not in text, "the profile has a training: section of its own"
    (root / PROFILE.name).write_text(text + "training:\n  resume: true\n", encoding="utf-8")
    return root / PROFILE.name
