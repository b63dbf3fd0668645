"""Which run submitted a Job, so a later run can remove what a killed one left on the cluster.

SIGINT, SIGTERM and a normal exit delete every Job the adapter created; SIGKILL (the OOM
killer, a CI runner's hard timeout) leaves the Job and its Worker running, holding the
node's GPUs. Every Job the harness submits therefore carries the label
``app.kubernetes.io/managed-by: rlark-acceptance`` and an annotation naming the process that
submitted it (host, pid and the pid's start time, so a reused pid is not taken for the
owner). A new adapter removes the harness's Jobs in its namespace whose owner ran on this
host and is gone; a Job of another host, or of a live run, is never touched.
"""

from __future__ import annotations

import os
import socket
from typing import Any

MANAGED_BY = "app.kubernetes.io/managed-by"
HARNESS = "rlark-acceptance"
SUBMITTED_BY = "rlark-acceptance.io/submitted-by"
SELECTOR = f"{MANAGED_BY}={HARNESS}"


def _start_time(pid: int) -> str | None:
    """The pid's start time in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def this_process() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{_start_time(pid) or '?'}"


def mark(body: dict[str, Any], owner: str | None = None) -> None:
    """Label and annotate a Job's manifest as submitted by this process (metadata only)."""
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return  # the API server refuses it with its own message
    labels = meta.get("labels")
    meta["labels"] = {**(labels if isinstance(labels, dict) else {}), MANAGED_BY: HARNESS}
    notes = meta.get("annotations")
    meta["annotations"] = {
        **(notes if isinstance(notes, dict) else {}),
        SUBMITTED_BY: owner or this_process(),
    }


def owner_is_gone(job: dict[str, Any]) -> bool:
    """Whether the Job was submitted from this host by a process that no longer runs."""
    meta = job.get("metadata") or {}
    owner = str((meta.get("annotations") or {}).get(SUBMITTED_BY) or "")
    host, _, rest = owner.partition("/")
    pid, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's run, or not ours to judge
    return _start_time(int(pid)) != started


# Set by the in-cluster runner's Job (downward API): the runner Pod's name and uid.
RUNNER_POD_ENV = "RLARK_ACCEPTANCE_RUNNER_POD"
RUNNER_UID_ENV = "RLARK_ACCEPTANCE_RUNNER_UID"


def own_by_runner(body: dict[str, Any]) -> None:
    """Inside the in-cluster runner, the Job is owned by the runner's Pod: deleting the runner
    Job removes what it submitted through the garbage collector, even when the runner was
    killed before its own clean-up ran. Outside a runner, nothing changes."""
    name, uid = os.environ.get(RUNNER_POD_ENV), os.environ.get(RUNNER_UID_ENV)
    meta = body.get("metadata")
    if not (name and uid) or not isinstance(meta, dict):
        return
    refs = meta.get("ownerReferences")
    meta["ownerReferences"] = [
        *(refs if isinstance(refs, list) else []),
        {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid},
    ]
