"""Real RLinf 0.3.0 as the Worker's workload: ``pytest features/`` on
profiles/rlinf-embodied.yaml, run as a user would, its record read back.

The profile as it is (its own config, Job and target) holds all 41 checks of the page and
the training checks T.1-T.3, and T.4 (opt-in) turned on: a second submission resumes
from the last checkpoint at the next step. The red runs are the faults a user meets first with real
RLinf: an override RLinf refuses (its own error quoted), two of the suite's own broken Jobs
(no first signal, checkpoints outside every mount), training that diverges (an absurd critic
learning rate: NaN scalars and weights, then the rollout worker fails at step 2 and RLinf
tears the other actors down; T.1-T.3 red, T.1 quoting that first error), and an actor that
fails at start-up (6.4 red quoting it). Each run is another ~1-3 min RLinf start on 2 cores,
so the other self-checks stay the smoke workload's, and the other real failures are logs
(``tests/fidelity/regenerate_failures.py``)."""

from __future__ import annotations

import json
import re
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
    """The profile as it is, with T.4 (opt-in) turned on: one run of real RLinf holds the
    page's 41, the training's four and B.1."""
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS, profile=resume_copy(tmp_path))
    s = run.summary
    assert run.returncode == 0, run.explain()
    # The page's 41, the training's 4 and B.1 (the stages against the profile's history).
    assert s["verdict"] == "passed" and len(s["checks"]) == 46, s["checks"]
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
    assert t["checks"] == ["T.1", "T.2", "T.3", "T.4"], t
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
    # T.4: a second submission with runner.resume_dir at the run's last global_step_N goes
    # on from step N+1, as RLinf's own metric table says, to N+k. RLinf prints no digest of
    # the weights it loads: judged by its steps alone.
    r = t["resume"]
    n = r["from"]["step"]
    assert n == 2 and r["from"]["dir"].endswith("/checkpoints/global_step_2"), r
    assert r["started"] == n + 1 and r["reached"] == r["target"] > n, r
    assert "Resuming training from checkpoint directory" in r["said"], r
    assert r["weightsAtStart"] is None, r
    print(f"\nreal RLinf: {run.elapsed:.0f} s whole suite, Step 6 durations {s['durations']}")
    log = global_attachment(run, "Step 6: Worker log (excerpt)")
    # RLinf's embodied metric table, its last step's: the excerpt is the log's end, and the
    # training checks waited for the Worker to end.
    assert "│ Global Step:    2/2 │" in log, log[-2000:]


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


def test_an_override_rlinf_refuses_is_red_with_rlinfs_own_words(tmp_path: Path) -> None:
    """A valid Hydra override whose value RLinf's validate_cfg refuses: the pre-flight cannot
    know RLinf's allowed values; the run goes red with RLinf's own assertion."""
    profile = override_copy(tmp_path, "actor.fsdp_config.backward_prefetch=sideways")
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


# A learning rate a user means as 1e-4 and types as 1e20: the critic's first update makes its
# weights ~1e20, its outputs overflow, and every loss, Q value and gradient norm RLinf logs
# is NaN from the first step; RLinf goes on (its grad-norm guard covers the actor's
# optimizer), the NaN reaches the policy's weights, and the rollout fails at step 2.
DIVERGING = "actor.critic_optim.lr=1e20"
TRAINING = ("T.1", "T.2", "T.3")


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


