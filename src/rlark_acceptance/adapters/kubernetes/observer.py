"""The threads of one ``observe()`` on the ``kubernetes`` target: Pods, Events, the Worker's log.

- Pods and Events: list-then-watch, resumed from the last resourceVersion after any break
  for as long as the API server is unreachable for less than ``timeouts.apiServer``; past
  it, the observation is ``lost()``, naming the API server and what may be left.
- The Worker's log: followed with the kubelet's stamps (``logcursor.py``), so a stream
  broken by the API server or the kubelet resumes where it stopped, no line lost or
  doubled; while the follow is behind the Worker, every file the kubelet rotates gets a
  reader of its own before it is rotated past (``logfiles.py``). When the API server
  answers but the node's kubelet does not for ``KUBELET_SECONDS``, the observation is
  ``lost()``, naming the node and its state.
- The Worker's terminal Pod status is held back until its log has been read to the end:
  a Worker that printed a lot just before it ended is judged on every line it printed,
  not on the lines that happened to be read when its Pod turned Succeeded. The log is read
  as a stream, line by line; nothing of it is kept here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
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
    LogCursor,
    open_log,
    since_time,
    stamp_key,
)
from rlark_acceptance.adapters.kubernetes.logfiles import (
    FILE_SILENT_SECONDS,
    PROBE_BYTES,
    PROBE_SECONDS,
    Chain,
    Segment,
    continued,
    first_stamp,
)
from rlark_acceptance.adapters.kubernetes.stream import (
    Item,
    LineSplitter,
    Reach,
    Stopper,
    api_message,
    batches,
    container_started,
    event_of,
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


# The API server answers but cannot reach the node's kubelet for this long: the node is
# named as lost (a kubelet restarting takes a second or two).
KUBELET_SECONDS = 5.0
# A Worker that is over and whose newest log reader delivered nothing for this long, on
# the current file: the rest is read in one request (kwok never closes a followed log; a
# kubelet closes it at its next check after the container's end). A reader of a rotated
# file is never cut so: the kubelet closes it at its file's end, or ``Chain.stalled``.
IDLE_SECONDS = 1.0


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
        self._chain: Chain | None = None  # the log's segments, once it is followed
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
                self._chain = Chain(self.clock)
            if head and status.node:
                self.node = status.node
            # Held back while the log is still being read: put once it has been.
            hold = over and self.following is not None and not self._log_done
            if hold:
                self._held = status
        if not hold:
            self.obs.put_pod(status)
        if start:
            assert self._chain is not None
            self._thread("log", self._follow, status.name, self._chain)
        if over:
            self._worker_over()

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

    def _worker_over(self) -> None:
        """End the observation once the Worker can print nothing more."""
        with self._lock:
            if self._over:
                return
            self._over = True
            following = self.following
        if following is None:  # its container never started: there is no log to read
            self._end_once()
            return
        chain = self._chain
        assert chain is not None
        cleanup.spawn(
            f"k8s-log-idle-{self.ref.name}", lambda: self._cut_when_idle(following, chain)
        )

    def _cut_when_idle(self, pod: str, chain: Chain) -> None:
        """The container has exited, so its log is complete: once the newest reader has
        delivered nothing for IDLE_SECONDS, and its file is the current one, it stops
        following and reads the rest at once. Where the current file is a later one (a
        loaded machine held the reader off the CPU while the kubelet rotated), that file
        gets a reader first, and the newest reader goes on to its own file's end. The idle
        time is the reader's own, so lines handed on to a busy Step 6 do not count as
        silence, nor does one reader's quiet cut another."""
        while not self.stopper.stopped and not self._log_done:
            head, idle = chain.idle()
            if idle >= IDLE_SECONDS:
                known, current = self._current_first(pod, chain)
                # Unknown (the API server did not answer) past FILE_SILENT_SECONDS: the
                # reader's own stream is likely down too; its final read says so.
                anyway = not known and idle >= FILE_SILENT_SECONDS
                if (known or anyway) and chain.close_head(head, current, anyway=anyway):
                    with contextlib.suppress(Exception):  # a stream already closed
                        if head.resp is not None:
                            interrupt(head.resp)
                    return
                if known and current is not None:
                    self._new_file(pod, chain, current)
                idle = 0.0
            self.stopper.event.wait(IDLE_SECONDS - idle + 0.05)

    def _current_first(self, pod: str, chain: Chain) -> tuple[bool, str | None]:
        """Whether the current file of the log could be asked for, and the stamp of its
        first line (None if it has none yet). An answer is noted in ``chain.probed`` with its
        request's time: it saw the file current between the two (``Chain.watched``)."""
        sent = self.clock.wall()
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
            return False, None  # the readers meet the same API server and kubelet, and say so
        chain.probed.append((sent, self.clock.wall()))
        return True, first_stamp(body)

    def _new_file(self, pod: str, chain: Chain, stamp: str) -> None:
        """A reader of its own for the file whose first line is stamped ``stamp``, unless the
        newest reader has that line already."""
        seg = chain.add(stamp)
        if seg is not None:
            self._thread("log-file", self._read_file, pod, chain, seg)

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
    def _follow(self, pod: str, chain: Chain) -> None:
        """The log in order: the follow, then each file a reader of its own took while
        the follow was behind (``logfiles.py``)."""
        first = chain.head
        said = 0  # the files read ahead that a LogReadAhead Event counted
        try:
            self._thread("log-files", self._probe_files, pod, chain)
            try:
                self._read_log(pod, chain, first, self.obs.put_lines)
            finally:
                first.finish()
            prev, seg = first, chain.after(first)
            while seg is not None and not self.stopper.stopped:
                if chain.after(seg) is None:
                    # The newest file's lines come next: the follow has caught up with the
                    # files read ahead. Said now: Step 6 often decides, and closes the stream,
                    # before the Worker's log ends, and an Event put after that is dropped.
                    said = self._read_ahead(chain, said)
                joined = False
                for batch, written in seg.spooled(self.stopper.event):
                    if not joined:
                        batch, joined = continued(prev, seg, batch), True
                    self.obs.put_lines(batch, written)
                if not joined and (rest := continued(prev, seg, [])):  # no line of its own
                    self.obs.put_lines(rest, None)
                prev, seg = seg, chain.after(seg)
        finally:
            if not self.stopper.stopped:
                self._read_ahead(chain, said)
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

    def _probe_files(self, pod: str, chain: Chain) -> None:
        """While the log's newest reader is behind, ask for the current file's first line;
        a file that is new gets a reader of its own before the kubelet rotates it past."""
        while not self.stopper.event.wait(PROBE_SECONDS) and not self._log_done:
            for idle in chain.stalled():
                with contextlib.suppress(Exception):  # a stream already closed
                    if idle.resp is not None:
                        interrupt(idle.resp)
            if chain.head.done or not chain.behind():
                continue
            known, stamp = self._current_first(pod, chain)
            if known and stamp is not None:
                self._new_file(pod, chain, stamp)

    def _read_file(self, pod: str, chain: Chain, seg: Segment) -> None:
        def put(lines: list[str], written: float | None) -> None:
            # Read late, after the next file's: put now. Past the spools' bound, waits.
            if not seg.spool(lines, written, self.stopper.event):
                self.obs.put_lines(lines, written)

        try:
            self._read_log(pod, chain, seg, put)
        finally:
            seg.finish()

    def _read_log(
        self,
        pod: str,
        chain: Chain,
        seg: Segment,
        put: Callable[[list[str], float | None], None],
    ) -> None:
        """Put each log line of ``seg`` once, as it is written, until the segment's end or
        the log's.

        A stream that breaks is opened again after the last line delivered; once the
        Worker is over and the stream idle, the rest is read in one request."""
        reach = self.adapter.reach
        cursor = LogCursor(self.clock.wall)
        kubelet_down: float | None = None
        while not self.stopper.stopped and not seg.complete:
            final = seg.final
            cursor.resume()
            try:
                resp = open_log(
                    self.adapter.api,
                    self.ref.namespace,
                    pod,
                    follow=not final,
                    since=cursor.since() or (since_time(seg.stamp) if seg.stamp else None),
                    timeout=(10, 60 if final else None),
                )
            except ApiException as e:
                reach.answered()
                if e.status in (401, 403) and reach.transient(e):
                    self.stopper.event.wait(0.5)  # the API server's RBAC is still loading
                    continue
                if e.status == 403:
                    raise
                if e.status is None or e.status < 500:
                    return  # the Pod is gone (404), or its log cannot be read: said by its status
                # The API server answered; the kubelet behind it did not (or not yet).
                if kubelet_down is None:  # (a scripted clock may well read 0)
                    kubelet_down = self.clock.monotonic()
                if self.clock.monotonic() - kubelet_down >= KUBELET_SECONDS:
                    self._gone(self._node_lost(pod, e))
                    return
                self.stopper.event.wait(0.5)
                continue
            except (urllib3.exceptions.HTTPError, OSError) as e:
                if self._unreachable(e):
                    return
                continue
            reach.answered()
            kubelet_down = None
            if not self.stopper.register(resp):
                return
            seg.resp = resp
            if seg.final and not final:  # cut between the request and now
                seg.resp = None
                self.stopper.unregister(resp)
                continue
            whole = False
            # A text after the stream's last newline is a line still being written (read
            # again by the next request), or, at a rotated file's end, the head of the line
            # the Worker was writing when the kubelet rotated its log (the runtime's logger
            # for the old file ends with it as a partial entry; the next segment's first
            # line is its rest).
            split = LineSplitter()
            try:
                for batch in batches(resp, split):
                    if not self._take(batch, cursor, chain, seg, put):
                        return  # the next file's reader has the rest
                whole = True
            except Exception as e:  # closed under it by a stop or a cut; HTTP/OS errors retried
                if self.stopper.stopped:
                    return
                if seg.complete:
                    self._file_ends(seg, split)
                    return
                if not isinstance(e, urllib3.exceptions.HTTPError | OSError):
                    raise
                if not (seg.final and not final) and self._unreachable(e):
                    return
            finally:
                seg.resp = None
                self.stopper.unregister(resp)
            if whole and self._over and seg.end is None and not seg.final:
                # The kubelet closed the follow at its file's end: the container has exited.
                # A reader that fell behind was on a rotated file, whose end is not the
                # log's: the current file gets a reader of its own; else (that file is its
                # own, or the API server did not answer) this one reads what the current
                # file holds after the last line delivered.
                _, current = self._current_first(pod, chain)
                if not chain.close_head(seg, current) and current is not None:
                    self._new_file(pod, chain, current)
            if (whole and seg.end is not None and self._over) or seg.complete:
                self._file_ends(seg, split)
                return  # closed at its rotated file's end: the next segment has the rest
            if final and whole:
                if split.rest:  # the log's last line, written without a newline
                    self._take([split.rest], cursor, chain, seg, put)
                return  # read to the end of a container that has exited
            if seg.final:
                continue  # read the rest at once
            if whole:
                # Closed before the Worker is known to be over (the API server or kubelet
                # restarting): follow again from the last line.
                self.stopper.event.wait(0.2)

    @staticmethod
    def _file_ends(seg: Segment, split: LineSplitter) -> None:
        """``seg``'s reader is at its file's end: what it read after the last newline is the
        head of the next file's first line (``logfiles.continued`` joins them)."""
        rest = split.rest
        if rest:
            seg.tail = rest.partition(" ")[2] if first_stamp(rest) is not None else rest

    def _take(
        self,
        batch: list[str],
        cursor: LogCursor,
        chain: Chain,
        seg: Segment,
        put: Callable[[list[str], float | None], None],
    ) -> bool:
        """Put the batch's new lines that are ``seg``'s; False once a line of the next
        file's segment is read (this segment is whole)."""
        new, gap = cursor.take_batch(batch, raw=cursor.stamped is not False)
        if gap is not None and not gap.jump:  # a read resumed: later files have own readers
            gap = chain.within(seg, gap)
        if gap is not None and not (gap.jump and chain.watched(gap)):
            self._rotated(gap)
        ours = True
        if cursor.stamped and new:
            n, gap = chain.take(seg, new)
            if gap is not None:
                self._rotated(gap)
            ours = n == len(new)
            new = [line.partition(" ")[2] for line in new[:n]]
        if new:
            with chain.handing(seg):
                put(new, seg.written)
        return ours

    def _unreachable(self, e: BaseException) -> bool:
        """A transport failure reading the log: True (and lost) past the API server's bound."""
        reach = self.adapter.reach
        reach.failed(e)
        if reach.lost:
            self._gone(reach.error())
            return True
        self.stopper.event.wait(min(2.0, 0.2 + reach.down_for() / 4))
        return False

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

    def _node_lost(self, pod: str, e: ApiException) -> TargetUnreachable:
        """The node's kubelet does not answer the API server: the node named, with what
        the API server knows of it."""
        node = self.node or "(unknown node)"
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
