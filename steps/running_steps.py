"""Step 6 as a user sees it: the Job listed, the Pod, Ray, the first signal, the checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from fixtures.acceptance import needs_accepted_run
from fixtures.side_by_side import SideBySide
from fixtures.workspace import Workspace
from rlark_acceptance.model.doc_checks import CheckId, remedy
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.model.training import TRAINING_IDS
from rlark_acceptance.preflight.entry import preflight_profile
from rlark_acceptance.run.acceptance import AcceptanceRun, accept, submit_and_confirm
from rlark_acceptance.run.budgets import MIN_SLOWER_S
from rlark_acceptance.run.evidence import NOT_REACHED, off_reason, preflight_stop
from rlark_acceptance.run.step6 import Interrupted
from rlark_acceptance.secrets import Redactor


@pytest.fixture(scope="session")
def accepted_run(
    pytestconfig: pytest.Config,
    target_profile: Any,
    target_environment: None,
    redactor: Redactor,
) -> Iterator[AcceptanceRun]:
    """The one real submission of the profile's Job, shared by every Step 6 scenario (and
    T.4's second one, when the profile turns it on or its scenario is selected by its tag)."""
    from fixtures.acceptance import diagnostics_dir, resume_selected
    from fixtures.run_record import RECORD_KEY, run_id
    from rlark_acceptance.adapters import open_adapter

    adapter = open_adapter(target_profile)
    try:
        try:
            run = accept(
                target_profile,
                adapter,
                run_id=run_id(pytestconfig),
                redactor=redactor,
                resume=resume_selected(pytestconfig),
                diagnostics=diagnostics_dir(pytestconfig),
            )
        except Interrupted as exc:  # the record of what ran, marked interrupted, then pytest's
            if exc.run is not None:  # own interrupt handling
                pytestconfig.stash[RECORD_KEY] = exc.run
            raise
        pytestconfig.stash[RECORD_KEY] = run
        yield run
    finally:
        adapter.close()


@pytest.hookimpl(trylast=True)  # after pytest has set up the item's own fixtures
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The shared submission is set up before the first Step 6 scenario starts, so the
    scenario's own time and steps show only what it checks (the run's evidence is global).
    Once it is made, the self-checks' submissions still to come start side by side."""
    request = getattr(item, "_request", None)
    if needs_accepted_run(item) and request is not None:
        request.getfixturevalue("accepted_run")
        ahead: SideBySide = request.getfixturevalue("side_by_side")
        ahead.start_from(item)


@given("the default acceptance profile has passed the pre-flight", target_fixture="run")
def passed_preflight(accepted_run: AcceptanceRun) -> AcceptanceRun:
    pre = accepted_run.preflight
    if pre.verdict != "pass":
        # Step 6 never started: its checks are not reached, the pre-flight's scenarios fail.
        pytest.skip(preflight_stop(pre))
    return accepted_run


@given("its Job has been submitted to the target")
def submitted(run: AcceptanceRun) -> None:
    # A submission the platform refused is 6.1's failure, said by 6.1's own step; every
    # later check is not reached.
    refused = run.record is not None and CheckId.JOB_LISTED in run.record.phases
    assert run.submitted or refused, "[6.1] the Job was not submitted"


def _phase(run: AcceptanceRun, check: str) -> None:
    assert run.record is not None
    if check in TRAINING_IDS and check not in run.record.training:
        pytest.skip(f"[{check}] {off_reason(check)}")
    p = run.record.phases.get(check)
    if p is None or p.status not in ("passed", "failed"):  # skipped / not reached
        why = p.message if p and NOT_REACHED in p.message else NOT_REACHED
        pytest.skip(f"[{check}] {why}")
    if p.status != "passed":
        pytest.fail(f"[{check}] {p.message}\n→ {remedy(check)}", pytrace=False)


