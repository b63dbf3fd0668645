"""The training checks (T.1 the steps advance, T.2 the metrics are real, T.3 the checkpoint is
this run's and trained) on the scripted target, with the embedded default's profile as it is.

The store is a real ``FileStore``; what the Worker writes there is written by the real
libraries (tensorboardX's ``SummaryWriter``, ``safetensors.numpy``) at scripted seconds.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file
from tensorboardX import SummaryWriter

from rlark_acceptance.model.profile import Profile
from rlark_acceptance.model.timeouts import Timeouts
from rlark_acceptance.model.training import Expectation, TrainingSpec
from rlark_acceptance.storage import FileStore
from tests.run.scripted import (
    CKPT,
    CONFIG,
    Step,
    Unanswering,
    call,
    end,
    line,
    lines,
    pod,
    run,
    started,
    statuses,
    verdict,
)

TB = "logs/tensorboard"  # /mnt/ckpt/logs/tensorboard, the Job's tensorboard.logDir
WEIGHTS = "actor/model_state_dict/full_weights.safetensors"


def table(step: int, total: int = 5) -> str:
    """A row of RLinf's embodied metric table, as the smoke workload prints it."""
    return f"│ Global Step: {step:>4}/{total} │ Progress: ████ │ {100 * step / total:.1f}% │"


def write_scalars(root: Path, values: dict[str, list[float]]) -> None:
    w = SummaryWriter(log_dir=str(root / TB))
    for tag, series in values.items():
        for step, v in enumerate(series, start=1):
            w.add_scalar(tag, v, step)
    w.close()


def write_weights(root: Path, step: int, w: np.ndarray) -> Path:
    path = root / CKPT / f"global_step_{step}" / WEIGHTS
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({"actor.w1": w.astype(np.float32), "actor.b1": np.zeros(4, np.float32)}, str(path))
    return path


FINITE = {"train/actor_loss": [0.9, 0.7, 0.5, 0.4, 0.3], "rollout/reward": [0.1] * 5}


def trained(
    root: Path,
    *,
    steps: int = 5,
    scalars: dict[str, list[float]] | None = None,
    last: np.ndarray | None = None,
    stop_at: int | None = None,
    ends: bool = True,
    events: bool = True,
    older: bool = False,
) -> list[Step]:
    """A Worker that prints ``steps`` steps of 5 (up to ``stop_at``), writes its scalars and a
    checkpoint at steps 2 and ``steps``, then ends."""
    printed = min(steps, stop_at or steps)
    first = np.arange(8, dtype=np.float32).reshape(2, 4)
    script = [*started(), *lines(2.1, *json.dumps(CONFIG, indent=2).splitlines())]
    script += [line(3.0 + i, table(i + 1)) for i in range(printed)]
    if events:
        script.append(call(3.5 + printed, lambda: write_scalars(root, scalars or FINITE)))
    final = first + 1 if last is None else last

    def save_first() -> None:
        write_weights(root, 2, first)

    def save_last() -> None:
        path = write_weights(root, printed, final)
        if older:  # copied with its times: an earlier run's files put back in place
            os.utime(path, (1_000_000_000, 1_000_000_000))

    script += [call(3.6 + printed, save_first), call(3.7 + printed, save_last)]
    if ends:
        code = 0 if printed == steps else 1
        phase = "Succeeded" if code == 0 else "Failed"
        script += [end(4.0 + printed), pod(4.1 + printed, phase, exit_code=code)]
    return script


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    return root


