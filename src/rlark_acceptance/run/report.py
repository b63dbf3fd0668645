"""The run record (docs/contract.md §4): what one run of the features says about the profile.

This is the report model; it knows nothing of pytest or of any output format. The pytest
plugin (``fixtures/run_record.py``) fills it from the scenarios, the writers
(``run/report_writers.py``) turn it into ``run-summary.json``, JUnit properties and Allure.

What counts:

- ``checks`` and the verdict come only from scenarios that exercise the profile *as it is*.
  Scenarios that change a copy of it to prove that the harness or the platform catches a
  mistake (tags ``negative``, ``fault-injection``, ``modified-job``, ``variant``) are
  self-checks: reported apart, failing the run, never its earliest failure.
- A check whose scenario never ran because an earlier phase failed (or the run was
  interrupted) is ``notReached``, not ``failed``; one no selected scenario names is
  ``skipped``.
- When the profile itself fails, a failing self-check cannot show whether the harness
  catches *its* mistake (it started from a broken profile): it is ``inconclusive``.

>>> r = RunReport(profile="p.yaml")
>>> s = r.add(ScenarioRecord("n", "任务列表中出现本次 Job", "Step 6", ["6.1"], "profile"))
>>> s.finish("failed", step="Then the Job appears", message="refused")
>>> r.summary()["earliestFailure"]["check"]
'6.1'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from rlark_acceptance.model.doc_checks import ALL_CHECKS, ORDER, earliest, remedy
from rlark_acceptance.model.findings import Location
from rlark_acceptance.rlinf.failures import class_in
from rlark_acceptance.run.step6.run_id import new_run_id

Status = Literal["passed", "failed", "notReached", "skipped"]
Kind = Literal["profile", "self-check"]
Verdict = Literal["passed", "failed", "interrupted"]
# What every surface a user reads shows of one check (``RunReport.outcomes``): the record's
# status, except that a check that did not fail while a self-check of it failed (other than
# inconclusively) is ``broken`` (the harness could not show that it catches that check's
# mistake), and a check no selected scenario names is ``notSelected`` (the record's
# ``skipped``).
Shown = Literal["passed", "failed", "broken", "notReached", "notSelected"]
SHOWN: tuple[Shown, ...] = ("passed", "failed", "broken", "notReached", "notSelected")

# How a self-check that cannot apply to the profile says so when it skips (its reason's
# start): the record lists it under ``selfChecks.notApplicable``.
NOT_APPLICABLE = "not applicable: "

# Tags of scenarios that do not exercise the profile as it is.
SELF_CHECK_TAGS = frozenset({"negative", "fault-injection", "modified-job", "variant"})

# The check's status over all its scenarios: the worst one wins.
_RANK: dict[str, int] = {"failed": 3, "notReached": 2, "passed": 1, "skipped": 0}


def kind_of(tags: Iterable[str]) -> Kind:
    return "self-check" if SELF_CHECK_TAGS & set(tags) else "profile"


class Evidence(NamedTuple):
    """A text that explains a failure (the Job YAML, the findings, a Worker log excerpt),
    redacted when it was taken: ``kind`` is ``yaml``, ``json`` or ``text``."""

    name: str
    kind: str
    text: str


@dataclass
class CheckResult:
    """One check as one scenario saw it, with the evidence that explains a failure."""

    check: str
    status: Status
    message: str | None = None
    location: Location | None = None  # file:line in the user's own file, for a finding


@dataclass
class ScenarioRecord:
    nodeid: str
    name: str  # the Gherkin scenario's name
    feature: str
    checks: list[str]
    kind: Kind
    outcome: Status = "notReached"  # until it has run
    step: str | None = None
    message: str | None = None
    details: dict[str, CheckResult] = field(default_factory=dict)
    ran: bool = False
    # The check the scenario is written for: its first ``@check`` tag (a scenario of Step 6
    # that also names 2.1 sits under 6.1); the earliest of ``checks`` when not known.
    primary: str | None = None
    position: tuple[str, int] = ("", 0)  # feature file and line: the order of the page
    duration: float = 0.0
    started: float | None = None  # when it started (seconds since the epoch), once it did
    # What explains its failure, taken before teardown (``run/evidence.py``).
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def own_check(self) -> str:
        return self.primary if self.primary in self.checks else _first(self.checks)

    def finish(
        self,
        outcome: Status,
        *,
        step: str | None = None,
        message: str | None = None,
        details: Iterable[CheckResult] = (),
    ) -> None:
        self.ran = True
        self.outcome = outcome
        self.step = step
        self.message = message
        self.details = {d.check: d for d in details if d.check in self.checks}

    def failed_check(self) -> str | None:
        """The check whose evidence failed the scenario (its own when none explains it)."""
        if self.outcome != "failed":
            return None
        failing = [c for c in self.checks if self.result(c).status == "failed"]
        return failing[0] if failing else self.own_check

    def result(self, check: str) -> CheckResult:
        """Per-check evidence where the scenario's failure is explained by it; otherwise the
        scenario's own outcome stands for every check it names (a crash is never a pass).
        A scenario skipped as such (a training check the profile turns off) judged nothing:
        its Step 6 evidence, which never decided that check, is no "not reached"."""
        if self.outcome == "skipped":
            return CheckResult(check, "skipped", self.message)
        d = self.details.get(check)
        explained = any(x.status == "failed" for x in self.details.values())
        if d is not None and (self.outcome != "failed" or explained):
            if self.outcome == "passed" and d.status != "passed":
                return CheckResult(check, "passed")
            return d
        return CheckResult(check, self.outcome, self.message)


@dataclass(frozen=True)
class CheckOutcome:
    """One check as every writer of the record shows it: one Allure result, one JUnit
    testcase, one count of the terminal's closing line. ``scenarios``: those of the profile
    that name it, then the self-checks written for it, in the page's order."""

    check: str
    status: Shown
    message: str | None = None  # why it failed, broke or was not reached: said once
    location: str | None = None  # file:line of the user's own file, for a finding
    remedy: str | None = None  # for a failed check of the profile
    scenarios: tuple[ScenarioRecord, ...] = ()


