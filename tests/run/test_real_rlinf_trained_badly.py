"""Real RLinf 0.3.0 whose run goes wrong where a release breaks it: two of the suite's own
broken Jobs (no first signal, checkpoints outside every mount), and training that diverges
(an absurd critic learning rate: NaN scalars and weights, then the rollout worker fails at
step 2 and RLinf tears the other actors down; T.1-T.3 red, T.1 quoting that first error)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.run.real_rlinf import (
    TRAINING,
    junit_text,
    override_copy,
    profile_junit,
    run_profile,
)
from tests.run.suite_runs import AS_IT_IS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("s3_env")]


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
