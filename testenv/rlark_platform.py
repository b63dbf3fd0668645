"""THE RLARK PLATFORM STAND-IN: a small controller, the one test double of the cluster.

RLark itself cannot run here. This controller does, on testenv's real control plane and
real node, what the page says RLark does with a submitted Job, and nothing more:

1. installs the ``jobs.rlark.io`` CRD (schema open, ``status`` subresource);
2. for each new Job: one Pod ``<job>-<role>-0`` for the Header role (the only role a
   single-node Job runs), labelled ``rlark.io/job-name`` / ``rlark.io/role``, owned by the
   Job (deleting the Job deletes the Pod), with the role's image, ``nodeSelector``, env,
   ``nvidia.com/gpu`` limits = requests = ``gpus``, and a node affinity to the nodes of the
   role's ``cluster`` (label ``rlark.io/cluster``: RLark runs each cluster's Workers on its
   own nodes);
3. the container command replaces the image's ENTRYPOINT (as the page warns): one bash
   runs the role's prepareScript, then ``ray start --head`` (a real Ray head on the Pod's
   loopback), then the Job's runScript; a failing prepare script ends the Pod with its
   status and Ray never starts; the Pod has one PID namespace whose PID 1 is the sandbox
   (the shell is killable, orphans are reaped); SIGTERM reaches the run script at once;
4. mounts: ``hostPath`` as a hostPath volume (an absolute path on the node; a relative one
   is refused with a ``FailedCreate`` Event); ``objectStorage`` made real by an s3fs mount of
   ``bucket:/prefix`` on the node (endpoint and key pair from boto3's standard chain in
   the controller's environment), handed to the Pod as a hostPath volume, and unmounted
   once the Job and its Pods are gone (s3fs uploads each file as the Worker closes it);
5. ``status.phase`` of the Job follows its Worker Pod (Pending, Running, Succeeded,
   Failed); ``status.pods`` names it.

Started by ``testenv up cluster`` as ``python -m testenv.rlark_platform`` (admin
kubeconfig, the state dir for its s3fs mounts); stopped by ``testenv down`` by pid.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlark_acceptance.model.worker import Worker
from testenv.rlark_platform_pod import (
    CRD,
    GROUP,
    JOB_LABEL,
    KIND,
    PLURAL,
    VERSION,
    Refused,
    worker_of_object,
    worker_pod,
)
from testenv.state import PlatformState, State

log = logging.getLogger("rlark-platform")


class Platform:
    def __init__(self, api: Any, mount_root: Path) -> None:
        from kubernetes import client

        self.client = client
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.mount_root = mount_root
        self._seen: dict[str, dict[str, Any]] = {}  # uid -> the Job as last seen
        self._releasing: set[str] = set()  # a deleted Job is reported twice (marked, gone)
        self._lock = threading.Lock()

    # --- Jobs --------------------------------------------------------------------------
    def on_jobs_listed(self, items: list[dict[str, Any]]) -> None:
        """A (re-)listing of the Jobs: one deleted while the watch was away (an API server
        restart) gets no DELETED event, so what is no longer listed is released here."""
        listed = {str(j["metadata"]["uid"]) for j in items}
        with self._lock:
            gone = [job for uid, job in self._seen.items() if uid not in listed]
        for job in gone:
            self.on_job("DELETED", job)

    def on_job(self, kind: str, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        uid = meta["uid"]
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            with self._lock:
                if uid in self._releasing:
                    return
                self._releasing.add(uid)
            threading.Thread(target=self._release, args=(job,), daemon=True).start()
            return
        with self._lock:
            if uid in self._seen:
                return
            self._seen[uid] = job
        try:
            worker = worker_of_object(job)
            dirs = self._mount_object_storage(meta["uid"], worker)
            pod = worker_pod(job, worker, dirs)
            self.core.create_namespaced_pod(meta["namespace"], pod)
            self._event(job, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        except Refused as e:
            self._event(job, "FailedCreate", str(e))
        except self.client.ApiException as e:
            if e.status != 409:
                self._event(job, "FailedCreate", f"pod: {e.reason}")

    def _mount_object_storage(self, uid: str, worker: Worker) -> dict[str, str]:
        """Each objectStorage mount of the Worker as s3fs on the node: name → folder."""
        from rlark_acceptance.adapters.local.container import mount_spec
        from rlark_acceptance.adapters.local.mounts import MountError, mount_s3fs
        from rlark_acceptance.adapters.local.s3 import S3ConfigError, endpoint_for_s3fs

        wanted = [m for m in worker.mounts(host_base=None) if m.kind == "objectStorage"]
        if not wanted:
            return {}
        _site_object_storage()
        base = self.mount_root / uid
        private = base / ".private"
        out: dict[str, str] = {}
        try:
            endpoint = endpoint_for_s3fs(private)
            for m in wanted:
                target = base / m.name
                target.mkdir(parents=True, exist_ok=True)
                mount_s3fs(endpoint, mount_spec(m), target)
                out[m.name] = str(target)
        except (MountError, S3ConfigError) as e:
            raise Refused(str(e)) from None
        finally:
            with contextlib.suppress(OSError):
                for f in private.iterdir():
                    f.unlink()
                private.rmdir()
        return out

    def _release(self, job: dict[str, Any]) -> None:
        """Once the Job's Pods are gone, unmount its object storage (uploads complete)."""
        meta = job["metadata"]
        base = self.mount_root / meta["uid"]
        if not base.is_dir():
            return
        sel = f"{JOB_LABEL}={meta['name']}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # an API server restart: asked again
                if not self.core.list_namespaced_pod(meta["namespace"], label_selector=sel).items:
                    break
            time.sleep(0.5)
        release_mounts(base)

    def _event(self, job: dict[str, Any], reason: str, message: str) -> None:
        meta = job["metadata"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "reason": reason,
            "message": message,
            "type": "Normal" if reason.startswith("Successful") else "Warning",
            "source": {"component": "rlark-platform"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with contextlib.suppress(Exception):  # an Event is a courtesy: the Job goes on
            self.core.create_namespaced_event(meta["namespace"], body)

    # --- Pods → Job status ------------------------------------------------------------
    def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        job = (meta.get("labels") or {}).get(JOB_LABEL)
        if not job or kind == "DELETED":
            return
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        body = {"status": {"phase": phase, "pods": [meta.get("name")]}}
        with contextlib.suppress(self.client.ApiException):
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURAL, job, body
            )


def _site_object_storage() -> None:
    """The site's object storage is testenv's S3 server, wherever it runs now: its settings
    are read from testenv's state at each Job (it may start after this controller)."""
    from testenv import state

    for k, v in state.env_vars(state.load()).items():
        if k.startswith("AWS_"):
            os.environ[k] = v


def release_mounts(base: Path) -> None:
    """Unmount every s3fs mount under ``base`` and remove it."""
    for d in sorted(base.glob("*"), reverse=True):
        if os.path.ismount(d):
            subprocess.run(["fusermount", "-u", str(d)], capture_output=True)
            if os.path.ismount(d):
                subprocess.run(["umount", "-l", str(d)], capture_output=True)
    subprocess.run(["rm", "-rf", "--one-file-system", str(base)], capture_output=True)


def install_crd(api: Any, timeout: float = 30) -> None:
    """Create ``jobs.rlark.io`` (or update it) and wait until the API serves it."""
    from kubernetes import client

    ext = client.ApiextensionsV1Api(api)
    try:
        ext.create_custom_resource_definition(CRD)
    except client.ApiException as e:
        if e.status != 409:
            raise
        ext.patch_custom_resource_definition(f"{PLURAL}.{GROUP}", CRD)
    deadline = time.monotonic() + timeout
    while True:
        crd = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        conds = crd.status.conditions or [] if crd.status else []
        if any(c.type == "Established" and c.status == "True" for c in conds):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("jobs.rlark.io was not established")
        time.sleep(0.1)


def run(kubeconfig: str, mount_root: Path) -> None:
    from kubernetes import client, config

    from rlark_acceptance.adapters.kubernetes.stream import Stopper, list_then_watch

    cfg = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    api = client.ApiClient(cfg)
    install_crd(api)
    mount_root.mkdir(parents=True, exist_ok=True)
    platform = Platform(api, mount_root)
    stopper = Stopper()
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)

    def forever(what: str, fn: Any, args: tuple[Any, ...], on: Any, **kw: Any) -> None:
        while not stopper.stopped:
            try:
                list_then_watch(fn, args, on, stopper, **kw)
            except Exception as e:  # an apiserver restart: list and watch again
                log.warning("%s watch: %s: %s", what, type(e).__name__, e)
                stopper.event.wait(1.0)

    threads = [
        threading.Thread(
            target=forever,
            args=(
                "jobs",
                custom.list_cluster_custom_object,
                (GROUP, VERSION, PLURAL),
                platform.on_job,
            ),
            kwargs={"on_list": platform.on_jobs_listed},
            daemon=True,
        ),
        threading.Thread(
            target=forever,
            args=("pods", core.list_pod_for_all_namespaces, (), platform.on_pod),
            kwargs={"label_selector": JOB_LABEL},
            daemon=True,
        ),
    ]
    for t in threads:
        t.start()
    log.info("rlark platform stand-in running")
    while all(t.is_alive() for t in threads):
        time.sleep(1)


