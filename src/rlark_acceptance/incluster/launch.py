"""The command's side of an in-cluster run: the runner Job submitted to the profile's
cluster, its log streamed here, its record fetched back into the reports directory.

Every path ends with nothing of the run left on the cluster: the runner Job deleted (its
ConfigMap is owned by it; what the runner submitted is removed by the runner's own SIGTERM
clean-up, and owned by its Pod besides), the record's objects removed once fetched. SIGINT
or SIGTERM here deletes the runner Job, waits until its Pod is gone (its clean-up done),
then fetches the record the runner still wrote (``interrupted``) and exits 2, as the suite
itself does. A runner that cannot start (a Secret it references is missing, an image the
node cannot pull) is a usage error: one line with the kubelet's own reason, exit 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.kubernetes.adapter import connect
from rlark_acceptance.adapters.kubernetes.stream import ApiUnreachable, Reach, call
from rlark_acceptance.incluster import bundle as bundling
from rlark_acceptance.incluster import manifests, record
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.profile import Profile, load_profile

# Reasons a container never starts; the kubelet's message says what is missing.
NOT_STARTING = {
    "CreateContainerConfigError",
    "CreateContainerError",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
}
POLL_S = 0.5
# The runner's own record files: removed here before the fetched ones arrive.
RECORD_PARTS = ("run-summary.json", "junit.xml", "allure-results")


class Interrupted(Exception):
    pass


# How long the listing of the runner's Pods after its end may take (one request).
PODS_ASK_S = 5.0

# The API server's errors the launch meets: a refusal, an outage past its bound, a transport
# failure of a request not retried (a deletion that meets one may leave the runner: said).
_API_ERRORS = (ApiException, ApiUnreachable, urllib3.exceptions.HTTPError, OSError)


class Sink(Protocol):
    """Where the runner's terminal output goes (a terminal, or a release's line reader)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


@dataclass
class Outcome:
    """What the command learnt: the exit status, the runner's name, where its record is,
    and the seconds of each part (the bench reads them)."""

    status: int
    name: str = ""
    record: str = ""  # the Job's folder; the record read back is its followed Pod's
    fetched: bool = False
    seconds: dict[str, float] | None = None
    pod: str = ""  # the runner Pod followed (its record is the verdict)


