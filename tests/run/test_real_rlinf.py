"""Real RLinf 0.3.0 as the Worker's workload: ``pytest features/`` on
profiles/rlinf-embodied.yaml, run as a user would, its record read back.

The profile as it is (its own config, Job and target) holds all 41 checks. The red runs
are the faults a user meets first with real RLinf: an override RLinf refuses (its own
error quoted), and two of the suite's own broken Jobs (no first signal, checkpoints
outside every mount) run on real RLinf. Each run is another ~1-3 min RLinf start on 2
cores, so the other self-checks stay the smoke workload's."""

from __future__ import annotations

import json
import shutil
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


def run_profile(
    reports: Path, *args: str, profile: Path = PROFILE, timeout: float = 900
) -> SuiteRun:
    assert (images.locked_env_dir(LOCK) / images.BUILT_STAMP).is_file(), (
        "RLinf's environment is not built (./run tests builds it)"
    )
    command = [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider"]
    command += ["--profile", str(profile), "--reports-dir", str(reports), *args]
    t0 = time.monotonic()
    proc = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    return _read(proc.returncode, proc.stdout + proc.stderr, reports, time.monotonic() - t0)


def test_real_rlinf_passes_every_check(tmp_path: Path) -> None:
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS)
    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and len(s["checks"]) == 44, s["checks"]
    assert set(s["checks"].values()) == {"passed"}, s["checks"]
    assert {c: s["checks"][c] for c in ("T.1", "T.2", "T.3")} == dict.fromkeys(
        ("T.1", "T.2", "T.3"), "passed"
    ), s["checks"]
    # RLinf's first global step's checkpoint, read back from S3 (6.5 passes on the first
    # intact one).
    assert s["outputs"]["steps"][:1] == [1], s["outputs"]
    assert s["outputs"]["checkpoint"].endswith("/logs/ci-test/checkpoints"), s["outputs"]
    # What the training checks read: RLinf's metric table (T.1), its TensorBoard events under
    # <log_path>/tensorboard (T.2), and the model weights of both global steps (T.3: SAC's
    # actor and alpha; their DCPs' optimizer and RNG state left out).
    t = s["training"]
    assert t["checks"] == ["T.1", "T.2", "T.3"], t
    assert t["steps"] == {"reached": 2, "printedTotal": 2}, t
    scalars = t["scalars"]
    assert scalars["location"].endswith("/logs/tensorboard") and scalars["files"] >= 1, t
    assert scalars["tags"] > 10 and scalars["values"] >= 2 * scalars["tags"], t
    assert scalars["nonFinite"] == {}, t
    ck = t["checkpoints"]
    assert ck["location"] == s["outputs"]["checkpoint"] and ck["steps"] == [1, 2], t
    first, last = ck["first"], ck["last"]
    assert (first["step"], last["step"]) == (1, 2), t
    assert first["nonFinite"] == last["nonFinite"] == {} and ck["olderThanTheRun"] == [], t
    # The same model at both steps (the same tensors), its weights changed by training.
    assert first["tensors"] == last["tensors"] > 0 and first["bytes"] == last["bytes"], t
    assert first["sha256"] != last["sha256"], t
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


def refused_override_copy(tmp: Path, override: str) -> Path:
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


def test_an_override_rlinf_refuses_is_red_with_rlinfs_own_words(tmp_path: Path) -> None:
    """A valid Hydra override whose value RLinf's validate_cfg refuses: the pre-flight cannot
    know RLinf's allowed values; the run goes red with RLinf's own assertion."""
    profile = refused_override_copy(tmp_path, "actor.fsdp_config.backward_prefetch=sideways")
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS, profile=profile)
    s = run.summary
    assert run.returncode == 1, run.explain()
    first = s["earliestFailure"]
    assert first is not None and first["check"] in ("6.3", "6.4", "1.1"), first
    assert "its first error" in first["message"], first
    assert (
        "AssertionError: fsdp_config.backward_prefetch must be one of [None, 'pre', 'post']\""
        in first["message"]
    ), first
    assert s["checks"]["6.5"] == "notReached", s["checks"]


def test_real_rlinf_without_a_first_signal_or_with_checkpoints_off_the_mounts(
    tmp_path: Path,
) -> None:
    """The suite's own broken Jobs on real RLinf: ``runner.max_steps=0`` (RLinf trains no
    step: 6.4 red as soon as RLinf exits) and logs under the image (6.5 red: gone with the
    Worker), each at its check without waiting for its timeout."""
    run = run_profile(
        tmp_path / "reports",
        "-k",
        "the_first_signal_never_appears or checkpoints_written_outside_every_mount",
    )
    self_checks = run.summary["selfChecks"]
    assert self_checks["failed"] == [] and self_checks["passed"] == 2, run.explain()
