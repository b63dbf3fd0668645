"""The engine of Step 6: the one loop every phase is decided in, the clock, the adapter's
calls and the run record.

A phase waits on the target's observation stream under its own deadline
(``timeouts.<bound>``). Each happening (a Pod change, log lines, an Event, the end of the
log) updates the observed state first, then the phases read along (1.1 / 1.2) are asked;
then the phase waited for decides: passed, failed, keep waiting, or a probe the engine
performs (its answer goes into the state) before it is asked again. When the Worker can
print nothing more (its log ended, or its Pod is terminal, or stuck for good), the phase
that is waiting fails at once with its cause instead of running into its deadline. Time
comes from ``clock``, so a scripted stream drives every transition in milliseconds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, assert_never

from rlark_acceptance.adapters.base import (
    HARNESS_SOURCE,
    LOG_LOST,
    Adapter,
    CleanupRefused,
    Event,
    EventSeen,
    Happening,
    JobRef,
    LogLines,
    SubmitRejected,
    TargetUnreachable,
)
from rlark_acceptance.adapters.clock import clock_of
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.profile import KeepOutputs
from rlark_acceptance.model.timeouts import Bound, Timeouts
from rlark_acceptance.rlinf.failures import MOUNT_IO_ERROR
from rlark_acceptance.run.step6 import diagnostics, removals
from rlark_acceptance.run.step6.location import Location, Unlocated, output_store
from rlark_acceptance.run.step6.observed import (
    Observed,
    Reading,
    pod_over,
    pod_text,
    unreachable_text,
)
from rlark_acceptance.run.step6.phase import (
    DeleteWorker,
    Failed,
    ListJobs,
    ListPods,
    Passed,
    Phase,
    Probe,
    ReadOutputs,
    ReadScalars,
    ReadTensors,
    Submit,
)
from rlark_acceptance.run.step6.readings import checkpoints_at, scalars_at
from rlark_acceptance.run.step6.record import PhaseResult, Resumed, RunRecord
from rlark_acceptance.secrets import Redactor
from rlark_acceptance.storage import (
    ObjectNotFound,
    Removable,
    Store,
    StoreError,
    StoreUnavailable,
    unanswered,
    written_since,
)
from rlark_acceptance.storage import verify_checkpoints as _verify

# After the Worker's log ended, how long to wait for the Pod status that carries the exit code.
SETTLE_SECONDS = 10.0
# After a terminal Pod, how long its log stream may still deliver lines in flight before the
# phase is decided without them (a stream that never closes must not hold the verdict).
TAIL_GRACE_SECONDS = 1.0
# How often a waiting phase reports progress (elapsed time, Pod state, latest log line);
# also the longest the engine waits on the stream before asking the phase again.
PROGRESS_SECONDS = 1.0
# Past its deadline, a phase still waits while the log's lines, written before that deadline,
# keep arriving at most this far apart: the target serves the log slower than the Worker
# wrote it, and the verdict is on what the Worker did in time, not on how fast it is read.
READING_BEHIND_SECONDS = 5.0
# A phase asking for more probes than this without deciding is a bug in the phase.
MAX_PROBES = 8
# While the Worker's run script runs and its log has been silent this long, the stores of its
# object-storage mounts are asked whether they answer, as often; two answers missed in a row
# (each after the store's bounded retries) fail the phase waited for naming the store: a
# Worker whose mount's store died hangs on it (s3fs retries) or dies of EIO, and either way
# the verdict must name the store, not the RLinf config.
STORE_WATCH_SECONDS = 5.0
STORE_MISSES = 2
# The record's warning that what appeared at a shared output location was left there.
SHARED_LEFT = "OutputsLeft"


class PhaseFailed(Exception):
    """A phase went red; its result is in the record already."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


class Stream(Protocol):
    """What the engine reads from the target: ``Observation`` or a scripted stand-in."""

    def next(self, timeout: float) -> Happening | None: ...

    def close(self) -> None:
        """The engine reads no more: what is still queued, and what comes, is dropped."""
        ...