# --- lifecycle, for testenv ------------------------------------------------------------
def _mount_root() -> Path:
    from testenv.paths import state_root

    return state_root() / "platform" / "s3"


def up(state: State, installed: Callable[[], bool]) -> None:
    """Start the stand-in; ``installed``: whether the cluster has its CRD yet (it installs
    it first thing)."""
    from testenv import proc
    from testenv.paths import REPO_ROOT, state_root

    if healthy(state):
        return
    down(state)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["RLARK_TESTENV_STATE"] = str(state_root())
    assert state.cluster is not None, "the platform runs on testenv's cluster"
    pid = proc.spawn(
        [sys.executable, "-m", "testenv.rlark_platform", state.cluster.kubeconfig],
        state_root() / "logs" / "rlark-platform.log",
        env,
        REPO_ROOT,
    )
    state.platform = PlatformState(pid)
    deadline = time.monotonic() + 60
    while not installed():
        if time.monotonic() > deadline or not proc.alive(pid):
            raise RuntimeError("the RLark platform stand-in did not start: see logs/")
        time.sleep(0.2)


def healthy(state: State) -> bool:
    from testenv import proc

    p = state.platform
    return p is not None and proc.alive(p.pid, os.path.realpath(sys.executable))


def down(state: State) -> None:
    from testenv import proc

    p, state.platform = state.platform, None
    if p:
        proc.stop(p.pid, os.path.realpath(sys.executable), timeout=5)
    root = _mount_root()
    if root.is_dir():
        for base in root.iterdir():
            release_mounts(base)


def status(state: State) -> dict[str, Any]:
    from testenv import proc

    p = state.platform
    if not p:
        return {"running": False}
    pid = p.pid
    return {
        "running": healthy(state),
        "pid": pid,
        "rss_mib": round(proc.rss_kib(pid) / 1024, 1),
    }


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    run(argv[1], _mount_root())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
