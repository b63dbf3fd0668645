"""What one Step 6 does, read once from the profile and the pre-flight: what to submit, where
to look, which regex, which node, which timeouts.

``plan_for(pre)`` is what an acceptance run uses; ``build_plan`` takes a Job and its YAML
directly (a test that submits a Job file the pre-flight never read). The profile's target
options are read here and nowhere else in Step 6.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

import yaml

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import KeepOutputs, Profile
from rlark_acceptance.model.timeouts import Timeouts
from rlark_acceptance.model.training import DEFAULT_RESUME_STEPS, Expectation, TrainingSpec
from rlark_acceptance.preflight.entry import PreflightResult
from rlark_acceptance.rlinf.backends import in_config
from rlark_acceptance.run.step6.run_id import for_run, new_run_id
from rlark_acceptance.run.step6.steps import StepsTarget, config_steps


def manifest_of(job: Job) -> str:
    """The Job YAML as submitted: the document the console showed, unchanged."""
    return yaml.safe_dump(job.doc.data, sort_keys=False, allow_unicode=True)


@dataclass(frozen=True)
class TrainingPlan:
    """The training checks of one run (T.1-T.4) and what they need, from the profile's
    ``training:`` and the config the Worker runs (its run script's overrides included)."""

    checks: frozenset[str]
    target: StepsTarget  # T.1: the steps to reach, and where that number comes from
    step_pattern: re.Pattern[str]
    tensorboard: str | None  # T.2: where the events are, a path in the Worker
    expect: tuple[Expectation, ...] = ()
    resume_steps: int = DEFAULT_RESUME_STEPS  # T.4: the second submission's steps past N
    no_events: str | None = None  # why the run writes no TensorBoard events (T.2 unjudged)

    def on(self, check: str) -> bool:
        return check in self.checks


def training_plan(
    spec: TrainingSpec,
    config: dict[str, Any] | None,
    log_path: str | None,
    job: Job,
    *,
    resume: bool = False,
) -> TrainingPlan | None:
    """None when the profile turns every training check off; ``resume``: T.4 on whatever
    the profile says (its scenario was selected by its tag)."""
    checks = spec.checks | {CheckId.RESUMES} if resume else spec.checks
    if not checks:
        return None
    if spec.steps is not None:
        target = StepsTarget(spec.steps, "training.steps")
    else:
        steps = config_steps(config)
        source = "runner.max_epochs / runner.max_steps of the config the Worker runs"
        target = StepsTarget(steps, source) if steps else StepsTarget(None, "")
    tensorboard = spec.tensorboard
    backends = in_config(config)
    no_events = None
    if tensorboard is None and backends.judged and not backends.tensorboard:
        # RLinf's MetricLogger writes no events: looking for them would wait for nothing.
        no_events = (
            f"{backends.said()}: RLinf writes no TensorBoard events, so the metrics cannot "
            "be judged; add tensorboard to the config's logger_backends, or turn T.2 off "
            "in the profile's training.checks"
        )
    elif tensorboard is None and log_path:
        tensorboard = posixpath.join(log_path, "tensorboard")  # RLinf's MetricLogger
    if tensorboard is None and no_events is None:
        tensorboard = job.tensorboard_log_dir
    return TrainingPlan(
        checks,
        target,
        spec.step_pattern,
        tensorboard,
        spec.expect,
        spec.resume_steps,
        no_events,
    )


@dataclass(frozen=True)
class Step6Plan:
    """One run's Step 6, as data."""

    run_id: str
    job: Job  # as this run submits it: named for its run (``run_id.for_run``)
    manifest: str  # its YAML
    exported: Job  # as the console exported it: a dead run's Job is derived from it
    signal: re.Pattern[str] | None  # runInfo.firstSignal (6.4)
    expected_node: str | None  # runInfo.expectedNode (6.2)
    expected_output: object  # runInfo.expectedOutput (6.5): a path in the Worker
    output_root: object  # the folder the run writes under (what it may remove afterwards)
    validated: dict[str, Any] | None  # the validated config, resolved (1.2)
    timeouts: Timeouts
    keep_outputs: KeepOutputs  # target.keepOutputs
    delete_after: bool = True  # delete the Worker and read 6.5 again, settle the outputs
    training: TrainingPlan | None = None  # T.1-T.4; None: all off

    def __repr__(self) -> str:  # the Job and the config may hold secrets: reprs reach reports
        return f"Step6Plan({self.run_id!r}, {self.job.name!r})"

    def job_of(self, run_id: str) -> Job:
        """The Job run ``run_id`` of this profile submitted (its own output location)."""
        return for_run(self.exported, "", run_id, self.output_root)[0]


def build_plan(
    profile: Profile,
    job: Job,
    *,
    manifest: str | None = None,
    validated: dict[str, Any] | None = None,
    run_id: str | None = None,
    delete_after: bool = True,
    runs: dict[str, Any] | None = None,
    log_path: str | None = None,
    resume: bool = False,
) -> Step6Plan:
    """Step 6 of ``job`` (its YAML ``manifest``, by default as the console showed it) as run
    ``run_id`` (a new one by default); ``runs``: the config the Worker runs, resolved, and
    ``log_path`` its ``runner.logger.log_path`` in the Worker (the training checks');
    ``resume``: T.4 on, whatever the profile says."""
    ri = profile.run_info
    # The folder the run writes under: ``runInfo.paths.output``, else the checkpoints'.
    root = ri.paths.get("output") or ri.paths.get("checkpoint") or ri.expected_output
    run_id = run_id or new_run_id()
    run_job, run_manifest = for_run(job, manifest or manifest_of(job), run_id, root)
    return Step6Plan(
        run_id=run_id,
        job=run_job,
        manifest=run_manifest,
        exported=job,
        signal=re.compile(str(ri.first_signal)) if ri.first_signal else None,
        expected_node=ri.expected_node,
        expected_output=ri.expected_output,
        output_root=root,
        validated=validated,
        timeouts=profile.timeouts,
        keep_outputs=profile.target.keep_outputs,
        delete_after=delete_after,
        training=training_plan(profile.training, runs, log_path, run_job, resume=resume),
    )


def plan_for(
    pre: PreflightResult,
    *,
    run_id: str | None = None,
    delete_after: bool = True,
    resume: bool = False,
) -> Step6Plan:
    """Step 6 of the Job the pre-flight read, whatever the pre-flight said (``resume``: T.4
    on, whatever the profile says)."""
    assert pre.profile is not None and pre.job is not None, "the pre-flight read no Job"
    validated = pre.validated.config.resolved() if pre.validated is not None else None
    runs = pre.rlinf.config.resolved() if pre.rlinf is not None else None
    return build_plan(
        pre.profile,
        pre.job,
        validated=validated,
        run_id=run_id,
        delete_after=delete_after,
        runs=runs,
        log_path=pre.rlinf.log_path if pre.rlinf is not None else None,
        resume=resume,
    )
