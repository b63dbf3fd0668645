"""A run's trace as a tree of spans, worked out after the run from what it recorded.

Nothing here runs while the run does: the spans are a pure function of the run record's
summary (``run-summary.json``, redacted) and of the times the run kept (``Timeline``: the
session's, the pre-flight's, each submission's wall clock and its phases' seconds since
it, the record's writing). So tracing costs a run nothing but its export at the end, and a
trace says what the record says.

The tree::

    rlark-acceptance <profile>            the run: verdict, run id, earliest failure
    ├── pre-flight                        §0 – Step 5 of the shared run
    ├── Step 6                            the shared submission, to its last decision
    │   ├── 6.1 … 6.5, 1.1, 1.2           each phase: its check ID and verdict
    │   └── training checks               T.1 – T.4, as the profile turns them on
    ├── self-check <scenario>             each self-check's own submission, its phases
    └── the run record                    writing run-summary.json, JUnit, Allure

A phase's span starts when the decision before it (in time) was made, or at the submission,
and ends at its own: the time the run waited for it. A check that was never reached is a
span of no length where Step 6 stopped, so the tree shows what came next.

Attributes follow the OpenTelemetry test and CI/CD semantic conventions where they have a
name (``test.suite.*``, ``test.case.*``, ``cicd.pipeline.task.*``); the rest are the
project's own (``rlark.*``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlark_acceptance.model.doc_checks import BY_ID, TRAINING_SECTION

AttrValue = str | int | float | bool


@dataclass(frozen=True)
class Span:
    name: str
    start: float  # wall clock, seconds since the epoch
    end: float
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    error: str | None = None  # the span's status: None is unset, else an error with this text
    children: tuple[Span, ...] = ()

    def walk(self, depth: int = 0) -> list[tuple[int, Span]]:
        out = [(depth, self)]
        for child in self.children:
            out += child.walk(depth + 1)
        return out


@dataclass(frozen=True)
class Submission:
    """One submission as its record kept it: its wall clock at submission, and each phase
    decided with its status and seconds since then (``RunRecord.phases``)."""

    submitted: float  # seconds since the epoch
    phases: Mapping[str, tuple[str, float | None]]  # check → (status, seconds since submission)
    # Why a phase failed, redacted as the record is (the run's own earliest failure is the
    # summary's message).
    messages: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SelfCheck:
    """A self-check scenario that made a submission of its own."""

    scenario: str
    check: str | None  # the check it shows the harness red at (its tag)
    passed: bool  # its scenario's outcome
    submission: Submission


@dataclass(frozen=True)
class Preflight:
    start: float
    end: float
    passed: bool


@dataclass(frozen=True)
class Timeline:
    started: float  # the session's start
    finished: float  # the record written
    preflight: Preflight | None = None  # the shared run's pre-flight
    submission: Submission | None = None  # the shared run's Step 6
    self_checks: tuple[SelfCheck, ...] = ()
    record: tuple[float, float] | None = None  # the record's writing


# What the record's verdicts are in the conventions' words.
_CASE = {"passed": "pass", "failed": "fail"}
_SUITE = {"passed": "success", "failed": "failure"}
_TASK = {"passed": "success", "failed": "failure"}


def _title(check: str) -> str:
    known = BY_ID.get(check)
    return f"{check} {known.says}" if known else check


def _phase_spans(
    sub: Submission, verdicts: Mapping[str, str], stopped: float, failure: Mapping[str, Any]
) -> list[Span]:
    """Each phase decided, from the decision before it to its own; then each check of the
    record's Step 6 never reached, at ``stopped``."""
    decided = sorted(
        ((at, check, status) for check, (status, at) in sub.phases.items() if at is not None),
        key=lambda x: x[0],
    )
    spans: list[Span] = []
    before = 0.0
    for at, check, status in decided:
        verdict = verdicts.get(check, status)
        attrs: dict[str, AttrValue] = {
            "test.case.name": _title(check),
            "rlark.check.id": check,
            "rlark.check.verdict": verdict,
        }
        if verdict in _CASE:
            attrs["test.case.result.status"] = _CASE[verdict]
        error = None
        if verdict == "failed":
            error = str(
                failure.get("message")
                if failure.get("check") == check and failure.get("message")
                else sub.messages.get(check) or "failed"
            )
        spans.append(Span(check, sub.submitted + before, sub.submitted + at, attrs, error))
        before = max(before, at)
    for check, verdict in verdicts.items():
        if check in sub.phases and sub.phases[check][1] is not None:
            continue
        spans.append(
            Span(
                check,
                stopped,
                stopped,
                {
                    "test.case.name": _title(check),
                    "rlark.check.id": check,
                    "rlark.check.verdict": verdict,
                },
            )
        )
    return spans


