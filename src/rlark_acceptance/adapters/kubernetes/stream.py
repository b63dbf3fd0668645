"""Reading a Kubernetes API event by event: list-then-watch loops, log following, retries.

Used by the ``kubernetes`` adapter. Every request goes through ``call``: transient failures
(connection refused / reset, HTTP 429 and 5xx) are retried with backoff; a 4xx is an answer
and is raised at once. With a ``Reach`` (one per adapter), retries go on for as long as the
API server has been unanswering for less than its bound (``timeouts.apiServer``), and past
it a request fails at once with ``ApiUnreachable``: an outage of a few seconds (an API
server restarted) is ridden out, one that lasts is named as such. Long-lived responses
(watches, followed logs) are registered with a ``Stopper``, whose ``stop()`` shuts their
sockets down so a thread blocked reading one returns at once instead of at its next event.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_when_event_set,
    wait_exponential,
)
from tenacity.stop import stop_base

from rlark_acceptance.adapters.base import Event, PodStatus, TargetUnreachable
from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.kubernetes.logcursor import stamp_key
from rlark_acceptance.model.job import ROLE_LABEL

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
# An API server that has just come back answers 401 / 403 until its authentication and
# RBAC caches are loaded: refusals this soon after an outage are retried, not verdicts.
RECOVERY_SECONDS = 15.0
MAX_ATTEMPTS = 5
# A watch request is closed by the server after this long and re-opened from the last
# resourceVersion seen, so a watch never silently outlives a dead connection for long.
WATCH_SECONDS = 240

Item = dict[str, Any]


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUS
    # MaxRetryError, ProtocolError (reset, premature end), NewConnectionError...
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError)


class ApiUnreachable(TargetUnreachable):
    """The API server has not answered for longer than its bound (``timeouts.apiServer``)."""


class Reach:
    """Since when the API server has not answered, shared by every request of one adapter:
    an answer from any of them (an error status too) clears it."""

    def __init__(self, server: str, bound: float, clock: Clock = SYSTEM) -> None:
        self.server = server
        self.bound = bound
        self.clock = clock
        self._since: float | None = None
        self._back_at: float | None = None
        self._last: BaseException | None = None
        self._lock = threading.Lock()

    def answered(self) -> None:
        with self._lock:
            if self._since is not None:
                self._back_at = self.clock.monotonic()
            self._since = None

    def recovering(self) -> bool:
        """The API server came back moments ago (its caches may still be loading)."""
        with self._lock:
            back = self._back_at
        return back is not None and self.clock.monotonic() - back < RECOVERY_SECONDS

    def transient(self, exc: BaseException) -> bool:
        """Retried: a transport error, 429 / 5xx, or a refusal while the server recovers."""
        if is_transient(exc):
            return True
        if isinstance(exc, ApiException) and exc.status in (401, 403):
            self.answered()
            return self.recovering()
        return False

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            if self._since is None:
                self._since = self.clock.monotonic()
            self._last = exc

    def down_for(self) -> float:
        with self._lock:
            return 0.0 if self._since is None else self.clock.monotonic() - self._since

    @property
    def lost(self) -> bool:
        return self._since is not None and self.down_for() >= self.bound

    def error(self) -> ApiUnreachable:
        last = self._last
        why = f": {_short(last)}" if last is not None else ""
        return ApiUnreachable(
            f"the Kubernetes API server {self.server} is unreachable: no answer for "
            f"{self.down_for():.0f} s (timeouts.apiServer is {self.bound:.0f} s){why}"
        )


def _short(exc: BaseException) -> str:
    """The innermost reason of a urllib3 error ("Connection refused"), else the error."""
    reason = getattr(exc, "reason", None)
    while reason is not None and getattr(reason, "reason", None) is not None:
        reason = reason.reason
    text = str(reason if isinstance(reason, BaseException) else exc)
    if isinstance(exc, ApiException):
        text = f"HTTP {exc.status} {exc.reason}"
    return text.split(": ", 1)[-1][:200] if "object at 0x" in text else text[:200]


class _unreachable_past_bound(stop_base):
    def __init__(self, reach: Reach) -> None:
        self.reach = reach

    def __call__(self, retry_state: Any) -> bool:
        return self.reach.lost


def call(
    fn: Callable[..., Any],
    *args: Any,
    stop: threading.Event | None = None,
    reach: Reach | None = None,
    **kw: Any,
) -> Any:
    """``fn(*args, **kw)``, retried on transient failures only: at most MAX_ATTEMPTS times,
    or with ``reach``, until the API server has been unreachable past its bound (then
    ``ApiUnreachable``; a request made after that is tried once)."""
    until: stop_base = (
        stop_after_attempt(MAX_ATTEMPTS) if reach is None else _unreachable_past_bound(reach)
    )
    if stop is not None:
        until = until | stop_when_event_set(stop)

    def note(state: Any) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if reach is not None and exc is not None and is_transient(exc):
            reach.failed(exc)

    retrying = Retrying(
        retry=retry_if_exception(is_transient if reach is None else reach.transient),
        stop=until,
        wait=wait_exponential(multiplier=0.2, max=2.0),
        after=note,
        reraise=True,
    )
    try:
        result = retrying(fn, *args, **kw)
    except Exception as e:
        if reach is not None and is_transient(e) and reach.lost:
            raise reach.error() from e
        raise
    if reach is not None:
        reach.answered()
    return result


def get_json(
    fn: Callable[..., Any],
    *args: Any,
    stop: threading.Event | None = None,
    reach: Reach | None = None,
    **kw: Any,
) -> Item:
    """One API answer as the server's JSON (camelCase keys, as ``kubectl -o json`` shows)."""

    def once() -> Item:
        resp = fn(*args, _preload_content=False, **kw)
        try:
            data: Item = json.loads(resp.data)
            return data
        finally:
            resp.release_conn()

    result: Item = call(once, stop=stop, reach=reach)
    return result


