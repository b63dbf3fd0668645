"""6.5 and what a run leaves at the persistent location, on the scripted target.

A real ``FileStore`` on a temporary directory plays the persistent location; the Worker's
writes are scripted as calls at given seconds.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.adapters.base import LeftoversRemoved, TargetUnreachable
from rlark_acceptance.model.profile import KeepOutputs, Profile
from rlark_acceptance.run.report import hint
from tests.run.scripted import (
    CKPT,
    CONFIG,
    TERMINAL,
    Unanswering,
    call,
    end,
    happy_script,
    pod,
    run,
    signalled,
    verdict,
    write_checkpoint,
)

# --- 6.5 --------------------------------------------------------------------------------


def test_a_worker_that_ends_without_a_checkpoint_fails_6_5(base: Any, tmp_path: Path) -> None:
    script = [*signalled(), end(6.0), pod(6.1, "Succeeded", exit_code=0, reason="Completed")]
    rec, _ = run(base, tmp_path, script)
    check, message, at = verdict(rec)
    assert check == "6.5" and at == pytest.approx(6.1)
    assert message.startswith(
        f"the Worker ended and file://{tmp_path / 'store'}/{CKPT} holds no intact checkpoint: "
    )
    assert rec.fault_at == pytest.approx(6.1)


@pytest.mark.parametrize("state", TERMINAL)
def test_a_terminal_pod_ends_6_5_at_its_last_listing(base: Any, tmp_path: Path, state: str) -> None:
    rec, _ = run(base, tmp_path, [*signalled(), pod(6.0, **TERMINAL[state])])
    check, message, at = verdict(rec)
    assert (check, at) == ("6.5", pytest.approx(6.0))
    assert message.startswith("the Worker ended and ")
    assert rec.fault_at == pytest.approx(6.0)


def test_a_checkpoint_from_before_the_submission_does_not_count(base: Any, tmp_path: Path) -> None:
    write_checkpoint(tmp_path / "store", step=5)
    script = [*signalled(), end(6.0), pod(6.1, "Succeeded", exit_code=0, reason="Completed")]
    rec, _ = run(base, tmp_path, script)
    assert verdict(rec)[0] == "6.5"
    assert rec.checkpoint is not None and rec.checkpoint.stale == 1


def test_6_5_times_out_while_the_worker_keeps_running(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, signalled())
    check, message, at = verdict(rec)
    assert check == "6.5" and 123.0 <= at <= 124.0
    assert f"after 120 s (timeouts.output): file://{tmp_path / 'store'}/{CKPT}: " in message


def test_a_store_that_stops_answering_fails_6_5_with_the_cause(base: Any, tmp_path: Path) -> None:
    store = Unanswering(tmp_path / "store")
    script = [*signalled(), call(10.0, lambda: setattr(store, "down", True))]
    rec, _ = run(base, tmp_path, script, store=store)
    check, message, at = verdict(rec)
    assert check == "6.5" and at < 12.0
    assert message == (
        f"file://{tmp_path / 'store'}/{CKPT} could not be read while the Worker ran: "
        "the store does not answer [mount-io-error]: "
        f"{CKPT}/: EndpointConnectionError: Could not connect (after 4 attempts)"
    )
    # The store's remedy, not the doc's for 6.5 (where RLinf writes its checkpoints).
    assert hint("6.5", message).startswith("The mount's store stopped answering")


def test_a_listing_that_failed_before_submission_is_not_an_empty_one(
    base: Any, tmp_path: Path
) -> None:
    """A location several runs share (no run id of its own: here the profile's, as a
    shared folder is): what was there cannot be told from what this run writes."""
    store = Unanswering(tmp_path / "store")
    store.down = True
    write_checkpoint(tmp_path / "store")
    script = [*signalled(), call(4.0, lambda: setattr(store, "down", False)), end(6.0)]
    rec, _ = run(base, tmp_path, script, store=store, own_location=False)
    check, message, _ = verdict(rec)
    assert check == "6.5" and rec.checkpoint is None
    assert "could not be listed before submission" in message
    assert message.endswith("EndpointConnectionError: Could not connect (after 4 attempts)")
    # Named as the store's, with the store's remedy, not the profile's.
    assert message.startswith("the store (") and "does not answer [mount-io-error]" in message
    assert hint("6.5", message).startswith("The mount's store stopped answering")


def test_the_runs_own_location_unlisted_at_submission_is_empty_before_it(
    base: Any, tmp_path: Path
) -> None:
    """Under the run's own prefix (its new run id) nothing of an earlier run can be: a
    store down for a moment at submission fails no check, and 6.5 passes on what the
    Worker wrote once the store answers again."""
    store = Unanswering(tmp_path / "store")
    store.down = True
    script = [call(0.1, lambda: setattr(store, "down", False)), *happy_script(tmp_path / "store")]
    rec, _ = run(base, tmp_path, script, store=store)
    assert rec.earliest_failure is None and rec.status("6.5") == "passed", rec.phases


def test_a_location_under_no_mount_fails_6_5(base: Any, tmp_path: Path) -> None:
    prof, job = base
    outside = replace(prof, run_info=replace(prof.run_info, expected_output="/workspace/results"))
    rec, _ = run((outside, job), tmp_path, [*signalled(), end(4.0)])
    assert verdict(rec)[:2] == (
        "6.5",
        "/workspace/results lies under no mount: nothing there persists",
    )


# --- what the run leaves at the persistent location -------------------------------------


def keeping(base: tuple[Profile, Any], value: KeepOutputs) -> tuple[Profile, Any]:
    prof, job = base
    return replace(prof, target=replace(prof.target, keep_outputs=value)), job


def stored(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_a_passing_run_removes_what_it_wrote_and_only_that(base: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / "logs" / "earlier").mkdir(parents=True)
    (root / "logs" / "earlier" / "events.out").write_bytes(b"an earlier run's")
    rec, _ = run(base, tmp_path, happy_script(root), validated=CONFIG)
    assert rec.passed and rec.outputs_removed == 1 and rec.outputs_kept is None
    assert stored(root) == ["logs/earlier/events.out"]


def test_a_failing_run_keeps_its_outputs_and_names_them(base: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    rec, _ = run(base, tmp_path, happy_script(root), validated={"cluster": {"num_nodes": 2}})
    assert rec.earliest_failure is not None and rec.earliest_failure.check == "1.2"
    # The scripted target's store is the run's own mount (it keeps no prefix): all of it.
    assert rec.outputs_kept == f"file://{root} (1 objects written by this run)"
    assert stored(root) == [f"{CKPT}/global_step_1/actor/model.safetensors"]


@pytest.mark.parametrize(("policy", "left"), [("always", 1), ("never", 0)])
def test_the_profile_decides_what_stays(
    base: Any, tmp_path: Path, policy: KeepOutputs, left: int
) -> None:
    root = tmp_path / "store"
    failing = {"cluster": {"num_nodes": 2}}
    rec, _ = run(keeping(base, policy), tmp_path, happy_script(root), validated=failing)
    assert len(stored(root)) == left and (rec.outputs_kept is not None) == bool(left)
    assert rec.outputs_removed == 1 - left


def test_a_delete_the_adapter_fails_is_a_warning_never_an_error_of_the_run(
    base: Any, tmp_path: Path
) -> None:
    """Any adapter's own failure to delete the Worker (a plugin's, a Pod that stays past
    the delete's bound) is what is left, as a refusal is: never the run's error."""
    fails = RuntimeError("pods of job x still present after 60 s: x-worker-0")
    rec, _ = run(base, tmp_path, happy_script(tmp_path / "store"), delete_fails=fails)
    assert rec.earliest_failure is None and rec.status("6.5") == "passed"
    assert rec.warnings[0] == f"the Worker could not be deleted: RuntimeError: {fails}", (
        rec.warnings
    )


def test_a_worker_whose_kubelet_stopped_answering_fails_6_5_naming_it(
    base: Any, tmp_path: Path
) -> None:
    """The Worker's node lost its kubelet while the run read its checkpoint (another run's
    fault of the shared node): its Pod cannot be deleted, and 6.5 names the kubelet."""
    gone = TargetUnreachable(
        "node gpu-node-09: its kubelet does not answer: pods of job x are marked for deletion "
        "there and go once it is back: x-worker-0 on gpu-node-09",
        "job x and its Pods may be left in namespace ns",
    )
    rec, _ = run(base, tmp_path, happy_script(tmp_path / "store"), delete_fails=gone)
    check, message, _ = verdict(rec)
    assert check == "6.5" and "its kubelet does not answer" in message, message
    assert "may be left in namespace ns" in message, message


def test_what_a_run_could_not_remove_is_removed_by_the_next_run(
    base: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose Worker could not be deleted (its node's kubelet gone) keeps what it wrote
    while the Worker may still write; its journal is left to the next run of the location,
    which removes those objects as it removes a killed run's, and leaves none of its own.
    The handed-on journal lingers while the Worker may write on, until a run finds nothing
    more there (``test_step6_journal.py``)."""
    monkeypatch.setenv("RLARK_ACCEPTANCE_STATE", str(tmp_path / "state"))
    journals = tmp_path / "state" / "outputs"
    gone = TargetUnreachable("node gpu-node-09: its kubelet does not answer", "job x may be left")
    never = keeping(base, "never")  # a red run's outputs are not the user's to read
    first, _ = run(never, tmp_path, happy_script(tmp_path / "store"), delete_fails=gone)
    assert first.status("6.5") == "failed", "the kubelet is named at 6.5"
    assert first.outputs_kept and "the next run of this location removes them" in first.outputs_kept
    kept = stored(tmp_path / "store")
    assert kept and len(list(journals.glob("*.json"))) == 1, (kept, list(journals.iterdir()))
    with pytest.warns(LeftoversRemoved, match=r"removed 1 object\(s\) written by a run that died"):
        second, _ = run(base, tmp_path, happy_script(tmp_path / "store"))
    assert second.passed and second.outputs_removed == 1, second.outputs_kept
    assert stored(tmp_path / "store") == [], "neither run's checkpoint is left"
    (left,) = journals.glob("*.json")
    assert json.loads(left.read_text())["handedOn"], "only the handed-on journal lingers"
    third, _ = run(base, tmp_path, happy_script(tmp_path / "store"))
    assert third.passed and not list(journals.glob("*.json")), "found nothing more: it goes"


