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
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlark_acceptance.adapters import cleanup
from rlark_acceptance.adapters.base import Event, JobRef, Observation, PodStatus, SubmitRejected
from rlark_acceptance.adapters.local.images import ImageError, LocalImage, resolve
from rlark_acceptance.adapters.local.leftovers import POD_MARKER_ENV, mounted_below, sweep_stale
from rlark_acceptance.adapters.local.pod import PodRun
from rlark_acceptance.adapters.local.s3 import S3ConfigError, client, endpoint_for_s3fs, probe
from rlark_acceptance.adapters.local.spec import (
    GPU_STANDIN_DIR,
    POD_HOME,
    RAY_TEMP_DIR,
    MountSpec,
    WorkerSpec,
)
from rlark_acceptance.model.job import JOB_NAME_LABEL, ROLE_LABEL, RUN_ID_LABEL, Job, Mount, Role
from rlark_acceptance.model.profile import NodeSpec, Profile
from rlark_acceptance.storage.store import FileStore, S3Store, Store

GPU_RESOURCE = "nvidia.com/gpu"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
WORKSPACE = "/workspace"
# `cd /workspace/x` in a script: the real image ships that directory (the project checkout).
_CD_WORKSPACE = re.compile(r"(?:^|[\s;&|(])cd\s+['\"]?(/workspace(?:/[^\s;&|)'\"]*)?)")


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


def python_paths(python: str) -> list[str]:
    """Host folders an interpreter needs: its environment, its base, its sys.path.

    The Pod gets a private /tmp and /root; an environment under them must stay visible.
    """
    # Compared by prefix: every virtualenv's python resolves to the same base interpreter.
    if os.path.abspath(os.path.join(python, "..", "..")) == os.path.abspath(sys.prefix):
        found = {sys.prefix, sys.base_prefix, *sys.path}
    else:
        probe = (
            "import sys; print(sys.prefix); print(sys.base_prefix); print(*sys.path, sep=chr(10))"
        )
        out = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, check=True, env={}
        ).stdout
        found = set(out.splitlines())
    ordered = sorted(os.path.realpath(p) for p in found if p and os.path.isdir(p))
    # A folder inside one already kept comes along with it.
    return [
        p
        for i, p in enumerate(ordered)
        if not any(p.startswith(q.rstrip("/") + "/") for q in ordered[:i])
    ]


class LocalAdapterError(RuntimeError):
    """A request the local target refuses (a Job that already exists, an unknown Pod)."""


@dataclass
class _JobRecord:
    ref: JobRef
    job: Job
    manifest: str
    pods: list[PodRun] = field(default_factory=list)


# Ray's ports are picked here and bound by Ray a few seconds later. Taken from the kernel's
# ephemeral range (what binding port 0 gives), one could meanwhile become the source port of
# some outgoing connection; this range lies below Linux's ephemeral ports (32768+) and above
# Ray's own worker ports (10002-19999).
_PORT_RANGE = (20000, 32000)


def _free_port() -> int:
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(*_PORT_RANGE)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise LocalAdapterError("no free port for the Ray head between 20000 and 32000")


