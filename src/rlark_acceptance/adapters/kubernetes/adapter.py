"""The ``kubernetes`` target: RLark's Job custom resource on any cluster of a kubeconfig.

- The kubeconfig is read, its context chosen and its API server asked for its version when
  the adapter opens: a file that cannot be read or parsed, a context it lacks, a server
  that refuses the connection or its TLS is ``TargetConfigError``, a usage error naming the
  file (and line), the context or the server (``check_target`` does the same up front).
- The Job YAML (docs/contract.md §1) is created as is as a ``jobs.rlark.io/v1alpha1`` object in
  ``profile.target.namespace``; the API server's refusal (400 / 403 / 409 / 422) is
  ``SubmitRejected`` in its own words: status, reason, message (a 403 names the verb, the
  resource, the namespace and the identity; the remedy names the RBAC file). A manifest
  naming another namespace is refused by the API server too: nothing is silently moved.
- The platform turns the Header role into Pods labelled ``rlark.io/job-name`` and
  ``rlark.io/role``; everything about them is read through that label selector.
- ``observe()`` is event-driven (``observer.py``): a list-then-watch of the Job's Pods, a
  watch of the namespace's Events (kept to those about the Job and its Pods), and, once the
  Worker's container has started, its followed log, all resumed after a break for as long
  as the API server is unreachable for less than ``timeouts.apiServer``.
- ``close()``, an atexit hook and SIGINT / SIGTERM handlers (chained to the previous ones)
  delete every Job this adapter created; a delete the API server refuses or does not
  answer is a ``CleanupFailed`` warning of the record naming what is left, never a
  scenario's error. What a run killed outright left behind is removed by the next adapter
  opened on the namespace (``owner.py``).

Connection: ``target.kubeconfig`` / ``target.context``; with no kubeconfig, the standard
loading rules ($KUBECONFIG, ``~/.kube/config``, then the in-cluster service account).
``target.cluster``: the RLark cluster name(s) the Job's roles may name (default: the
kubeconfig context's cluster); its own options are ``KubernetesOptions`` (``options.py``).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import (
    CleanupRefused,
    Event,
    JobRef,
    LeftoversRemoved,
    LeftoversUnchecked,
    Observation,
    PodStatus,
    SubmitRejected,
    TargetUnreachable,
    WorkerEvidence,
)
from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.kubernetes import owner
from rlark_acceptance.adapters.kubernetes.evidence import worker_evidence
from rlark_acceptance.adapters.kubernetes.observer import Observer
from rlark_acceptance.adapters.kubernetes.options import KubernetesOptions
from rlark_acceptance.adapters.kubernetes.stream import (
    ApiUnreachable,
    Item,
    Reach,
    Stopper,
    api_refusal,
    call,
    event_of,
    get_json,
    list_then_watch,
    pod_status,
)
from rlark_acceptance.adapters.local.s3 import client as s3_client
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.inventory import node_from_k8s
from rlark_acceptance.model.job import JOB_NAME_LABEL, Job, Mount
from rlark_acceptance.model.options import options_of
from rlark_acceptance.model.profile import NodeSpec, Profile
from rlark_acceptance.storage.store import FileStore, S3Store, Store

GROUP, VERSION, PLURAL = "rlark.io", "v1alpha1", "jobs"
# Each observation holds up to three streams open (Pods, Events, log): room for several.
POOL_SIZE = 32
# How long the first request to the API server may take to connect, then to answer.
PROBE_SECONDS = 10.0
# The RBAC file a refused request points to: the least-privilege Role the harness needs.
RBAC_FILE = "deploy/harness-rbac.yaml"


# A submission that meets a closed adapter (its run was interrupted): nothing of it is left.
CLOSED = "the Kubernetes target is closed (the run was interrupted); its Job was not kept"


class KubernetesAdapterError(RuntimeError):
    """A request this target cannot serve (a Pod that is not the Job's, a volume it cannot read)."""


class TargetConfigError(InputError):
    """The target's kubeconfig cannot be used: unreadable, malformed, no such context, or
    its API server refuses the connection or its TLS. A usage error: nothing ran."""


def _kubeconfig_path(kubeconfig: str | None) -> str | None:
    default = Path(os.path.expanduser("~/.kube/config"))
    return (
        kubeconfig or os.environ.get("KUBECONFIG") or (str(default) if default.exists() else None)
    )


def _read_kubeconfig(path: str) -> None:
    """Each file of ``path`` (``$KUBECONFIG`` may list several) read and parsed as YAML, so
    a bad one is named with its line before the client's loader sees it."""
    for one in (p for p in path.split(os.pathsep) if p):
        try:
            text = Path(one).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise TargetConfigError(one, f"the kubeconfig cannot be read: {why}") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{one}:{mark.line + 1}" if mark is not None else one
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise TargetConfigError(where, f"the kubeconfig is not valid YAML: {problem}") from None
        if doc is not None and not isinstance(doc, dict):
            raise TargetConfigError(one, "the kubeconfig is not a mapping")


def connect(kubeconfig: str | None, context: str | None) -> tuple[client.ApiClient, str, str]:
    """An API client, the name of the cluster it talks to, and the file it came from.

    Raises ``TargetConfigError`` naming the file (and line), the context or the server."""
    cfg = client.Configuration()
    path = _kubeconfig_path(kubeconfig)
    if path:  # may be a list of files ($KUBECONFIG): the loader merges them
        _read_kubeconfig(path)
        try:
            contexts, active = config.list_kube_config_contexts(config_file=path)
        except (config.ConfigException, ValueError, KeyError, TypeError) as e:
            raise TargetConfigError(path, f"the kubeconfig has no usable context: {e}") from None
        names = [str(c.get("name")) for c in contexts or []]
        if context and context not in names:
            raise TargetConfigError(
                path, f"no context {context!r} (it has: {', '.join(names) or 'none'})"
            )
        try:
            config.load_kube_config(
                config_file=path, context=context, client_configuration=cfg, persist_config=False
            )
        except (config.ConfigException, ValueError, KeyError, TypeError, OSError) as e:
            name = context or (active or {}).get("name")
            raise TargetConfigError(path, f"context {name!r} cannot be used: {e}") from None
        chosen = next((c for c in contexts if c["name"] == context), active) if context else active
        cluster = str((chosen or {}).get("context", {}).get("cluster") or "kubernetes")
        source = path
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException as e:
            raise TargetConfigError("target.kubeconfig", f"no kubeconfig and {e}") from None
        cluster, source = "in-cluster", "the in-cluster service account"
    cfg.connection_pool_maxsize = POOL_SIZE
    return client.ApiClient(cfg), cluster, source


def probe(api: client.ApiClient, source: str) -> None:
    """One request to the API server (its version), no retries: a server that refuses the
    connection or its TLS is named before anything is submitted."""
    server = api.configuration.host
    try:
        api.call_api(
            "/version",
            "GET",
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=(PROBE_SECONDS, PROBE_SECONDS),
        ).release_conn()
    except ApiException as e:
        if e.status in (401, 403):
            why = f"does not accept the kubeconfig's credentials ({api_refusal(e)})"
            raise TargetConfigError(source, f"the API server {server} {why}") from None
        return  # it answered: other statuses are for the requests that matter to say
    except urllib3.exceptions.HTTPError as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, urllib3.exceptions.SSLError) or "SSL" in type(reason).__name__:
            why = f"TLS with {server} failed: {_tls_reason(reason)}"
        elif isinstance(reason, urllib3.exceptions.NewConnectionError):
            why = f"the API server {server} refuses connections ({_refusal_reason(reason)})"
        else:
            why = f"the API server {server} does not answer ({_refusal_reason(reason)})"
        raise TargetConfigError(source, why) from None