@then("the Job appears in the task list")
def job_listed(run: AcceptanceRun) -> None:
    _phase(run, CheckId.JOB_LISTED)


@then("exactly one Pod runs the Worker on the expected node")
def one_pod(run: AcceptanceRun) -> None:
    _phase(run, CheckId.ONE_POD_ON_NODE)


@then("the logs show the Ray head started and then the run script's first output")
def ray_started(run: AcceptanceRun) -> None:
    _phase(run, CheckId.RAY_HEAD_STARTED)


@then("the config RLinf printed at start-up has cluster.num_nodes 1")
def printed_num_nodes(run: AcceptanceRun) -> None:
    _phase(run, CheckId.LOADED_NUM_NODES_IS_ONE)


@then(
    "its placement, world sizes, offload, pipeline stages, algorithm, model, data and "
    "checkpoint settings equal the validated ones"
)
def printed_fingerprint(run: AcceptanceRun) -> None:
    _phase(run, CheckId.VALIDATED_CONFIG_KEPT)


@then("the RLinf logs show the first signal")
def first_signal(run: AcceptanceRun) -> None:
    _phase(run, CheckId.PROGRESS_LOGGED)


@then("a checkpoint is readable at the expected location")
def checkpoint_readable(run: AcceptanceRun) -> None:
    _phase(run, CheckId.OUTPUT_PERSISTED)
    assert run.record is not None and run.record.checkpoint is not None
    assert run.record.checkpoint.ok, f"[6.5] {run.record.checkpoint.summary()}"


@then("the run reaches the steps its config asks for, without stalling")
def steps_advance(run: AcceptanceRun) -> None:
    _phase(run, CheckId.STEPS_ADVANCE)


@then("its TensorBoard scalars are there, every value finite and within the profile's bounds")
def metrics_real(run: AcceptanceRun) -> None:
    _phase(run, CheckId.METRICS_REAL)


@then("its checkpoint is its own, with finite tensors that training changed")
def checkpoint_trained(run: AcceptanceRun) -> None:
    _phase(run, CheckId.CHECKPOINT_TRAINED)


@then(
    "a second submission with runner.resume_dir starts at the step after the run's last "
    "checkpoint and reaches its target"
)
def resumes(run: AcceptanceRun) -> None:
    _phase(run, CheckId.RESUMES)


@then("it is still readable after the Worker is gone")
def readable_after_delete(run: AcceptanceRun) -> None:
    assert run.record is not None
    if run.record.worker_left is not None:
        return  # the target refused the delete: the record's warnings say what is left
    again = run.record.checkpoint_after_delete
    assert again is not None and again.ok, "[6.5] the checkpoint was not read again after delete"
    assert run.record.pods_unread is None, f"[6.5] {run.record.pods_unread}"
    assert run.record.pods == [], f"[6.5] the Worker still exists: {run.record.pods}"


# -- 首次运行问题排查: deliberately broken Jobs ----------------------------------------------


@when("the Job is submitted despite the pre-flight", target_fixture="fault_run")
def submit_broken(
    workspace: Workspace,
    adapter: Any,
    redactor: Redactor,
    side_by_side: SideBySide,
    request: pytest.FixtureRequest,
) -> AcceptanceRun:
    _unless_moot(request)
    made = side_by_side.take(request, workspace)
    if made is not None:  # submitted side by side with the other self-checks, from this state
        return made
    # A deliberately broken Job is meant to fail: what it wrote explains nothing about the
    # profile, so it does not pile up in the site's bucket run after run.
    workspace.profile.setdefault("target", {})["keepOutputs"] = "never"
    path = workspace.write()
    pre = preflight_profile(path, redactor=redactor)
    record = submit_and_confirm(adapter, pre)
    return AcceptanceRun(pre, record)


@when("the acceptance run starts", target_fixture="fault_run")
def start_run(
    workspace: Workspace, adapter: Any, redactor: Redactor, request: pytest.FixtureRequest
) -> AcceptanceRun:
    _unless_moot(request)
    return accept(load_profile(workspace.write()), adapter, redactor=redactor)