def api_message(exc: ApiException) -> str:
    """The API server's own message (``Job.rlark.io "X" is invalid: ...``)."""
    try:
        body = json.loads(exc.body or "")
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    except (TypeError, ValueError):
        pass
    return f"HTTP {exc.status} {exc.reason}"


def api_refusal(exc: ApiException) -> str:
    """A refusal as the API server states it: status, reason and message
    (``403 Forbidden: jobs.rlark.io is forbidden: User "..." cannot create resource ...``)."""
    reason = exc.reason
    try:
        body = json.loads(exc.body or "")
        if isinstance(body, dict) and body.get("reason"):
            reason = str(body["reason"])
    except (TypeError, ValueError):
        pass
    message = api_message(exc)
    if message == f"HTTP {exc.status} {exc.reason}":
        return message
    return f"{exc.status} {reason}: {message}"


class Stopper:
    """One stop flag for a set of threads, able to interrupt their blocking reads."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._open: set[Any] = set()
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        return self.event.is_set()

    def register(self, resp: Any) -> bool:
        """Track a streamed response; False (and closed) if already stopped."""
        with self._lock:
            if not self.event.is_set():
                self._open.add(resp)
                return True
        resp.close()
        return False

    def unregister(self, resp: Any) -> None:
        with self._lock:
            self._open.discard(resp)
        with contextlib.suppress(Exception):  # a stream already closed
            resp.close()

    def stop(self) -> None:
        with self._lock:
            self.event.set()
            responses = list(self._open)
        for resp in responses:
            with contextlib.suppress(Exception):  # a stream already closed
                interrupt(resp)


def interrupt(resp: Any) -> None:
    """End a read of ``resp`` blocked in another thread: its socket's read side is shut
    down, and the reader gets what was queued, then the end.

    Not through ``HTTPResponse.shutdown``: on a TLS socket that is ``ssl.SSLSocket.shutdown``,
    which drops the TLS state first, so the reader got the bytes still queued as they came,
    ciphertext read as the log (a chunk length of TLS record bytes; a stamp of binary bytes
    that stopped a rotated file's reader). The kernel's socket is shut down under the TLS
    state instead, which reads what is queued and then meets the end."""
    sock = getattr(getattr(resp, "_sock_shutdown", None), "__self__", None)
    if isinstance(sock, socket.socket):
        socket.socket.shutdown(sock, socket.SHUT_RD)
    else:
        resp.shutdown()


class LineSplitter:
    """A streamed body's whole lines, chunk by chunk; what follows the last newline is kept
    in ``rest`` until its newline arrives (or the body ends without one)."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes | str) -> list[str]:
        self._buf += chunk if isinstance(chunk, bytes) else str(chunk).encode()
        *done, self._buf = self._buf.split(b"\n")
        return b"\n".join(done).decode("utf-8", "replace").split("\n") if done else []

    @property
    def rest(self) -> str:
        return self._buf.decode("utf-8", "replace")


# A read of a chunked body takes what the connection holds, up to this much.
READ_BYTES = 1 << 16


def received(resp: Any) -> Iterator[bytes]:
    """A streamed body's bytes as they arrive: at each read, every HTTP chunk that has.

    The API server relays a followed log as the kubelet writes it, an HTTP chunk per line
    (about 130 bytes), and urllib3's ``stream`` hands on one chunk at a time: the lines of a
    loud Worker then went one at a time through the cursor, the segments and Step 6's queue,
    which held the observation to 0.4–0.7 of ``kubectl logs -f``'s rate. So a chunked body
    is decoded here, from the connection's buffered reader, and every chunk the connection
    holds at a read is handed on in one piece (hundreds of lines where the reader is behind,
    one where it keeps up). A body that is not plainly chunked (sized, compressed, a test's
    stand-in, or read from already) is read through urllib3."""
    raw = getattr(resp, "_fp", None)
    fp = getattr(raw, "fp", None)
    plain = (
        isinstance(raw, http.client.HTTPResponse)
        and raw.chunked
        and raw.chunk_left is None
        and hasattr(fp, "read1")
        and not resp.headers.get("content-encoding")
    )
    if not plain:
        yield from resp.stream(amt=None, decode_content=False)
        return
    try:
        yield from _dechunked(fp, getattr(getattr(fp, "raw", None), "_sock", None))
    except TimeoutError as e:  # as urllib3 raises them: the readers' handling is one
        raise urllib3.exceptions.ReadTimeoutError(None, "", "Read timed out.") from e  # type: ignore[arg-type]
    except OSError as e:
        raise urllib3.exceptions.ProtocolError(f"Connection broken: {e!r}", e) from e


def _dechunked(fp: Any, sock: socket.socket | None) -> Iterator[bytes]:
    """The data of the HTTP chunks read from ``fp`` (over ``sock``), up to the last chunk:
    what has arrived, joined, at each read. A read goes on while ``sock`` has more at once,
    so a Worker's burst is handed on in one piece, not a line at a time."""
    buf, at = b"", 0
    while True:
        data = fp.read1(READ_BYTES)
        if not data:
            raise urllib3.exceptions.ProtocolError("Connection broken: the body ended early")
        while sock is not None and len(data) < READ_BYTES and _ready(sock):
            more = fp.read1(READ_BYTES - len(data))
            if not more:
                break  # the end: met by the next read
            data += more
        buf = buf[at:] + data
        at, size = 0, len(buf)
        parts: list[bytes] = []
        while (eol := buf.find(b"\r\n", at)) != -1:
            head = buf[at:eol].partition(b";")[0]
            try:
                n = int(head, 16)
            except ValueError:
                raise urllib3.exceptions.ProtocolError(
                    f"Connection broken: invalid chunk length {head[:20]!r}"
                ) from None
            if n == 0:  # the last chunk (its trailers are left: the stream is closed)
                if parts:
                    yield b"".join(parts)
                return
            end = eol + 2 + n
            if end + 2 > size:
                break  # the rest of this chunk is still to come
            parts.append(buf[eol + 2 : end])
            at = end + 2
        if parts:
            yield b"".join(parts)


def _ready(sock: socket.socket) -> bool:
    """Whether a read of ``sock`` returns at once: bytes decrypted and not yet read, or
    bytes the kernel holds."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    return bool(select.select([sock], [], [], 0)[0])


def batches(resp: Any, split: LineSplitter | None = None) -> Iterator[list[str]]:
    """The lines of a streamed body as they arrive, a batch per read (``received``): a log
    is handed on as it comes, not a line at a time. A last line without newline comes last,
    unless the caller gave ``split``, in whose ``rest`` it stays for the caller to judge: a
    log file that ends without one was cut inside a line the runtime wrote in parts. That
    caller also gets an empty batch for a read that ended no line: the stream is giving a
    line stored in parts, so its reader is not idle at its file's end."""
    own = split or LineSplitter()
    for chunk in received(resp):
        done = own.feed(chunk)
        if done or (split is not None and chunk):
            yield done
    if split is None and own.rest:
        yield [own.rest]


def lines(resp: Any) -> Iterator[str]:
    """The lines of a streamed body as they arrive (a last line without newline too)."""
    for batch in batches(resp):
        yield from batch


def list_then_watch(
    list_fn: Callable[..., Any],
    args: tuple[Any, ...],
    on_item: Callable[[str, Item], None],
    stopper: Stopper,
    on_list: Callable[[list[Item]], None] | None = None,
    reach: Reach | None = None,
    **kw: Any,
) -> None:
    """``on_item("SYNC", obj)`` for every object listed (then ``on_list(items)``), then
    ``on_item(type, obj)`` per watch event (ADDED, MODIFIED, DELETED) from the list's
    resourceVersion; the list is taken again (and replayed) when the server answers 410
    Gone. A watch broken by the transport is opened again from the last resourceVersion
    seen: with ``reach``, for as long as the API server is unreachable for less than its
    bound (then ``ApiUnreachable``); without, MAX_ATTEMPTS times in a row. Returns once
    stopped."""
    watch = _Watch(list_fn, args, on_item, stopper, reach, kw)
    rv: str | None = None
    while not stopper.stopped:
        if rv is None:
            rv = watch.listed(on_list)
            if rv is None:
                return
        try:
            resp = watch.opened(rv)
        except _Gone:
            rv = None
            continue
        if resp is None:
            return
        rv = watch.read(resp, rv)


class _Gone(Exception):
    """The watch's resourceVersion is too old (410 Gone): the list is taken again."""


@dataclass
class _Watch:
    """One list-then-watch loop's requests: the list, a watch opened from a
    resourceVersion, and a watch's stream read to its end."""

    list_fn: Callable[..., Any]
    args: tuple[Any, ...]
    on_item: Callable[[str, Item], None]
    stopper: Stopper
    reach: Reach | None
    kw: dict[str, Any]
    broken: int = 0  # watch streams broken in a row without delivering anything

    def listed(self, on_list: Callable[[list[Item]], None] | None) -> str | None:
        """Every object listed, replayed as SYNC: the list's resourceVersion (None: stopped)."""
        stopper = self.stopper
        try:
            listing = get_json(
                self.list_fn, *self.args, stop=stopper.event, reach=self.reach, **self.kw
            )
        except Exception:
            if stopper.stopped:
                return None
            raise
        items = listing.get("items") or []
        for obj in items:
            self.on_item("SYNC", obj)
        if on_list is not None:
            on_list(items)
        return None if stopper.stopped else str(listing["metadata"]["resourceVersion"])

    def opened(self, rv: str) -> Any:
        """A watch from ``rv``, registered with the stopper (None: stopped; ``_Gone``)."""
        stopper = self.stopper
        try:
            resp = call(
                self.list_fn,
                *self.args,
                watch=True,
                resource_version=rv,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_SECONDS,
                # The server ends a healthy watch first; this bounds one that hangs.
                _request_timeout=(10, WATCH_SECONDS + 30),
                _preload_content=False,
                stop=stopper.event,
                reach=self.reach,
                **self.kw,
            )
        except ApiException as e:
            if e.status == 410:
                raise _Gone from e
            raise
        except Exception:
            if stopper.stopped:
                return None
            raise
        return resp if stopper.register(resp) else None

    def read(self, resp: Any, rv: str) -> str | None:
        """The watch's events handed on until its stream ends, breaks or is stopped: the
        last resourceVersion seen (None: too old, list again)."""
        stopper = self.stopper
        try:
            for line in lines(resp):
                if not line.strip():
                    continue
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    if obj.get("code") == 410:  # our resourceVersion is too old: list again
                        return None
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                self.broken = 0
                if ev.get("type") != "BOOKMARK":
                    self.on_item(str(ev.get("type")), obj)
        except Exception as e:  # closed under it by a stop; HTTP, OS, transient: watched again
            if stopper.stopped:
                return rv
            if not isinstance(e, urllib3.exceptions.HTTPError | OSError) and not is_transient(e):
                raise
            self.broken += 1
            if self.reach is not None:
                self.reach.failed(e)  # the next request tells whether the server is back
                if self.reach.lost:
                    raise self.reach.error() from e
            elif self.broken >= MAX_ATTEMPTS:
                raise
            stopper.event.wait(min(2.0, 0.2 * 2**self.broken))
        finally:
            stopper.unregister(resp)
        return rv


# --- the API's objects, reduced to the protocol's ---------------------------------------------
def _epoch(value: Any) -> float:
    if not value:
        return 0.0
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def container_started(pod: Item) -> bool:
    """Whether the Pod has a container log to read: one is running or has terminated."""
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        if "running" in state or "terminated" in state or "terminated" in last:
            return True
    return False


def worker_over(pod: Item) -> bool:
    """The Pod can run nothing more: phase Succeeded / Failed, or every container has
    terminated and none will be restarted (restartPolicy Never)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    statuses = status.get("containerStatuses") or []
    never = (pod.get("spec") or {}).get("restartPolicy") == "Never"
    return (
        never and bool(statuses) and all("terminated" in (cs.get("state") or {}) for cs in statuses)
    )


def finished_at(pod: Item) -> float | None:
    """When the Pod's last container finished (seconds since the epoch, the node's clock,
    whole seconds), if every container says so."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ends = [((cs.get("state") or {}).get("terminated") or {}).get("finishedAt") for cs in statuses]
    if not ends or not all(isinstance(end, str) for end in ends):
        return None
    try:
        return max(stamp_key(str(end))[0] for end in ends)
    except ValueError:  # not a stamp: said to be unknown
        return None


