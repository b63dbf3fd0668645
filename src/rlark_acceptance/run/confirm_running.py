"""Step 6 确认任务开始运行: submit the Job and confirm, in the page's order, that it works.

1. the Job is listed (6.1); 2. one Pod, on the expected Node (6.2); 3. the Ray head started
and the run script began (6.3); 4. RLinf shows the prepared first signal (6.4); 5. the
checkpoint is at the persistent location, intact, and still readable after the Worker is
gone (6.5). The config RLinf prints at start-up is read back for 1.1 / 1.2.

Waiting is driven by what the adapter reports (Pod changes, log lines): each phase has its
own deadline from the profile, and a terminal state fails the waiting phase at once with
its cause instead of running into the deadline. Only object storage, which has no portable
watch, is listed again at a short interval while the Worker runs.
"""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlark_acceptance.adapters.base import (
    FATAL_REASONS,
    Adapter,
    Event,
    JobRef,
    Observation,
    PodStatus,
    SubmitRejected,
)
from rlark_acceptance.model.job import Job
from rlark_acceptance.model.profile import Profile
from rlark_acceptance.preflight.checks.base import mount_for
from rlark_acceptance.rlinf.fingerprint import differences, fingerprint
from rlark_acceptance.storage import (
    CheckpointReport,
    Store,
    StoreError,
    snapshot,
    verify_checkpoints,
)

RAY_STARTED = re.compile(r"Ray runtime started")
STORE_RELIST_SECONDS = 1.0
PHASES = ("6.1", "6.2", "6.3", "6.4", "6.5")
TIMEOUT_OF = {"6.2": "scheduled", "6.3": "rayHead", "6.4": "firstSignal", "6.5": "output"}


@dataclass
class PhaseResult:
    check: str
    status: str  # passed | failed | skipped
    message: str
    at: float | None = None  # seconds since submission