def test_a_run_keeping_its_outputs_by_policy_hands_nothing_on(
    base: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the profile keeps (a failed run, ``onFailure``) is the user's to read: no later
    run removes it."""
    monkeypatch.setenv("RLARK_ACCEPTANCE_STATE", str(tmp_path / "state"))
    failing = {"cluster": {"num_nodes": 2}}
    first, _ = run(base, tmp_path, happy_script(tmp_path / "store"), validated=failing)
    assert first.outputs_kept and "next run" not in first.outputs_kept
    # No journal left: a later run has nothing that names these objects as its to remove.
    assert not list((tmp_path / "state" / "outputs").glob("*.json"))
    assert len(stored(tmp_path / "store")) == 1, "the failed run's checkpoint stays"


def test_a_refused_clean_up_is_a_warning_and_the_verdict_stands(base: Any, tmp_path: Path) -> None:
    refusal = '403 Forbidden: jobs.rlark.io "x" is forbidden: ... cannot delete resource "jobs"'
    rec, _ = run(base, tmp_path, happy_script(tmp_path / "store"), refuse_delete=refusal)
    assert rec.earliest_failure is None and rec.status("6.5") == "passed"
    assert "could not be deleted" in rec.phases["6.5"].message
    assert rec.warnings == [f"the Worker could not be deleted: {refusal}"]
    assert rec.worker_left is not None and rec.checkpoint_after_delete is None
    # What the Worker wrote stays while it may still write: named, never half removed.
    assert (
        rec.outputs_removed == 0 and rec.outputs_kept and "could not be deleted" in rec.outputs_kept
    )