def test_real_rlinf_whose_training_diverges_is_red_at_t_1_t_2_and_t_3(tmp_path: Path) -> None:
    """At that learning rate step 1 ends (6.4 passes on its metric table, 6.5 on its
    checkpoint), then the rollout worker fails sampling from the NaN weights and RLinf kills
    the other actors. T.1 is red at step 1 of 2 quoting the rollout worker's error (not the
    ActorDiedError knock-ons RLinf printed after it), T.2 with the NaN scalars, T.3 with the
    NaN tensors of the checkpoint."""
    profile = override_copy(tmp_path, DIVERGING)
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS, profile=profile)
    s = run.summary
    assert run.returncode == 1, run.explain()
    first = s["earliestFailure"]
    assert s["verdict"] == "failed" and first["check"] == "T.1", s
    page = [c for c in s["checks"] if c not in (*TRAINING, "T.4", "B.1")]  # T.4: opt-in, off
    assert {c: s["checks"][c] for c in page} == dict.fromkeys(page, "passed"), s["checks"]
    assert s["checks"]["B.1"] == "notReached", s["checks"]  # no stages of a failed run to hold
    assert {c: s["checks"][c] for c in TRAINING} == dict.fromkeys(TRAINING, "failed"), s
    # T.1: the steps stayed at 1 of 2; the first error, its class and remedy.
    message = first["message"]
    assert message.startswith("the Worker ended at step 1 of 2 (runner.max_epochs"), message
    assert (
        "its first error [training-diverged: Training diverged: NaN or infinite values reached "
        "the model] in MultiStepRolloutWorker (log line "
    ) in message, message
    assert message.endswith('"RuntimeError: normal expects all elements of std >= 0.0"'), message
    assert "ActorDiedError" not in message and "died unexpectedly" not in message, message
    cause = s["firstCause"]
    assert cause["class"] == "training-diverged" and cause["actor"] == "MultiStepRolloutWorker"
    assert cause["knockOns"] >= 1 and cause["quote"] in message, cause  # RLinf's teardown
    assert first["hint"].startswith(cause["remedy"]), first["hint"]  # the class's remedy first
    # T.2 and T.3: what they read.
    t = s["training"]
    assert t["steps"] == {"reached": 1, "printedTotal": 2}, t
    bad = t["scalars"]["nonFinite"]
    assert bad.get("train/sac/critic_loss") == 0 and set(bad.values()) == {0}, t  # step 0
    ck = t["checkpoints"]
    assert ck["steps"] == [1] and len(ck["first"]["nonFinite"]) > 10, ck
    suite, failed = profile_junit(run)
    assert suite.startswith("RLark acceptance: ") and "NOT ACCEPTED at T.1" in suite, suite
    assert sorted(failed) == list(TRAINING), failed
    assert "normal expects all elements of std >= 0.0" in junit_text(failed["T.1"])
    assert f"{len(bad)} of {t['scalars']['tags']} scalars are not finite: " in junit_text(
        failed["T.2"]
    )
    assert re.search(
        r"global_step_1: \d+ of \d+ tensors hold NaN or infinite values", junit_text(failed["T.3"])
    ), junit_text(failed["T.3"])


def test_real_rlinf_whose_actor_fails_at_start_up_is_red_at_6_4(tmp_path: Path) -> None:
    """The SAC replay buffer's auto-save directory on the read-only models mount: RLinf's
    actor fails creating it while RLinf starts its workers; 6.4 is red as soon as the Worker
    ends, quoting that actor's error with its class, the path and the class's remedy."""
    path = "/mnt/models/replay_buffer"
    profile = override_copy(tmp_path, f"+algorithm.replay_buffer.auto_save_path={path}")
    run = run_profile(tmp_path / "reports", "-m", AS_IT_IS, profile=profile)
    s = run.summary
    assert run.returncode == 1, run.explain()
    first = s["earliestFailure"]
    assert s["verdict"] == "failed" and first["check"] == "6.4", s
    assert [c for c, v in s["checks"].items() if v == "notReached"] == ["6.5", *TRAINING, "B.1"], s
    quote = f"OSError: [Errno 30] Read-only file system: '{path}'"
    message = first["message"]
    assert message.startswith("the logs never showed"), message
    assert (
        "its first error [read-only-checkpoint-dir: The checkpoint directory is read-only] in "
        f'EmbodiedSACFSDPPolicy (log line {s["firstCause"]["logLine"]}): "{quote}"'
    ) in message, message
    cause = s["firstCause"]
    assert cause["quote"] == quote and cause["path"] == path, cause
    assert first["hint"].startswith(cause["remedy"]), first["hint"]
    suite, failed = profile_junit(run)
    assert "NOT ACCEPTED at 6.4" in suite and list(failed) == ["6.4"], (suite, failed)
    assert quote in junit_text(failed["6.4"])


def resume_copy(tmp: Path) -> Path:
    """The profile and its Job as they are, the profile turning T.4 on."""
    root = tmp / "site" / "profiles"
    shutil.copytree(PROFILE.parent / "rlinf-embodied", root / "rlinf-embodied")
    (tmp / "site" / "third_party").symlink_to(ROOT / "third_party")
    text = PROFILE.read_text(encoding="utf-8")
    assert "\ntraining:" not in text, "the profile has a training: section of its own"
    (root / PROFILE.name).write_text(text + "training:\n  resume: true\n", encoding="utf-8")
    return root / PROFILE.name
