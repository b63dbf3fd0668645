"""T.4 the run resumes: a second submission of the same Job, with RLinf's
``runner.resume_dir`` naming the first run's last checkpoint, starts at the step after it and
reaches its target, with the checkpoint's weights at start.

Beyond the page, and opt-in (it costs a second run): a release that breaks resuming (a
runner that ignores the key, a checkpoint it cannot load, a mount the second Pod does not
see) passes every other check. Made after T.3, once 6.5 passed, from what the store holds:

- the checkpoint is the last ``global_step_N`` this run wrote at ``runInfo.expectedOutput``
  (T.3's reading, else a listing of the location against the one taken before submission),
  its model weights' digest read from the store;
- the second submission is the first's Job as this run submitted it (the same image,
  mounts and output location: the run's own prefix, so its Worker sees the folder the first
  one wrote at the same path), named ``<job>-<run id>-resume``, its RLinf command with
  ``++runner.resume_dir=<that folder> ++runner.max_epochs=<N+k> ++runner.max_steps=<N+k>``
  appended (``k``: ``training.resume.steps``, 2 by default);
- it passes when the first step its log shows (the step pattern T.1 reads) is N+1 (a tqdm
  bar first drawn at N: its position before step N+1), it reaches N+k, and, where the
  workload prints the digest of its weights at start (the smoke workload does, RLinf does
  not), that digest is the checkpoint's.

The second Worker is deleted when it is decided; what both runs wrote is settled together
by the first run (the same location, its listing before the first submission).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import yaml

from rlark_acceptance.adapters.base import Adapter
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.rlinf.launch import parse_run_script
from rlark_acceptance.run.step6.engine import Engine, PhaseFailed, Progress
from rlark_acceptance.run.step6.listed import Listed
from rlark_acceptance.run.step6.location import Location
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase
from rlark_acceptance.run.step6.plan import Step6Plan
from rlark_acceptance.run.step6.ray_head import RayHead
from rlark_acceptance.run.step6.readings import step_dirs, weights_of
from rlark_acceptance.run.step6.record import Resumed, RunRecord
from rlark_acceptance.run.step6.run_id import run_job_name
from rlark_acceptance.run.step6.scheduled import Scheduled
from rlark_acceptance.run.step6.steps import stalled
from rlark_acceptance.storage import StoreError, written_since

RESUME_SUFFIX = "resume"  # the second submission's name: <job>-<run id>-resume
# A tqdm bar (RLinf's reasoning, agent and SFT runners): drawn at its position before a step,
# where the embodied runner's metric table prints the step just done.
_BAR = re.compile(r"\d+%\|")
# A path Hydra's override grammar takes unquoted.
_PLAIN = re.compile(r"[\w./\-]+")


@dataclass(frozen=True)
class ResumePoint:
    """The first run's last checkpoint: ``global_step_<step>`` at ``key`` in the store,
    ``resume_dir`` in the Worker, with the digest of its model weights."""

    step: int
    key: str
    resume_dir: str
    digest: str | None


def resume_point(rec: RunRecord, loc: Location, path: str) -> ResumePoint | str:
    """The last ``global_step_N`` this run wrote under ``loc`` (``path`` in the Worker), or
    why there is none to resume from."""
    ck = rec.checkpoints
    if ck is not None and ck.error is None and ck.last is not None:
        step, key, digest = ck.last.step, ck.last.path, ck.last.digest
    else:
        try:
            objects = loc.store.list(loc.prefix + "/" if loc.prefix else "")
        except StoreError as exc:
            return f"{loc.where} could not be listed for a checkpoint to resume from: {exc}"
        by_step = step_dirs(o.key for o in written_since(objects, loc.baseline))
        if not by_step:
            return f"no global_step_N checkpoint of this run at {loc.where} to resume from"
        step = max(by_step)
        key = by_step[step]
        try:
            digest = weights_of(loc.store, step, key).digest
        except StoreError as exc:
            return f"global_step_{step} at {loc.where} could not be read: {exc}"
    rel = key[len(loc.prefix) + 1 :] if loc.prefix and key.startswith(loc.prefix + "/") else key
    return ResumePoint(step, key, posixpath.join(path, rel), digest)


def resume_overrides(point: ResumePoint, target: int) -> list[str]:
    """What the second submission's RLinf command gets: ``++`` adds the key where the config
    has none (RLinf's embodied configs may not) and overrides it where it has one."""
    where = point.resume_dir
    if not _PLAIN.fullmatch(where):
        where = "'" + where.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return [
        f"++runner.resume_dir={where}",
        f"++runner.max_epochs={target}",
        f"++runner.max_steps={target}",
    ]


def append_overrides(script: str, overrides: Sequence[str]) -> str:
    """``script`` with ``overrides`` appended to its RLinf command; ``ValueError`` saying
    why they cannot be (read back: the command must end with them)."""
    launch = parse_run_script(script)
    if launch is None:
        raise ValueError("the run script has no RLinf command to add runner.resume_dir to")
    if launch.launcher is not None:
        raise ValueError(
            f"the run script starts RLinf through {launch.launcher.suffix}, which passes no "
            "further argument on to RLinf: runner.resume_dir cannot reach it; start RLinf's "
            "entry point with python, as Step 4 shows"
        )
    lines = script.splitlines()
    end = launch.line
    while end < len(lines) - 1 and lines[end].rstrip().endswith("\\"):
        end += 1
    lines[end] = f"{lines[end].rstrip()} {' '.join(shlex.quote(o) for o in overrides)}"
    changed = "\n".join(lines) + ("\n" if script.endswith("\n") else "")
    again = parse_run_script(changed)
    if again is None or again.argv != [*launch.argv, *overrides]:
        raise ValueError(
            f"the RLinf command on line {launch.line + 1} of the run script does not end its "
            "line (a pipe, a comment or another command follows it): the resume overrides "
            "cannot be appended to it; put the command last on its line"
        )
    return changed


def resume_submission(plan: Step6Plan, overrides: Sequence[str]) -> tuple[Job, str]:
    """The Job the second submission makes, and its YAML: the first's as this run submitted
    it, named ``<job>-<run id>-resume``, its run script with ``overrides``."""
    job = plan.job
    script = append_overrides(job.run_script or "", overrides)
    name = run_job_name(str(plan.exported.name), f"{plan.run_id}-{RESUME_SUFFIX}")
    data = yaml.safe_load(plan.manifest)
    spec = data.get("spec") if isinstance(data, dict) else None
    meta = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(spec, dict) or spec.get("runScript") != job.run_script:
        raise ValueError("the Job YAML has no spec.runScript to add runner.resume_dir to")
    if not isinstance(meta, dict):
        raise ValueError("the Job YAML has no metadata to name the second submission in")
    spec["runScript"], meta["name"] = script, name
    manifest = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return replace(job, name=name, run_script=script), manifest


class Resumes(Phase):
    """The second submission's steps, from its first to its target (T.4)."""

    check: ClassVar[str] = CheckId.RESUMES
    bound: ClassVar[Bound | None] = Bound.TRAINING

    def __init__(self, point: ResumePoint, target: int, *, first_step: float, stall: float) -> None:
        self.point = point
        self.target = target
        self.first_step = first_step  # timeouts.firstSignal: from the Ray head to a step
        self.stall = stall  # timeouts.progress: from one step to the next

    def started(self, seen: Observed) -> int | None:
        """The step the run started at: the first its log showed, or the one after it when
        that was a progress bar drawn before its step."""
        c = seen.steps
        if c.first is None:
            return None
        return c.first + 1 if _BAR.search(c.first_line or "") else c.first

    def verdict(self, seen: Observed) -> Decision:
        c, n = seen.steps, self.point.step
        started = self.started(seen)
        if started is not None and started != n + 1:
            return Failed(self._wrong_start(seen, started), at=c.first_at)
        if started is not None and c.step is not None and c.step >= self.target:
            return Passed(
                f"resumed from global_step_{n} ({self.point.resume_dir}) at step {started}; "
                f"step {c.step} of {self.target} reached: {c.line}",
                at=c.at,
            )
        if c.at is not None:
            return stalled(seen, c.at, self.stall, self._at(seen), run="the resumed run ")
        ray = seen.decided.get(CheckId.RAY_HEAD_STARTED)
        if ray is not None and seen.now - ray >= self.first_step:
            return Failed(
                f"the resumed run showed no step {self.first_step:.0f} s after its Ray head "
                f"started ({Bound.FIRST_SIGNAL.key}); {seen.pod_text()}",
                at=ray + self.first_step,
            )
        return None

    def _wrong_start(self, seen: Observed, started: int) -> str:
        n, line = self.point.step, seen.steps.first_line
        said = seen.log.resume.line if seen.log.resume is not None else None
        if started < n + 1:
            why = "runner.resume_dir was not honoured"
            if said:
                why += f", although the run said: {said}"
        else:
            why = f"it did not go on from global_step_{n}"
        return f"the resumed run started at step {started}, not {n + 1}: {why} ({line})"

    def _at(self, seen: Observed) -> str:
        step = seen.steps.step
        return f"step {step if step is not None else 'none'} of {self.target}"

    def over(self, seen: Observed) -> str:
        if seen.steps.step is None:
            return f"the resumed run ended before its first step: {seen.pod_text()}"
        return f"the resumed run ended at {self._at(seen)}: {seen.pod_text()}"

    def timed_out(self, seen: Observed, seconds: float) -> str:
        return (
            f"the resumed run at {self._at(seen)} after {seconds:.0f} s "
            f"({Bound.TRAINING.key}); {seen.pod_text()}"
        )


def weights_verdict(resumed: Resumed) -> tuple[bool, str]:
    """Whether the weights the resumed run held at start are the checkpoint's, as far as
    its log says, and how the verdict says it."""
    printed, digest = resumed.weights_at_start, resumed.checkpoint_digest
    if printed is None:
        return True, "; the run printed no digest of its weights at start (judged by its steps)"
    if digest is None:
        return True, f"; its weights at start sha256 {printed[:12]} (the checkpoint's unread)"
    if printed != digest:
        return False, (
            f"the resumed run's weights at start (sha256 {printed[:12]}) are not "
            f"global_step_{resumed.step}'s (sha256 {digest[:12]}): it started from other "
            "weights than the checkpoint's"
        )
    return True, f"; its weights at start are global_step_{resumed.step}'s (sha256 {digest[:12]})"


def resume(
    adapter: Adapter,
    plan: Step6Plan,
    engine: Engine,
    expected: Location,
    *,
    clock: Callable[[], float],
    on_progress: Callable[[Progress], None] | None = None,
) -> None:
    """Make T.4's second submission after the first run's phases, and record T.4 on the
    first run's ``engine``; the second Worker is deleted before this returns."""
    rec, t = engine.rec, plan.training
    assert t is not None
    if not plan.delete_after:
        why = "not reached: the run keeps its Worker, so no second one is submitted beside it"
        engine.skip(CheckId.RESUMES, why)
        return
    path = plan.expected_output
    assert isinstance(path, str)
    point = resume_point(rec, expected, path)
    if isinstance(point, str):
        engine.done(CheckId.RESUMES, False, point)
        return
    target = point.step + t.resume_steps
    try:
        job, manifest = resume_submission(plan, resume_overrides(point, target))
    except ValueError as exc:
        engine.done(CheckId.RESUMES, False, str(exc))
        return
    second = Engine(
        adapter,
        RunRecord(job=job, run_id=plan.run_id),
        plan.timeouts,
        signal=None,
        steps=t.step_pattern,
        clock=clock,
        on_progress=_as_resume(on_progress),
        resume=True,
    )
    steps = Resumes(
        point,
        target,
        first_step=plan.timeouts[Bound.FIRST_SIGNAL],
        stall=plan.timeouts[Bound.PROGRESS],
    )
    phases = [Listed(manifest), Scheduled(plan.expected_node), RayHead(), steps]
    try:
        for phase in phases:
            second.run(phase)
    except PhaseFailed as exc:
        passed, message = False, str(exc)
        if exc.check != CheckId.RESUMES:  # the page's phase of the second submission
            message = f"the second submission ({job.name}) failed its {exc.check}: {message}"
    else:
        passed, message = True, second.rec.phases[CheckId.RESUMES].message
    finally:
        if second.stream is not None:
            second.stream.close()
        second.collect()
        resumed = _resumed(point, target, second, steps)
        engine.resumed(resumed)
        if second.rec.ref is not None:
            # Before the outputs are settled: still writing, it would write them again. One
            # the target keeps is a warning, and the outputs are then kept.
            engine.delete(second.rec.ref, "the resumed run's Worker")
    if passed:
        same, said = weights_verdict(resumed)
        passed, message = same, message + said if same else said
    engine.done(CheckId.RESUMES, passed, message)


def _resumed(point: ResumePoint, target: int, second: Engine, phase: Resumes) -> Resumed:
    """The second submission as the record keeps it: what it was told, what its log showed."""
    log = second.seen.log
    said = log.resume
    return Resumed(
        point.step,
        point.resume_dir,
        target,
        second.rec,
        point.digest,
        started=phase.started(second.seen),
        reached=log.steps.step,
        said=said.line if said is not None else None,
        weights_at_start=said.digest if said is not None else None,
    )


def _as_resume(
    on_progress: Callable[[Progress], None] | None,
) -> Callable[[Progress], None] | None:
    """The second submission's waiting, shown as T.4's (its 6.2 is not the page's)."""
    if on_progress is None:
        return None
    callback = on_progress
    return lambda p: callback(replace(p, check=CheckId.RESUMES))