class LocalAdapter:
    name = "local"

    def __init__(self, profile: Profile, **options: Any) -> None:
        self.profile = profile
        opts = {**profile.target.options, **options}
        self.node = profile.target.node or NodeSpec(
            "local-node", {"kubernetes.io/hostname": "local-node"}, 0
        )
        self._clusters = [str(c) for c in opts.get("clusters") or ["local"]]
        root = opts.get("scratch_root") or Path(tempfile.gettempdir()) / "rlark-local"
        self.scratch_root = Path(root)
        self.swept = sweep_stale(self.scratch_root)
        self.num_cpus = int(opts.get("ray_num_cpus", 1))
        # Ray's dashboard also serves its state API (ray.util.state), which RLinf's scheduler
        # lists its actors through; the smoke workload needs neither.
        self.ray_dashboard = bool(opts.get("rayDashboard", False))
        self.image_dirs = [str(d) for d in opts.get("image_dirs") or []]
        images = opts.get("images")
        self.images: dict[str, Any] = images if isinstance(images, dict) else {}
        self.without_gpu = bool(opts.get("withoutGpu", False))
        self._jobs: dict[tuple[str, str], _JobRecord] = {}
        self._lock = threading.RLock()
        cleanup.register(self, signals=opts.get("install_signal_handlers", True))

    # --- submit -------------------------------------------------------------------------
    def submit(self, job: Job, manifest: str) -> JobRef:
        name = str(job.name or "")
        namespace = job.namespace or self.profile.target.namespace
        role = next((r for r in job.roles if r.name == job.head_role), None) or job.worker
        # Refused as the Kubernetes API refuses an invalid object: nothing is created.
        if not _DNS1123_LABEL.match(name):
            raise SubmitRejected(
                f'Job.rlark.io "{name}" is invalid: metadata.name: a lowercase RFC 1123 label '
                "must consist of lower case alphanumeric characters or '-', and must start "
                "and end with an alphanumeric character"
            )
        if role is None:
            raise SubmitRejected(f'Job.rlark.io "{name}" is invalid: spec.headRole names no role')
        if role.replicas not in (1, None):
            raise SubmitRejected(
                f'Job.rlark.io "{name}": the local target runs exactly one Worker '
                f"(replicas {role.replicas!r})"
            )
        with self._lock:
            if (namespace, name) in self._jobs:
                raise SubmitRejected(f'jobs.rlark.io "{name}" already exists in {namespace}')
            ref = JobRef(name, namespace, str(uuid.uuid4()))
            record = _JobRecord(ref, job, manifest)
            self._jobs[(namespace, name)] = record
        pod_name = f"{name}-{role.name}-0"
        run_id = run_id_of(manifest)
        labels = {JOB_NAME_LABEL: name, ROLE_LABEL: str(role.name)}
        if run_id:
            labels[RUN_ID_LABEL] = run_id
        problem = self._unschedulable(role)
        if problem:
            pod = PodRun(PodStatus(pod_name, None, "Pending", labels=labels), namespace, None)
            record.pods.append(pod)
            pod.set_phase(reason="Unschedulable", message=problem)
            pod.event("FailedScheduling", problem, "Warning", "default-scheduler")
            return ref
        # Each run's Pods in a folder of their own: the root is shared by every checkout and
        # every run on the machine.
        run_dir = self.scratch_root / run_id if run_id else self.scratch_root
        run_dir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{pod_name[:40]}-", dir=run_dir))
        pod = PodRun(
            PodStatus(pod_name, self.node.name, "Pending", labels=labels), namespace, scratch
        )
        pod.hold_scratch()
        record.pods.append(pod)
        pod.set_phase()
        pod.event(
            "Scheduled",
            f"Successfully assigned {namespace}/{pod_name} to {self.node.name}",
            source="default-scheduler",
        )
        try:
            image = resolve(str(role.image), self.images, self.profile.path.parent)
        except ImageError as e:
            pod.event("Failed", str(e), "Warning")
            pod.set_phase(reason="ErrImagePull", message=str(e))
            pod.end_log()
            return ref
        pod.event(
            "Pulled",
            f'Container image "{role.image}" already present on machine: '
            f"the environment {image.environment}",
        )
        try:
            spec = self._spec(job, role, pod_name, scratch, ref, image)
        except (S3ConfigError, LocalAdapterError) as e:
            pod.event("FailedMount", str(e), "Warning")
            pod.set_phase(reason="CreateContainerError", message=str(e))
            pod.end_log()
            return ref
        self._image_dirs(job, role, scratch, image)
        status_r, status_w = os.pipe()
        spec.status_fd = status_w
        spec_path = scratch / "spec.json"
        spec.dump(spec_path)
        venv_bin = str(Path(sys.executable).parent)
        init_env = {
            "PATH": f"{venv_bin}:{SYSTEM_PATH}",
            "LANG": "C.UTF-8",
            POD_MARKER_ENV: ref.uid or "",
        }
        try:
            pod.start(spec, spec_path, init_env, status_r)
        except OSError as e:  # no unshare / python: the container cannot be created
            for fd in (status_r, status_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            pod.event("Failed", f"Error: {e}", "Warning")
            pod.set_phase(reason="CreateContainerError", message=str(e))
            pod.end_log()
        return ref

    def _unschedulable(self, role: Role) -> str | None:
        """kube-scheduler's verdict for one node, in its words; None when the Pod fits."""
        selector = role.node_selector or {}
        if not isinstance(selector, dict) or any(
            self.node.labels.get(str(k)) != str(v) for k, v in selector.items()
        ):
            return "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        gpus = role.gpus if isinstance(role.gpus, int) and not isinstance(role.gpus, bool) else 0
        if gpus > self.node.gpus:
            return f"0/1 nodes are available: 1 Insufficient {GPU_RESOURCE}."
        for m in role.mounts:
            if m.type == "pvc":
                return f'0/1 nodes are available: persistentvolumeclaim "{m.claim_name}" not found.'
        return None

    def _image_dirs(self, job: Job, role: Role, scratch: Path, image: LocalImage) -> None:
        """The image's /workspace content: what the image names (copied: the image's
        writable layer), the directories the scripts cd into (created empty, as the real
        image would ship them) plus ``target.image_dirs``."""
        for name, src in image.workspace.items():
            shutil.copytree(src, scratch / "workspace" / name, symlinks=True, dirs_exist_ok=True)
        scripts = f"{role.prepare_script or ''}\n{job.run_script or ''}"
        wanted = [m.group(1) for m in _CD_WORKSPACE.finditer(scripts)] + self.image_dirs
        for d in wanted:
            rel = Path(d).relative_to(WORKSPACE) if d.startswith(WORKSPACE) else None
            if rel is not None and ".." not in rel.parts:
                (scratch / "workspace" / rel).mkdir(parents=True, exist_ok=True)

    def _job_dir(self, job: Job) -> Path:
        """Relative hostPaths are relative to the Job YAML's folder (the profile's if rendered)."""
        path = Path(job.doc.path)
        return path.parent if path.is_file() else self.profile.path.parent

    def _spec(
        self, job: Job, role: Role, pod: str, scratch: Path, ref: JobRef, image: LocalImage
    ) -> WorkerSpec:
        mounts: list[MountSpec] = []
        for m in role.mounts:
            if not m.container_path or not m.container_path.startswith("/"):
                raise LocalAdapterError(f'volume "{m.name}": containerPath must be absolute')
            if m.type == "hostPath" and m.host_path:
                src = (self._job_dir(job) / m.host_path).resolve()
                mounts.append(MountSpec(m.name, "bind", m.container_path, m.read_only, str(src)))
            elif m.type == "objectStorage" and m.bucket:
                mounts.append(
                    MountSpec(
                        m.name,
                        "s3",
                        m.container_path,
                        m.read_only,
                        bucket=m.bucket,
                        prefix=m.prefix,
                    )
                )
            else:
                raise LocalAdapterError(f'volume "{m.name}": type {m.type!r} is not supported here')
        s3 = None
        if any(m.kind == "s3" for m in mounts):
            s3 = endpoint_for_s3fs(scratch / "secret")
        for ms in mounts:
            if ms.kind == "s3" and ms.bucket:
                try:
                    probe(ms.bucket, ms.prefix)
                except S3ConfigError as e:
                    if s3 is not None:  # no s3fs will read it
                        Path(s3.passwd_file).unlink(missing_ok=True)
                    raise S3ConfigError(
                        f'MountVolume.SetUp failed for volume "{ms.name}" : {e}'
                    ) from None
        env = {
            "PATH": f"{image.bin}:{SYSTEM_PATH}",
            "VIRTUAL_ENV": str(image.environment),
            # The container's own home, empty: no Ray, pip or XDG state of the user's.
            "HOME": POD_HOME,
            "XDG_CONFIG_HOME": f"{POD_HOME}/.config",
            "XDG_CACHE_HOME": f"{POD_HOME}/.cache",
            "XDG_DATA_HOME": f"{POD_HOME}/.local/share",
            "XDG_STATE_HOME": f"{POD_HOME}/.local/state",
            "LANG": "C.UTF-8",
            "HOSTNAME": pod,
            "RAY_USAGE_STATS_ENABLED": "0",
            # The node is this machine and nothing joins from outside: keep Ray on loopback.
            # Ray replaces --node-ip-address=127.0.0.1 with the machine's interface address
            # unless its cluster mode is off (the switch Ray itself uses on laptops).
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            POD_MARKER_ENV: ref.uid or "",
        }
        env.update({e.name: e.value or "" for e in role.env})
        if self.without_gpu:
            # Every interpreter of the Worker (Ray's workers inherit it) loads the GPU stand-in.
            env["PYTHONPATH"] = ":".join(p for p in (GPU_STANDIN_DIR, env.get("PYTHONPATH")) if p)
        return WorkerSpec(
            pod=pod,
            scratch=str(scratch),
            mounts=mounts,
            env=env,
            prepare_script=role.prepare_script or "",
            run_script=job.run_script or "",
            ray_start=self._ray_start(),
            status_fd=-1,
            s3=s3,
            keep=python_paths(str(image.environment / "bin" / "python")),
            gpu_standin=self.without_gpu,
        )

    def _ray_start(self) -> list[str]:
        # Every port Ray would otherwise take from fixed defaults is picked free, so this
        # head never collides with another one on the machine.
        ports = {
            "--port": _free_port(),
            "--dashboard-port": _free_port(),
            "--dashboard-agent-listen-port": _free_port(),
            "--dashboard-agent-grpc-port": _free_port(),
            "--runtime-env-agent-port": _free_port(),
            "--metrics-export-port": _free_port(),
        }
        return [
            "ray",
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={self.num_cpus}",
            "--num-gpus=0",
            "--object-store-memory=100000000",
            *(
                ["--include-dashboard=true", "--dashboard-host=127.0.0.1"]
                if self.ray_dashboard
                else ["--include-dashboard=false"]
            ),
            "--disable-usage-stats",
            f"--temp-dir={RAY_TEMP_DIR}",
            *(f"{k}={v}" for k, v in ports.items()),
        ]

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
        obs = Observation()
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

    def events(self, ref: JobRef) -> list[Event]:
        record = self._known(ref)  # a Job deleted: its Events went with it
        pods = [] if record is None else record.pods
        return sorted((e for p in pods for e in p.events), key=lambda e: e.time)

    def node_inventory(self) -> list[NodeSpec]:
        return [self.node]

    def clusters(self) -> list[str]:
        return list(self._clusters)

    def store_for(self, job: Job, mount: Mount) -> Store:
        if mount.type == "hostPath" and mount.host_path:
            return FileStore((self._job_dir(job) / mount.host_path).resolve())
        if mount.type == "objectStorage" and mount.bucket:
            return S3Store(client(), mount.bucket, mount.prefix or "")
        raise LocalAdapterError(f'volume "{mount.name}" of type {mount.type!r} has no local store')

    # --- deleting -----------------------------------------------------------------------
    def delete(self, ref: JobRef) -> None:
        with self._lock:
            record = self._jobs.pop((ref.namespace, ref.name), None)
        if record is None:
            return
        for pod in record.pods:
            pod.deleted = True
            pod.stop()
            pod.remove_scratch(mounted_below)
            if pod.scratch is not None and pod.scratch.parent != self.scratch_root:
                with contextlib.suppress(OSError):
                    pod.scratch.parent.rmdir()  # the run's folder, once its last Pod is gone

    def close(self) -> None:
        with self._lock:
            refs = [r.ref for r in self._jobs.values()]
        for ref in refs:
            self.delete(ref)
        cleanup.unregister(self)
