"""The ``kubernetes`` target: RLark's Job custom resource on any cluster of a kubeconfig.

- The Job YAML (docs/contract.md §1) is created as is as a ``jobs.rlark.io/v1alpha1`` object in
  ``profile.target.namespace``; the API server's refusal (400 / 409 / 422) is
  ``SubmitRejected`` with its message. A manifest naming another namespace is refused by
  the API server too: nothing is silently moved.
- The platform turns the Header role into Pods labelled ``rlark.io/job-name`` and
  ``rlark.io/role``; everything about them is read through that label selector.
- ``observe()`` is event-driven: a list-then-watch of the Job's Pods, a watch of the
  namespace's Events (kept to those about the Job and its Pods), and, once the Worker's
  container has started, its followed log. Listing first is what replays the current
  state (and the log from its start) to an observation started late.
- ``close()``, an atexit hook and SIGINT / SIGTERM handlers (chained to the previous ones)
  delete every Job this adapter created; what a run killed outright left behind is removed
  by the next adapter opened on the namespace (``owner.py``).

Connection: ``target.kubeconfig`` / ``target.context``; with no kubeconfig, the standard
loading rules ($KUBECONFIG, ``~/.kube/config``, then the in-cluster service account).
Options (``target`` keys or keyword arguments): ``cluster`` (the RLark cluster name(s) the
Job's roles may name; default: the kubeconfig context's cluster), ``delete_timeout``
(seconds, default 120), ``install_signal_handlers`` (default true).
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import (
    Event,
    JobRef,
    LeftoversRemoved,
    Observation,
    PodStatus,
    SubmitRejected,
)
from rlark_acceptance.adapters.kubernetes import owner
from rlark_acceptance.adapters.kubernetes.stream import (
    Item,
    Stopper,
    api_message,
    call,
    container_started,
    event_of,
    get_json,
    is_role,
    lines,
    list_then_watch,
    pod_status,
    worker_over,
)
from rlark_acceptance.adapters.local.s3 import client as s3_client
from rlark_acceptance.model.inventory import node_from_k8s
from rlark_acceptance.model.job import JOB_NAME_LABEL, Job, Mount
from rlark_acceptance.model.profile import NodeSpec, Profile
from rlark_acceptance.storage.store import FileStore, S3Store, Store

GROUP, VERSION, PLURAL = "rlark.io", "v1alpha1", "jobs"
# Each observation holds up to three streams open (Pods, Events, log): room for several.
POOL_SIZE = 32


class KubernetesAdapterError(RuntimeError):
    """A request this target cannot serve (a Pod that is not the Job's, a volume it cannot read)."""


def connect(kubeconfig: str | None, context: str | None) -> tuple[client.ApiClient, str]:
    """An API client and the name of the cluster it talks to."""
    cfg = client.Configuration()
    default = Path(os.path.expanduser("~/.kube/config"))
    path = (
        kubeconfig or os.environ.get("KUBECONFIG") or (str(default) if default.exists() else None)
    )
    if path:  # may be a list of files ($KUBECONFIG): the loader merges them
        config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
        contexts, active = config.list_kube_config_contexts(config_file=path)
        chosen = next((c for c in contexts if c["name"] == context), active) if context else active
        cluster = str((chosen or {}).get("context", {}).get("cluster") or "kubernetes")
    else:
        config.load_incluster_config(client_configuration=cfg)
        cluster = "in-cluster"
    cfg.connection_pool_maxsize = POOL_SIZE
    return client.ApiClient(cfg), cluster


def _selector(ref: JobRef) -> str:
    return f"{JOB_NAME_LABEL}={ref.name}"


class KubernetesAdapter:
    name = "kubernetes"

    def __init__(self, profile: Profile, **options: Any) -> None:
        self.profile = profile
        opts = {**profile.target.options, **options}
        self.namespace = profile.target.namespace
        self.api, kube_cluster = connect(profile.target.kubeconfig, profile.target.context)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        wanted = opts.get("cluster")
        names = wanted if isinstance(wanted, list) else [wanted] if wanted else [kube_cluster]
        self._clusters = [str(c) for c in names]
        self.delete_timeout = float(opts.get("delete_timeout", 120))
        self._created: dict[tuple[str, str], JobRef] = {}
        self._stoppers: dict[tuple[str, str], list[Stopper]] = {}
        # Pod names ever seen per Job: Events stay attributable after the Pods are gone.
        self._pod_names: dict[tuple[str, str], set[str]] = {}
        self._lock = threading.RLock()
        cleanup.register(self, signals=opts.get("install_signal_handlers", True))
        self._remove_dead_runs_jobs()

    def _remove_dead_runs_jobs(self) -> None:
        """Delete the Jobs a run on this host submitted and never removed because it was
        killed outright; says so with a ``LeftoversRemoved`` warning."""
        try:
            jobs = get_json(
                self.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                label_selector=owner.SELECTOR,
            )
        except Exception:  # no Job kind yet, or no list permission: nothing to judge
            return
        removed = []
        for item in jobs.get("items") or []:
            if not owner.owner_is_gone(item):
                continue
            meta = item["metadata"]
            ref = JobRef(str(meta["name"]), str(meta.get("namespace") or self.namespace))
            try:
                self.delete(ref)
            except Exception as e:  # noted, never in the way of this run
                removed.append(f"{ref.name} (not removed: {e})")
            else:
                removed.append(ref.name)
        if removed:
            warnings.warn(
                LeftoversRemoved(
                    f"removed {len(removed)} Job(s) in {self.namespace} left by a run on this "
                    f"host that died without cleaning up: {', '.join(removed)}"
                ),
                stacklevel=2,
            )

    # --- submit -------------------------------------------------------------------------
    def submit(self, job: Job, manifest: str) -> JobRef:
        try:
            body = yaml.safe_load(manifest)
        except yaml.YAMLError as e:
            raise SubmitRejected(f"the Job YAML does not parse: {e}") from None
        if not isinstance(body, dict):
            raise SubmitRejected("the Job YAML is not a mapping")
        owner.mark(body)  # so a later run can remove it if this one is killed outright
        ns = self.namespace
        attempts = 0

        def create() -> Item:
            nonlocal attempts
            attempts += 1
            created: Item = self.custom.create_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, body
            )
            return created

        try:
            created = call(create)
        except ApiException as e:
            if e.status == 409 and attempts > 1:
                # A retried create whose first attempt did land: it is ours if it is this Job.
                created = self._get_job(ns, str((body.get("metadata") or {}).get("name")))
                if created.get("spec") != body.get("spec"):
                    raise SubmitRejected(api_message(e)) from None
            elif e.status in (400, 403, 409, 422):
                # 403: the harness's credentials may not create Jobs here (RBAC names the
                # verb and resource); refused like an invalid Job, never retried.
                raise SubmitRejected(api_message(e)) from None
            else:
                raise
        meta = created.get("metadata") or {}
        ref = JobRef(str(meta["name"]), str(meta.get("namespace") or ns), meta.get("uid"))
        with self._lock:
            self._created[(ref.namespace, ref.name)] = ref
        return ref

    def _get_job(self, ns: str, name: str) -> Item:
        return get_json(self.custom.get_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, name)

    # --- reading ------------------------------------------------------------------------
    def list_jobs(self, namespace: str) -> list[str]:
        jobs = get_json(
            self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL
        )
        return sorted(str(j["metadata"]["name"]) for j in jobs.get("items") or [])

    def pods(self, ref: JobRef) -> list[PodStatus]:
        listing = get_json(
            self.core.list_namespaced_pod, ref.namespace, label_selector=_selector(ref)
        )
        pods = sorted((pod_status(p) for p in listing.get("items") or []), key=lambda p: p.name)
        self._remember(ref, *(p.name for p in pods))
        return pods

    def _remember(self, ref: JobRef, *pods: str) -> set[str]:
        with self._lock:
            known = self._pod_names.setdefault((ref.namespace, ref.name), set())
            known.update(pods)
            return set(known)

    def _involves(self, ref: JobRef, ev: Item, pods: set[str]) -> bool:
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") == "Job" and str(inv.get("apiVersion", "")).startswith(GROUP + "/"):
            return inv.get("name") == ref.name
        return inv.get("kind") == "Pod" and inv.get("name") in pods

    def events(self, ref: JobRef) -> list[Event]:
        known = self._remember(ref, *(p.name for p in self.pods(ref)))
        listing = get_json(self.core.list_namespaced_event, ref.namespace)
        found = [event_of(e) for e in listing.get("items") or [] if self._involves(ref, e, known)]
        return sorted(found, key=lambda e: e.time)

    def logs(self, ref: JobRef, pod: str) -> str:
        if pod not in {p.name for p in self.pods(ref)}:
            raise KubernetesAdapterError(f'pod "{pod}" is not one of job {ref.name}\'s Pods')

        def read() -> str:
            # The client's own decoding returns str(bytes) for text/plain: read the raw body.
            resp = self.core.read_namespaced_pod_log(pod, ref.namespace, _preload_content=False)
            try:
                return bytes(resp.data).decode("utf-8", "replace")
            finally:
                resp.release_conn()

        text: str = call(read)
        return text

    def node_inventory(self) -> list[NodeSpec]:
        return [node_from_k8s(n) for n in get_json(self.core.list_node).get("items") or []]

    def clusters(self) -> list[str]:
        return list(self._clusters)

    def store_for(self, job: Job, mount: Mount) -> Store:
        if mount.type == "objectStorage" and mount.bucket:
            # Read back through boto3's standard chain (AWS_*, config files, instance roles).
            return S3Store(s3_client(), mount.bucket, mount.prefix or "")
        if mount.type == "hostPath" and mount.host_path and mount.host_path.startswith("/"):
            # The node's directory, read here: valid only when the harness runs on that node
            # (or sees the same filesystem), as with kwok's simulated nodes on this machine.
            return FileStore(mount.host_path)
        raise KubernetesAdapterError(
            f'volume "{mount.name}" ({mount.type}) cannot be read from outside the Worker'
        )

    # --- observing ----------------------------------------------------------------------
    def observe(self, ref: JobRef) -> Observation:
        obs = Observation()
        stopper = Stopper()
        with self._lock:
            self._stoppers.setdefault((ref.namespace, ref.name), []).append(stopper)
        try:
            head = (self._get_job(ref.namespace, ref.name).get("spec") or {}).get("headRole")
        except ApiException as e:
            if e.status != 404:
                raise
            head = None  # the Job is gone already: its remaining Pods still tell
        _Observer(self, ref, obs, stopper, str(head) if head else None).start()
        return obs

    # --- deleting -----------------------------------------------------------------------
    def delete(self, ref: JobRef) -> None:
        try:
            # Background: the Job object goes at once. Foreground would keep it until the
            # garbage collector has handled its Pods, which for a kind the collector has not
            # discovered yet (a CRD installed moments ago) waits for its next resync, 30 s.
            # The Pods are deleted and waited for below, so nothing is left behind.
            _unless_gone(
                self.custom.delete_namespaced_custom_object,
                GROUP,
                VERSION,
                ref.namespace,
                PLURAL,
                ref.name,
                propagation_policy="Background",
            )
            # Deleting the Pods too makes this independent of how the platform wires their
            # ownership (and of a garbage collector that is slow or absent).
            _unless_gone(
                self.core.delete_collection_namespaced_pod,
                ref.namespace,
                label_selector=_selector(ref),
            )
            self._wait_pods_gone(ref)
        finally:
            with self._lock:
                stoppers = self._stoppers.pop((ref.namespace, ref.name), [])
            for s in stoppers:
                s.stop()
        with self._lock:  # only once it is gone: close() tries again otherwise
            self._created.pop((ref.namespace, ref.name), None)

    def _wait_pods_gone(self, ref: JobRef) -> None:
        """Watch the Job's Pods until none is left; raise after ``delete_timeout``."""
        left: set[str] = set()
        stopper = Stopper()

        def listed(pods: list[Item]) -> None:
            left.clear()
            left.update(str(p["metadata"]["name"]) for p in pods)
            if not left:
                stopper.stop()

        def changed(kind: str, pod: Item) -> None:
            if kind == "SYNC":
                return  # counted by listed()
            name = str(pod["metadata"]["name"])
            (left.discard if kind == "DELETED" else left.add)(name)
            if not left:
                stopper.stop()

        done = threading.Event()

        def deadline() -> None:
            if not done.wait(self.delete_timeout):
                stopper.stop()

        cleanup.spawn(f"k8s-delete-{ref.name}", deadline)
        try:
            list_then_watch(
                self.core.list_namespaced_pod,
                (ref.namespace,),
                changed,
                stopper,
                on_list=listed,
                label_selector=_selector(ref),
            )
        finally:
            done.set()
        if left:
            raise KubernetesAdapterError(
                f"pods of job {ref.name} still present after {self.delete_timeout:.0f} s: "
                + ", ".join(sorted(left))
            )

    def close(self) -> None:
        with self._lock:
            refs = list(self._created.values())
        errors: list[Exception] = []
        for ref in refs:  # one Job that cannot be deleted must not keep the others
            try:
                self.delete(ref)
            except Exception as e:
                errors.append(e)
        with self._lock:
            stoppers = [s for group in self._stoppers.values() for s in group]
            self._stoppers.clear()
        for s in stoppers:
            s.stop()
        if errors:
            raise errors[0]  # still live: the atexit hook tries once more
        cleanup.unregister(self)