@dataclass
class RunRecord:
    """What one submission showed, phase by phase, with the evidence to explain it."""

    job: Job
    ref: JobRef | None = None
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    pods: list[PodStatus] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    printed_config: dict[str, Any] | None = None
    checkpoint: CheckpointReport | None = None
    checkpoint_after_delete: CheckpointReport | None = None
    durations: dict[str, float] = field(default_factory=dict)
    signal_lag: float | None = None  # seconds from the signal line's arrival to 6.4 passing
    fault_at: float | None = None  # seconds after submission when the Worker showed the fault

    def __repr__(self) -> str:  # the log and the Job may hold secrets: reprs reach reports
        phases = {c: p.status for c, p in self.phases.items()}
        return f"RunRecord({self.job.name!r}, phases={phases})"

    def status(self, check: str) -> str:
        return self.phases[check].status if check in self.phases else "skipped"

    @property
    def earliest_failure(self) -> PhaseResult | None:
        order = ("6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5")
        for check in order:
            p = self.phases.get(check)
            if p and p.status == "failed":
                return p
        return None

    def log_excerpt(self, around: int | None = None, lines: int = 40) -> str:
        if not self.log:
            return "(no log lines)"
        end = len(self.log) if around is None else min(len(self.log), around + lines // 2)
        return "\n".join(self.log[max(0, end - lines) : end])


class _Failed(Exception):
    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


@dataclass
class _State:
    pod: PodStatus | None = None
    ray_line: int | None = None
    script_line: int | None = None
    signal_line: int | None = None
    signal_at: float | None = None
    ended: bool = False
    over_at: float | None = None  # when the Worker's state made the outcome certain
    json_buf: list[str] | None = None


def output_store(adapter: Adapter, job: Job, container_path: str) -> tuple[Store, str] | None:
    """The store holding ``container_path`` and the key prefix inside it."""
    worker = job.worker
    if worker is None:
        return None
    mount = mount_for(container_path, worker.mounts)
    if mount is None or not mount.container_path:
        return None
    rel = posixpath.relpath(container_path, mount.container_path)
    return adapter.store_for(job, mount), "" if rel == "." else rel


def confirm_running(
    adapter: Adapter,
    job: Job,
    manifest: str,
    profile: Profile,
    *,
    validated_config: dict[str, Any] | None = None,
    on_phase: Callable[[PhaseResult], None] | None = None,
    delete_after: bool = True,
) -> RunRecord:
    """Submit ``job`` and run Step 6; never raises for what the target does wrong."""
    rec = RunRecord(job=job)
    timeouts = profile.timeouts
    ri = profile.run_info
    signal = re.compile(str(ri.first_signal)) if ri.first_signal else None
    expected_node = ri.expected_node

    def done(check: str, status: str, message: str, at: float | None) -> None:
        rec.phases[check] = PhaseResult(check, status, message, at)
        if on_phase:
            on_phase(rec.phases[check])

    # Where the output will be read back, and what is there before submission: that belongs
    # to earlier runs and must never pass for this one's.
    located: tuple[Store, str] | str = "no expected output location was prepared"
    baseline: dict[str, tuple[int, float | None]] | None = None
    if isinstance(ri.expected_output, str) and ri.expected_output:
        try:
            found = output_store(adapter, job, ri.expected_output)
        except Exception as exc:  # reported as 6.5's cause once the run gets there
            found = None
            located = f"{ri.expected_output} cannot be read back: {exc}"
        else:
            located = found or f"{ri.expected_output} lies under no mount: nothing there persists"
        if found is not None:
            baseline = snapshot(*found)
    t0 = time.monotonic()
    try:
        try:
            rec.ref = adapter.submit(job, manifest)
        except SubmitRejected as exc:
            raise _fail(done, "6.1", f"the platform refused the Job: {exc}", t0) from None
        rec.durations["submit"] = time.monotonic() - t0
        listed = rec.ref.name in adapter.list_jobs(rec.ref.namespace)
        done(
            "6.1",
            "passed" if listed else "failed",
            f"job {rec.ref.name} is listed"
            if listed
            else f"job {rec.ref.name} was submitted but the platform does not list it",
            time.monotonic() - t0,
        )
        if not listed:
            raise _Failed("6.1", rec.phases["6.1"].message)
        obs, st = _observe(
            adapter, rec, t0, timeouts, signal, expected_node, validated_config, done
        )
        _confirm_output(adapter, rec, obs, st, t0, timeouts, located, baseline, done, delete_after)
    except _Failed:
        pass
    finally:
        if rec.ref is not None:
            rec.pods = _safe(lambda: adapter.pods(rec.ref), [])  # type: ignore[arg-type]
            rec.events = _safe(lambda: adapter.events(rec.ref), [])  # type: ignore[arg-type]
    for check in PHASES:
        if check not in rec.phases:
            failed = rec.earliest_failure
            why = f"not reached: {failed.check} failed" if failed else "not reached"
            rec.phases[check] = PhaseResult(check, "skipped", why)
    return rec


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:  # evidence collection must never hide the original verdict
        return default


def _observe(
    adapter: Adapter,
    rec: RunRecord,
    t0: float,
    timeouts: dict[str, float],
    signal: re.Pattern[str] | None,
    expected_node: str | None,
    validated: dict[str, Any] | None,
    done: Callable[[str, str, str, float | None], None],
) -> tuple[Observation, _State]:
    assert rec.ref is not None
    obs = adapter.observe(rec.ref)
    st = _State()
    phase = "6.2"
    phase_start = time.monotonic()
    while phase in ("6.2", "6.3", "6.4"):
        deadline = phase_start + timeouts[TIMEOUT_OF[phase]]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _fail(done, phase, _timeout_message(phase, timeouts, st), t0)
        item = obs.next(remaining)
        if item is None:
            continue
        now = item.at
        if item.kind == "pod" and item.pod is not None:
            st.pod = item.pod
            if item.pod.reason in FATAL_REASONS:
                st.over_at = st.over_at or item.at
        elif item.kind == "event" and item.event is not None:
            rec.events.append(item.event)
        elif item.kind == "log" and item.line is not None:
            rec.log.append(item.line)
            _read_line(rec, st, item.line, len(rec.log) - 1, validated, done, t0)
            # Only the run script's output counts: Ray's own lines could match a loose pattern.
            if (
                signal is not None
                and st.signal_line is None
                and st.script_line is not None
                and signal.search(item.line)
            ):
                st.signal_line = len(rec.log) - 1
                st.signal_at = item.at
        elif item.kind == "end":
            st.ended = True
            st.over_at = st.over_at or item.at
        # Advance through every phase this happening completes.
        while True:
            if phase == "6.2":
                verdict = _scheduled(adapter, rec, st, expected_node)
                if verdict is None:
                    break
                ok, msg = verdict
                if not ok:
                    raise _fail(done, "6.2", msg, t0)
                done("6.2", "passed", msg, now - t0)
                rec.durations["scheduled"] = now - t0
                phase, phase_start = "6.3", now
            elif phase == "6.3":
                if st.ray_line is not None and st.script_line is not None:
                    done(
                        "6.3",
                        "passed",
                        "the Ray head started and the run script began "
                        f"(log lines {st.ray_line + 1} and {st.script_line + 1})",
                        now - t0,
                    )
                    rec.durations["rayHead"] = now - t0
                    phase, phase_start = "6.4", now
                    continue
                if _worker_over(st):
                    _settle(obs, st, rec)
                    rec.fault_at = (st.over_at or time.monotonic()) - t0
                    missing = (
                        "the Ray head never started"
                        if st.ray_line is None
                        else "the run script printed nothing after Ray started"
                    )
                    raise _fail(done, "6.3", f"{missing}: {_pod_text(st.pod)}", t0)
                break
            elif phase == "6.4":
                if signal is None:
                    raise _fail(
                        done, "6.4", "no first signal was prepared (runInfo.firstSignal)", t0
                    )
                if st.signal_line is not None:
                    done(
                        "6.4",
                        "passed",
                        f"log line {st.signal_line + 1} shows the first signal: "
                        f"{rec.log[st.signal_line].strip()[:160]}",
                        time.monotonic() - t0,
                    )
                    rec.signal_lag = time.monotonic() - (st.signal_at or now)
                    rec.durations["firstSignal"] = (st.signal_at or now) - t0
                    phase = "done"
                    break
                if _worker_over(st):
                    _settle(obs, st, rec)
                    rec.fault_at = (st.over_at or time.monotonic()) - t0
                    raise _fail(
                        done,
                        "6.4",
                        f"the logs never showed /{signal.pattern}/ and the Worker ended: "
                        f"{_pod_text(st.pod)}",
                        t0,
                    )
                break
            else:
                break
    return obs, st


def _read_line(
    rec: RunRecord,
    st: _State,
    line: str,
    index: int,
    validated: dict[str, Any] | None,
    done: Callable[[str, str, str, float | None], None],
    t0: float,
) -> None:
    if st.ray_line is None and RAY_STARTED.search(line):
        st.ray_line = index
    # RLinf prints its resolved config as indented JSON right after start-up: "{" ... "}".
    if (
        st.ray_line is not None
        and st.json_buf is None
        and rec.printed_config is None
        and line.rstrip() == "{"
    ):
        st.json_buf = [line]
        if st.script_line is None:
            st.script_line = index
        return
    if st.json_buf is not None:
        st.json_buf.append(line)
        if line.rstrip() == "}":
            text = "\n".join(st.json_buf)
            st.json_buf = None
            try:
                rec.printed_config = json.loads(text)
            except ValueError:
                rec.printed_config = None
            _runtime_config_checks(rec, validated, done, t0)
        return
    if (
        st.ray_line is not None
        and index > st.ray_line
        and st.script_line is None
        and _is_script_output(line)
    ):
        st.script_line = index


# Ray's CLI logs as "2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps" when its
# output is not a terminal, as in a Pod; on a terminal it prints the same banner bare.
_RAY_CLI_LINE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\s+[A-Z]+\s+\S+:\d+ -- ")
_RAY_BANNER = re.compile(
    r"^\s*$|^-{3,}\s*$|^\s*(Next steps|Note: The following|the head node or within"
    r"|To (add another node|connect to this|terminate the Ray|view the status|monitor)"
    r"|ray (start|stop|status)\b|import ray$|ray\.init\(|Local node IP|Ray runtime started)"
)


def _is_script_output(line: str) -> bool:
    """A line after Ray's start-up that Ray's own CLI did not print."""
    return not (_RAY_CLI_LINE.match(line) or _RAY_BANNER.search(line))


def _runtime_config_checks(
    rec: RunRecord,
    validated: dict[str, Any] | None,
    done: Callable[[str, str, str, float | None], None],
    t0: float,
) -> None:
    cfg = rec.printed_config
    at = time.monotonic() - t0
    if cfg is None:
        done("1.1", "failed", "the config RLinf printed at start-up is not valid JSON", at)
        return
    n = (cfg.get("cluster") or {}).get("num_nodes")
    done(
        "1.1",
        "passed" if n == 1 else "failed",
        f"the config RLinf loaded has cluster.num_nodes {n!r}",
        at,
    )
    if validated is not None:
        diffs = differences(fingerprint(validated), fingerprint(cfg))
        done(
            "1.2",
            "passed" if not diffs else "failed",
            "the settings RLinf ran with equal the validated ones"
            if not diffs
            else "the run differs from the validated config: " + "; ".join(diffs[:5]),
            at,
        )


def _scheduled(
    adapter: Adapter, rec: RunRecord, st: _State, expected_node: str | None
) -> tuple[bool, str] | None:
    pod = st.pod
    if pod is None:
        return None
    if pod.reason in FATAL_REASONS:
        return False, f"pod {pod.name} is {pod.phase}: {pod.reason}: {pod.message or ''}".strip()
    if pod.phase == "Pending" and not pod.node:
        return None
    if pod.phase == "Pending":
        return None  # bound, container not started yet
    pods = _safe(lambda: adapter.pods(rec.ref), [pod])  # type: ignore[arg-type]
    if len(pods) != 1:
        return False, f"{len(pods)} Pods for one Worker: {', '.join(p.name for p in pods)}"
    if expected_node and pod.node != expected_node:
        return False, f"pod {pod.name} runs on {pod.node}, expected {expected_node}"
    return True, f"one Pod, {pod.name}, on node {pod.node}"


SETTLE_SECONDS = 10.0


def _settle(obs: Observation, st: _State, rec: RunRecord) -> None:
    """Once the log has ended, wait for the Pod's final status: it carries the exit code."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while not (st.pod and (st.pod.terminal or st.pod.reason in FATAL_REASONS)):
        item = obs.next(deadline - time.monotonic())
        if item is None:
            return
        if item.kind == "pod" and item.pod is not None:
            st.pod = item.pod
        elif item.kind == "log" and item.line is not None:
            rec.log.append(item.line)
        elif item.kind == "event" and item.event is not None:
            rec.events.append(item.event)


def _worker_over(st: _State) -> bool:
    """The Worker can print nothing more: its log ended, or it can never start."""
    return st.ended or (st.pod is not None and st.pod.reason in FATAL_REASONS)


def _pod_text(pod: PodStatus | None) -> str:
    if pod is None:
        return "no Pod status"
    parts = [f"pod {pod.name} {pod.phase}"]
    if pod.reason:
        parts.append(pod.reason)
    if pod.exit_code is not None:
        parts.append(f"exit code {pod.exit_code}")
    if pod.message:
        parts.append(pod.message)
    return ", ".join(parts)


def _timeout_message(phase: str, timeouts: dict[str, float], st: _State) -> str:
    name = TIMEOUT_OF[phase]
    return f"nothing after {timeouts[name]:.0f} s (timeouts.{name}); {_pod_text(st.pod)}"


def _fail(
    done: Callable[[str, str, str, float | None], None], check: str, message: str, t0: float
) -> _Failed:
    done(check, "failed", message, time.monotonic() - t0)
    return _Failed(check, message)


def _confirm_output(
    adapter: Adapter,
    rec: RunRecord,
    obs: Observation,
    st: _State,
    t0: float,
    timeouts: dict[str, float],
    located: tuple[Store, str] | str,  # the store and key prefix, or why there is none
    baseline: dict[str, tuple[int, float | None]] | None,
    done: Callable[[str, str, str, float | None], None],
    delete_after: bool,
) -> None:
    assert rec.ref is not None
    if isinstance(located, str):
        raise _fail(done, "6.5", located, t0)
    store, prefix = located
    deadline = time.monotonic() + timeouts["output"]
    report: CheckpointReport | None = None
    worker_over = st.pod is not None and st.pod.terminal
    while True:
        report = _try_verify(store, prefix, baseline)
        if report is not None and report.ok:
            break
        if worker_over:
            break
        if time.monotonic() >= deadline:
            found = f": {report.summary()}" if report is not None else ""
            raise _fail(
                done,
                "6.5",
                f"no intact checkpoint at {store.describe()}/{prefix} after "
                f"{timeouts['output']:.0f} s (timeouts.output){found}",
                t0,
            )
        # Wait for the Worker to change or a short relist interval, whichever comes first.
        until = min(deadline, time.monotonic() + STORE_RELIST_SECONDS)
        while time.monotonic() < until:
            item = obs.next(until - time.monotonic())
            if item is None:
                break
            if item.kind == "log" and item.line is not None:
                rec.log.append(item.line)
            elif item.kind == "pod" and item.pod is not None and item.pod.terminal:
                # Terminal, not merely the end of the log: a target reports it only once the
                # Worker's files are flushed to their mounts.
                worker_over = True
                rec.fault_at = item.at - t0
    rec.checkpoint = report
    where = f"{store.describe()}/{prefix}".rstrip("/")
    if report is None or not report.ok:
        what = report.summary() if report is not None else "nothing listed"
        raise _fail(
            done, "6.5", f"the Worker ended and {where} holds no intact checkpoint: {what}", t0
        )
    rec.durations["output"] = time.monotonic() - t0
    if delete_after:
        adapter.delete(rec.ref)
        again = _try_verify(store, prefix, baseline)
        rec.checkpoint_after_delete = again
        if again is None or not again.ok:
            what = again.summary() if again is not None else "nothing listed"
            raise _fail(
                done,
                "6.5",
                f"{where} is no longer readable after the Worker was deleted: {what}",
                t0,
            )
    done(
        "6.5",
        "passed",
        f"{where}: global_step_{report.latest_step} intact ({', '.join(report.formats)}), "
        "readable again after the Worker was gone"
        if delete_after
        else "",
        time.monotonic() - t0,
    )


def _try_verify(
    store: Store, prefix: str, baseline: dict[str, tuple[int, float | None]] | None
) -> CheckpointReport | None:
    try:
        report = verify_checkpoints(store, prefix, baseline=baseline)
    except StoreError:
        return None
    return report
