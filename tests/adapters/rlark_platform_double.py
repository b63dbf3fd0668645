"""A TEST DOUBLE of the RLark platform's operator, used only by the tests.

RLark itself cannot run here, so this stands in for the one thing the kubernetes adapter
relies on: a Job custom resource (``jobs.rlark.io``) becomes one Worker Pod for its Header
role, ``<job>-<role>-0``, labelled ``rlark.io/job-name`` / ``rlark.io/role``, with the
role's nodeSelector, image, env and ``nvidia.com/gpu`` request, owned by the Job. Nothing
more: the real kube-scheduler binds (or refuses) the Pod and kwok plays its kubelet.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from kubernetes import client

from rlark_acceptance.model.job import JOB_NAME_LABEL, ROLE_LABEL

GROUP, VERSION, PLURAL, KIND = "rlark.io", "v1alpha1", "jobs", "Job"
GPU_RESOURCE = "nvidia.com/gpu"

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "job", "kind": KIND, "listKind": "JobList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                # RLark's real schema is internal: the double keeps whatever the Job says.
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def install_crd(api: client.ApiClient, timeout: float = 30) -> None:
    """Create ``jobs.rlark.io`` (once) and wait until the API serves it."""
    ext = client.ApiextensionsV1Api(api)
    try:
        ext.create_custom_resource_definition(CRD)
    except client.ApiException as e:
        if e.status != 409:
            raise
    deadline = time.monotonic() + timeout
    while True:
        crd = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        conds = crd.status.conditions or [] if crd.status else []
        if any(c.type == "Established" and c.status == "True" for c in conds):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("jobs.rlark.io was not established")
        time.sleep(0.1)


def worker_pod(job: dict[str, Any]) -> dict[str, Any] | None:
    """The Pod the platform would create for the Job's Header role (None: no such role)."""
    meta, spec = job["metadata"], job.get("spec") or {}
    head = spec.get("headRole")
    role = next((r for r in spec.get("roles") or [] if r.get("name") == head), None)
    if role is None:
        return None
    gpus = {GPU_RESOURCE: str(role.get("gpus") or 0)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{role['name']}-0",
            "labels": {JOB_NAME_LABEL: meta["name"], ROLE_LABEL: role["name"]},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": role.get("nodeSelector") or {},
            "containers": [
                {
                    "name": role["name"],
                    "image": role.get("image"),
                    "resources": {"limits": gpus, "requests": gpus},
                    "env": [
                        {"name": str(e["name"]), "value": str(e.get("value") or "")}
                        for e in role.get("env") or []
                    ],
                }
            ],
        },
    }


class PlatformDouble:
    """A controller thread: each new Job CR, in any namespace, gets its one Worker Pod."""

    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self._stopped = threading.Event()
        self._resp: Any = None
        self._seen: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="rlark-double", daemon=True)

    def start(self) -> PlatformDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(Exception):
            self._resp.shutdown()  # unblocks the read of the watch at once
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._watch()
            except Exception:
                # stop() breaks the stream; anything else (an apiserver restart): watch again.
                self._stopped.wait(0.2)

    def _watch(self) -> None:
        # A watch without a resourceVersion starts with every existing Job as ADDED: seen
        # ones are skipped, so each round picks up what happened in between.
        self._resp = resp = self.custom.list_cluster_custom_object(
            GROUP,
            VERSION,
            PLURAL,
            watch=True,
            timeout_seconds=60,
            _request_timeout=(5, 90),  # never stuck for long on a request that hangs
            _preload_content=False,
        )
        try:
            buf = b""
            for chunk in resp.stream(None, decode_content=False):
                *done, buf = (buf + chunk).split(b"\n")
                for line in filter(None, done):
                    ev = json.loads(line)
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        self._reconcile(ev["object"])
        finally:
            resp.close()

    def _reconcile(self, job: dict[str, Any]) -> None:
        uid = job["metadata"]["uid"]
        if uid in self._seen:
            return
        self._seen.add(uid)
        if job["metadata"].get("deletionTimestamp"):
            return
        pod = worker_pod(job)
        if pod is not None:
            with contextlib.suppress(client.ApiException):
                self.core.create_namespaced_pod(job["metadata"]["namespace"], pod)
