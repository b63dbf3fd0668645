"""Runs never collide: every acceptance run submits its own Job and writes its own outputs.

Two runs of one profile at once (a CI retry, two engineers) would otherwise submit the same
Job name (the second refused as "already exists") and write into one output location (each
unable to tell its own objects from the other's). So each run has an id, and the Job it
submits is the profile's with that id in

- ``metadata.name``: the profile's Job name, then ``-<run id>`` (kept a DNS-1123 label);
- ``metadata.labels``: ``rlark-acceptance.io/run-id: <run id>``;
- the output location: the writable object-storage mount that holds the run's output
  folder (``runInfo.paths.output``) gets ``/<run id>`` appended to its prefix, so what the
  Worker writes under that folder lands under the run's own prefix and nothing else's.

The pre-flight reads the user's Job as written; only the submission carries the id.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from typing import Any

import yaml

from rlark_acceptance.model.job import RUN_ID_LABEL, Job, Mount, Role, mount_for

# A Kubernetes object name that is a label too (the Pods carry it in rlark.io/job-name).
MAX_NAME = 63


def new_run_id(now: float | None = None) -> str:
    """``<UTC yymmddHHMMSS>-<6 hex>``: sortable by start, unique across machines."""
    stamp = time.strftime("%y%m%d%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def run_job_name(name: str, run_id: str) -> str:
    """The profile's Job name as a prefix, then the run id, within a label's 63 characters."""
    keep = MAX_NAME - len(run_id) - 1
    return f"{name[:keep].rstrip('-')}-{run_id}"


def output_mount(job: Job, output_path: object) -> Mount | None:
    """The mount the run's outputs go to when it can be made the run's own: writable object
    storage holding ``output_path``."""
    worker = job.worker
    if worker is None or not isinstance(output_path, str) or not output_path:
        return None
    mount = mount_for(output_path, worker.mounts)
    if mount is None or mount.type != "objectStorage" or mount.read_only or not mount.bucket:
        return None
    return mount


def run_prefix(prefix: str | None, run_id: str) -> str:
    return f"{prefix.strip('/')}/{run_id}" if prefix and prefix.strip("/") else run_id


def for_run(job: Job, manifest: str, run_id: str, output_path: object) -> tuple[Job, str]:
    """The Job and its YAML as this run submits them (see the module's docstring)."""
    name = run_job_name(str(job.name), run_id)
    target = output_mount(job, output_path)
    roles = [_role_for_run(r, target, run_id) for r in job.roles]
    run_job = replace(job, name=name, roles=roles)
    data = yaml.safe_load(manifest)
    if isinstance(data, dict):
        meta = data.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta["name"] = name
            labels = meta.get("labels")
            meta["labels"] = {**(labels if isinstance(labels, dict) else {}), RUN_ID_LABEL: run_id}
        if target is not None:
            _manifest_mounts(data, target, run_id)
        manifest = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return run_job, manifest


def _role_for_run(role: Role, target: Mount | None, run_id: str) -> Role:
    if target is None or not any(m is target for m in role.mounts):
        return role
    mounts = [
        replace(m, prefix=run_prefix(m.prefix, run_id)) if m is target else m for m in role.mounts
    ]
    return replace(role, mounts=mounts)


def _manifest_mounts(data: dict[str, Any], target: Mount, run_id: str) -> None:
    spec = data.get("spec")
    roles = spec.get("roles") if isinstance(spec, dict) else None
    for role in roles if isinstance(roles, list) else []:
        for m in (role.get("mounts") or []) if isinstance(role, dict) else []:
            if isinstance(m, dict) and m.get("name") == target.name:
                m["prefix"] = run_prefix(m.get("prefix"), run_id)