@dataclass
class RunReport:
    profile: str
    scenarios: dict[str, ScenarioRecord] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    interrupted_at: str | None = None  # nodeid of the scenario the interrupt stopped
    error: str | None = None  # a usage error or a crash outside the scenarios
    outputs: dict[str, Any] | None = None  # what the acceptance run left, where
    # This run's id: in the name, labels and output location of the Job it submits.
    run_id: str = field(default_factory=new_run_id)
    # What the record warns of without a check failing: clean-ups that failed (what is
    # left), lines of the Worker's log the target lost unread.
    warnings: list[str] = field(default_factory=list)
    # What the training checks read (steps, scalars, checkpoints), and the Worker's first
    # error when the run failed (its quote, class and remedy).
    training: dict[str, Any] | None = None
    first_cause: dict[str, Any] | None = None
    # What the run ran with (``run/provenance.py``), and its Step 6 stages against the
    # profile's budgets and history (``run/budgets.py``), once the run is over.
    provenance: dict[str, Any] | None = None
    budgets: dict[str, Any] | None = None
    # Where the verdict was posted (``--notify``), each delivery's target as shown, its HTTP
    # status and error: a failed one is one of ``warnings`` too.
    notifications: list[dict[str, Any]] | None = None
    # A red run's diagnostics bundle (``run/step6/diagnostics.py``): where, which files, why.
    diagnostics: dict[str, Any] | None = None
    # What every scenario of Step 6 shares: the one submission's Job, Worker log, Pods and
    # events (``run/evidence.py``), redacted when taken.
    evidence: list[Evidence] = field(default_factory=list)

    def add(self, scenario: ScenarioRecord) -> ScenarioRecord:
        return self.scenarios.setdefault(scenario.nodeid, scenario)

    def of_kind(self, kind: Kind) -> list[ScenarioRecord]:
        return [s for s in self.scenarios.values() if s.kind == kind]

    # -- the record ------------------------------------------------------------------------

    def check_results(self) -> dict[str, CheckResult]:
        """Every check (the page's, then the training's), from the profile-as-is scenarios
        that name it."""
        out: dict[str, CheckResult] = {}
        for c in ALL_CHECKS:
            seen = [s.result(c.id) for s in self.of_kind("profile") if c.id in s.checks]
            if not seen:
                out[c.id] = CheckResult(c.id, "notReached" if self.error else "skipped")
                continue
            out[c.id] = max(seen, key=lambda r: _RANK[r.status])
        return out

    def verdict(self, checks: dict[str, CheckResult]) -> Verdict:
        if self.interrupted:
            return "interrupted"
        statuses = {r.status for r in checks.values()}
        if self.error or statuses & {"failed", "notReached"} or "passed" not in statuses:
            return "failed"  # a run that verified nothing of the profile is no pass either
        return "passed"

    def earliest_failure(self, checks: dict[str, CheckResult]) -> dict[str, Any] | None:
        first = earliest([c for c, r in checks.items() if r.status == "failed"])
        if first is None:
            return None
        failing = sorted(
            (s for s in self.of_kind("profile") if first in s.checks),
            key=lambda s: (s.result(first).status != "failed", s.nodeid),
        )
        scenario = failing[0]
        result = checks[first]
        message = result.message or scenario.message
        out: dict[str, Any] = {
            "check": first,
            "scenario": scenario.name,
            "step": scenario.step,
            "message": message,
            "hint": hint(first, message),
        }
        if result.location:
            out["location"] = str(result.location)
        return out

    def in_page_order(self) -> list[ScenarioRecord]:
        """Every scenario as the page reads: by its own check, the profile's scenario first,
        then as written in the feature files."""
        return sorted(self.scenarios.values(), key=page_order)

    def profile_failed_at(self) -> str | None:
        """The earliest failing check of the profile as it is, if any."""
        first = self.earliest_failure(self.check_results())
        return first["check"] if first else None

    def inconclusive(self, s: ScenarioRecord, profile_failed: str | None) -> str | None:
        """Why a failed self-check proves nothing, when it does not (the profile fails)."""
        if s.kind != "self-check" or s.outcome != "failed" or profile_failed is None:
            return None
        return (
            f"the profile as it is fails at {profile_failed}; this scenario starts "
            "from it, so it cannot show whether the harness catches its own mistake"
        )

    def interruption(self) -> dict[str, Any] | None:
        """Where the run was interrupted: the scenario that was running, if one was."""
        if not self.interrupted:
            return None
        s = self.scenarios.get(self.interrupted_at or "")
        if s is None:
            return {"check": None, "scenario": None, "step": None}
        return {"check": s.own_check, "scenario": s.name, "step": s.step}

    def self_checks(self, profile_failed: str | None) -> dict[str, Any]:
        passed = 0
        failed: list[dict[str, Any]] = []
        inconclusive: list[dict[str, Any]] = []
        not_applicable: list[dict[str, Any]] = []
        for s in sorted(self.of_kind("self-check"), key=_doc_order):
            if not s.ran:
                continue
            if s.outcome == "passed":
                passed += 1
            elif s.outcome == "skipped" and (s.message or "").startswith(NOT_APPLICABLE):
                # Proves nothing either way for this profile: said, never counted passing.
                said = s.message or ""
                not_applicable.append({"check": s.own_check, "scenario": s.name, "reason": said})
            elif s.outcome == "failed":
                entry = {"check": s.own_check, "scenario": s.name, "message": s.message}
                reason = self.inconclusive(s, profile_failed)
                if reason is not None:
                    entry["reason"] = reason
                    inconclusive.append(entry)
                else:
                    failed.append(entry)
        out: dict[str, Any] = {"passed": passed, "failed": failed}
        if inconclusive:
            out["inconclusive"] = inconclusive
        if not_applicable:
            out["notApplicable"] = not_applicable
        return out

    def summary(self) -> dict[str, Any]:
        checks = self.check_results()
        first = self.earliest_failure(checks)
        out: dict[str, Any] = {
            "profile": self.profile,
            "runId": self.run_id,
            "verdict": self.verdict(checks),
            "checks": {c: r.status for c, r in checks.items()},
            "earliestFailure": first,
            "notReached": [c for c, r in checks.items() if r.status == "notReached"],
            # The ``skipped`` checks under the terminal's word for them ("1 not selected"):
            # ``checks`` keeps ``skipped``, which its readers already know.
            "notSelected": [c for c, r in checks.items() if r.status == "skipped"],
            "selfChecks": self.self_checks(first["check"] if first else None),
            "counts": self.counts(),
            "durations": {k: round(v, 3) for k, v in self.durations.items()},
            "interrupted": self.interrupted,
        }
        where = self.interruption()
        if where is not None:
            out["interruptedAt"] = where
        if self.error:
            out["error"] = self.error
        if self.outputs is not None:
            out["outputs"] = self.outputs
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.training is not None:
            out["training"] = self.training
        if self.first_cause is not None:
            out["firstCause"] = self.first_cause
        if self.budgets is not None:
            out["budgets"] = self.budgets
        if self.provenance is not None:
            out["provenance"] = self.provenance
        if self.notifications is not None:
            out["notifications"] = self.notifications
        if self.diagnostics is not None:
            out["diagnostics"] = self.diagnostics
        return out

    def outcomes(self) -> dict[str, CheckOutcome]:
        """Every check (the page's, then the training's, then the budgets'), once, with what
        each surface shows of it. The unit every count of the run is made of."""
        checks = self.check_results()
        first = self.earliest_failure(checks)
        failed_at = first["check"] if first else None
        # A check's scenarios: every scenario of the profile that names it (one scenario of
        # Step 3 decides 3.1 to 3.7), then the self-checks written for it.
        mine: dict[str, list[ScenarioRecord]] = {c: [] for c in checks}
        ordered = self.in_page_order()
        for s in ordered:
            for c in s.checks if s.kind == "profile" else [s.own_check]:
                if c in mine:
                    mine[c].append(s)
        out: dict[str, CheckOutcome] = {}
        for c, r in checks.items():
            scenarios = tuple(mine[c])
            broken = [
                s
                for s in scenarios
                if s.kind == "self-check"
                and s.outcome == "failed"
                and self.inconclusive(s, failed_at) is None
            ]
            location = str(r.location) if r.location else None
            if r.status == "failed":
                message = r.message or next(
                    (s.message for s in scenarios if s.kind == "profile" and s.message), None
                )
                out[c] = CheckOutcome(c, "failed", message, location, hint(c, message), scenarios)
            elif broken:  # passed, not selected, or not reached: a failed self-check shows
                said = "; ".join(f"{s.name}: {s.message or 'failed'}" for s in broken)
                out[c] = CheckOutcome(
                    c, "broken", f"self-check failed: {said}", None, None, scenarios
                )
            elif r.status == "passed":
                out[c] = CheckOutcome(c, "passed", None, None, None, scenarios)
            elif r.status == "notReached":
                out[c] = CheckOutcome(
                    c, "notReached", self._not_reached(r, scenarios), None, None, scenarios
                )
            else:
                out[c] = CheckOutcome(
                    c, "notSelected", r.message or "not selected", None, None, scenarios
                )
        return out

    def _not_reached(self, r: CheckResult, scenarios: tuple[ScenarioRecord, ...]) -> str:
        """Why a check was not reached, in the words every surface uses for it."""
        if self.interrupted and any(s.nodeid == self.interrupted_at for s in scenarios):
            return "not finished: the run was interrupted during this check"
        if r.message:
            return r.message
        return "not reached: interrupted" if self.interrupted else "not reached"

    def run_error(self) -> str | None:
        """What stopped the run outside every check's verdict (an interrupt, a usage error, a
        crash outside the scenarios): one more entry, ``error``, beside the checks."""
        if self.interrupted:
            return "interrupted"
        return self.error

    def counts(self) -> dict[str, int]:
        """How many checks each surface shows in each state, and the run's ``error`` entry:
        the same numbers in the terminal's closing line, JUnit, Allure and run-summary.json."""
        shown = [o.status for o in self.outcomes().values()]
        out: dict[str, int] = {k: shown.count(k) for k in SHOWN}
        out["error"] = 1 if self.run_error() is not None else 0
        out["total"] = len(shown) + out["error"]
        return out

    def exit_failed(self) -> bool:
        """Whether the run must end with a non-zero exit status: something of the profile
        failed or was not reached, or a self-check failed (a run that selected no scenario
        of the profile verified nothing, but did not fail either)."""
        s = self.summary()
        bad = {"failed", "notReached"} & set(s["checks"].values())
        return bool(bad or s["selfChecks"]["failed"] or self.error or self.interrupted)


def hint(check: str, message: str | None) -> str:
    """The remedy of a failure: where the Worker's first error is of a class RLinf users
    meet (a store that stopped answering, GPU memory, NCCL …), that class's remedy first,
    since the doc's remedy for the check (``check the RLinf config``) is then the wrong
    place to start; the doc's own remedy otherwise."""
    doc = remedy(check, message)
    kind = class_in(message or "")
    if kind is None:
        return doc
    return f"{kind.remedy} (first error: {kind.title}; the doc's remedy for {check}: {doc})"


def _first(checks: list[str]) -> str:
    return earliest(checks) or (checks[0] if checks else "")


def _doc_order(s: ScenarioRecord) -> tuple[int, str]:
    return (min((ORDER.get(c, 99) for c in s.checks), default=99), s.nodeid)


def page_order(s: ScenarioRecord) -> tuple[int, bool, str, int, str]:
    return (ORDER.get(s.own_check, 99), s.kind != "profile", *s.position, s.nodeid)
