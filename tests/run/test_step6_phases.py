"""Every transition of Step 6's phases, driven by a scripted target on a fake clock.

Each test scripts what the Worker shows (Pod changes, log lines, the end of the log) and reads
the record: which check passed or failed, with which cause, and when (seconds after
submission on the fake clock), so a verdict that waited for a deadline shows as such.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.adapters.base import (
    HARNESS_SOURCE,
    LOG_READ_AHEAD,
    Event,
    EventSeen,
    JobRef,
    PodStatus,
    TargetUnreachable,
)
from rlark_acceptance.run.report import hint
from rlark_acceptance.run.step6 import Progress, build_plan, confirm_running
from rlark_acceptance.run.step6.engine import SETTLE_SECONDS, TAIL_GRACE_SECONDS
from rlark_acceptance.run.step6.location import Location
from rlark_acceptance.run.step6.observed import Observed, Reading
from rlark_acceptance.run.step6.output import Output
from rlark_acceptance.run.step6.phase import Failed, ListPods, Passed, ReadOutputs, ReadScalars
from rlark_acceptance.run.step6.printed_config import AsValidated, OneNode
from rlark_acceptance.run.step6.record import LogTail
from rlark_acceptance.run.step6.scheduled import Scheduled
from tests.run.scripted import (
    CONFIG,
    NODE,
    POD,
    RAY,
    SIGNAL,
    TERMINAL,
    ScriptedTarget,
    Step,
    end,
    happy_script,
    line,
    lines,
    lost,
    pod,
    run,
    running,
    stamped,
    started,
    statuses,
    verdict,
    warning,
)


def test_every_phase_passes_in_order(base: Any, tmp_path: Path) -> None:
    rec, t = run(base, tmp_path, happy_script(tmp_path / "store"), validated=CONFIG)
    assert statuses(rec) == dict.fromkeys(
        ("6.1", "6.2", "1.1", "1.2", "6.3", "6.4", "6.5"), "passed"
    )
    assert list(rec.phases) == ["6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5"]
    at = {c: p.at for c, p in rec.phases.items()}
    assert at["6.2"] == pytest.approx(1.0) and at["6.3"] == pytest.approx(2.0)
    assert at["6.4"] == pytest.approx(3.0)
    assert rec.phases["6.3"].message.endswith("(log lines 1 and 2)")
    assert rec.checkpoint is not None and rec.checkpoint.ok
    assert rec.checkpoint_after_delete is not None and rec.checkpoint_after_delete.ok
    assert t.deleted == [rec.ref] and rec.earliest_failure is None
    assert rec.durations["firstSignal"] == pytest.approx(3.0) and rec.signal_lag == 0.0


# --- 6.1 --------------------------------------------------------------------------------


def test_a_refused_job_fails_6_1_and_nothing_after_is_reached(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [], refuse='metadata.name "RLinf_Smoke" is invalid')
    assert verdict(rec)[:2] == (
        "6.1",
        'the platform refused the Job: metadata.name "RLinf_Smoke" is invalid',
    )
    assert {c: p.message for c, p in rec.phases.items() if c != "6.1"} == dict.fromkeys(
        ("6.2", "6.3", "6.4", "6.5"), "not reached: 6.1 failed"
    )


def test_a_job_the_platform_does_not_list_fails_6_1(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, running(), listed=False)
    assert rec.run_id and rec.job.name == f"rlinf-smoke-ppo-mlp-{rec.run_id}"
    assert verdict(rec)[:2] == (
        "6.1",
        f"job {rec.job.name} was submitted but the platform does not list it",
    )
    assert rec.status("6.2") == "skipped"


# --- 6.2 --------------------------------------------------------------------------------


def test_an_unschedulable_pod_fails_6_2_when_it_is_reported(base: Any, tmp_path: Path) -> None:
    msg = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    rec, _ = run(
        base, tmp_path, [pod(0.2, "Pending", node=None, reason="Unschedulable", message=msg)]
    )
    check, message, at = verdict(rec)
    assert (check, at) == ("6.2", pytest.approx(0.2))
    assert message == f"pod rlinf-smoke-ppo-mlp-worker-0 is Pending: Unschedulable: {msg}"
    assert rec.fault_at == pytest.approx(0.2)


def test_a_pod_that_never_binds_fails_6_2_at_its_timeout(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [pod(0.2, "Pending", node=None)])
    check, message, at = verdict(rec)
    assert (check, at) == ("6.2", pytest.approx(30.0))
    assert message == (
        "nothing after 30 s (timeouts.scheduled); pod rlinf-smoke-ppo-mlp-worker-0 Pending; "
        "no scheduling decision and no Event: nothing has considered the Pod "
        "(is the cluster's scheduler running and connected to the API server?)"
    )


def test_a_pod_bound_to_a_node_whose_kubelet_is_silent_names_the_kubelet(
    base: Any, tmp_path: Path
) -> None:
    """Bound, and nothing from the node after it (its kubelet killed: the soak's fault):
    6.2's timeout names the node's kubelet, not only "Pending"."""
    rec, _ = run(base, tmp_path, [pod(0.2, "Pending", node="local-node")])
    check, message, _ = verdict(rec)
    assert check == "6.2" and message.endswith(
        "bound to node local-node, whose kubelet has reported nothing of it (is the node's "
        "kubelet running and connected to the API server?)"
    ), message


def test_a_pod_the_scheduler_turned_down_is_not_blamed_on_the_scheduler(
    base: Any, tmp_path: Path
) -> None:
    msg = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    script = [pod(0.2, "Pending", node=None), warning(0.5, "FailedScheduling", msg)]
    rec, _ = run(base, tmp_path, script)
    check, message, at = verdict(rec)
    assert (check, at) == ("6.2", pytest.approx(30.0))
    assert message.endswith(f"last warning: FailedScheduling: {msg}")
    assert "scheduler running" not in message


def test_no_pod_at_all_names_that(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [])
    assert verdict(rec)[1] == "nothing after 30 s (timeouts.scheduled); no Pod status"


def test_a_pod_on_another_node_fails_6_2(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [pod(1.0, node="gpu-node-08")])
    assert verdict(rec)[:2] == (
        "6.2",
        "pod rlinf-smoke-ppo-mlp-worker-0 runs on gpu-node-08, expected local-node",
    )


def test_two_pods_for_one_worker_fail_6_2(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, running(), extra_pods=1)
    assert verdict(rec)[:2] == (
        "6.2",
        "2 Pods for one Worker: rlinf-smoke-ppo-mlp-worker-0, rlinf-smoke-ppo-mlp-worker-0-0",
    )


def test_6_2_passes_on_a_pod_that_already_finished_on_its_node(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [pod(0.5, "Failed", exit_code=3, reason="Error"), end(0.6)])
    assert rec.status("6.2") == "passed"
    assert verdict(rec)[:2] == (
        "6.3",
        "the Ray head never started: pod rlinf-smoke-ppo-mlp-worker-0 Failed, Error, exit code 3",
    )


# --- 6.3 --------------------------------------------------------------------------------


def test_a_failing_prepare_script_fails_6_3_with_its_exit_code(base: Any, tmp_path: Path) -> None:
    script = [
        *running(),
        line(1.2, "preparing"),
        end(1.5),
        pod(1.6, "Failed", exit_code=3, reason="Error"),
    ]
    rec, _ = run(base, tmp_path, script)
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(1.6))
    assert (
        message
        == "the Ray head never started: pod rlinf-smoke-ppo-mlp-worker-0 Failed, Error, exit code 3"
    )
    assert rec.fault_at == pytest.approx(1.5)
    assert rec.status("6.4") == "skipped" and rec.phases["6.4"].message == "not reached: 6.3 failed"


def test_ray_started_but_the_script_printed_nothing(base: Any, tmp_path: Path) -> None:
    script = [
        *running(),
        line(1.5, RAY),
        line(1.6, "2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps"),
        end(2.0),
        pod(2.1, "Failed", exit_code=1, reason="Error"),
    ]
    rec, _ = run(base, tmp_path, script)
    assert verdict(rec)[1].startswith("the run script printed nothing after Ray started: ")


def test_6_3_waits_for_its_timeout_while_the_worker_is_silent(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [*running(), line(1.5, RAY)])
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(61.0))
    assert message == (
        "the run script had printed nothing after Ray started within 60 s (timeouts.rayHead); "
        "pod rlinf-smoke-ppo-mlp-worker-0 Running"
    )


def test_6_3_at_its_timeout_says_the_ray_head_had_not_started(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [*running(), line(1.5, "Enabling usage stats")])
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(61.0))
    assert message == (
        "the Ray head had not started within 60 s (timeouts.rayHead); "
        "pod rlinf-smoke-ppo-mlp-worker-0 Running"
    )


def test_a_volume_that_does_not_mount_fails_the_workers_start_naming_the_store(
    base: Any, tmp_path: Path
) -> None:
    why = (
        'MountVolume.SetUp failed for volume "ckpt" : s3://rlinf-ckpt at http://127.0.0.1:9: '
        "connection refused"
    )
    script = [
        pod(0.1, "Pending"),
        warning(0.3, "FailedMount", why),
        pod(0.4, "Pending", reason="CreateContainerError", message=why),
        end(0.4),
    ]
    rec, _ = run(base, tmp_path, script)
    assert rec.status("6.2") == "passed"
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(0.4))
    assert message == (
        "the Worker's container was never created: pod rlinf-smoke-ppo-mlp-worker-0 Pending, "
        f"CreateContainerError, {why}"
    )


def test_a_bound_pod_whose_volume_keeps_failing_to_mount_is_6_3s(base: Any, tmp_path: Path) -> None:
    why = 'MountVolume.SetUp failed for volume "ckpt" : rpc error: bucket rlinf-ckpt unreachable'
    script = [pod(0.1, "Pending"), warning(0.5, "FailedMount", why)]
    rec, _ = run(base, tmp_path, script)
    assert rec.status("6.2") == "passed"
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(60.5))
    assert message.endswith(f"; last warning: FailedMount: {why}")


def test_a_timeout_names_the_latest_warning(base: Any, tmp_path: Path) -> None:
    why = "0/3 nodes are available: waiting for ephemeral volume controller"
    script = [pod(0.1, "Pending", node=None), warning(5.0, "FailedScheduling", why)]
    rec, _ = run(base, tmp_path, script)
    assert verdict(rec)[1] == (
        "nothing after 30 s (timeouts.scheduled); pod rlinf-smoke-ppo-mlp-worker-0 Pending; "
        f"last warning: FailedScheduling: {why}"
    )


# --- terminal Pod states end the phase waited for, whatever the log stream does ----------

WAITING = {"6.2": [pod(0.1, "Pending", node=None)], "6.3": running(), "6.4": started()}
# Which check the state fails while each phase waits: a Pod that ran on its node, or whose
# container could not be created there, has passed 6.2; the Worker's start is 6.3's.
FAILS = {
    ("6.2", "Failed"): "6.3",
    ("6.2", "Succeeded"): "6.3",
    ("6.2", "terminated container"): "6.3",
    ("6.2", "CreateContainerConfigError"): "6.3",
}


@pytest.mark.parametrize("state", TERMINAL)
@pytest.mark.parametrize("phase", WAITING)
def test_a_terminal_pod_fails_the_waiting_phase_at_once_even_if_the_log_never_ends(
    base: Any, tmp_path: Path, phase: str, state: str
) -> None:
    rec, _ = run(base, tmp_path, [*WAITING[phase], pod(5.0, **TERMINAL[state])])
    check, message, at = verdict(rec)
    assert check == FAILS.get((phase, state), phase)
    assert 5.0 <= at <= 5.0 + TAIL_GRACE_SECONDS
    assert str(TERMINAL[state]["reason"]) in message
    if "exit_code" in TERMINAL[state]:
        assert f"exit code {TERMINAL[state]['exit_code']}" in message
    assert "timeouts." not in message


def test_lines_in_flight_after_a_terminal_pod_still_count(base: Any, tmp_path: Path) -> None:
    script = [
        *running(),
        pod(3.0, "Succeeded", exit_code=0, reason="Completed"),
        line(3.2, RAY),
        line(3.3, "smoke starting"),
        line(3.4, SIGNAL),
    ]
    rec, _ = run(base, tmp_path, script)
    assert (rec.status("6.3"), rec.status("6.4")) == ("passed", "passed")
    assert verdict(rec)[0] == "6.5"


def test_lines_after_the_grace_do_not_hold_the_verdict(base: Any, tmp_path: Path) -> None:
    script = [
        *running(),
        pod(3.0, "Failed", exit_code=1, reason="Error"),
        line(3.0 + TAIL_GRACE_SECONDS + 5, RAY),
    ]
    rec, _ = run(base, tmp_path, script)
    check, _, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(3.0 + TAIL_GRACE_SECONDS))


def test_a_cut_log_stream_waits_only_for_the_pods_final_status(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [*running(), line(1.5, RAY), end(2.0)])
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(2.0 + SETTLE_SECONDS))
    assert message.endswith("pod rlinf-smoke-ppo-mlp-worker-0 Running")


def test_the_exit_code_arriving_after_the_end_of_the_log_is_named(
    base: Any, tmp_path: Path
) -> None:
    script = [*running(), end(2.0), pod(4.0, "Failed", exit_code=137, reason="Error")]
    rec, _ = run(base, tmp_path, script)
    check, message, at = verdict(rec)
    assert (check, at) == ("6.3", pytest.approx(4.0))
    assert "exit code 137" in message and rec.fault_at == pytest.approx(2.0)


# --- 1.1 / 1.2: the printed config ------------------------------------------------------


def printed(config: object) -> list[Step]:
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    return [*started(), *lines(2.1, *text.splitlines()), end(3.0)]


def test_the_printed_config_passes_1_1_and_1_2(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, printed(CONFIG), validated=CONFIG)
    assert (rec.status("1.1"), rec.status("1.2")) == ("passed", "passed")
    assert rec.printed_config == CONFIG


def test_two_nodes_in_the_printed_config_fail_1_1(base: Any, tmp_path: Path) -> None:
    two = {"cluster": {**CONFIG["cluster"], "num_nodes": 2}}
    rec, _ = run(base, tmp_path, printed(two), validated=CONFIG)
    assert rec.phases["1.1"].message == "the config RLinf loaded has cluster.num_nodes 2"
    assert rec.status("1.1") == "failed" and verdict(rec)[0] == "1.1"


def test_a_changed_placement_fails_1_2(base: Any, tmp_path: Path) -> None:
    moved = {"cluster": {"num_nodes": 1, "component_placement": {"actor": "0-3"}}}
    rec, _ = run(base, tmp_path, printed(moved), validated=CONFIG)
    assert rec.phases["1.2"].message == (
        "the run differs from the validated config: "
        "cluster.component_placement.actor: validated '0-1', ran with '0-3'"
    )


def test_a_printed_config_that_is_not_json_fails_1_1(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, printed("{\n  num_nodes: 1\n}"))
    message = rec.phases["1.1"].message
    # Where it failed, in the log's own line numbers: the block's "{" and the key after it.
    opened = re.fullmatch(
        r"the config RLinf printed at start-up is not valid JSON \(the block from log line "
        r"(\d+): Expecting property name enclosed in double quotes at log line (\d+)\)",
        message,
    )
    assert opened is not None, message
    assert int(opened[2]) == int(opened[1]) + 1
    assert rec.log.head[int(opened[1]) - 1] == "{", rec.log.head
    assert "1.2" not in rec.phases


@pytest.mark.parametrize("printed_config", [False, True])
def test_log_lines_rotated_away_unread_are_the_reason_1_1_and_1_2_were_not_reached(
    base: Any, tmp_path: Path, printed_config: bool
) -> None:
    """The target rotated lines of the Worker's log away before they were read: a warning
    of the record; if the printed config was not read, 1.1 / 1.2 say why they were not
    reached (not a bare "not reached"); the Worker's own checks are judged as ever."""
    gone = "lines written between 10:00:01Z and 10:00:11Z (10 s) may be missing"
    config = lines(2.5, *json.dumps(CONFIG, indent=2).splitlines()) if printed_config else []
    script = [*started(), warning(2.2, "LogRotated", gone), *config]
    script += [line(3.0, SIGNAL), *happy_script(tmp_path / "store")[-3:]]
    rec, _ = run(base, tmp_path, script, validated=CONFIG)
    assert (rec.status("6.4"), rec.status("6.5")) == ("passed", "passed")
    assert rec.warnings == [f"LogRotated: {gone}"]
    if printed_config:
        assert (rec.status("1.1"), rec.status("1.2")) == ("passed", "passed")
        return
    for check in ("1.1", "1.2"):
        p = rec.phases[check]
        assert p.status == "skipped" and p.message.startswith("not reached: "), p
        assert "printed at start-up was not read" in p.message and "LogRotated" in p.message
    assert rec.earliest_failure is None


def test_the_observations_own_events_stay_in_the_record_when_the_targets_are_read_back(
    base: Any, tmp_path: Path
) -> None:
    """At the end the record takes the target's Events as the target has them; the ones the
    adapter's observation put of its own (how much of the log it read ahead, a watch that
    failed) are not the target's, and stay."""
    ahead = "2 of the Worker's log files were read while the follow was behind them"
    own = Event("job/x", LOG_READ_AHEAD, ahead, "Normal", HARNESS_SOURCE)
    script = [*started(), Step(2.2, EventSeen(2.2, own)), warning(2.3, "BackOff", "not ours")]
    script += [*lines(2.5, *json.dumps(CONFIG, indent=2).splitlines()), line(3.0, SIGNAL)]
    script += happy_script(tmp_path / "store")[-3:]
    rec, _ = run(base, tmp_path, script, validated=CONFIG)
    assert rec.status("6.5") == "passed"
    assert rec.events == [own], "the target has no Events now; the observation's own stay"
    assert rec.warnings == []


# --- 6.4 --------------------------------------------------------------------------------


def test_the_first_signal_passes_6_4_the_moment_it_is_printed(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, [*started(), line(7.5, SIGNAL), end(9.0)])
    assert rec.phases["6.4"].at == pytest.approx(7.5)
    assert rec.phases["6.4"].message == f"log line 3 shows the first signal: {SIGNAL}"


def test_a_ray_line_matching_the_signal_does_not_count(base: Any, tmp_path: Path) -> None:
    prof, job = base
    loose = replace(prof, run_info=replace(prof.run_info, first_signal="started"))
    rec, _ = run((loose, job), tmp_path, [*running(), line(1.5, RAY), end(2.0)])
    assert verdict(rec)[0] == "6.3"
    rec, _ = run((loose, job), tmp_path, [*started(), line(2.5, "env started"), end(3.0)])
    assert rec.phases["6.4"].message == "log line 3 shows the first signal: env started"


def test_a_run_that_ends_without_the_signal_fails_6_4_at_once(base: Any, tmp_path: Path) -> None:
    script = [
        *started(),
        line(3.0, "done, 0 steps"),
        end(4.0),
        pod(4.1, "Succeeded", exit_code=0, reason="Completed"),
    ]
    rec, _ = run(base, tmp_path, script)
    check, message, at = verdict(rec)
    assert (check, at) == ("6.4", pytest.approx(4.1))
    assert message == (
        "the logs never showed /Global Step:.*\\b[1-9]\\d*/\\d+/ and the Worker ended: "
        "pod rlinf-smoke-ppo-mlp-worker-0 Succeeded, Completed, exit code 0"
        "; the run script printed no progress-like line"
    )
    assert rec.fault_at == pytest.approx(4.0)


def test_no_prepared_signal_fails_6_4_at_once(base: Any, tmp_path: Path) -> None:
    prof, job = base
    none = replace(prof, run_info=replace(prof.run_info, first_signal=None))
    rec, _ = run((none, job), tmp_path, started())
    assert verdict(rec)[:2] == ("6.4", "no first signal was prepared (runInfo.firstSignal)")


def test_6_4_times_out_after_first_signal_seconds(base: Any, tmp_path: Path) -> None:
    rec, _ = run(base, tmp_path, started())
    check, message, at = verdict(rec)
    assert (check, at) == ("6.4", pytest.approx(122.0))
    assert message.startswith("nothing after 120 s (timeouts.firstSignal)")


def behind(until: float, pace: float, *, last: str = "loud line") -> list[Step]:
    """A loud Worker's log read a batch every 2 s from 3 s on, ``pace`` seconds of the
    Worker's writing per second of reading (below 1: the reader is behind)."""
    at = [3.0 + 2 * i for i in range(int((until - 3.0) / 2) + 1)]
    steps = [stamped(t, 2.0 + (t - 2.0) * pace, "loud line") for t in at]
    steps[-1] = stamped(at[-1], 2.0 + (at[-1] - 2.0) * pace, last)
    return steps


def test_6_4_waits_past_its_deadline_for_lines_written_before_it(base: Any, tmp_path: Path) -> None:
    # Read at half the Worker's pace: the signal, written at 81 s, is read at 161 s.
    rec, _ = run(base, tmp_path, [*started(), *behind(161.0, 0.5, last=SIGNAL)])
    assert rec.phases["6.4"].status == "passed"
    assert rec.phases["6.4"].at == pytest.approx(161.0)


def test_6_4_fails_once_the_log_is_read_past_its_deadline(base: Any, tmp_path: Path) -> None:
    # Read at 0.9 of the Worker's pace: lines written after the deadline (122 s) are read
    # from 136 s on, and none of those before it was the signal.
    rec, _ = run(base, tmp_path, [*started(), *behind(300.0, 0.9)])
    check, message, at = verdict(rec)
    assert check == "6.4" and message.startswith("nothing after 120 s (timeouts.firstSignal)")
    assert at == pytest.approx(136.0, abs=1.0)
    # A log that stops arriving past the deadline: the wait ends READING_BEHIND_SECONDS on.
    rec, _ = run(base, tmp_path, [*started(), *behind(131.0, 0.5)])
    assert verdict(rec)[0] == "6.4" and verdict(rec)[2] == pytest.approx(136.0, abs=1.0)


# --- progress ---------------------------------------------------------------------------


def test_a_waiting_phase_reports_progress_every_second(base: Any, tmp_path: Path) -> None:
    ticks: list[Progress] = []
    run(
        base,
        tmp_path,
        [*running(), line(1.5, "preparing"), line(3.0, RAY), line(3.5, "go")],
        progress=ticks,
    )
    # 6.3 waits from 1.0 s: a tick at most every second, with the latest line at that time.
    seen = [(p.elapsed, p.last_line) for p in ticks if p.check == "6.3"]
    assert seen == [(1.5, "preparing"), (2.5, "go")]
    assert {p.check for p in ticks} >= {"6.3", "6.4"}
    assert all(p.timeout == {"6.2": 30, "6.3": 60, "6.4": 120, "6.5": 120}[p.check] for p in ticks)
    assert ticks[0].pod.startswith("pod rlinf-smoke-ppo-mlp-worker-0")
    assert NODE  # the scripted Pod's node is the profile's expected node


def test_a_run_script_that_dies_is_quoted_by_its_first_error(base: Any, tmp_path: Path) -> None:
    # Ray's token auth refusing the Worker's own ray.init, as a shared HOME made it happen.
    script = [
        *started(),
        line(2.5, "[2026-12-01 09:50:00,720 W 172 172] core_worker.cc:512: an error was logged"),
        line(2.6, "Traceback (most recent call last):"),
        line(2.7, '  File "/workspace/smoke/run.py", line 3, in <module>'),
        line(2.8, "ray.exceptions.AuthenticationError: InvalidAuthToken: the token was refused"),
        line(2.9, "Set the environment variable RAY_AUTH_MODE to debug this error"),
        end(3.0),
        pod(3.1, "Failed", exit_code=1, reason="Error"),
    ]
    rec, _ = run(base, tmp_path, script)
    check, message, _ = verdict(rec)
    assert check == "6.4"
    assert (
        'exit code 1; its first error (log line 6): "ray.exceptions.AuthenticationError: '
        'InvalidAuthToken: the token was refused"; the run script printed no progress-like line'
    ) in message, message


@pytest.mark.parametrize("reason", ["EvictionByEvictionAPI", "Evicted", "DeletionByTaintManager"])
def test_a_worker_the_cluster_took_away_has_the_clusters_remedy_not_the_configs(
    base: Any, tmp_path: Path, reason: str
) -> None:
    """An evicted (preempted, tainted-off) Worker dies of SIGTERM, and what it printed while
    it was stopped is a knock-on: the remedy is the cluster's, never "check the RLinf
    config" (what an evicted Worker was told before)."""
    script = [
        *started(),
        line(2.6, "Traceback (most recent call last):"),
        line(2.7, '  File "/workspace/smoke/run.py", line 3, in <module>'),
        line(2.8, "KeyboardInterrupt"),
        end(3.0),
        pod(3.1, "Failed", exit_code=143, reason=reason, message="Eviction API: evicting"),
    ]
    rec, _ = run(base, tmp_path, script)
    check, message, _ = verdict(rec)
    assert check == "6.4" and f"{reason} [worker-disrupted], exit code 143" in message, message
    said = hint(check, message)
    assert said.startswith("The Worker was stopped from outside"), said
    assert "(first error: The cluster took the Worker's Pod away;" in said, said


@pytest.mark.parametrize(("reason", "code"), [("Unknown", 255), ("ContainerStatusUnknown", 137)])
def test_a_worker_whose_container_the_runtime_lost_has_the_runtimes_remedy(
    base: Any, tmp_path: Path, reason: str, code: int
) -> None:
    """What a containerd killed under a running Worker leaves (seen on the real node): the
    kubelet reports the container ended "Unknown" with 255. The node's runtime is named,
    not the RLinf config."""
    script = [*started(), end(3.0), pod(3.1, "Failed", exit_code=code, reason=reason)]
    rec, _ = run(base, tmp_path, script)
    check, message, _ = verdict(rec)
    assert check == "6.4", message
    assert f"{reason} [container-runtime-lost], exit code {code}" in message, message
    assert hint(check, message).startswith("The kubelet could not learn how the Worker ended")


def test_a_worker_that_succeeds_quotes_no_error_line(base: Any, tmp_path: Path) -> None:
    script = [*started(), line(2.5, "error: a warning the workload survived"), end(3.0)]
    script.append(pod(3.1, "Succeeded", exit_code=0, reason="Completed"))
    rec, _ = run(base, tmp_path, script)
    assert "first error" not in verdict(rec)[1] and "last error line" not in verdict(rec)[1]


# --- the target stops answering ----------------------------------------------------------


def test_an_unreachable_api_server_fails_the_waited_phase_at_once_naming_it(
    base: Any, tmp_path: Path
) -> None:
    down = "the Kubernetes API server https://127.0.0.1:6443 is unreachable: no answer for 30 s"
    left = "job rlinf-smoke-ppo-mlp and its Pods may be left in namespace rlinf-acceptance"
    rec, _ = run(base, tmp_path, [*started(), lost(40.0, down, left)])
    check, message, at = verdict(rec)
    assert check == "6.4" and at == pytest.approx(40.0)  # when it was known, not at 120 s
    assert message == f"{down}; {left}"
    assert "Worker ended" not in message and "timeouts.firstSignal" not in message
    assert rec.phases["6.5"].message == "not reached: 6.4 failed"


def test_lines_already_read_decide_before_the_target_was_lost(base: Any, tmp_path: Path) -> None:
    """The signal was printed and read before the API server went away: 6.4 passed."""
    rec, _ = run(base, tmp_path, [*started(), line(3.0, SIGNAL), lost(3.5, "gone")])
    assert rec.status("6.4") == "passed"


# --- the phase protocol: a verdict from the observed state alone -------------------------


def observed(*items: Step) -> Observed:
    seen = Observed(0.0, re.compile(SIGNAL_PATTERN), LogTail())
    for step in items:
        seen.take(step.item)
    return seen


SIGNAL_PATTERN = r"Global Step:.*\b[1-9]\d*/\d+"


def test_a_phase_asks_for_what_it_must_look_at_and_decides_on_the_answer() -> None:
    """No adapter in reach: 6.2 asks for the Pods once its Pod runs, and decides on them;
    the same state gives the same verdict."""
    phase = Scheduled(NODE)
    assert phase.verdict(observed(pod(0.1, "Pending", node=None))) is None
    seen = observed(pod(0.1, "Pending", node=None), pod(1.0))
    assert phase.verdict(seen) == phase.verdict(seen) == ListPods()
    seen.pods = [seen.pod]  # type: ignore[list-item]
    assert phase.verdict(seen) == Passed(f"one Pod, {POD}, on node {NODE}", at=1.0)
    seen.pods = OSError("the API server said 500")  # a failed listing: the stream's Pod counts
    assert phase.verdict(seen) == Passed(
        f"one Pod, {POD}, on node {NODE} (the Job's Pods could not be listed: OSError: the "
        "API server said 500; judged on the Pod the target's watch showed)",
        at=1.0,
    )


def test_6_5_reads_the_location_again_each_second_and_once_the_pod_is_over(
    tmp_path: Path,
) -> None:
    from rlark_acceptance.storage import CheckpointReport, FileStore

    loc = Location(FileStore(tmp_path), "ckpt", baseline={})
    phase = Output(loc, delete_after=False)
    seen = observed(*running())
    assert phase.verdict(seen) == ReadOutputs(loc)
    seen.outputs = Reading(at=seen.now, report=CheckpointReport("ckpt"))
    assert not seen.outputs.report.ok  # type: ignore[union-attr]
    assert phase.verdict(seen) is None  # just read: wait
    seen.now += 1.0
    assert phase.verdict(seen) == ReadOutputs(loc)  # a second later: read again
    seen.outputs = Reading(at=seen.now, report=CheckpointReport("ckpt"))
    seen.take(pod(2.5, "Failed", exit_code=1, reason="Error").item)
    assert phase.verdict(seen) == ReadOutputs(loc)  # the Pod is over: its files are flushed
    seen.outputs = Reading(at=2.6, report=CheckpointReport("ckpt"))
    verdict = phase.verdict(seen)
    assert isinstance(verdict, Failed) and verdict.at == 2.5
    assert verdict.message.startswith("the Worker ended and ")


def test_t_2_reads_the_scalars_again_paced_by_its_reading_and_at_once_when_the_pod_is_over(
    tmp_path: Path,
) -> None:
    """Scalars that do not cover the last step yet (the writer flushes when it closes) are
    read again four times as long after as the reading took, at least every half second and
    at most every ten, and at once when the Worker ended after the last reading."""
    from rlark_acceptance.run.step6.metrics import MetricsReal
    from rlark_acceptance.run.step6.readings import Scalars
    from rlark_acceptance.storage import FileStore

    loc = Location(FileStore(tmp_path), "logs/tensorboard", baseline={})
    phase = MetricsReal(loc, (), after="T.1", grace=60.0)
    seen = observed(*running())
    seen.decided["T.1"] = seen.now
    seen.steps.step = 5
    assert phase.verdict(seen) == ReadScalars(loc)
    half = {"train/loss": [(1, 0.9), (2, 0.8)]}
    for took, again in [(0.01, 0.5), (1.0, 4.0), (7.0, 10.0)]:
        seen.scalars = Scalars(at=seen.now, where="tb", series=half, took=took)
        seen.now += again - 0.01
        assert phase.verdict(seen) is None, took  # not yet
        seen.now += 0.01
        assert phase.verdict(seen) == ReadScalars(loc), took
    seen.scalars = Scalars(at=seen.now, where="tb", series=half, took=7.0)
    seen.take(pod(seen.now + 0.2, "Succeeded", exit_code=0).item)
    seen.now += 0.3
    assert phase.verdict(seen) == ReadScalars(loc)  # the Pod is over: its events are flushed
    seen.scalars = Scalars(at=seen.now, where="tb", series=half)
    verdict = phase.verdict(seen)
    assert isinstance(verdict, Passed) and "steps 1–2" in verdict.message, verdict


def test_the_verdicts_of_the_read_along_checks_come_from_the_printed_config() -> None:
    seen = observed(*started())
    assert (OneNode().verdict(seen), AsValidated(CONFIG).verdict(seen)) == (None, None)
    text = json.dumps(CONFIG, indent=2).splitlines()
    seen = observed(*started(), *lines(2.1, *text))
    assert OneNode().verdict(seen) == Passed("the config RLinf loaded has cluster.num_nodes 1")
    assert AsValidated(CONFIG).verdict(seen) == Passed(
        "the settings RLinf ran with equal the validated ones"
    )


def test_a_block_that_is_not_json_fails_1_1_until_the_config_is_printed(
    base: Any, tmp_path: Path
) -> None:
    script = [*started(), *lines(2.1, "{", "  not: json", "}")]
    script += [*lines(2.5, *json.dumps(CONFIG, indent=2).splitlines()), end(3.0)]
    rec, _ = run(base, tmp_path, script, validated=CONFIG)
    assert (rec.status("1.1"), rec.status("1.2")) == ("passed", "passed")
    assert rec.printed_config == CONFIG


def test_without_the_delete_6_5_passes_naming_the_checkpoint(base: Any, tmp_path: Path) -> None:
    rec, t = run(base, tmp_path, happy_script(tmp_path / "store"), delete_after=False)
    assert rec.status("6.5") == "passed" and t.deleted == []
    assert rec.phases["6.5"].message.endswith("/checkpoints: global_step_1 intact (safetensors)")
    assert rec.checkpoint_after_delete is None


class PodsUnanswered(ScriptedTarget):
    """A target whose Pod listing fails once the run is over (its API server went away)."""

    def pods(self, ref: JobRef) -> list[PodStatus]:
        if self.deleted:
            raise TargetUnreachable("the API server is unreachable")
        return super().pods(ref)


def test_pods_that_cannot_be_listed_at_the_end_are_no_proof_the_worker_is_gone(
    base: Any, tmp_path: Path
) -> None:
    prof, job = base
    t = PodsUnanswered(happy_script(tmp_path / "store"), tmp_path / "store")
    (tmp_path / "store").mkdir()
    rec = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    assert rec.passed and rec.pods == []
    assert rec.pods_unread == (
        "the Worker's Pods could not be read for the record: the API server is unreachable"
    )
    assert rec.warnings == [rec.pods_unread]