def pod_status(pod: Item) -> PodStatus:
    """A Pod as ``kubectl get pod -o json`` shows it, reduced to what Step 6 reads."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    reason: str | None = status.get("reason")  # Evicted, NodeLost...
    message: str | None = status.get("message")
    exit_code: int | None = None
    restarts = 0
    # Init containers first: one that cannot pull keeps the Pod from ever starting.
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    for cs in statuses:
        restarts += int(cs.get("restartCount") or 0)
        state, last = cs.get("state") or {}, cs.get("lastState") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason") and (reason is None or reason == "PodInitializing"):
            reason, message = waiting["reason"], waiting.get("message")
            # CrashLoopBackOff: the exit code is the last run's.
            if "terminated" in last:
                exit_code = last["terminated"].get("exitCode")
        elif terminated and reason is None:
            reason, message = terminated.get("reason"), terminated.get("message")
            exit_code = terminated.get("exitCode")
    for cond in status.get("conditions") or []:
        # The scheduler's verdict: "0/3 nodes are available: 1 Insufficient nvidia.com/gpu..."
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            reason, message = cond.get("reason") or reason, cond.get("message") or message
        # Why the Pod is being taken away (EvictionByEvictionAPI, PreemptionByScheduler,
        # DeletionByTaintManager...): the cause, where its containers' exit (143: SIGTERM)
        # is only how it ended.
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            reason, message = cond.get("reason") or reason, cond.get("message") or message
    phase = str(status.get("phase") or "Pending")
    if phase not in ("Succeeded", "Failed") and worker_over(pod):
        # Every container has terminated and none restarts: the kubelet reports the phase
        # this implies at its next sync (up to a second later); the Pod is over now.
        codes = [
            ((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
            for cs in status.get("containerStatuses") or []
        ]
        phase = "Succeeded" if all(c == 0 for c in codes) else "Failed"
    return PodStatus(
        name=str(meta.get("name", "")),
        node=spec.get("nodeName") or None,
        phase=phase,
        reason=reason,
        message=message,
        restarts=restarts,
        exit_code=exit_code,
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        image_id=_image_id(spec, status),
    )


def _image_id(spec: Item, status: Item) -> str | None:
    """The image ID the runtime ran the Pod's first container with (the Worker's; a
    sidecar is not the Job's image), once its status has one."""
    containers: list[Item] = spec.get("containers") or [{}]
    first = containers[0].get("name")
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") == first and cs.get("imageID"):
            return str(cs["imageID"])
    return None


def event_of(ev: Item) -> Event:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    source = ev.get("source") or {}
    when = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp")
    return Event(
        involved=f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        reason=str(ev.get("reason") or ""),
        message=str(ev.get("message") or ev.get("note") or ""),
        type=str(ev.get("type") or "Normal"),
        source=str(source.get("component") or ev.get("reportingComponent") or ""),
        time=_epoch(when or (ev.get("metadata") or {}).get("creationTimestamp")),
    )


def is_role(pod: PodStatus, role: str | None) -> bool:
    return role is None or pod.labels.get(ROLE_LABEL) == role
