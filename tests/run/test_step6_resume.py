"""T.4 the run resumes, on the scripted target: a second submission of the same Job with
RLinf's ``runner.resume_dir`` naming the first run's last checkpoint starts at the next step
and reaches its target, with the checkpoint's weights at start.

The first run is the one ``test_step6_training`` scripts (5 steps, checkpoints at 2 and 5);
the second's script is what a resumed Worker prints. The store is a real ``FileStore``.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rlark_acceptance.model.doc_checks import CheckId, remedy
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.model.training import DEFAULT_CHECKS, TrainingSpec
from rlark_acceptance.run.report import hint
from rlark_acceptance.run.step6 import Interrupted, build_plan, confirm_running
from rlark_acceptance.run.step6.resume import (
    RESUME_SUFFIX,
    ResumePoint,
    append_overrides,
    resume_overrides,
)
from rlark_acceptance.smoke.workers import weights_digest
from tests.run.scripted import (
    CONFIG,
    ScriptedTarget,
    Step,
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
from tests.run.test_step6_training import WEIGHTS, table, trained, write_weights

RESUME_DIR = "/mnt/ckpt/logs/smoke_ppo_mlp/checkpoints/global_step_5"
# The first run's last checkpoint (``trained``: its step-2 weights plus one), as the smoke
# workload's actor digests what it loaded: the record's digest of global_step_5's tensors.
FIRST = np.arange(8, dtype=np.float32).reshape(2, 4)
DIGEST = weights_digest({"actor.w1": FIRST + 1, "actor.b1": np.zeros(4, np.float32)}, WEIGHTS)
SAID = f"[INFO 10:00:01 RLinf] Resuming training from checkpoint directory {RESUME_DIR}."


def resumed(
    root: Path,
    *,
    steps: tuple[int, ...] = (6, 7),
    said: bool = True,
    digest: str | None = DIGEST,
    ends: bool = True,
    code: int = 0,
    rows: list[str] | None = None,
) -> list[Step]:
    """A second Worker: it says it resumes, prints the digest of its weights at start, then a
    metric table per step (``rows`` instead, if given), saving its last step, and ends."""
    script = [*started()]
    if said:
        script.append(line(2.2, SAID))
    if digest is not None:
        script.append(line(2.3, f"smoke: actor weights at start: sha256 {digest}"))
    printed = rows if rows is not None else [table(s, 7) for s in steps]
    script += [line(3.0 + i, text) for i, text in enumerate(printed)]
    if steps:  # saved before the last step's table is printed, as RLinf's runner does
        last = steps[-1]

        def save() -> None:
            write_weights(root, last, FIRST + last)

        script.append(call(1.9 + len(printed), save))
    if ends:
        phase = "Succeeded" if code == 0 else "Failed"
        script += [end(4.0 + len(printed)), pod(4.1 + len(printed), phase, exit_code=code)]
    return script


def resuming(prof: Profile, **spec: Any) -> Profile:
    """The embedded default with T.4 turned on (``training: {resume: true}``)."""
    checks = frozenset(spec.pop("checks", DEFAULT_CHECKS)) | {CheckId.RESUMES}
    return replace(prof, training=TrainingSpec(checks=checks, **spec))


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    return root


@pytest.fixture()
def on(training: tuple[Profile, Any]) -> tuple[Profile, Any]:
    prof, job = training
    return resuming(prof), job


def test_a_second_submission_that_resumes_passes_t_4_and_both_runs_outputs_go(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    rec, t = run(on, tmp_path, trained(store), validated=CONFIG, later=[resumed(store)])
    assert rec.training == ("T.1", "T.2", "T.3", "T.4")
    assert set(statuses(rec).values()) == {"passed"}, rec.phases
    assert rec.passed
    message = rec.phases["T.4"].message
    assert message.startswith(
        f"resumed from global_step_5 ({RESUME_DIR}) at step 6; step 7 of 7 reached: │ Global Step:"
    ), message
    assert message.endswith(f"; its weights at start are global_step_5's (sha256 {DIGEST[:12]})")
    # The second submission: the same Job, named for the resume, the overrides at the end
    # of its RLinf command, in the model and in the YAML the target gets.
    assert len(t.submitted) == 2 and t.submitted[1].endswith(f"-{RESUME_SUFFIX}")
    overrides = f"++runner.resume_dir={RESUME_DIR} ++runner.max_epochs=7 ++runner.max_steps=7"
    assert (t.jobs[1].run_script or "").rstrip().endswith(overrides), t.jobs[1].run_script
    sent = yaml.safe_load(t.manifests[1])
    assert sent["spec"]["runScript"] == t.jobs[1].run_script
    assert sent["metadata"]["name"] == t.submitted[1]
    assert sent["spec"]["roles"] == yaml.safe_load(t.manifests[0])["spec"]["roles"]
    # Both Workers deleted; what both runs wrote (global_step_2, 5 and 7, the events)
    # removed after the pass: nothing is left of either.
    assert [r.name for r in t.deleted][-1] == t.submitted[1]
    assert rec.outputs_removed == 4 and not list(store.rglob("*.*")), rec.outputs_removed
    summary = rec.training_summary()
    assert summary is not None and summary["checks"] == ["T.1", "T.2", "T.3", "T.4"]
    assert summary["resume"] == {
        "job": t.submitted[1],
        "from": {"step": 5, "dir": RESUME_DIR, "sha256": DIGEST},
        "target": 7,
        "started": 6,
        "reached": 7,
        "said": SAID,
        "weightsAtStart": DIGEST,
    }


def test_a_second_submission_that_starts_at_step_1_fails_t_4_naming_what_it_saw(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    later = [resumed(store, steps=tuple(range(1, 8)), said=False, digest=None)]
    rec, t = run(on, tmp_path, trained(store), validated=CONFIG, later=later)
    check, message, _ = verdict(rec)
    assert check == "T.4" and not rec.passed
    assert message.startswith(
        "the resumed run started at step 1, not 6: runner.resume_dir was not honoured "
        "(│ Global Step:    1/7 │"
    ), message
    assert rec.resumed is not None and rec.resumed.started == 1
    # Decided on its first step, not at its end; the second Worker is deleted all the same,
    # and a red run keeps what both wrote.
    assert [r.name for r in t.deleted][-1] == t.submitted[1]
    assert rec.outputs_kept and "objects written by this run" in rec.outputs_kept
    assert hint("T.4", message) == remedy("T.4")


def test_a_run_that_says_it_resumed_and_starts_at_step_1_is_quoted_saying_so(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    later = [resumed(store, steps=(1, 2), digest=None)]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=later)
    _, message, _ = verdict(rec)
    assert f"runner.resume_dir was not honoured, although the run said: {SAID}" in message


def test_a_resume_path_the_worker_cannot_find_is_named_by_its_class(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    script = [*started(), line(2.2, SAID)]
    script += lines(
        2.5,
        "Error executing job with overrides: ['++runner.resume_dir=/mnt/x']",
        "Traceback (most recent call last):",
        '  File "/workspace/RLinf/rlinf/runners/embodied_runner.py", line 181, in init_workers',
        f"AssertionError: resume_dir {RESUME_DIR}/actor does not exist.",
    )
    script += [end(3.0), pod(3.1, "Failed", exit_code=1)]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=[script])
    check, message, _ = verdict(rec)
    assert check == "T.4"
    assert message.startswith("the resumed run ended before its first step: pod "), message
    assert "its first error [resume-path: The checkpoint to resume from was not found]" in message
    assert hint(check, message).startswith("runner.resume_dir must name an existing global_step")
    cause = rec.first_cause_summary()
    assert cause is not None and cause["class"] == "resume-path", cause
    assert cause["job"].endswith(f"-{RESUME_SUFFIX}"), cause


def test_weights_at_start_that_are_not_the_checkpoints_fail_t_4(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    other = weights_digest({"actor.w1": FIRST, "actor.b1": np.zeros(4, np.float32)}, WEIGHTS)
    later = [resumed(store, digest=other)]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=later)
    check, message, _ = verdict(rec)
    assert check == "T.4"
    assert message == (
        f"the resumed run's weights at start (sha256 {other[:12]}) are not global_step_5's "
        f"(sha256 {DIGEST[:12]}): it started from other weights than the checkpoint's"
    )


def test_a_workload_that_prints_no_digest_is_judged_by_its_steps(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """Real RLinf prints no digest of what it loaded: its first step and its last decide."""
    later = [resumed(store, digest=None)]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=later)
    assert rec.status("T.4") == "passed", rec.phases["T.4"]
    assert rec.phases["T.4"].message.endswith(
        "; the run printed no digest of its weights at start (judged by its steps)"
    )


def test_a_progress_bar_is_drawn_at_the_checkpoints_step_before_the_next(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    """RLinf's tqdm runners draw their bar at ``initial=global_step`` (5/7) before step 6:
    that is a resumed start; a fresh one draws 0/7 first."""
    bar = "Global Step:  {pct}%|███       | {n}/7 [00:01<00:02,  1.20it/s]"
    rows = [bar.format(pct=p, n=n) for p, n in ((71, 5), (86, 6), (100, 7))]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=[resumed(store, rows=rows)])
    assert rec.status("T.4") == "passed", rec.phases["T.4"]
    assert rec.resumed is not None and rec.resumed.started == 6
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "store").mkdir()
    again = tmp_path / "again" / "store"
    fresh = [bar.format(pct=p, n=n) for p, n in ((0, 0), (14, 1))]
    later = [resumed(again, rows=fresh, said=False, digest=None)]
    rec, _ = run(on, tmp_path / "again", trained(again), validated=CONFIG, later=later)
    _, message, _ = verdict(rec)
    assert message.startswith("the resumed run started at step 1, not 6"), message


def test_a_resumed_run_that_ends_short_of_its_target_fails_naming_its_step(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    later = [resumed(store, steps=(6,), code=1)]
    rec, _ = run(on, tmp_path, trained(store), validated=CONFIG, later=later)
    check, message, _ = verdict(rec)
    assert check == "T.4"
    assert message.startswith("the resumed run ended at step 6 of 7: pod "), message


def test_a_resumed_run_that_stalls_fails_at_the_progress_bound(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = on
    prof = replace(prof, timeouts=replace(prof.timeouts, progress=30.0))
    later = [resumed(store, steps=(6,), ends=False)]
    rec, _ = run((prof, job), tmp_path, trained(store), validated=CONFIG, later=later)
    check, message, _ = verdict(rec)
    assert check == "T.4"
    assert message.startswith(
        "the resumed run stalled at step 6 of 7: no new step for 30 s (timeouts.progress)"
    ), message


def test_the_second_submission_refused_its_pod_fails_t_4_naming_its_phase(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    unschedulable = [
        pod(0.1, "Pending", node=None, reason="Unschedulable", message="0/1 nodes: no GPU")
    ]
    rec, t = run(on, tmp_path, trained(store), validated=CONFIG, later=[unschedulable])
    check, message, _ = verdict(rec)
    assert check == "T.4"
    second = t.submitted[1]
    assert message.startswith(f"the second submission ({second}) failed its 6.2: pod "), message
    assert rec.status("6.2") == "passed"  # the first run's 6.2 is not the second's


def test_more_resume_steps_raise_the_target(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    prof = resuming(prof, resume_steps=3)
    later = [resumed(store, steps=(6, 7))]
    rec, t = run((prof, job), tmp_path, trained(store), validated=CONFIG, later=later)
    assert "++runner.max_steps=8" in (t.jobs[1].run_script or "")
    _, message, _ = verdict(rec)
    assert message.startswith("the resumed run ended at step 7 of 8"), message


def test_without_t_3_the_checkpoint_to_resume_from_is_read_from_the_store(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = training
    prof = resuming(prof, checks={"T.1"})
    rec, _ = run((prof, job), tmp_path, trained(store), validated=CONFIG, later=[resumed(store)])
    assert rec.training == ("T.1", "T.4") and rec.checkpoints is None
    assert rec.status("T.4") == "passed", rec.phases["T.4"]
    assert f"(sha256 {DIGEST[:12]})" in rec.phases["T.4"].message


def test_t_4_is_off_unless_turned_on_and_then_no_second_submission_is_made(
    training: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.evidence import RESUME_OFF, run_results
    from rlark_acceptance.run.outcome import AcceptanceRun
    from tests.run.conftest import ROOT

    rec, t = run(training, tmp_path, trained(store), validated=CONFIG, later=[resumed(store)])
    assert rec.training == ("T.1", "T.2", "T.3") and rec.passed
    assert len(t.submitted) == 1 and rec.resumed is None
    pre = preflight_profile(ROOT / "profiles" / "local.yaml")
    (result,) = run_results(AcceptanceRun(pre, rec), ["T.4"])
    assert (result.status, result.message) == ("skipped", RESUME_OFF)
    # Selected by its tag (``-m resume``): on, whatever the profile says.
    prof, job = training
    plan = build_plan(prof, job, resume=True)
    assert plan.training is not None and plan.training.on("T.4")


def test_a_first_run_that_fails_the_page_leaves_t_4_not_reached(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    # No checkpoint ever appears: 6.5 fails, and T.4 has nothing to resume from.
    script = [s for s in trained(store) if s.then is None]
    prof, job = on
    prof = replace(prof, timeouts=replace(prof.timeouts, output=5.0))
    rec, t = run((prof, job), tmp_path, script, validated=CONFIG, later=[resumed(store)])
    check, _, _ = verdict(rec)
    assert check == "6.5"
    assert rec.phases["T.4"].status == "skipped"
    assert rec.phases["T.4"].message == "not reached: 6.5 failed"
    assert len(t.submitted) == 1


def test_an_interrupt_during_the_second_submission_deletes_its_worker(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    later = [[*started(), line(2.2, SAID), call(3.0, interrupt)]]
    prof, job = on
    t = ScriptedTarget(trained(store), store, later=later)
    with pytest.raises(Interrupted) as e:
        confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    rec = e.value.record
    assert rec.interrupted
    assert rec.phases["T.4"].message == "not reached: the run was interrupted"
    assert [r.name for r in t.deleted][-1] == t.submitted[1]


# -- the second submission's run command -------------------------------------------------

POINT = ResumePoint(5, "logs/x/global_step_5", RESUME_DIR, None)
OVERRIDES = resume_overrides(POINT, 7)


def test_the_overrides_go_at_the_end_of_the_rlinf_command_across_continued_lines() -> None:
    script = (
        "export PYTHONUNBUFFERED=1\n"
        "cd /workspace/RLinf && python examples/embodiment/train_embodied_agent.py \\\n"
        "    --config-name x runner.logger.log_path=/mnt/ckpt/logs\n"
        "echo done\n"
    )
    out = append_overrides(script, OVERRIDES)
    assert out.splitlines()[2].endswith("log_path=/mnt/ckpt/logs " + " ".join(OVERRIDES))
    assert out.splitlines()[3] == "echo done" and out.endswith("\n")


def test_a_path_hydra_would_not_take_as_it_is_is_quoted_for_hydra_and_the_shell() -> None:
    point = replace(POINT, resume_dir="/mnt/ckpt/my run/global_step_5")
    (first, *_) = resume_overrides(point, 7)
    assert first == "++runner.resume_dir='/mnt/ckpt/my run/global_step_5'"
    out = append_overrides("python train.py a=b\n", [first])
    assert shlex.split(out) == ["python", "train.py", "a=b", first]  # as the shell reads it


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("echo nothing to run\n", "has no RLinf command"),
        (
            "bash examples/embodiment/run_embodiment.sh maniskill_ppo_openvlaoft\n",
            "through examples/embodiment/run_embodiment.sh, which passes no further argument",
        ),
        ("python train.py a=b | tee /mnt/ckpt/log.txt\n", "does not end its line"),
        ("python train.py a=b  # the validated command\n", "does not end its line"),
        ("python train.py a=b && echo finished\n", "does not end its line"),
    ],
)
def test_a_run_command_the_overrides_cannot_reach_is_refused_saying_why(
    script: str, why: str
) -> None:
    with pytest.raises(ValueError) as e:
        append_overrides(script, OVERRIDES)
    assert why in str(e.value), str(e.value)


def test_a_refused_run_command_fails_t_4_before_any_second_submission(
    on: tuple[Profile, Any], tmp_path: Path, store: Path
) -> None:
    prof, job = on
    piped = replace(job, run_script=(job.run_script or "").rstrip() + " | tee /tmp/log\n")
    rec, t = run((prof, piped), tmp_path, trained(store), validated=CONFIG, later=[resumed(store)])
    check, message, _ = verdict(rec)
    assert check == "T.4" and "does not end its line" in message, message
    assert len(t.submitted) == 1