def _step6(summary: Mapping[str, Any], sub: Submission, checks: Sequence[str]) -> Span:
    statuses = summary.get("checks") or {}
    verdicts = {c: str(statuses[c]) for c in checks if c in statuses}
    verdicts.update({c: s for c, (s, _) in sub.phases.items() if c not in verdicts})
    last = max((at for _, at in sub.phases.values() if at is not None), default=0.0)
    stopped = sub.submitted + last
    failure = summary.get("earliestFailure") or {}
    spans = _phase_spans(sub, verdicts, stopped, failure)
    page = tuple(s for s in spans if not _training(s.name))
    training = tuple(s for s in spans if _training(s.name))
    children = list(page)
    if training:
        children.append(
            Span(
                "training checks",
                min(s.start for s in training),
                max(s.end for s in training),
                {"rlark.checks": ",".join(s.name for s in training)},
                "failed" if any(s.error for s in training) else None,
                training,
            )
        )
    failed = [s for s in spans if s.error]
    return Span(
        "Step 6",
        sub.submitted,
        stopped,
        {"rlark.step6.last_decision_s": round(last, 3)},
        failed[0].error if failed else None,
        tuple(children),
    )


def _training(check: str) -> bool:
    known = BY_ID.get(check)
    return known is not None and known.section == TRAINING_SECTION


def _self_check(found: SelfCheck) -> Span:
    sub = found.submission
    last = max((at for _, at in sub.phases.values() if at is not None), default=0.0)
    # Its decisions only: what its own run never reached is its scenario's business.
    verdicts = {c: s for c, (s, at) in sub.phases.items() if at is not None}
    attrs: dict[str, AttrValue] = {
        "test.case.name": found.scenario,
        "test.case.result.status": "pass" if found.passed else "fail",
    }
    if found.check:
        attrs["rlark.check.id"] = found.check
    return Span(
        f"self-check {found.scenario}",
        sub.submitted,
        sub.submitted + last,
        attrs,
        None if found.passed else "the self-check failed",
        tuple(_phase_spans(sub, verdicts, sub.submitted + last, {})),
    )


# The pipeline a CI run belongs to, as each CI names it in the job's environment: the
# CI/CD conventions' ``cicd.pipeline.name`` and ``cicd.pipeline.run.id``.
_PIPELINES = (
    ("GITHUB_WORKFLOW", "GITHUB_RUN_ID"),
    ("CI_PIPELINE_NAME", "CI_PIPELINE_ID"),  # GitLab
    ("JOB_NAME", "BUILD_NUMBER"),  # Jenkins
)


def pipeline_of(env: Mapping[str, str]) -> dict[str, AttrValue]:
    """The CI pipeline the run is a task of, from the job's environment (none: empty)."""
    for name, run in _PIPELINES:
        if env.get(run):
            found: dict[str, AttrValue] = {"cicd.pipeline.run.id": env[run]}
            if env.get(name):
                found["cicd.pipeline.name"] = env[name]
            return found
    return {}


def run_tree(
    summary: Mapping[str, Any],
    times: Timeline,
    step6: Sequence[str],
    pipeline: Mapping[str, AttrValue] | None = None,
) -> Span:
    """The run's trace. ``step6``: the checks of Step 6 and of the training, in the order
    the record keeps them (``run.step6.record.ORDER``); ``pipeline``: ``pipeline_of``."""
    verdict = str(summary.get("verdict") or "failed")
    interrupted = bool(summary.get("interrupted"))
    profile = str((summary.get("provenance") or {}).get("profileName") or summary.get("profile"))
    attrs: dict[str, AttrValue] = {
        "test.suite.name": f"rlark-acceptance {profile}",
        "test.suite.run.status": "aborted" if interrupted else _SUITE.get(verdict, "failure"),
        "cicd.pipeline.task.name": f"rlark-acceptance {profile}",
        "cicd.pipeline.task.type": "test",
        "cicd.pipeline.task.run.result": "cancellation"
        if interrupted
        else _TASK.get(verdict, "failure"),
        "rlark.run_id": str(summary.get("runId")),
        "rlark.verdict": verdict,
        "rlark.profile": str(summary.get("profile")),
        **(pipeline or {}),
    }
    first = summary.get("earliestFailure") or {}
    if first.get("check"):
        attrs["rlark.earliest_failure.check"] = str(first["check"])
    children: list[Span] = []
    pre = times.preflight
    if pre is not None:
        children.append(
            Span(
                "pre-flight",
                pre.start,
                pre.end,
                {"rlark.preflight.verdict": "passed" if pre.passed else "failed"},
                None if pre.passed else str(first.get("message") or "failed"),
            )
        )
    if times.submission is not None:
        children.append(_step6(summary, times.submission, step6))
    children += [_self_check(s) for s in times.self_checks]
    if times.record is not None:
        children.append(Span("the run record", times.record[0], times.record[1]))
    error = None
    if verdict != "passed":
        error = (
            f"{first['check']}: {first.get('message') or ''}".strip()
            if first.get("check")
            else verdict
        )
    return Span(
        f"rlark-acceptance {profile}",
        times.started,
        max([times.finished, *(c.end for c in children)]),
        attrs,
        error,
        tuple(sorted(children, key=lambda s: s.start)),
    )


__all__ = ["Preflight", "SelfCheck", "Span", "Submission", "Timeline", "pipeline_of", "run_tree"]