def _unless_moot(request: pytest.FixtureRequest) -> None:
    """A self-check whose run would fail where the profile's own already did fails now,
    saying so: inconclusive whatever it submitted, without the minutes of its run."""
    from fixtures.run_record import moot_submission

    moot = moot_submission(request.node)
    if moot is not None:
        pytest.fail(moot, pytrace=False)


@then(parsers.re(r'check (?P<check>[\w.]+) is the earliest failure(?: naming "(?P<text>[^"]+)")?$'))
def earliest_failure(fault_run: AcceptanceRun, check: str, text: str | None) -> None:
    rec = fault_run.record
    assert rec is not None
    first = rec.earliest_failure
    phases = "; ".join(f"{p.check} {p.status}: {p.message}" for p in rec.phases.values())
    assert first is not None, f"nothing failed: {phases}"
    assert first.check == check, f"the earliest failure is {first.check}, not {check}: {phases}"
    if text:
        assert text in first.message, f"{first.check} says {first.message!r}, not {text!r}"


@then(parsers.re(r'check (?P<check>[\w.]+) failed too, naming "(?P<text>[^"]+)"$'))
def also_failed(fault_run: AcceptanceRun, check: str, text: str) -> None:
    rec = fault_run.record
    assert rec is not None
    p = rec.phases.get(check)
    assert p is not None and p.status == "failed", f"[{check}] {p.status if p else 'not decided'}"
    assert text in p.message, f"{check} says {p.message!r}, not {text!r}"


@then(parsers.parse('the failure quotes the run\'s first error "{first}", not "{later}"'))
def first_error_quoted(fault_run: AcceptanceRun, first: str, later: str) -> None:
    rec = fault_run.record
    assert rec is not None and rec.earliest_failure is not None
    message = rec.earliest_failure.message
    quoted = message.partition("its first error")[2]
    assert first in quoted, f"{rec.earliest_failure.check} says {message!r}"
    assert later not in quoted, f"{rec.earliest_failure.check} quotes a knock-on: {message!r}"


@then(parsers.parse("the verdict did not wait for the {timeout} timeout"))
def not_a_timeout(fault_run: AcceptanceRun, timeout: str) -> None:
    rec = fault_run.record
    assert rec is not None and rec.earliest_failure is not None
    first = rec.earliest_failure
    assert f"timeouts.{timeout}" not in first.message, f"{first.check} timed out: {first.message}"
    assert first.at is not None


@then(parsers.re(r"checks (?P<ids>[\w.]+(?:, [\w.]+)*) of the run pass$"))
def run_checks_pass(fault_run: AcceptanceRun, ids: str) -> None:
    assert fault_run.record is not None, "nothing was submitted: the pre-flight failed"
    for check in ids.split(", "):
        p = fault_run.record.phases[check]
        assert p.status == "passed", f"[{check}] {p.status}: {p.message}"


@then("the checkpoint was read back from the node's filesystem after the Worker was gone")
def read_back_from_node(fault_run: AcceptanceRun, workspace: Workspace) -> None:
    rec = fault_run.record
    assert rec is not None and rec.checkpoint_after_delete is not None
    assert rec.checkpoint_after_delete.ok, rec.checkpoint_after_delete.summary()
    host = str(workspace.root / "node-outputs")
    assert rec.checkpoint_after_delete.location.startswith(f"file://{host}/"), (
        rec.checkpoint_after_delete.location
    )
    assert rec.pods_unread is None, rec.pods_unread
    assert rec.pods == [], f"the Worker still exists: {rec.pods}"


@then(parsers.parse("the pre-flight had failed check {check}"))
def preflight_had_failed(fault_run: AcceptanceRun, check: str) -> None:
    assert fault_run.preflight.outcome.status(check) == "failed"


