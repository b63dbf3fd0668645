"""The embedded default target: this machine is the one GPU node, a Worker is a local Pod.

- Scheduling is checked like kube-scheduler would for one node: the role's nodeSelector
  against the node declared in ``profile.target.node`` (name, labels, GPU count: this
  machine has no GPUs, so its capacity is declared) and the requested GPUs against that
  count. A Pod that does not fit stays Pending / Unschedulable with a FailedScheduling Event.
- A scheduled Pod is a process group in its own mount and PID namespaces (``unshare``) whose
  init (``worker``) assembles the Pod's filesystem (``mounts``: a per-Pod scratch
  at ``/workspace`` and ``/tmp``, hostPath binds, object storage as an s3fs FUSE mount) and
  runs prepareScript, ``ray start --head`` and runScript in one ``bash``.
- The image is an environment of this machine that the profile names (``images``): the
  Worker runs with its ``bin`` first on PATH, at the path it was built for, with the
  image's /workspace content copied in; an image the profile does not name fails the Pod
  with ErrImagePull. The Worker is isolated like a container: its environment is only
  what this adapter and the Job set (no variable of the harness's), its HOME (/root) and
  XDG dirs are its own, empty, in the Pod's scratch.
- Everything is reported through ``observe()``: Pod phase changes, each log line as it is
  printed, Events. ``close()``, an atexit hook and SIGINT / SIGTERM handlers (chained to
  the previous ones) delete every Pod this adapter started.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import (
    Event,
    JobRef,
    Observation,
    PodStatus,
    SubmitRejected,
    WorkerEvidence,
)
from rlark_acceptance.adapters.clock import SYSTEM, Clock
from rlark_acceptance.adapters.local.container import (
    ContainerError,
    copy_image_workspace,
    host_base,
    init_env,
    init_spec,
    unschedulable,
)
from rlark_acceptance.adapters.local.evidence import worker_evidence
from rlark_acceptance.adapters.local.images import ImageError, LocalImage, resolve
from rlark_acceptance.adapters.local.images import describe as describe_image
from rlark_acceptance.adapters.local.leftovers import mounted_below, sweep_stale
from rlark_acceptance.adapters.local.options import LocalOptions
from rlark_acceptance.adapters.local.pod import PodRun
from rlark_acceptance.adapters.local.s3 import S3ConfigError, client
from rlark_acceptance.model.job import RUN_ID_LABEL, Job, Mount
from rlark_acceptance.model.options import options_of
from rlark_acceptance.model.profile import NodeSpec, Profile
from rlark_acceptance.model.worker import Worker, WorkerRefused, worker_of
from rlark_acceptance.storage.store import FileStore, S3Store, Store

_DNS1123_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


def run_id_of(manifest: str) -> str | None:
    """The run id the acceptance run labelled its Job with (``run_id.RUN_ID_LABEL``)."""
    try:
        data = yaml.safe_load(manifest)
    except yaml.YAMLError:
        return None
    meta = data.get("metadata") if isinstance(data, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    value = labels.get(RUN_ID_LABEL) if isinstance(labels, dict) else None
    # It names a folder: a label value's characters only.
    return value if isinstance(value, str) and _LABEL_VALUE.match(value) else None


class LocalAdapterError(RuntimeError):
    """A request the local target refuses (a Job that already exists, an unknown Pod)."""


@dataclass
class _JobRecord:
    ref: JobRef
    job: Job
    manifest: str
    pods: list[PodRun] = field(default_factory=list)
    worker: Worker | None = None  # what the Job became (a red run's bundle shows its Pod)
    # Held from before the Job is listed until its Pod is started (or refused): a delete
    # from another thread (an interrupt's clean-up while a self-check is submitted beside
    # it) waits for it, so it neither removes the scratch a Worker is being started in nor
    # misses that Worker or the thread reading its output. Reentrant: the clean-up of an
    # interrupt that lands in this submission runs in the thread holding it, and goes on.
    starting: threading.RLock = field(default_factory=threading.RLock)


class LocalAdapter:
    name = "local"

    def __init__(
        self,
        profile: Profile,
        *,
        scratch_root: str | Path | None = None,
        install_signal_handlers: bool = True,
        clock: Clock = SYSTEM,
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.options = options_of(LocalOptions, self.name, profile.target.options)
        self.node = profile.target.node or NodeSpec(
            "local-node", {"kubernetes.io/hostname": "local-node"}, 0
        )
        root = scratch_root or self.options.scratch_root
        self.scratch_root = Path(root or Path(tempfile.gettempdir()) / "rlark-local")
        self.swept = sweep_stale(self.scratch_root)
        self._jobs: dict[tuple[str, str], _JobRecord] = {}
        # What each Job's Worker ran as its image, kept past the Job's deletion: the
        # record's provenance is read once Step 6 is over (``describe``).
        self._images: dict[tuple[str, str], LocalImage] = {}
        self._lock = threading.RLock()
        self._closed = False
        cleanup.register(self, signals=install_signal_handlers)

    # --- submit -------------------------------------------------------------------------
    def submit(self, job: Job, manifest: str) -> JobRef:
        worker = self._admit(job)
        key = (worker.namespace, worker.job)
        ref = JobRef(worker.job, worker.namespace, str(uuid.uuid4()))
        record = _JobRecord(ref, job, manifest, worker=worker)
        with record.starting:
            with self._lock:
                if self._closed:
                    raise LocalAdapterError("the local target is closed (the run was interrupted)")
                if key in self._jobs:
                    raise SubmitRejected(f'jobs.rlark.io "{worker.job}" already exists in {key[0]}')
                self._jobs[key] = record
            self._place(record, worker, manifest)
        return record.ref

    def _place(self, record: _JobRecord, worker: Worker, manifest: str) -> None:
        """The Job's one Pod: scheduled, its image resolved, started; what fails is the
        Pod's, as a cluster reports it."""
        ref, job = record.ref, record.job
        run_id = run_id_of(manifest)
        labels = {**worker.labels, **({RUN_ID_LABEL: run_id} if run_id else {})}
        problem = unschedulable(worker, self.node)
        if problem:
            pod = PodRun(
                PodStatus(worker.pod, None, "Pending", labels=labels),
                ref.namespace,
                None,
                self.clock,
            )
            record.pods.append(pod)
            pod.set_phase(reason="Unschedulable", message=problem)
            pod.event("FailedScheduling", problem, "Warning", "default-scheduler")
            return
        pod = self._schedule(worker, labels, run_id)
        record.pods.append(pod)
        try:
            image = resolve(worker.image, dict(self.options.images), self.profile.path.parent)
        except ImageError as e:
            pod.event("Failed", str(e), "Warning")
            pod.set_phase(reason="ErrImagePull", message=str(e))
            pod.end_log()
            return
        with self._lock:
            self._images[(ref.namespace, ref.name)] = image
        pod.event(
            "Pulled",
            f'Container image "{worker.image}" already present on machine: '
            f"the environment {image.environment}",
        )
        self._start(pod, job, worker, image, ref.uid or "")

    def _admit(self, job: Job) -> Worker:
        """The Worker of ``job``, refused as the Kubernetes API refuses an invalid object
        (nothing is created)."""
        name = str(job.name or "")
        if not _DNS1123_LABEL.match(name):
            raise SubmitRejected(
                f'Job.rlark.io "{name}" is invalid: metadata.name: a lowercase RFC 1123 label '
                "must consist of lower case alphanumeric characters or '-', and must start "
                "and end with an alphanumeric character"
            )
        try:
            worker = worker_of(job, self.profile.target.namespace)
        except WorkerRefused as e:
            raise SubmitRejected(str(e)) from None
        replicas = next(r.replicas for r in job.roles if r.name == worker.role)
        if replicas not in (1, None):
            raise SubmitRejected(
                f'Job.rlark.io "{name}": the local target runs exactly one Worker '
                f"(replicas {replicas!r})"
            )
        return worker

    def _schedule(self, worker: Worker, labels: dict[str, str], run_id: str | None) -> PodRun:
        """The Pod on this node, with its scratch: each run's Pods in a folder of their own
        (the root is shared by every checkout and every run on the machine)."""
        run_dir = self.scratch_root / run_id if run_id else self.scratch_root
        run_dir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{worker.pod[:40]}-", dir=run_dir))
        status = PodStatus(worker.pod, self.node.name, "Pending", labels=labels)
        pod = PodRun(status, worker.namespace, scratch, self.clock)
        pod.hold_scratch()
        pod.set_phase()
        pod.event(
            "Scheduled",
            f"Successfully assigned {worker.namespace}/{worker.pod} to {self.node.name}",
            source="default-scheduler",
        )
        return pod

    def _start(self, pod: PodRun, job: Job, worker: Worker, image: LocalImage, uid: str) -> None:
        """Mount, then start the Pod's init; what fails is the Pod's, as kubelet reports it."""
        assert pod.scratch is not None
        try:
            mounts = worker.mounts(host_base(job, self.profile.path.parent))
            spec = init_spec(worker, mounts, pod.scratch, image, self.options, uid)
        except (WorkerRefused, S3ConfigError, ContainerError) as e:
            pod.event("FailedMount", str(e), "Warning")
            pod.set_phase(reason="CreateContainerError", message=str(e))
            pod.end_log()
            return
        copy_image_workspace(worker, pod.scratch, image, self.options.image_dirs)
        status_r, status_w = os.pipe()
        spec.status_fd = status_w
        spec_path = pod.scratch / "spec.json"
        spec.dump(spec_path)
        try:
            pod.start(spec, spec_path, init_env(uid), status_r)
        except OSError as e:  # no unshare / python: the container cannot be created
            for fd in (status_r, status_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            pod.event("Failed", f"Error: {e}", "Warning")
            pod.set_phase(reason="CreateContainerError", message=str(e))
            pod.end_log()

    # --- reading ------------------------------------------------------------------------
    def _known(self, ref: JobRef) -> _JobRecord | None:
        with self._lock:
            return self._jobs.get((ref.namespace, ref.name))

    def _record(self, ref: JobRef) -> _JobRecord:
        record = self._known(ref)
        if record is None:
            raise LocalAdapterError(f'jobs.rlark.io "{ref.name}" not found in {ref.namespace}')
        return record

    def list_jobs(self, namespace: str) -> list[str]:
        with self._lock:
            return sorted(name for ns, name in self._jobs if ns == namespace)

    def pods(self, ref: JobRef) -> list[PodStatus]:
        record = self._known(ref)  # a Job deleted has no Pods left, as a cluster lists them
        return [] if record is None else [p.status for p in record.pods]

    def observe(self, ref: JobRef) -> Observation:
        obs = Observation(clock=self.clock)
        for pod in self._record(ref).pods:
            pod.attach(obs)
        return obs

    def logs(self, ref: JobRef, pod: str) -> str:
        for p in self._record(ref).pods:
            if p.name == pod:
                return p.text()
        raise LocalAdapterError(f'pods "{pod}" not found')

    def pod_dir(self, ref: JobRef, pod: str) -> Path | None:
        """The Pod's scratch on this machine (its /workspace, /tmp, log); None if unscheduled."""
        for p in self._record(ref).pods:
            if p.name == pod:
                return p.scratch
        raise LocalAdapterError(f'pods "{pod}" not found')

    def worker_evidence(self, ref: JobRef, pod: str) -> WorkerEvidence:
        """The Pod, this node and Ray's session logs in the Pod's scratch, while it is there."""
        record = self._record(ref)
        for p in record.pods:
            if p.name == pod:
                return worker_evidence(record.worker, p.status, p.namespace, p.scratch, self.node)
        raise LocalAdapterError(f'pods "{pod}" not found')

    def events(self, ref: JobRef) -> list[Event]:
        record = self._known(ref)  # a Job deleted: its Events went with it
        pods = [] if record is None else record.pods
        return sorted((e for p in pods for e in p.events), key=lambda e: e.time)

    def node_inventory(self) -> list[NodeSpec]:
        return [self.node]

    def clusters(self) -> list[str]:
        return list(self.profile.target.cluster) or ["local"]

    def describe(self, ref: JobRef, pods: Sequence[PodStatus]) -> dict[str, str]:
        """The Worker's image as this node ran it (``images.describe``); nothing for a Job
        whose image was never found."""
        with self._lock:
            image = self._images.get((ref.namespace, ref.name))
        return {} if image is None else describe_image(image)

    def store_for(self, job: Job, mount: Mount) -> Store:
        if mount.type == "hostPath" and mount.host_path:
            return FileStore((host_base(job, self.profile.path.parent) / mount.host_path).resolve())
        if mount.type == "objectStorage" and mount.bucket:
            return S3Store(client(), mount.bucket, mount.prefix or "")
        raise LocalAdapterError(f'volume "{mount.name}" of type {mount.type!r} has no local store')

    # --- deleting -----------------------------------------------------------------------
    def delete(self, ref: JobRef) -> None:
        with self._lock:
            record = self._jobs.pop((ref.namespace, ref.name), None)
        if record is None:
            return
        with record.starting:  # its Pod started, or refused: nothing more comes to it
            pods = list(record.pods)
        for pod in pods:
            pod.deleted = True
            pod.stop()
            pod.remove_scratch(mounted_below)
            if pod.scratch is not None and pod.scratch.parent != self.scratch_root:
                with contextlib.suppress(OSError):
                    pod.scratch.parent.rmdir()  # the run's folder, once its last Pod is gone

    def close(self) -> None:
        with self._lock:
            self._closed = True  # a submission still under way is refused, not left running
            refs = [r.ref for r in self._jobs.values()]
        for ref in refs:
            self.delete(ref)
        cleanup.unregister(self)