def _unanswered(exc: ApiException | urllib3.exceptions.HTTPError) -> str:
    if isinstance(exc, ApiException):
        return api_refusal(exc)
    return _refusal_reason(getattr(exc, "reason", exc))


def _refusal_reason(exc: BaseException) -> str:
    found = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(exc))
    return found.group(1).strip() if found else type(exc).__name__


def _tls_reason(exc: BaseException) -> str:
    found = re.search(r"\[SSL: [A-Z_]+\] ([^'\"(]+)", str(exc))
    return found.group(1).strip() if found else str(exc)[:200]


def check_target(kubeconfig: str | None, context: str | None) -> None:
    """The kubeconfig loads and its API server answers (TLS included); else
    ``TargetConfigError``, a usage error naming the file, the context or the server."""
    api, _, source = connect(kubeconfig, context)
    try:
        probe(api, source)
    finally:
        api.close()


def _selector(ref: JobRef) -> str:
    return f"{JOB_NAME_LABEL}={ref.name}"


class KubernetesAdapter:
    name = "kubernetes"

    def __init__(
        self, profile: Profile, *, install_signal_handlers: bool = True, clock: Clock = SYSTEM
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.options = options_of(KubernetesOptions, self.name, profile.target.options)
        self.namespace = profile.target.namespace
        self.api, kube_cluster, source = connect(profile.target.kubeconfig, profile.target.context)
        probe(self.api, source)
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        bound = profile.timeouts.api_server
        self.reach = Reach(str(self.api.configuration.host), bound, clock)
        self._clusters = list(profile.target.cluster) or [kube_cluster]
        self.delete_timeout = self.options.delete_timeout
        self._created: dict[tuple[str, str], JobRef] = {}
        self._stoppers: dict[tuple[str, str], list[Stopper]] = {}
        # Pod names ever seen per Job: Events stay attributable after the Pods are gone.
        self._pod_names: dict[tuple[str, str], set[str]] = {}
        # Nodes whose kubelet stopped answering: their Pods' deletion cannot complete.
        self.lost_nodes: set[str] = set()
        self._lock = threading.RLock()
        # Set by close: a Job a submission in another thread creates after it (a self-check
        # beside an interrupted run) is deleted at once, since close has already listed
        # what it removes.
        self._closed = False
        cleanup.register(self, signals=install_signal_handlers)
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
        except ApiException as e:
            if e.status == 404:  # no Job kind on this cluster: no run can have left one
                return
            warnings.warn(self._unchecked(api_refusal(e)), stacklevel=2)
            return
        except (ApiUnreachable, urllib3.exceptions.HTTPError, ValueError) as e:
            warnings.warn(self._unchecked(f"{type(e).__name__}: {e}"), stacklevel=2)
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

    def _unchecked(self, why: str) -> LeftoversUnchecked:
        return LeftoversUnchecked(
            f"could not look for Jobs in {self.namespace} left by a run on this host that "
            f"died without cleaning up: {why}"
        )

    def left_behind(self, ref: JobRef) -> str:
        """What may be left on the cluster of a Job this adapter could not delete."""
        return (
            f"job {ref.name} and its Pods may be left in namespace {ref.namespace} "
            f"(kubectl delete jobs.{GROUP} {ref.name} -n {ref.namespace})"
        )

    # --- submit -------------------------------------------------------------------------
    def submit(self, job: Job, manifest: str) -> JobRef:
        if self._closed:
            raise KubernetesAdapterError(CLOSED)
        try:
            body = yaml.safe_load(manifest)
        except yaml.YAMLError as e:
            raise SubmitRejected(f"the Job YAML does not parse: {e}") from None
        if not isinstance(body, dict):
            raise SubmitRejected("the Job YAML is not a mapping")
        owner.mark(body)  # so a later run can remove it if this one is killed outright
        owner.own_by_runner(body)
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
            created = call(create, reach=self.reach)
        except ApiUnreachable as e:
            # A create may have landed before the server went away.
            name = (body.get("metadata") or {}).get("name")
            raise TargetUnreachable(str(e), self.left_behind(JobRef(str(name), ns))) from None
        except ApiException as e:
            if e.status == 409 and attempts > 1:
                # A retried create whose first attempt did land: it is ours if it is this Job.
                created = self._get_job(ns, str((body.get("metadata") or {}).get("name")))
                if created.get("spec") != body.get("spec"):
                    raise SubmitRejected(api_refusal(e)) from None
            elif e.status == 403:
                # The harness's credentials may not create Jobs here: the API server names
                # the verb, resource, namespace and identity. Refused, never retried.
                raise SubmitRejected(
                    f"{api_refusal(e)} (the harness's identity needs the Role of "
                    f"{RBAC_FILE} bound in namespace {ns})"
                ) from None
            elif e.status in (400, 409, 422):
                raise SubmitRejected(api_refusal(e)) from None
            else:
                raise
        meta = created.get("metadata") or {}
        ref = JobRef(str(meta["name"]), str(meta.get("namespace") or ns), meta.get("uid"))
        with self._lock:
            closed = self._closed
            if not closed:
                self._created[(ref.namespace, ref.name)] = ref
        if closed:
            self.delete(ref)
            raise KubernetesAdapterError(CLOSED)
        return ref

    def _get_job(self, ns: str, name: str) -> Item:
        return get_json(
            self.custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            name,
            reach=self.reach,
        )

    # --- reading ------------------------------------------------------------------------
    def list_jobs(self, namespace: str) -> list[str]:
        jobs = get_json(
            self.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            reach=self.reach,
        )
        return sorted(str(j["metadata"]["name"]) for j in jobs.get("items") or [])

    def pods(self, ref: JobRef) -> list[PodStatus]:
        listing = get_json(
            self.core.list_namespaced_pod,
            ref.namespace,
            label_selector=_selector(ref),
            reach=self.reach,
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
        listing = get_json(self.core.list_namespaced_event, ref.namespace, reach=self.reach)
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

        text: str = call(read, reach=self.reach)
        return text

    def worker_evidence(self, ref: JobRef, pod: str) -> WorkerEvidence:
        """The Pod, its node and Ray's session logs as the cluster has them now
        (``evidence``), each request bounded by ``PROBE_SECONDS``."""
        return worker_evidence(self.core, ref.namespace, pod, PROBE_SECONDS)

    def node_inventory(self) -> list[NodeSpec]:
        nodes = get_json(self.core.list_node, reach=self.reach).get("items") or []
        return [node_from_k8s(n) for n in nodes]

    def clusters(self) -> list[str]:
        return list(self._clusters)

    def describe(self, ref: JobRef, pods: Sequence[PodStatus]) -> dict[str, str]:
        """The API server's version and the Worker's node's kubelet and container runtime,
        as the cluster reports them (``/version``; the Node's ``status.nodeInfo``, through
        the node listing the harness's role already has). One request each, bounded by
        ``PROBE_SECONDS`` and not retried: a cluster that does not answer now leaves them
        unread, it does not hold up the record."""
        found: dict[str, str] = {}
        unread: list[str] = []
        timeout = (PROBE_SECONDS, PROBE_SECONDS)
        try:
            version = client.VersionApi(self.api).get_code(_request_timeout=timeout)
            found["apiServerVersion"] = str(version.git_version)
        except (ApiException, urllib3.exceptions.HTTPError) as e:
            unread.append(f"the API server's version: {_unanswered(e)}")
        node = next((p.node for p in pods if p.node), None)
        if node is not None and not unread:  # a server that did not answer is asked once
            try:
                nodes = self.core.list_node(
                    field_selector=f"metadata.name={node}", _request_timeout=timeout
                ).items
            except (ApiException, urllib3.exceptions.HTTPError) as e:
                unread.append(f"node {node}: {_unanswered(e)}")
                nodes = []
            info = nodes[0].status.node_info if nodes and nodes[0].status else None
            if info is not None and info.kubelet_version:
                found["kubeletVersion"] = str(info.kubelet_version)
            if info is not None and info.container_runtime_version:
                found["containerRuntimeVersion"] = str(info.container_runtime_version)
        if unread:
            found["unread"] = "; ".join(unread)
        return found

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
        obs = Observation(clock=self.clock)
        stopper = Stopper()
        with self._lock:
            self._stoppers.setdefault((ref.namespace, ref.name), []).append(stopper)
        try:
            head = (self._get_job(ref.namespace, ref.name).get("spec") or {}).get("headRole")
        except ApiUnreachable as e:
            obs.lost(TargetUnreachable(str(e), self.left_behind(ref)))
            return obs
        except ApiException as e:
            if e.status != 404:
                raise
            head = None  # the Job is gone already: its remaining Pods still tell
        Observer(self, ref, obs, stopper, str(head) if head else None).start()
        return obs

    # --- deleting -----------------------------------------------------------------------
    def delete(self, ref: JobRef) -> None:
        """Delete the Job and its Pods and wait until they are gone.

        Raises ``CleanupRefused`` when the API server refuses the delete (RBAC), and
        ``TargetUnreachable`` when it does not answer past its bound; either names what is
        left."""
        try:
            # Background: the Job object goes at once. Foreground would keep it until the
            # garbage collector has handled its Pods, which for a kind the collector has not
            # discovered yet (a CRD installed moments ago) waits for its next resync, 30 s.
            # The Pods are deleted and waited for below, so nothing is left behind.
            self._unless_gone(
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
            self._unless_gone(
                self.core.delete_collection_namespaced_pod,
                ref.namespace,
                label_selector=_selector(ref),
            )
            with self._lock:  # asked for: what remains is waited for, never asked again
                self._created.pop((ref.namespace, ref.name), None)
            self._wait_pods_gone(ref)
        except ApiUnreachable as e:
            raise TargetUnreachable(str(e), self.left_behind(ref)) from None
        except ApiException as e:
            if e.status != 403:
                raise
            raise CleanupRefused(
                f"{api_refusal(e)}; {self.left_behind(ref)} (the harness's identity needs "
                f"the Role of {RBAC_FILE}, which may delete jobs and pods)"
            ) from None
        finally:
            with self._lock:
                stoppers = self._stoppers.pop((ref.namespace, ref.name), [])
            for s in stoppers:
                s.stop()

    def _unless_gone(self, fn: Any, *args: Any, **kw: Any) -> None:
        """A delete request; 404 Not Found means it is done already."""
        try:
            call(fn, *args, reach=self.reach, **kw)
        except ApiException as e:
            if e.status != 404:
                raise

    def _wait_pods_gone(self, ref: JobRef) -> None:
        """Watch the Job's Pods until none is left; raise after ``delete_timeout``, or at
        once when every Pod left is on a node whose kubelet stopped answering (its kubelet
        must confirm the deletion: they go when it is back)."""
        left: dict[str, str | None] = {}  # pod -> node
        stopper = Stopper()

        def settled() -> None:
            if not left or all(n in self.lost_nodes for n in left.values()):
                stopper.stop()

        def node(pod: Item) -> str | None:
            return (pod.get("spec") or {}).get("nodeName")

        def listed(pods: list[Item]) -> None:
            left.clear()
            left.update((str(p["metadata"]["name"]), node(p)) for p in pods)
            settled()

        def changed(kind: str, pod: Item) -> None:
            if kind == "SYNC":
                return  # counted by listed()
            name = str(pod["metadata"]["name"])
            if kind == "DELETED":
                left.pop(name, None)
            else:
                left[name] = node(pod)
            settled()

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
                reach=self.reach,
                label_selector=_selector(ref),
            )
        finally:
            done.set()
        stuck = sorted(f"{p} on {n}" for p, n in left.items() if n in self.lost_nodes)
        if stuck and len(stuck) == len(left):
            # The kubelet is what stopped answering, as when the Worker's log is read: the
            # phase that deleted the Worker names it (not an error of the harness's own).
            nodes = ", ".join(sorted({str(n) for n in left.values()}))
            raise TargetUnreachable(
                f"node {nodes}: its kubelet does not answer: pods of job {ref.name} are "
                f"marked for deletion there and go once it is back: {', '.join(stuck)}",
                self.left_behind(ref),
            )
        if left:
            raise KubernetesAdapterError(
                f"pods of job {ref.name} still present after {self.delete_timeout:.0f} s: "
                + ", ".join(sorted(left))
                + f"; {self.left_behind(ref)}"
            )

    def close(self) -> None:
        """Delete every Job this adapter created. Never raises: a Job that could not be
        deleted is a ``CleanupFailed`` warning of the record naming what is left (the
        atexit hook tries once more), never the error of whichever scenario ends last."""
        with self._lock:
            self._closed = True
            refs = list(self._created.values())
        failed = False
        for ref in refs:  # one Job that cannot be deleted must not keep the others
            try:
                self.delete(ref)
            except Exception as e:  # any: a CleanupFailed warning naming what is left
                failed = True
                what = e if isinstance(e, CleanupRefused | KubernetesAdapterError) else None
                text = str(what) if what is not None else f"{e}; {self.left_behind(ref)}"
                if isinstance(e, TargetUnreachable) and e.left:
                    text = f"{e}; {e.left}"
                cleanup.note_failure(f"job {ref.name} was not removed: {text}")
        with self._lock:
            stoppers = [s for group in self._stoppers.values() for s in group]
            self._stoppers.clear()
        for s in stoppers:
            s.stop()
        if not failed:
            cleanup.unregister(self)