class _Stop:
    """How a run is stopped: SIGINT / SIGTERM when it owns the process (no ``event``), else
    the caller's event (a release running profiles in threads). Waits end at once when it
    is set; the log being followed is closed under the reader, which then stops. ``reach``:
    how long the API server has not answered the launch's requests."""

    def __init__(
        self, event: threading.Event | None, reach: Reach, say: Any = lambda _line: None
    ) -> None:
        self.event = event
        self.reach = reach
        self.clock = reach.clock  # the launch's one clock: its deadlines and its timings
        self.say = say
        self.resp: Any = None
        self.why: str | None = None  # the signal (or "stopped") that interrupted the run

    def again(self) -> None:
        # Said wherever it lands: while the runner Job is deleted, or the record fetched.
        self.say(
            f"in-cluster: {self.why} again: the clean-up goes on (the runner Job deleted, "
            "then its record fetched)"
        )

    def ask(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """One request of the launch's waits, retried while the API server is away (at most
        ``timeouts.apiServer`` in a row, then ``ApiUnreachable``), as the runner's own Step 6
        rides such an outage out; a stop ends the retries as an interrupt."""
        try:
            return call(fn, *args, stop=self.event, reach=self.reach, **kw)
        except Exception:
            self.check()
            raise

    def clean(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """A request of the clean-up, which a stop does not cut short (it is what a stop
        asks for), retried as ``ask``'s."""
        return call(fn, *args, reach=self.reach, **kw)

    def sleep(self, seconds: float) -> None:
        if self.event is None:
            time.sleep(seconds)
        elif self.event.wait(seconds):
            raise Interrupted("stopped")

    def check(self) -> None:
        if self.event is not None and self.event.is_set():
            self.why = self.why or "stopped"
        if self.why:
            raise Interrupted(self.why)

    def _watch(self, done: threading.Event) -> None:
        assert self.event is not None
        while not done.is_set():
            if self.event.wait(POLL_S):
                resp = self.resp
                if resp is not None:
                    resp.close()
                return


def _history_reachable(profile: Profile, spec: manifests.RunnerSpec) -> None:
    """The profile's ``history:`` goes with it to the runner, whose Pod would keep it in a
    folder of its own that ends with it: every in-cluster run would be a first run, and B.1
    pass. A folder there is refused at its line, unless ``--history s3://…`` replaces it."""
    where = profile.history.path
    if where is None or where.startswith("s3://") or "--history" in spec.pytest_args:
        return
    keys = (
        ("history", "path") if isinstance(profile.doc.data.get("history"), dict) else ("history",)
    )
    raise InputError(
        str(profile.loc(*keys)),
        f"history {where}: the runner's Pod cannot reach a folder of this machine; with "
        "--in-cluster the history is s3://bucket/prefix (here, or --history)",
    )


@contextlib.contextmanager
def _interruptible(stop: _Stop) -> Iterator[None]:
    if stop.event is not None:
        done = threading.Event()
        threading.Thread(target=stop._watch, args=(done,), daemon=True).start()
        try:
            yield
        finally:
            done.set()
        return

    def on_signal(signum: int) -> None:
        if stop.why:
            # The clean-up the first signal began is under way: cut short, it would leave
            # what was submitted (as the adapters' clean-up, it takes no second signal).
            stop.again()
            return
        # Raised inside a read of the log, the client may wrap it: the reader asks why.
        stop.why = signal.Signals(signum).name
        raise Interrupted(stop.why)

    with cleanup.interrupts(on_signal):
        yield


def run(
    profile_path: Path,
    spec: manifests.RunnerSpec,
    reports: Path,
    out: Sink | None = None,
    stop: threading.Event | None = None,
    clock: Clock = SYSTEM,
) -> Outcome:
    """The profile's acceptance by a runner Job; its record in ``reports``. With ``stop``
    (another thread's), setting it interrupts the run as SIGINT does here. ``out``: the
    terminal by default (``sys.stdout`` as it is when called)."""
    out = out if out is not None else sys.stdout
    say = _sayer(out)
    try:
        profile, pack, api = _checked(profile_path, spec)
    except InputError as e:
        say(f"error: {e}")
        return Outcome(2)
    spec = replace(spec, namespace=profile.target.namespace)
    name = manifests.job_name(profile.name)
    url = f"{spec.record.rstrip('/')}/{name}"
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    ns = spec.namespace
    patience = profile.timeouts.api_server
    seconds: dict[str, float] = {}
    t0 = clock.monotonic()
    outcome = Outcome(2, name, url, seconds=seconds)
    submitted = False
    stopper = _Stop(stop, Reach(api.configuration.host, patience, clock), say)
    with _interruptible(stopper):
        try:
            body = manifests.job(name, profile.name, pack, replace(spec, record=url))
            submitted = True  # from the request on: its answer may be lost, not the Job
            try:
                job = _create(
                    stopper, batch.create_namespaced_job, batch.read_namespaced_job, ns, body
                )
            except ApiException:
                submitted = False  # refused: there is no Job to delete
                raise
            cm = manifests.config_map(name, pack, spec)
            cm["metadata"]["ownerReferences"] = manifests.owned_by(
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": job.to_dict()["metadata"]}
            )
            _create(
                stopper, core.create_namespaced_config_map, core.read_namespaced_config_map, ns, cm
            )
            say(f"in-cluster: runner job {name} in namespace {ns}; record under {url}/")
            code = _runner_exit(core, ns, name, out, stopper, (t0, seconds), outcome)
            outcome.status = code if code is not None else 3
        except _NotStarted:
            return outcome
        except Interrupted as e:
            say(f"in-cluster: {e}: deleting runner job {name}; the runner removes its own Job")
            outcome.status = 2
            if submitted:
                with contextlib.suppress(*_API_ERRORS):  # tried again below, and said there
                    _delete(batch, core, ns, name, stopper, wait=True)
                    submitted = False
        except _API_ERRORS as e:
            say(_failure(e))
            return outcome
        finally:
            if submitted:
                try:
                    _delete(batch, core, ns, name, stopper, wait=False)
                except _API_ERRORS as e:
                    say(f"warning: runner job {name} may be left in {ns}: {type(e).__name__}: {e}")
        try:
            outcome.fetched = _fetch(url, outcome.pod, reports, say, (clock, seconds))
        except Interrupted:  # a first signal while fetching (the runner Job is deleted already)
            say(f"in-cluster: interrupted while fetching the record; it stays at {url}")
            outcome.status = 2
            return outcome
        if stopper.why:  # interrupted, wherever (also while the record's copy was removed)
            outcome.status = 2
    if outcome.fetched:
        users_paths(reports, pack)
        where = record.for_pod(url, outcome.pod)
        outcome.status = _agreed(outcome.status, _summary(reports, say), where, say)
    elif outcome.status == 0:
        outcome.status = 1  # a green runner whose record is not here is no acceptance
    return outcome


def _failure(e: BaseException) -> str:
    """The line that says why the launch stopped on an error of the API server."""
    if isinstance(e, ApiException):
        return f"error: the API server refused the runner: {e.status} {e.reason}: {_message(e)}"
    if isinstance(e, ApiUnreachable):
        return f"error: {e}"  # names the server, how long and its bound
    return f"error: the API server did not answer: {type(e).__name__}: {e}"


def _create(stopper: _Stop, create: Any, read: Any, ns: str, body: dict[str, Any]) -> Any:
    """``body`` created once, through an outage: a request the API server took but whose
    answer was lost is retried and refused as existing (409), and the name is this run's
    alone (``manifests.job_name``), so what exists is what was asked for."""
    try:
        return stopper.ask(create, ns, body)
    except ApiException as e:
        if e.status != 409:
            raise
        return stopper.ask(read, body["metadata"]["name"], ns)


class _NotStarted(Exception):
    """The runner Pod cannot start (said already): no record will come."""


def _checked(profile_path: Path, spec: manifests.RunnerSpec) -> tuple[Profile, Any, Any]:
    """The profile, its bundle and an API client, or an ``InputError`` naming what is wrong
    before anything is submitted."""
    profile = load_profile(profile_path)
    if profile.target.adapter != "kubernetes":
        raise InputError(
            str(profile.loc("target", "adapter")),
            "--in-cluster runs a profile of the kubernetes adapter, "
            f"not {profile.target.adapter!r}",
        )
    record.parse(spec.record)
    _history_reachable(profile, spec)
    pack = bundling.bundle(profile)
    api, _, _ = connect(profile.target.kubeconfig, profile.target.context)
    return profile, pack, api


def _runner_exit(
    core: Any,
    ns: str,
    name: str,
    out: Sink,
    stopper: _Stop,
    timing: tuple[float, dict[str, float]],
    outcome: Outcome,
) -> int | None:
    """The runner Pod followed to its end: its exit code (None: not known); ``_NotStarted``
    if it cannot start (said). Its log goes to ``out``; ``timing``: when the run began, and
    where the seconds to the Pod's start and end are noted; the Pod's name goes to
    ``outcome`` as soon as it is known (an interrupt after that fetches its record)."""
    say = _sayer(out)
    t0, seconds = timing
    pod, node, why = _wait_started(core, ns, name, stopper)
    outcome.pod = pod
    seconds["started"] = round(stopper.clock.monotonic() - t0, 2)
    if why:
        say(f"error: runner pod {pod} cannot start: {why}")
        raise _NotStarted(pod)
    say(f"in-cluster: runner pod {pod} on node {node} ({seconds['started']:.1f}s)")
    try:
        _follow(core, ns, pod, out, stopper)
        code = _exit_code(core, ns, pod, stopper, within=30.0)
    except (ApiException, urllib3.exceptions.HTTPError, OSError) as e:
        stopper.check()
        # The API server restarting under the stream (the runner goes on: its own Step 6
        # rides such outages out). The record, not the log, is the verdict.
        say(
            f"in-cluster: the runner's log stream broke ({type(e).__name__}); waiting for the "
            "runner to finish, its record holds everything"
        )
        code = _exit_code(core, ns, pod, stopper, within=None)
    seconds["finished"] = round(stopper.clock.monotonic() - t0, 2)
    # Only said (the record is the verdict), so one request: riding an outage out here
    # would hold the result up to timeouts.apiServer for a warning.
    with contextlib.suppress(*_API_ERRORS):
        once = functools.partial(_once, timeout=PODS_ASK_S)
        ran = sorted(p.metadata.name for p in _pods(once, core, ns, name))
        if ran != [pod]:
            # The Job ran more than this Pod (its controller may start a second one through
            # an outage of the API server): each wrote its own record, this one's is read.
            say(
                f"warning: runner job {name} ran pods {', '.join(ran)}; followed {pod}, "
                "whose record is the verdict"
            )
    return code


def _sayer(out: Sink) -> Any:
    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return say


def _message(e: ApiException) -> str:
    try:
        return str(json.loads(e.body or "{}").get("message") or "")
    except ValueError:
        return str(e.body or "")[:300]


def _once(fn: Any, *args: Any, timeout: float, **kw: Any) -> Any:
    """``fn`` asked once, answered within ``timeout`` seconds or raised."""
    return fn(*args, _request_timeout=timeout, **kw)


def _pods(ask: Any, core: client.CoreV1Api, ns: str, name: str) -> list[Any]:
    """The runner's Pods, asked with ``ask`` (``_Stop.ask`` or ``_Stop.clean``)."""
    found = ask(core.list_namespaced_pod, ns, label_selector=f"{manifests.LABEL}={name}")
    return list(found.items)


def _wait_started(
    core: client.CoreV1Api, ns: str, name: str, stop: _Stop
) -> tuple[str, str, str | None]:
    """The runner Pod and its node once its container runs or ended; or why it never will."""
    while True:
        for pod in _pods(stop.ask, core, ns, name):
            node = str(pod.spec.node_name)
            for st in pod.status.container_statuses or []:
                if st.state.running or st.state.terminated:
                    return pod.metadata.name, node, None
                waiting = st.state.waiting
                if waiting and waiting.reason in NOT_STARTING:
                    why = f"{waiting.reason}: {waiting.message or ''}".strip()
                    return pod.metadata.name, node, why
        stop.sleep(POLL_S)


def _follow(core: client.CoreV1Api, ns: str, pod: str, out: Sink, stop: _Stop) -> None:
    """The runner's log as it writes it (the suite's own terminal output), each piece as it
    arrives (amt=None: a read never waits for more than the server sent)."""
    resp = core.read_namespaced_pod_log(
        pod, ns, container="runner", follow=True, _preload_content=False
    )
    stop.resp = resp
    try:
        for chunk in resp.stream(amt=None, decode_content=False):
            out.write(chunk.decode(errors="replace"))
            out.flush()
    except Exception:
        stop.check()  # closed under the reader because the run was stopped
        raise
    finally:
        stop.resp = None
        resp.release_conn()
    stop.check()


def _exit_code(
    core: client.CoreV1Api, ns: str, pod: str, stop: _Stop, *, within: float | None
) -> int | None:
    """The runner container's exit code once it has terminated: within ``within`` seconds
    (None: as long as it runs). Each request rides an outage of the API server out, up to
    ``timeouts.apiServer`` in a row (then ``ApiUnreachable``)."""
    now = stop.clock.monotonic
    deadline = None if within is None else now() + within
    while deadline is None or now() < deadline:
        p = stop.ask(core.read_namespaced_pod, pod, ns)
        for st in p.status.container_statuses or []:
            if st.state.terminated:
                return int(st.state.terminated.exit_code)
        stop.sleep(POLL_S)
    return None


def _delete(
    batch: client.BatchV1Api, core: client.CoreV1Api, ns: str, name: str, stop: _Stop, wait: bool
) -> None:
    """Delete the runner Job and its Pod (Background: the garbage collector removes the Pod,
    whose SIGTERM runs the runner's clean-up); with ``wait``, until the Pod is gone."""
    try:
        stop.clean(batch.delete_namespaced_job, name, ns, propagation_policy="Background")
    except ApiException as e:
        if e.status != 404:
            raise
    if not wait:
        return
    now = stop.clock.monotonic
    deadline = now() + manifests.GRACE_SECONDS + 30
    while _pods(stop.clean, core, ns, name) and now() < deadline:
        time.sleep(POLL_S)


def _fetch(
    url: str, pod: str, reports: Path, say: Any, timing: tuple[Clock, dict[str, float]]
) -> bool:
    """The record of the runner Pod ``pod`` from the Job's folder ``url`` into ``reports``
    (the folder's objects then removed), said either way. With no Pod followed (interrupted
    before the runner started), the one Pod's record there if there is exactly one.
    ``timing``: the launch's clock and where the fetch's seconds are noted."""
    clock, seconds = timing
    t0 = clock.monotonic()
    reports.mkdir(parents=True, exist_ok=True)
    for part in RECORD_PARTS:
        path = reports / part
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    try:
        if not pod:
            found = record.pods(url)
            pod = found[0] if len(found) == 1 else ""
        where = record.for_pod(url, pod) if pod else url
        complete = bool(pod) and record.download(where, reports)
    except Interrupted:
        raise
    except Exception as e:  # any store's or client's failure: said, and the run is not passed
        say(f"error: the runner's record could not be fetched from {url}: {type(e).__name__}: {e}")
        return False
    if not complete:
        say(f"error: the runner's record at {where} is incomplete or missing")
        return False
    try:
        record.remove(url)
    except Exception as e:  # any: the record is here already; where the copy stays is said
        say(f"warning: the fetched record stays at {url}: {type(e).__name__}: {e}")
    seconds["fetch"] = round(clock.monotonic() - t0, 2)
    say(f"in-cluster: record of pod {pod} fetched into {reports} ({seconds['fetch']:.1f}s)")
    return True


def users_paths(reports: Path, pack: bundling.Bundle) -> None:
    """The fetched record names the user's own files, as a run from this machine does: the
    runner read them at ``MOUNT``, laid out as they are under the bundle's root, every line
    where it was (so a ``file:line`` holds)."""
    pod, own = f"{bundling.MOUNT}/", f"{pack.root}/"
    for part in RECORD_PARTS:
        path = reports / part
        for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if f.suffix in (".json", ".xml", ".txt") and f.is_file():
                text = f.read_text(encoding="utf-8", errors="surrogateescape")
                if pod in text:
                    f.write_text(text.replace(pod, own), encoding="utf-8", errors="surrogateescape")


def _agreed(status: int, verdict: str | None, url: str, say: Any) -> int:
    """The exit status: the runner's, but never 0 on a record whose verdict is not passed:
    the record is the verdict, and a runner Pod that ended green beside a record of its own
    that is not (or that has none readable) is no acceptance."""
    if status == 0 and verdict != "passed":
        what = f"says {verdict!r}" if verdict else "has no verdict"
        say(f"error: the runner pod exited 0 but its record at {url} {what}")
        return 1
    return status


def _summary(reports: Path, say: Any) -> str | None:
    """The fetched record's verdict, said; None when it has no readable run-summary.json."""
    try:
        data = json.loads((reports / "run-summary.json").read_text())
    except (OSError, ValueError):
        say("error: the fetched record has no readable run-summary.json")
        return None
    first = data.get("earliestFailure") or {}
    tail = f", earliest failure {first.get('check')}" if first else ""
    say(f"in-cluster: verdict {data.get('verdict')}{tail}")
    verdict = data.get("verdict")
    return verdict if isinstance(verdict, str) else None