def _unless_gone(fn: Any, *args: Any, **kw: Any) -> None:
    """A delete request; 404 Not Found means it is done already."""
    try:
        call(fn, *args, **kw)
    except ApiException as e:
        if e.status != 404:
            raise


class _Observer:
    """The threads of one ``observe()``: Pods, Events, and the Worker's log."""

    def __init__(
        self,
        adapter: KubernetesAdapter,
        ref: JobRef,
        obs: Observation,
        stopper: Stopper,
        head_role: str | None,
    ) -> None:
        self.adapter, self.ref, self.obs, self.stopper = adapter, ref, obs, stopper
        self.head_role = head_role
        self.not_ours: set[str] = set()
        self.following: str | None = None
        self._lock = threading.Lock()
        # The Worker is over (terminal Pod or container): its observation must end now,
        # whether or not the followed log stream closes (kwok's never does; a kubelet's
        # can lag). _cut tells the follower to stop waiting for the stream's end.
        self._over = False
        self._ended = False
        self._cut = threading.Event()
        self._log_resp: Any = None
        self._blind = False

    def start(self) -> None:
        sel = _selector(self.ref)
        core = self.adapter.core
        ns = (self.ref.namespace,)
        pods, events = core.list_namespaced_pod, core.list_namespaced_event
        self._thread(
            "pods", list_then_watch, pods, ns, self._on_pod, self.stopper, label_selector=sel
        )
        self._thread("events", list_then_watch, events, ns, self._on_event, self.stopper)

    def _thread(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        def run() -> None:
            try:
                fn(*args, **kw)
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
                "rlark-acceptance",
            )
        )

    def _on_pod(self, kind: str, pod: Item) -> None:
        if kind == "DELETED" or self._blind:
            return
        status = pod_status(pod)
        self.adapter._remember(self.ref, status.name)
        self.obs.put_pod(status)
        with self._lock:
            start = (
                self.following is None
                and is_role(status, self.head_role)
                and container_started(pod)
            )
            if start:
                self.following = status.name
        if start:
            self._thread("log", self._follow, status.name)
        if is_role(status, self.head_role) and worker_over(pod):
            self._worker_over()

    def _end_once(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self.obs.end()

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

        # The container has exited, so its log is complete: stop following (a kubelet
        # closes the stream only at its next check, kwok never) and read the rest of it
        # in one request.
        self._cut.set()
        resp = self._log_resp
        if resp is not None:
            with contextlib.suppress(Exception):
                resp.shutdown()

    def _on_event(self, kind: str, ev: Item) -> None:
        if kind == "DELETED":  # Events expire; that is not news
            return
        inv = ev.get("involvedObject") or {}
        name = str(inv.get("name", ""))
        known = self.adapter._remember(self.ref)
        if inv.get("kind") == "Pod" and name not in known and name not in self.not_ours:
            # An Event can arrive before its Pod's watch event: ask the Pod itself.
            try:
                pod = get_json(self.adapter.core.read_namespaced_pod, name, self.ref.namespace)
                labels = (pod.get("metadata") or {}).get("labels") or {}
                ours = labels.get(JOB_NAME_LABEL) == self.ref.name
            except ApiException:
                ours = False
            if ours:
                known = self.adapter._remember(self.ref, name)
            else:
                self.not_ours.add(name)
        if self.adapter._involves(self.ref, ev, known):
            self.obs.put_event(event_of(ev))

    def _follow(self, pod: str) -> None:
        """Put each log line of the Worker as it is written; ``end()`` when the log ends.

        A stream broken mid-way is opened again from the start and the lines already
        delivered are skipped, so each line arrives once. Once the Worker is over and the
        stream still has not closed, the rest of the log is read in one request."""
        delivered = 0
        broken = 0
        while not self.stopper.stopped and not self._cut.is_set():
            resp = call(
                self.adapter.core.read_namespaced_pod_log,
                pod,
                self.ref.namespace,
                follow=True,
                _preload_content=False,
                _request_timeout=(10, None),
                stop=self.stopper.event,
            )
            if not self.stopper.register(resp):
                return
            self._log_resp = resp
            if self._cut.is_set():  # cut between the request and now
                break
            try:
                skip = delivered
                for line in lines(resp):
                    if self._cut.is_set():
                        break  # this line may be cut short: the catch-up read has it
                    if skip:
                        skip -= 1
                        continue
                    delivered += 1
                    broken = 0
                    self.obs.put_line(line)
                break  # the kubelet closed the log: the container has exited
            except Exception:
                if self.stopper.stopped:
                    return
                if self._cut.is_set():
                    break
                broken += 1
                if broken >= 5:
                    raise
                self.stopper.event.wait(min(3.0, 0.2 * 2**broken))
            finally:
                self._log_resp = None
                self.stopper.unregister(resp)
        if self.stopper.stopped:
            return
        if self._cut.is_set():
            with contextlib.suppress(Exception):
                for line in self.adapter.logs(self.ref, pod).splitlines()[delivered:]:
                    self.obs.put_line(line)
        self._end_once()