def test_a_run_that_trained_passes_every_training_check(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    rec, _ = run(training, tmp_path, trained(store), validated=CONFIG)
    assert rec.training == ("T.1", "T.2", "T.3")
    assert set(statuses(rec).values()) == {"passed"}, rec.phases
    assert rec.passed
    steps, metrics, ckpt = (rec.phases[c].message for c in ("T.1", "T.2", "T.3"))
    assert steps.startswith("step 5 of 5 (the total the run printed) reached: │ Global Step:")
    assert metrics.startswith("2 scalars, 10 values at steps 1–5, all finite (file://")
    assert "global_step_2: 2 tensors" in ckpt and "→ global_step_5: 2 tensors" in ckpt, ckpt
    assert ckpt.endswith("all finite, changed by training")
    assert rec.scalars is not None and rec.checkpoints is not None
    assert rec.checkpoints.steps == (2, 5)


def test_a_run_that_stalls_fails_t_1_at_its_progress_bound_and_the_page_is_judged(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    prof = replace(prof, timeouts=replace(prof.timeouts, progress=30.0))
    rec, _ = run((prof, job), tmp_path, trained(store, stop_at=2, ends=False), validated=CONFIG)
    check, message, at = verdict(rec)
    assert check == "T.1"
    assert message.startswith("stalled at step 2 of 5: no new step for 30 s (timeouts.progress)")
    assert at == pytest.approx(4.0 + 30.0, abs=1.0)  # step 2 was read at 4.0 s
    # The page's checks after it were still judged: the stalled run wrote a checkpoint.
    assert rec.status("6.5") == "passed" and rec.status("T.2") == "passed", rec.phases


def test_a_worker_that_dies_halfway_fails_t_1_naming_the_step(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    rec, _ = run(training, tmp_path, trained(store, stop_at=3), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.1"
    assert message.startswith("the Worker ended at step 3 of 5 (the total the run printed)")


def test_the_steps_to_reach_come_from_the_config_the_worker_runs(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    from rlark_acceptance.run.step6 import build_plan, confirm_running
    from tests.run.scripted import ScriptedTarget

    plan = build_plan(prof, job, runs={"runner": {"max_epochs": 100, "max_steps": 7}})
    assert plan.training is not None and plan.training.target.steps == 7
    t = ScriptedTarget(trained(store), store)
    rec = confirm_running(t, plan, clock=t.clock)  # type: ignore[arg-type]
    assert rec.phases["T.1"].message.startswith(
        "the Worker ended at step 5 of 7 (runner.max_epochs / runner.max_steps of the config "
        "the Worker runs)"
    )


def test_non_finite_scalars_fail_t_2_naming_each_tag_and_step(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    nan = float("nan")
    scalars = {**FINITE, "train/critic_loss": [1.0, 0.5, nan, nan, nan]}
    scalars["train/entropy"] = [1.0, float("inf"), 1.0, 1.0, 1.0]
    rec, _ = run(training, tmp_path, trained(store, scalars=scalars), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.2"
    assert message == (
        "2 of 4 scalars are not finite: train/critic_loss from step 3, train/entropy from step 2"
    )


def test_an_earlier_runs_events_at_the_same_place_are_not_this_runs(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    write_scalars(store, {"train/actor_loss": [float("nan")] * 3})  # before the submission
    rec, _ = run(training, tmp_path, trained(store), validated=CONFIG)
    assert rec.status("T.2") == "passed", rec.phases["T.2"]
    assert rec.scalars is not None and rec.scalars.files == 1
    again = trained(store, events=False)  # a second run at the same place writes none
    (tmp_path / "again").mkdir()
    rec, _ = run(training, tmp_path / "again", again, validated=CONFIG, store=FileStore(store))
    check, message, _ = verdict(rec)
    assert check == "T.2" and "logged no TensorBoard scalars" in message, message


def test_a_run_that_logs_no_scalars_fails_t_2_naming_where_it_looked(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    rec, _ = run(training, tmp_path, trained(store, events=False), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.2"
    assert message.startswith(f"the run logged no TensorBoard scalars at file://{store}/{TB}")


def test_an_expectation_of_the_profile_that_does_not_hold_fails_t_2_at_its_line(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    expect = Expectation("rollout/reward", "mean", 3, above=0.5, where="p.yaml:40")
    prof = replace(prof, training=TrainingSpec(expect=(expect,)))
    rec, _ = run((prof, job), tmp_path, trained(store), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.2"
    assert message == ("mean of the last 3 rollout/reward > 0.5 does not hold: 0.1 [p.yaml:40]")


def test_weights_that_training_never_changed_fail_t_3(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    same = np.arange(8, dtype=np.float32).reshape(2, 4)
    rec, _ = run(training, tmp_path, trained(store, last=same), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.3"
    assert message.startswith("global_step_2 and global_step_5 hold identical weights")


def test_weights_that_hold_nan_fail_t_3_naming_the_tensor(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    bad = np.full((2, 4), np.nan, dtype=np.float32)
    rec, _ = run(training, tmp_path, trained(store, last=bad), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.3"
    assert message == ("global_step_5: 1 of 2 tensors hold NaN or infinite values: actor.w1 (8)"), (
        message
    )


def test_a_checkpoint_older_than_the_submission_is_an_earlier_runs(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """A checkpoint that appears during the run but was written before it (copied with its
    times, an earlier run's files restored) is no proof that this run saved anything."""
    rec, _ = run(training, tmp_path, trained(store, older=True), validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.3"
    assert "written before this run was submitted (an earlier run's)" in message, message


def test_training_checks_the_profile_turns_off_are_not_awaited(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    prof = replace(prof, training=TrainingSpec(checks=frozenset({"T.2"})))
    rec, _ = run((prof, job), tmp_path, trained(store), validated=CONFIG)
    assert rec.training == ("T.2",)
    assert "T.1" not in rec.phases and "T.3" not in rec.phases
    assert rec.passed


def test_every_training_check_decides_within_its_bounds_on_a_fake_clock(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    prof = replace(prof, timeouts=Timeouts.every(20.0))
    rec, _ = run((prof, job), tmp_path, trained(store, ends=False), validated=CONFIG)
    # A Worker that trained every step and never ends: T.2 reads after timeouts.progress.
    assert rec.status("T.1") == "passed" and rec.status("T.2") == "passed", rec.phases


# --- the first cause ----------------------------------------------------------------------
TORN_DOWN = [
    "(ActorWorker pid=4242) Traceback (most recent call last):",
    '(ActorWorker pid=4242)   File "/workspace/smoke/workers.py", line 73, in run_training',
    "(ActorWorker pid=4242) RuntimeError: smoke.crash_at_step=3: deliberate failure in the actor",
    "Traceback (most recent call last):",
    '  File "/workspace/smoke/runner.py", line 120, in knock_on',
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
]


def test_a_worker_torn_down_after_one_actor_failed_is_quoted_by_the_first_error(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    script = [s for s in trained(store, stop_at=2, ends=False)]
    script += [*lines(9.0, *TORN_DOWN), end(9.5), pod(9.6, "Failed", exit_code=1)]
    rec, _ = run(training, tmp_path, script, validated=CONFIG)
    check, message, _ = verdict(rec)
    assert check == "T.1"
    assert message.startswith("the Worker ended at step 2 of 5"), message
    assert message.endswith(
        'its first error in ActorWorker (log line 15): "RuntimeError: smoke.crash_at_step=3: '
        'deliberate failure in the actor"'
    ), message
    assert "ActorDiedError" not in message
    assert rec.first_cause is not None and rec.first_cause.knock_ons == 1
    summary = rec.first_cause_summary()
    assert summary is not None and summary["quote"].startswith("RuntimeError: smoke.crash")


def test_an_io_error_on_a_mount_names_the_store_that_stopped_answering(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    s3 = Unanswering(store)
    # The store goes away before the first step: RLinf's logger dies writing to its mount.
    script = [*started(), *lines(2.1, *json.dumps(CONFIG, indent=2).splitlines())]
    script += [call(3.5, lambda: setattr(s3, "down", True))]
    script += lines(
        4.0,
        "Traceback (most recent call last):",
        '  File "/workspace/smoke/runner.py", line 40, in log',
        "OSError: [Errno 5] Input/output error: '/mnt/ckpt/logs'",
    )
    script += [end(4.5), pod(4.6, "Failed", exit_code=1)]
    rec, _ = run(training, tmp_path, script, validated=CONFIG, store=s3)
    check, message, _ = verdict(rec)
    assert check == "6.4"
    assert (
        "its first error [mount-io-error: I/O error on a mounted store] (log line 13): "
        "\"OSError: [Errno 5] Input/output error: '/mnt/ckpt/logs'\"; the store behind "
        f"/mnt/ckpt/logs (file://{store}) does not answer: "
    ) in message, message
    from rlark_acceptance.run.report import hint

    assert hint(check, message).startswith("The mount's store stopped answering"), hint(
        check, message
    )


def test_a_store_that_stops_answering_under_a_silent_worker_is_named_at_once(
    base: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """A Worker whose mount's store died hangs on the mount (s3fs retries): the phase waited
    for fails after two missed answers of the store, naming it, not at its own timeout."""
    s3 = Unanswering(store)
    script = [*started(), call(3.0, lambda: setattr(s3, "down", True))]
    rec, _ = run(base, tmp_path, script, validated=CONFIG, store=s3)
    check, message, at = verdict(rec)
    assert check == "6.4" and at < 20.0, (check, at, message)
    assert message.startswith(
        f"the store behind mount ckpt (/mnt/ckpt, file://{store}) does not answer "
        "[mount-io-error]: "
    ), message
    from rlark_acceptance.run.report import hint

    assert hint(check, message).startswith("The mount's store stopped answering")


def test_a_store_that_misses_one_answer_is_not_a_failure(
    base: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    s3 = Unanswering(store)
    script = [*started(), call(3.0, lambda: setattr(s3, "down", True))]
    script += [call(9.0, lambda: setattr(s3, "down", False)), line(30.0, "Global Step: 1/5")]
    rec, _ = run(base, tmp_path, script, validated=CONFIG, store=s3)
    assert rec.status("6.4") == "passed", rec.phases


def test_training_checks_the_profile_turns_off_are_skipped_never_not_reached(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """The record of a profile with ``training: false``: its page checks decide the verdict,
    the training's are skipped (the profile's choice), not "not reached" (a failure)."""
    from rlark_acceptance.model.training import OFF
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.evidence import TRAINING_OFF, run_results
    from rlark_acceptance.run.outcome import AcceptanceRun
    from tests.run.conftest import ROOT

    prof, job = training
    rec, _ = run((replace(prof, training=OFF), job), tmp_path, trained(store), validated=CONFIG)
    assert rec.training == () and rec.passed
    pre = preflight_profile(ROOT / "profiles" / "local.yaml")
    results = {r.check: r for r in run_results(AcceptanceRun(pre, rec), ["6.5", "T.1", "T.2"])}
    assert results["6.5"].status == "passed"
    assert (results["T.1"].status, results["T.1"].message) == ("skipped", TRAINING_OFF)
    assert results["T.2"].status == "skipped"


def test_without_any_step_count_a_run_that_stepped_and_ended_well_passes_t_1(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """No count in the config, the profile or the log: T.1 cannot hold the run to one, so a
    run that stepped and exited 0 passes (saying so), and one that exited 1 does not."""
    import re as regex

    prof, job = training
    spec = TrainingSpec(checks=frozenset({"T.1"}), step_pattern=regex.compile(r"iter (\d+)"))
    prof = replace(prof, training=spec)
    script = [*started(), *lines(2.1, *json.dumps(CONFIG, indent=2).splitlines())]
    script += [line(3.0, "Global Step: 1/5"), line(3.5, "iter 1"), line(4.0, "iter 2")]
    ok = [*script, end(5.0), pod(5.1, "Succeeded", exit_code=0)]
    rec, _ = run((prof, job), tmp_path, ok, validated=CONFIG)
    assert rec.status("T.1") == "passed", rec.phases
    assert rec.phases["T.1"].message.startswith("step 2 reached and the run ended with exit code 0")
    (tmp_path / "again").mkdir()
    bad = [*script, end(5.0), pod(5.1, "Failed", exit_code=1)]
    rec, _ = run((prof, job), tmp_path / "again", bad, validated=CONFIG, store=FileStore(store))
    assert rec.status("T.1") == "failed", rec.phases