@dataclass(frozen=True)
class Progress:
    """One tick of a waiting phase, for a live display."""

    check: str
    bound: Bound
    elapsed: float
    timeout: float
    pod: str
    last_line: str | None


class Engine:
    """Runs phases against one submission: ``run(phase)`` returns once it passed (recorded)
    or raises ``PhaseFailed`` once it failed (recorded)."""

    def __init__(
        self,
        adapter: Adapter,
        record: RunRecord,
        timeouts: Timeouts,
        *,
        signal: re.Pattern[str] | None,
        steps: re.Pattern[str] | None = None,
        read_along: Sequence[Phase] = (),
        clock: Callable[[], float] | None = None,
        on_phase: Callable[[PhaseResult], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        resume: bool = False,
        diagnostics: Path | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.adapter = adapter
        # Where a red run's diagnostics bundle goes (None: it writes none), redacted as the
        # rest of the run's record.
        self.diagnostics = diagnostics
        self.redactor = redactor if redactor is not None else Redactor(os.environ)
        self.bundled = False
        self.rec = record
        self.timeouts = timeouts
        # The adapter's unless given: the happenings it stamps are judged on their own clock.
        self.clock = clock = clock_of(adapter).monotonic if clock is None else clock
        self.on_phase = on_phase
        self.on_progress = on_progress
        self.read_along = list(read_along)
        # ``resume``: the Worker is a resumed run (T.4), whose log says where it resumed from
        self.seen = Observed(clock(), signal, record.log, steps, resume=resume)
        self.stream: Stream | None = None
        self.settled = False  # the Worker's final state was collected (``settle``)
        self.worker_deleted = False
        self.watched = clock()  # when the mounts' stores were last asked (``store_down``)
        self.misses: dict[str, int] = {}
        self._stores: list[tuple[str, str, Store]] | None = None

    # --- the record -----------------------------------------------------------------------
    def since(self, at: float | None = None) -> float:
        return self.seen.since(self.clock() if at is None else at)

    def done(self, check: str, passed: bool, message: str) -> None:
        result = PhaseResult(check, "passed" if passed else "failed", message, self.since())
        self.rec.phases[check] = result
        self.seen.decided[check] = self.clock()
        if not passed:
            self.seen.failed.add(check)
        if self.on_phase:
            self.on_phase(result)

    def fail(self, phase: Phase, message: str) -> PhaseFailed:
        store = self.store_of_first_error(message)
        if store:  # right after the error it explains
            quoted = f'"{self.seen.log.cause.cause.quote}"'  # type: ignore[union-attr]
            message = message.replace(quoted, quoted + store, 1)
        self.done(phase.check, False, message)
        return PhaseFailed(phase.check, message)

    def store_of_first_error(self, message: str) -> str:
        """When the failure quotes an I/O error of the Worker on a mounted path, the store
        behind that mount, asked now: the Worker's error then says the store stopped
        answering, which the verdict names (not the RLinf config)."""
        cause = self.seen.log.cause.cause
        if cause is None or cause.kind is not MOUNT_IO_ERROR or not cause.mount_path:
            return ""
        if f'"{cause.quote}"' not in message:
            return ""
        try:
            found = output_store(self.adapter, self.rec.job, cause.mount_path)
        except Exception as exc:  # any adapter's failure to name the store: said as it is
            return f"; the store behind {cause.mount_path} could not be named: {exc}"
        if found is None:
            return f"; {cause.mount_path} lies under no mount of the Job"
        store, prefix = found
        try:
            store.list(prefix + "/" if prefix else "")
        except ObjectNotFound:
            pass  # it answers: the folder is just not there (any more)
        except StoreUnavailable as exc:
            return (
                f"; the store behind {cause.mount_path} ({store.describe()}) does not answer: {exc}"
            )
        except StoreError as exc:
            return f"; the store behind {cause.mount_path} ({store.describe()}) refuses: {exc}"
        return (
            f"; the store behind {cause.mount_path} ({store.describe()}) answers again now: it "
            "stopped answering the Worker for a while"
        )

    def conclude(self, phase: Phase, verdict: Passed | Failed) -> None:
        """Record ``verdict``; raise ``PhaseFailed`` if it is a failure."""
        seen = self.seen
        if isinstance(verdict, Failed):
            at = verdict.at if verdict.at is not None else seen.over_at
            if at is not None:
                self.rec.fault_at = seen.since(at)
            raise self.fail(phase, verdict.message)
        now = self.clock()
        if phase.bound is not None:
            at = verdict.at if verdict.at is not None else now
            self.rec.durations[phase.bound.value] = seen.since(at)
        if verdict.at is not None:
            self.rec.lags[phase.check] = now - verdict.at
        self.done(phase.check, True, verdict.message)

    # --- deciding -------------------------------------------------------------------------
    def decide(self, phase: Phase) -> Passed | Failed | None:
        """The phase's verdict on the state now, after the probes it asks for."""
        for _ in range(MAX_PROBES):
            self.seen.now = self.clock()
            verdict = phase.verdict(self.seen)
            if verdict is None or isinstance(verdict, Passed | Failed):
                return verdict
            self.probe(verdict)
        raise AssertionError(f"phase {phase.check} asked for {MAX_PROBES} probes without deciding")

    def probe(self, probe: Probe) -> None:
        """Look at the world as the phase asked; the answer goes into the state."""
        seen, rec, adapter = self.seen, self.rec, self.adapter
        if isinstance(probe, Submit):
            try:
                seen.ref = rec.ref = adapter.submit(rec.job, probe.manifest)
            except (SubmitRejected, TargetUnreachable) as exc:
                seen.refused = exc
            else:
                rec.durations["submit"] = self.since()
                seen.submitted = rec.submitted_at = datetime.now(UTC)
            return
        assert seen.ref is not None, f"{type(probe).__name__} before the submission"
        if isinstance(probe, ListJobs):
            try:
                seen.listed = adapter.list_jobs(seen.ref.namespace)
            except TargetUnreachable as exc:
                seen.listed = exc
        elif isinstance(probe, ListPods):
            try:
                seen.pods = adapter.pods(seen.ref)
            except Exception as exc:  # any adapter's failure: the phase decides without it
                seen.pods = exc
        elif isinstance(probe, ReadOutputs):
            self.read_outputs(probe)
        elif isinstance(probe, DeleteWorker):
            self.delete_worker()
        elif isinstance(probe, ReadScalars):
            loc = probe.loc
            began = self.clock()
            found = scalars_at(loc.store, loc.prefix, loc.where, began, baseline=loc.baseline)
            seen.scalars = rec.scalars = replace(found, took=self.clock() - began)
        elif isinstance(probe, ReadTensors):
            loc = probe.loc
            seen.tensors = rec.checkpoints = checkpoints_at(
                loc.store,
                loc.prefix,
                loc.where,
                self.clock(),
                baseline=loc.baseline,
                submitted=seen.submitted,
            )
        else:
            assert_never(probe)

    def read_outputs(self, probe: ReadOutputs) -> None:
        loc, seen, rec = probe.loc, self.seen, self.rec
        try:
            report = _verify(loc.store, loc.prefix, baseline=loc.baseline)
            # Gone after the Worker's deletion: was it the harness itself?
            gone = probe.again and not report.ok
            removed = removed_by_harness(loc, seen.submitted) if gone else None
            reading = Reading(self.clock(), report, removed_by=removed)
        except StoreError as exc:
            reading = Reading(self.clock(), error=exc)
        if probe.again:
            seen.outputs_again, rec.checkpoint_after_delete = reading, reading.report
        else:
            seen.outputs, rec.checkpoint = reading, reading.report

    def delete_worker(self) -> None:
        seen, rec = self.seen, self.rec
        assert seen.ref is not None
        self.keep_evidence()  # a run red before 6.5 (a training check): before it is gone
        try:
            self.adapter.delete(seen.ref)
        except TargetUnreachable as exc:
            seen.deleted = exc
        except Exception as exc:  # refused (RBAC), or any adapter's own failure: a warning
            refused = (
                exc
                if isinstance(exc, CleanupRefused)
                else CleanupRefused(f"{type(exc).__name__}: {exc}")
            )
            seen.deleted = refused
            rec.worker_left = f"the Worker could not be deleted: {refused}"
            rec.warnings.append(rec.worker_left)
        else:
            seen.deleted = self.worker_deleted = True

    # --- waiting --------------------------------------------------------------------------
    def run(self, phase: Phase) -> None:
        """Decide ``phase``: at once if it has no bound, else waiting until its deadline."""
        seen = self.seen
        if phase.bound is None:
            verdict = self.decide(phase)
            assert verdict is not None, f"phase {phase.check} has no bound and did not decide"
            self.conclude(phase, verdict)
            return
        if self.stream is None:
            assert seen.ref is not None, f"phase {phase.check} waits on a Job not submitted"
            self.stream = self.adapter.observe(seen.ref)
        timeout = self.timeouts[phase.bound]
        start = self.clock()
        deadline = start + timeout
        ticked = start
        while True:
            verdict = self.decide(phase)
            if verdict is None and seen.lost is not None:
                # Not the Worker's fault: what stopped answering is named, and what may be left.
                self.rec.fault_at = seen.since(seen.happened_at)
                raise self.fail(phase, unreachable_text(seen.lost))
            if verdict is None and (down := self.store_down()) is not None:
                self.rec.fault_at = seen.since(self.clock())
                raise self.fail(phase, down)
            if verdict is None and seen.worker_over():
                if not self.settled:
                    self.settle()
                    verdict = self.decide(phase)  # lines that were still in flight
                why = phase.over(seen) if verdict is None else None
                if why is not None:
                    if seen.over_at is not None:
                        self.rec.fault_at = seen.since(seen.over_at)
                    raise self.fail(phase, why)
            if verdict is not None:
                self.conclude(phase, verdict)
                return
            now = self.clock()
            if now >= deadline and not self.reading_behind(deadline):
                raise self.fail(phase, phase.timed_out(seen, timeout))
            self.next(min(deadline - now, PROGRESS_SECONDS) if now < deadline else 0.5)
            if self.on_progress is not None and self.clock() - ticked >= PROGRESS_SECONDS:
                ticked = self.clock()
                self.progress(phase, timeout, ticked - start)

    def store_down(self) -> str | None:
        """Why the phase waited for cannot go on: a store behind the Worker's mounts stopped
        answering while its log is silent (``STORE_WATCH_SECONDS``); None while all answer."""
        seen, now = self.seen, self.clock()
        if seen.log.script_line is None or seen.worker_over():
            return None
        silent_since = seen.log_at if seen.log_at is not None else seen.t0
        if now - silent_since < STORE_WATCH_SECONDS or now - self.watched < STORE_WATCH_SECONDS:
            return None
        self.watched = now
        for name, path, store in self.watched_stores():
            error = unanswered(store)
            if error is None:
                self.misses.pop(name, None)
                continue
            self.misses[name] = self.misses.get(name, 0) + 1
            if self.misses[name] >= STORE_MISSES:
                return (
                    f"the store behind mount {name} ({path}, {store.describe()}) does not "
                    f"answer [{MOUNT_IO_ERROR.id}]: {error}; the Worker has printed nothing "
                    f"for {now - silent_since:.0f} s; {seen.pod_text()}"
                )
        return None

    def watched_stores(self) -> list[tuple[str, str, Store]]:
        """The stores of the Job's object-storage mounts (named once, on first use)."""
        if self._stores is None:
            self._stores = []
            worker = self.rec.job.worker
            for m in worker.mounts if worker is not None else []:
                if m.type != "objectStorage" or not m.container_path:
                    continue
                try:
                    self._stores.append(
                        (m.name, m.container_path, self.adapter.store_for(self.rec.job, m))
                    )
                except Exception:  # any adapter's: a store it cannot name is not watched
                    continue
        return self._stores

    def reading_behind(self, deadline: float) -> bool:
        """The log is still being read up to lines the Worker wrote before ``deadline``,
        and its lines keep arriving (the target's stamps, on a clock kept in sync)."""
        seen = self.seen
        if seen.written is None or seen.read_at is None:
            return False
        return seen.written < deadline and self.clock() - seen.read_at < READING_BEHIND_SECONDS

    def next(self, timeout: float) -> Happening | None:
        """The next happening within ``timeout`` into the state, the record and the phases
        read along."""
        assert self.stream is not None, "observe() first"
        item = self.stream.next(max(0.0, timeout))
        if item is None:
            return None
        self.seen.take(item)
        if isinstance(item, EventSeen):
            self.rec.events.append(item.event)
        if isinstance(item, LogLines):
            if self.rec.printed_config is None:
                self.rec.printed_config = self.seen.log.config
            self.read_along_now()
        return item

    def read_along_now(self) -> None:
        """Ask the phases read along; record a verdict that is new (a printed config that was
        not JSON fails 1.1 until a later one parses)."""
        self.seen.now = self.clock()
        for phase in self.read_along:
            verdict = phase.verdict(self.seen)
            assert not isinstance(verdict, Probe), f"{phase.check} is read along: no probes"
            if verdict is None:
                continue
            passed = isinstance(verdict, Passed)
            known = self.rec.phases.get(phase.check)
            if known is None or (known.status == "passed", known.message) != (
                passed,
                verdict.message,
            ):
                self.done(phase.check, passed, verdict.message)

    def progress(self, phase: Phase, timeout: float, elapsed: float) -> None:
        if self.on_progress is not None and phase.bound is not None:
            self.on_progress(
                Progress(
                    phase.check,
                    phase.bound,
                    elapsed,
                    timeout,
                    pod_text(self.seen.pod),
                    self.rec.log.last,
                )
            )

    def settle(self) -> None:
        """The Worker is over: collect what is still in flight before deciding.

        After the end of the log, the Pod's final status (it carries the exit code); after a
        terminal Pod whose log is still open, the lines in flight, for a short grace only.
        """
        self.settled = True
        settle_until = self.clock() + SETTLE_SECONDS
        tail_until = self.clock() + TAIL_GRACE_SECONDS
        while True:
            pod = self.seen.pod
            final = pod_over(pod)
            if final and self.seen.ended:
                return
            if final:
                assert pod is not None
                ran = pod.terminal or pod.exit_code is not None
                until = tail_until if ran else self.clock()  # never started: no log to wait for
            else:
                until = settle_until
            left = until - self.clock()
            if left <= 0:
                return
            if self.next(left) is None and self.clock() >= until:
                return

    # --- after the verdict: what the record keeps of the run ------------------------------
    def collect(self) -> None:
        """What the Worker's log showed, into the record: its last step, its first error."""
        log, rec = self.seen.log, self.rec
        rec.step, rec.step_total, rec.first_cause = log.steps.step, log.steps.total, log.cause.cause

    def interrupted(self) -> None:
        """SIGINT / SIGTERM ended the run: what was not decided was not reached for that."""
        self.rec.interrupted = True

    def skip(self, check: str, why: str) -> None:
        """``check`` was not decided, and why (a decided one keeps its verdict)."""
        self.rec.phases.setdefault(check, PhaseResult(check, "skipped", why))

    def finish(self, outputs: Location | Unlocated | None, policy: KeepOutputs) -> bool:
        """The evidence into the record, what was not reached said so, and the outputs this
        run wrote under ``outputs`` settled (None: the run keeps its Worker, and them). True
        when they should go and could not go now (see ``settle_outputs``)."""
        rec = self.rec
        self.collect()
        rec.worker = self.seen.pod
        lost = [e for e in rec.events if e.reason == LOG_LOST]
        # Before the record's Events are read again: a Job the interrupt removed has none
        # left, and the bundle keeps those the run saw.
        self.keep_evidence()
        if rec.ref is not None:
            own = [e for e in rec.events if e.source == HARNESS_SOURCE or e.reason == LOG_LOST]
            self.evidence(rec.ref, own)
        self.log_lost(lost)
        self.not_reached()
        if outputs is None:
            return False
        return self.settle_outputs(outputs, policy)

    def evidence(self, ref: JobRef, own: list[Event]) -> None:
        """The Job's Pods and Events as the target has them now, with the observation's own
        (``own``: lines lost, the read-ahead, a watch that failed). A target that cannot say
        is a warning of the record: it never hides the verdict."""
        rec = self.rec
        try:
            rec.pods = self.adapter.pods(ref)
        except Exception as exc:  # any adapter's failure: the verdict stands, the record says so
            rec.pods_unread = f"the Worker's Pods could not be read for the record: {exc}"
            rec.warnings.append(rec.pods_unread)
            rec.pods = []
        try:
            rec.events = self.adapter.events(ref) + own
        except Exception as exc:  # as above; the Events seen while the run watched are kept
            rec.warnings.append(f"the Job's Events could not be read for the record: {exc}")

    def log_lost(self, lost: list[Event]) -> None:
        """Lines of the Worker's log the target rotated away unread: a warning of the record,
        and the reason a check read from the log was not reached (the printed config may have
        been among them)."""
        rec = self.rec
        if not lost:
            return
        more = f" ({len(lost) - 1} more such gaps)" if len(lost) > 1 else ""
        rec.warnings.append(f"{LOG_LOST}: {lost[0].message}{more}")
        if rec.printed_config is None and not rec.interrupted:
            why = (
                f"not reached: the config RLinf printed at start-up was not read; the target "
                f"rotated lines of the Worker's log away before they were read ({LOG_LOST}, "
                "see the record's warnings)"
            )
            for check in (CheckId.LOADED_NUM_NODES_IS_ONE, CheckId.VALIDATED_CONFIG_KEPT):
                self.skip(check, why)

    def not_reached(self) -> None:
        """Every check the run expected and did not decide: skipped, naming the earliest
        failure (or the interrupt) that kept it from being reached."""
        rec = self.rec
        failed = rec.earliest_failure
        why = f"not reached: {failed.check} failed" if failed else "not reached"
        if rec.interrupted:
            why = "not reached: the run was interrupted"
        for check in rec.expected:
            self.skip(check, why)

    def settle_outputs(self, loc: Location | Unlocated, policy: KeepOutputs) -> bool:
        """Remove or keep what this run wrote under ``loc``; never hides the run's verdict.

        ``policy`` is ``target.keepOutputs``: ``onFailure`` (the default: removed after a
        passing run, kept and named in the record after a failing one), ``always`` (never
        removed) or ``never`` (removed after every run). Only a location of the run's own
        (``Location.owner``) is ever cleaned, and there only what was not listed before
        submission: at a location shared with other writers what appeared during the run
        may be a neighbour's or another team's, so nothing is removed and a warning says
        what was left, where, and what to do.

        A Worker not deleted yet is deleted first: still writing, it would write them again.
        True when what this run wrote should go and could not go now (the Worker could not be
        deleted, the store refused): the run's journal is then left to the next run of the
        location, which removes them (``journal.Journal.hand_on``)."""
        rec = self.rec
        if isinstance(loc, Unlocated) or loc.baseline is None:
            return False  # no location, or its earlier content is unknown: touch nothing
        try:
            written = written_by_run(loc)
            if not written:
                return False
            keep = policy == "always" or (policy == "onFailure" and not rec.passed)
            if keep or not isinstance(loc.store, Removable):
                by = "written by this run" if loc.owner else "that appeared there during this run"
                rec.outputs_kept = f"{loc.where} ({len(written)} objects {by})"
                return False
            if loc.owner is None:
                self.shared_left(loc, len(written))
                return False
            if rec.ref is not None and not self.worker_deleted:
                self.keep_evidence()
                self.delete(rec.ref, "the Worker", warn=False)
            if rec.worker_left is not None:
                rec.outputs_kept = (
                    f"{loc.where} ({len(written)} objects written by this run; kept: the "
                    "Worker could not be deleted and may still write; the next run of this "
                    "location removes them)"
                )
                return True
            removals.log(loc.identity, written, by=loc.owner, why="its own outputs, settled")
            loc.store.delete(written)
            rec.outputs_removed = len(written)
        except StoreError as exc:
            rec.outputs_kept = f"{loc.where} (not removed: {exc}; the next run of it tries again)"
            return True
        return False

    def shared_left(self, loc: Location, count: int) -> None:
        """What appeared at a shared location during the run, left there and said so."""
        rec = self.rec
        rec.outputs_kept = (
            f"{loc.where} ({count} objects appeared there during this run; not removed: the "
            "location is shared with other writers, so which are this run's cannot be proven)"
        )
        rec.warnings.append(
            f"{SHARED_LEFT}: {count} object(s) that appeared at {loc.where} during this run "
            "were left there: the location is not the run's own (no run id of its own in its "
            "path), so they cannot be told from other writers' objects. Remove them by hand, "
            "or put runInfo.paths.output on a writable objectStorage mount: each run then "
            "writes under a prefix of its own, which the harness removes after it"
        )

    def delete(self, ref: JobRef, what: str, *, warn: bool = True) -> None:
        """Delete a Worker after its verdict; one the target keeps is said in the record
        (``worker_left``, the first such; a warning too with ``warn``)."""
        rec = self.rec
        try:
            self.adapter.delete(ref)
        except Exception as exc:  # refused, unreachable, or any adapter's: said in the record
            left = f"{what} could not be deleted: {exc}"
            rec.worker_left = rec.worker_left or left
            if warn:
                rec.warnings.append(left)

    def keep_evidence(self) -> None:
        """A red (or interrupted) run's diagnostics bundle, written once, while the Worker is
        still there if it is: what the target holds of it, and what the record kept. A
        bundle that cannot be written is a warning of the record, never the verdict."""
        rec = self.rec
        failed = rec.earliest_failure or next(
            (p for p in rec.phases.values() if p.status == "failed"), None
        )
        if self.diagnostics is None or self.bundled or not (failed or rec.interrupted):
            return
        self.bundled = True
        why = "the run was interrupted" if failed is None else f"{failed.check} failed"
        pod = self.seen.pod.name if self.seen.pod is not None else None
        found = None
        if rec.ref is not None and not self.worker_deleted:
            found = diagnostics.gather(self.adapter, rec.ref, pod, rec.events)
        said = failed.message if failed is not None else None
        try:
            rec.diagnostics = diagnostics.write(
                self.diagnostics, rec, self.seen.log.cause.cause, found, self.redactor, why, said
            )
        except OSError as exc:
            rec.warnings.append(f"the diagnostics bundle could not be written: {exc}")

    def resumed(self, resumed: Resumed) -> None:
        """T.4's second submission was made: the record holds it from now on."""
        self.rec.resumed = resumed


def removed_by_harness(loc: Location, since: datetime | None) -> str | None:
    """The harness's own removals that reached ``loc`` since the run was submitted, said."""
    found = removals.removed_at(loc.identity, since.timestamp() if since is not None else 0.0)
    if not found:
        return None
    more = f" (and {len(found) - 1} more such removals)" if len(found) > 1 else ""
    return found[-1].text() + more


def written_by_run(loc: Location) -> list[str]:
    """The keys under ``loc`` this run wrote: not listed before it was submitted, or changed
    since (``loc.baseline``)."""
    try:
        now = loc.store.list(loc.prefix + "/" if loc.prefix else "")
    except ObjectNotFound:
        now = []
    return [o.key for o in written_since(now, loc.baseline)]