@then(parsers.parse("it stops at the pre-flight naming check {check}"))
def stopped_at_preflight(fault_run: AcceptanceRun, check: str) -> None:
    assert fault_run.record is None, "the Job was submitted although the pre-flight failed"
    assert fault_run.preflight.outcome.status(check) == "failed"


@then("nothing was submitted to the target")
def nothing_submitted(fault_run: AcceptanceRun, adapter: Any, workspace: Workspace) -> None:
    namespace = (workspace.job or {}).get("metadata", {}).get("namespace", "rlinf-acceptance")
    assert adapter.list_jobs(namespace) == []


# -- release over release (B.1) ------------------------------------------------------------


def _stages_reached(run: AcceptanceRun) -> None:
    """B.1 compares the stages of a run that got through Step 6: one that stopped earlier is
    that stage's failure, not a slow stage."""
    rec = run.record
    if rec is None or not rec.durations:
        pytest.skip(f"[{CheckId.STAGES_HOLD_BUDGETS}] {NOT_REACHED}")
    stopped = [p.check for p in rec.phases.values() if p.status != "passed"]
    if stopped:
        pytest.skip(f"[{CheckId.STAGES_HOLD_BUDGETS}] {NOT_REACHED}: {', '.join(stopped)}")


@when(
    "its stages are compared with their budgets and the profile's earlier runs",
    target_fixture="budget_check",
)
def compare_stages(run: AcceptanceRun, pytestconfig: pytest.Config) -> Any:
    from fixtures.run_record import compared

    _stages_reached(run)
    found = compared(pytestconfig)
    assert found is not None, f"[{CheckId.STAGES_HOLD_BUDGETS}] the run recorded no stage"
    return found.budgets


@then("the stages hold their budgets and do not regress")
def stages_hold(budget_check: Any) -> None:
    # Under the default policy a slow stage is a warning of the record, not a failure.
    # The figures alone: the record heads them with B.1 and adds its remedy.
    if budget_check.failed():
        pytest.fail(budget_check.message(), pytrace=False)


@given(
    "a history in which every stage of the profile took a tenth of this run's time",
    target_fixture="faster_history",
)
def faster_history(run: AcceptanceRun, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from datetime import UTC, datetime, timedelta

    from rlark_acceptance.run.history import History
    from rlark_acceptance.storage import FileStore

    _stages_reached(run)
    assert run.record is not None
    history = History(FileStore(tmp_path_factory.mktemp("history")))
    when = datetime.now(UTC)
    for i in range(3):
        durations = {k: v / 10 for k, v in run.record.durations.items()}
        summary = {"runId": f"earlier-{i}", "durations": durations}
        history.append(summary, "profile", when - timedelta(hours=3 - i))
    return history


@when(
    "its stages are compared with that history under the strict policy",
    target_fixture="budget_check",
)
def compare_strict(run: AcceptanceRun, target_profile: Any, faster_history: Any) -> Any:
    from rlark_acceptance.run.budgets import evaluate

    assert run.record is not None
    earlier = faster_history.read("profile").entries
    return evaluate(
        run.record.durations,
        target_profile.budgets,
        [e.durations for e in earlier],
        strict=True,
        history=faster_history.describe(),
    )


@then("B.1 fails naming each stage with its time, the median of the earlier runs and the ratio")
def strict_fails(budget_check: Any) -> None:
    assert budget_check.failed(), f"B.1 held: {budget_check.as_dict()}"
    message = budget_check.message()
    for stage in budget_check.stages:
        # A stage regresses only when it is also MIN_SLOWER_S slower than the median (a
        # tenth of its time here): the shorter ones are within a busy machine's noise.
        if stage.seconds * 0.9 >= MIN_SLOWER_S:
            assert f"{stage.stage} {stage.seconds:.1f} s: 10.0× the median of the last 3 runs" in (
                message
            ), message
