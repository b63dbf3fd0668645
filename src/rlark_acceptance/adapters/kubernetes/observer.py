"""The threads of one ``observe()`` on the ``kubernetes`` target: Pods, Events, the Worker's log.

- Pods and Events: list-then-watch, resumed from the last resourceVersion after any break
  for as long as the API server is unreachable for less than ``timeouts.apiServer``; past
  it, the observation is ``lost()``, naming the API server and what may be left.
- The Worker's log: followed with the kubelet's stamps (``logcursor.py``), so a stream
  broken by the API server or the kubelet resumes where it stopped, no line lost or
  doubled; while the follow is behind the Worker, every file the kubelet rotates gets a
  reader of its own before it is rotated past (``logfiles.py``). What each reader does
  next is the log machine's decision (``logmachine.py``): the threads here only read,
  feed it what they got and carry its actions out. When the API server answers but the
  node's kubelet does not for ``KUBELET_SECONDS``, the observation is ``lost()``, naming
  the node and its state.
- The Worker's terminal Pod status is held back until its log has been read to the end:
  a Worker that printed a lot just before it ended is judged on every line it printed,
  not on the lines that happened to be read when its Pod turned Succeeded. The log is read
  as a stream, line by line; nothing of it is kept here.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Protocol

import urllib3
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import (
    HARNESS_SOURCE,
    LOG_LOST,
    LOG_READ_AHEAD,
    Event,
    JobRef,
    Observation,
    PodStatus,
    TargetUnreachable,
)
from rlark_acceptance.adapters.clock import clock_of
from rlark_acceptance.adapters.kubernetes.logcursor import (
    Gap,
    open_log,
    stamp_key,
)
from rlark_acceptance.adapters.kubernetes.logfiles import PROBE_BYTES, Chain, continued
from rlark_acceptance.adapters.kubernetes.logmachine import (
    KUBELET_SECONDS,
    Begin,
    Broke,
    Ended,
    Failed,
    Finish,
    Held,
    Lines,
    LogMachine,
    Lost,
    NodeLost,
    Open,
    Opened,
    Over,
    Probe,
    Probed,
    Put,
    Quit,
    Raise,
    Read,
    Refused,
    Resume,
    Shut,
    Step,
    Tick,
    Wait,
)
from rlark_acceptance.adapters.kubernetes.logmachine import Event as LogEvent
from rlark_acceptance.adapters.kubernetes.stream import (
    Item,
    LineSplitter,
    Reach,
    Stopper,
    api_message,
    batches,
    container_started,
    event_of,
    finished_at,
    get_json,
    interrupt,
    is_role,
    list_then_watch,
    pod_status,
    worker_over,
)
from rlark_acceptance.model.job import JOB_NAME_LABEL


class Watching(Protocol):
    """What an observer reads through, and tells: the Kubernetes adapter (named by what it
    does here, so the adapter imports the observer and never the other way round)."""

    api: Any
    core: Any
    reach: Reach
    lost_nodes: set[str]

    def left_behind(self, ref: JobRef) -> str: ...

    def _remember(self, ref: JobRef, *pods: str) -> set[str]: ...

    def _involves(self, ref: JobRef, ev: Item, pods: set[str]) -> bool: ...


# The log machine is given the time this often.
TICK_SECONDS = 0.25


class Observer:
    """The threads of one ``observe()``: Pods, Events, and the Worker's log."""

    def __init__(
        self,
        adapter: Watching,
        ref: JobRef,
        obs: Observation,
        stopper: Stopper,
        head_role: str | None,
    ) -> None:
        self.adapter, self.ref, self.obs, self.stopper = adapter, ref, obs, stopper
        self.head_role = head_role
        self.clock = clock_of(adapter)  # the run's: the log's timings, the probes' times
        self.not_ours: set[str] = set()
        self.following: str | None = None
        self.node: str | None = None  # the Worker's node, once bound
        self._lock = threading.Lock()
        # The Worker is over (terminal Pod or container). Its observation ends once its log
        # has been read to the end: the newest reader, once idle on the current file, stops
        # waiting on its stream and reads the rest in one request (_cut_when_idle).
        self._over = False
        self._ended = False
        self._lost = False
        self._log_done = False
        self._held: PodStatus | None = None  # the terminal status, until the log is read
        # The log's reading, once it is followed: its machine, fed under its lock, and what
        # its readers' threads hold (their open streams, the errors they met).
        self._machine: LogMachine | None = None
        self._log_lock = threading.Lock()
        self._streams: dict[int, Any] = {}
        self._errors: dict[int, BaseException] = {}
        self._blind = False

    def start(self) -> None:
        sel = f"{JOB_NAME_LABEL}={self.ref.name}"
        core = self.adapter.core
        ns = (self.ref.namespace,)
        pods, events = core.list_namespaced_pod, core.list_namespaced_event
        reach = self.adapter.reach
        self._thread(
            "pods",
            list_then_watch,
            pods,
            ns,
            self._on_pod,
            self.stopper,
            reach=reach,
            label_selector=sel,
        )
        self._thread(
            "events", list_then_watch, events, ns, self._on_event, self.stopper, reach=reach
        )

    def _thread(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        def run() -> None:
            try:
                fn(*args, **kw)
            except TargetUnreachable as e:
                if not self.stopper.stopped:
                    self._gone(e)
            except ApiException as e:
                if self.stopper.stopped:
                    return
                if e.status == 403:
                    self._forbidden(e)
                else:
                    self._failed(what, e)
            except Exception as e:  # reported in the stream, where the observer looks
                if not self.stopper.stopped:
                    self._failed(what, e)

        cleanup.spawn(f"k8s-{what}-{self.ref.name}", run)

    def _gone(self, cause: TargetUnreachable) -> None:
        """The API server or the node stopped answering past its bound: said once."""
        with self._lock:
            if self._lost:
                return
            self._lost = True
        left = cause.left or self.adapter.left_behind(self.ref)
        self.obs.lost(TargetUnreachable(str(cause), left))

    def _forbidden(self, e: ApiException) -> None:
        """The harness's credentials lack a permission: nothing more can be observed, so
        the Worker's observation ends now, naming the verb and resource the API refused."""
        with self._lock:
            self._blind = True  # later Pod states must not hide the refusal
        self.obs.put_pod(
            PodStatus(
                name=f"{self.ref.name}-(not readable)",
                node=None,
                phase="Unknown",
                reason="Forbidden",
                message=api_message(e),
            )
        )
        self._end_once()

    def _failed(self, what: str, e: Exception) -> None:
        self.obs.put_event(
            Event(
                f"job/{self.ref.name}",
                "ObserveFailed",
                f"kubernetes adapter: {what}: {type(e).__name__}: {e}",
                "Warning",
                HARNESS_SOURCE,
            )
        )

    def _on_pod(self, kind: str, pod: Item) -> None:
        if kind == "DELETED" or self._blind:
            return
        status = pod_status(pod)
        self.adapter._remember(self.ref, status.name)
        head = is_role(status, self.head_role)
        over = head and worker_over(pod)
        with self._lock:
            start = self.following is None and head and container_started(pod)
            if start:
                self.following = status.name
                self._machine = LogMachine(self.clock.monotonic(), self.clock.wall())
            if head and status.node:
                self.node = status.node
            # Held back while the log is still being read: put once it has been.
            hold = over and self.following is not None and not self._log_done
            if hold:
                self._held = status
        if not hold:
            self.obs.put_pod(status)
        if start:
            self._thread("log", self._follow)
        if over:
            self._worker_over(finished_at(pod))

    def _end_once(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self.obs.end()

    def _log_read(self) -> None:
        """The Worker's log has been read to its end (or can be read no more): its held
        terminal status goes out, then the end."""
        with self._lock:
            self._log_done = True
            held, self._held = self._held, None
        if held is not None:
            self.obs.put_pod(held)
        self._end_once()

    def _worker_over(self, finished: float | None) -> None:
        """End the observation once the Worker can print nothing more."""
        with self._lock:
            if self._over:
                return
            self._over = True
            following = self.following
        if following is None:  # its container never started: there is no log to read
            self._end_once()
            return
        self._feed(Over(finished))

    def _on_event(self, kind: str, ev: Item) -> None:
        if kind == "DELETED":  # Events expire; that is not news
            return
        inv = ev.get("involvedObject") or {}
        name = str(inv.get("name", ""))
        known = self.adapter._remember(self.ref)
        if inv.get("kind") == "Pod" and name not in known and name not in self.not_ours:
            # An Event can arrive before its Pod's watch event: ask the Pod itself.
            ours: bool | None
            try:
                pod = get_json(self.adapter.core.read_namespaced_pod, name, self.ref.namespace)
                labels = (pod.get("metadata") or {}).get("labels") or {}
                ours = labels.get(JOB_NAME_LABEL) == self.ref.name
            except ApiException as e:
                ours = False if e.status == 404 else None  # gone: it cannot become ours
            except (urllib3.exceptions.HTTPError, OSError):
                ours = None
            if ours:
                known = self.adapter._remember(self.ref, name)
            elif ours is False:
                self.not_ours.add(name)
            # Unknown (the API server did not answer): asked again at the Pod's next Event,
            # never remembered as another Job's, whose Events would then be dropped for good.
        if self.adapter._involves(self.ref, ev, known):
            self.obs.put_event(event_of(ev))

    # --- the Worker's log -------------------------------------------------------------------
    # The decisions are the log machine's (``logmachine.py``); these threads only do the
    # blocking reads, feed what they got in under ``_log_lock``, and carry its actions out.
    def _feed(self, ev: LogEvent) -> Step | None:
        """Feed ``ev`` to the log machine and carry out its actions; the step it gives the
        thread that fed it (None: a reader reads on)."""
        machine = self._machine
        assert machine is not None
        with self._log_lock:
            acts = machine.feed(ev, self.clock.monotonic(), self.clock.wall())
        step: Step | None = None
        for act in acts:
            match act:
                case Put():
                    self._put(machine, act)
                case Lost(gap):
                    self._rotated(gap)
                case Shut(k):
                    resp = self._streams.get(k)
                    with contextlib.suppress(Exception):  # a stream already closed
                        if resp is not None:
                            interrupt(resp)
                case Read(k):
                    self._thread("log-file", self._reader, k)
                case NodeLost(k):
                    error = self._errors.pop(k)
                    assert isinstance(error, ApiException)
                    self._gone(self._node_lost(error))
                case Finish(k):
                    machine.segments[k].spool.end()  # wakes the one putting it
                    step = act
                case _:
                    step = act
        return step

    def _put(self, machine: LogMachine, put: Put) -> None:
        """The first segment's lines go out as they are read; a later one's wait in its spool
        until the segments before it are put (or go out at once, if it has been). Meanwhile
        the reader is held, not idle: a Step 6 busy elsewhere is not the file's silence."""
        seg = machine.segments[put.seg]
        self._feed(Held(put.seg, True))
        try:
            if put.seg == 0 or not seg.spool.keep(put.texts, put.written, self.stopper.event):
                self.obs.put_lines(put.texts, put.written)
        finally:
            self._feed(Held(put.seg, False))

    def _reader(self, k: int) -> None:
        """Segment ``k``'s reader: its stream opened, read and opened again as the machine
        says, until its segment is read."""
        try:
            step = self._feed(Begin(k))
            while step is not None and not isinstance(step, Finish):
                if self.stopper.stopped:
                    break
                match step:
                    case Wait(_, seconds):
                        self.stopper.event.wait(seconds)
                        step = self._feed(Resume(k))
                    case Probe():
                        step = self._feed(self._current_first(k))
                    case Raise():
                        raise self._errors.pop(k)
                    case Failed():
                        step = self._broken_off(k)
                    case Open():
                        step = self._stream(step)
        finally:
            if self.stopper.stopped:
                self._feed(Quit(k))
            assert self._machine is not None
            self._machine.segments[k].spool.end()

    def _broken_off(self, k: int) -> Step | None:
        """A transport failure reading the log: given up past the API server's bound (the
        observation then lost), else read again after a wait."""
        reach = self.adapter.reach
        reach.failed(self._errors.pop(k))
        if reach.lost:
            self._gone(reach.error())
            self._feed(Quit(k))
            return Finish(k)
        self.stopper.event.wait(min(2.0, 0.2 + reach.down_for() / 4))
        return self._feed(Resume(k))

    def _stream(self, op: Open) -> Step | None:
        """One request of a reader and its stream, read to its end, its break, or the step
        the machine gives meanwhile."""
        k, pod, reach = op.seg, self.following, self.adapter.reach
        assert pod is not None
        try:
            resp = open_log(
                self.adapter.api,
                self.ref.namespace,
                pod,
                follow=op.follow,
                since=op.since,
                timeout=(10, None if op.follow else 60),
            )
        except ApiException as e:
            reach.answered()
            self._errors[k] = e
            return self._feed(Refused(k, e.status, reach.transient(e)))
        except (urllib3.exceptions.HTTPError, OSError) as e:
            self._errors[k] = e
            return Failed(k)
        reach.answered()
        if not self.stopper.register(resp):
            return Finish(k)
        self._streams[k] = resp
        # A text after the stream's last newline is a line still being written (read again by
        # the next request), or, at a rotated file's end, the head of the line the Worker was
        # writing when the kubelet rotated its log (the runtime's logger for the old file
        # ends with it as a partial entry; the next segment's first line is its rest).
        split = LineSplitter()
        try:
            step = self._feed(Opened(k))
            if step is not None:
                return step
            try:
                for batch in batches(resp, split):
                    step = self._feed(Lines(k, batch))
                    if step is not None:
                        return step
            except Exception as e:  # shut under it by a stop or a cut; HTTP/OS errors retried
                if self.stopper.stopped:
                    return Finish(k)
                self._errors[k] = e
                transport = isinstance(e, urllib3.exceptions.HTTPError | OSError)
                return self._feed(Broke(k, split.rest, transport))
            return self._feed(Ended(k, split.rest))
        finally:
            self._streams.pop(k, None)
            self.stopper.unregister(resp)

    def _current_first(self, asker: int | None) -> Probed:
        """The current file's first line, asked with ``limitBytes`` (None if the request
        failed), for the log machine: the reader ``asker``'s question, or the ticks'."""
        pod = self.following
        assert pod is not None
        sent, body = self.clock.wall(), None
        try:
            resp = open_log(
                self.adapter.api,
                self.ref.namespace,
                pod,
                follow=False,
                since=None,
                timeout=(5, 10),
                limit=PROBE_BYTES,
            )
            try:
                body = resp.data.decode("utf-8", "replace")
            finally:
                resp.release_conn()
        except (ApiException, urllib3.exceptions.HTTPError, OSError):
            body = None  # the readers meet the same API server and kubelet, and say so
        return Probed(asker, sent, self.clock.wall(), body)

    def _ticks(self) -> None:
        """Time for the log machine: readers at their rotated files' ends are shut, and the
        current file is asked for while the newest reader is behind, or idle once the
        Worker is over."""
        while not self.stopper.event.wait(TICK_SECONDS) and not self._log_done:
            if isinstance(self._feed(Tick()), Probe):
                self._feed(self._current_first(None))

    def _follow(self) -> None:
        """The log in order: the follow, then each file a reader of its own took while
        the follow was behind (``logfiles.py``)."""
        machine = self._machine
        assert machine is not None
        said = 0  # the files read ahead that a LogReadAhead Event counted
        try:
            self._thread("log-ticks", self._ticks)
            self._reader(0)
            k = 1
            while k < len(machine.segments) and not self.stopper.stopped:
                prev, seg = machine.segments[k - 1], machine.segments[k]
                if k + 1 == len(machine.segments):
                    # The newest file's lines come next: the follow has caught up with the
                    # files read ahead. Said now: Step 6 often decides, and closes the stream,
                    # before the Worker's log ends, and an Event put after that is dropped.
                    said = self._read_ahead(machine.chain, said)
                joined = False
                for batch, written in seg.spool.drain(self.stopper.event):
                    if not joined:
                        with self._log_lock:
                            batch, joined = continued(prev, seg, batch), True
                    self.obs.put_lines(batch, written)
                if not joined:
                    with self._log_lock:
                        rest = continued(prev, seg, [])
                    if rest:  # no line of its own
                        self.obs.put_lines(rest, None)
                k += 1
        finally:
            if not self.stopper.stopped:
                self._read_ahead(machine.chain, said)
                self._log_read()

    def _read_ahead(self, chain: Chain, said: int) -> int:
        """Says how many of the log's files were read ahead of the follow so far, and the
        most their spools held on disk at once (bounded: their readers wait past it), unless
        an Event said as many (``said``); returns the count said."""
        files = len(chain.segments) - 1
        if files <= said:
            return said
        self.obs.put_event(
            Event(
                f"job/{self.ref.name}",
                LOG_READ_AHEAD,
                f"{files} of the Worker's log files were read while the follow was behind "
                f"them; their lines waited on disk, at most {chain.spools.peak / 1e6:.1f} MB "
                f"at once (bounded at about {2 * chain.spools.bound / 1e6:.0f} MB)",
                "Normal",
                HARNESS_SOURCE,
            )
        )
        return files

    def _rotated(self, gap: Gap) -> None:
        seconds = stamp_key(gap.before)[0] - stamp_key(gap.after)[0]
        self.obs.put_event(
            Event(
                f"job/{self.ref.name}",
                LOG_LOST,
                "the kubelet rotated the Worker's log before it was read: lines written "
                f"between {gap.after} and {gap.before} ({seconds:.0f} s) may be missing "
                "(the kubelet serves only the current file; containerLogMaxSize)",
                "Warning",
                HARNESS_SOURCE,
            )
        )

    def _node_lost(self, e: ApiException) -> TargetUnreachable:
        """The node's kubelet does not answer the API server: the node named, with what
        the API server knows of it."""
        node, pod = self.node or "(unknown node)", self.following
        if self.node:
            self.adapter.lost_nodes.add(self.node)
        state = ""
        try:
            # list, not get: the harness's RBAC file grants list on nodes (pre-flight).
            listing = get_json(self.adapter.core.list_node, field_selector=f"metadata.name={node}")
        except Exception as exc:  # any: the node's state is said to be unknown, and why
            listing = {}
            state = f"; its state could not be read ({type(exc).__name__}: {str(exc)[:120]})"
        if listing:
            item: Item = next(iter(listing.get("items") or []), {})
            for cond in (item.get("status") or {}).get("conditions") or []:
                if cond.get("type") != "Ready":
                    continue
                age = ""
                beat = cond.get("lastHeartbeatTime")
                if beat:
                    with contextlib.suppress(ValueError):
                        age = f", last status {self.clock.wall() - stamp_key(beat)[0]:.0f} s ago"
                why = ": ".join(str(x) for x in (cond.get("reason"), cond.get("message")) if x)
                state = f"; node Ready={cond.get('status')}" + (f" ({why})" if why else "") + age
        return TargetUnreachable(
            f"node {node}: its kubelet stopped answering (the API server, reading pod "
            f"{pod}'s log for {KUBELET_SECONDS:.0f} s: {api_message(e)[:240]}){state}",
            f"pod {pod} may still run on node {node}; {self.adapter.left_behind(self.ref)}",
        )
