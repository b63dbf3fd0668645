"""The runner's ConfigMap and Job, as plain manifests (what ``kubectl apply`` would take).

The Job runs the harness image's entry point (``rlark_acceptance.incluster.runner``) under
the ServiceAccount bound to ``deploy/harness-rbac.yaml``; the profile and its files come from
the ConfigMap; credentials come only as references to Secrets the site already has
(``envFrom`` a Secret, or one key of one as ``secretKeyRef``), so no value is in the
ConfigMap, the Job, the image or a log. The Pod's own name and uid come from the downward
API: what the runner submits is owned by its Pod, so deleting the runner Job removes it
even when the runner is killed outright.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from rlark_acceptance.adapters.kubernetes import owner
from rlark_acceptance.incluster.bundle import MOUNT, Bundle

LABEL = "rlark-acceptance.io/runner"
PROFILE_LABEL = "rlark-acceptance.io/profile"
# The runner's identity: its ServiceAccount of deploy/harness-rbac.yaml (the adapter's Role only).
SERVICE_ACCOUNT = "rlark-acceptance-runner"
# Environment of the runner Pod naming the Pod itself (downward API): owner of what it submits.
POD_NAME_ENV, POD_UID_ENV = owner.RUNNER_POD_ENV, owner.RUNNER_UID_ENV
REPORTS = "/tmp/reports"
# Long enough for the harness's own clean-up (delete the Job, wait for its Pods, upload the
# record) after the SIGTERM that deleting the runner Job sends.
GRACE_SECONDS = 120


@dataclass(frozen=True)
class SecretKey:
    """``NAME=secret:SECRET/KEY``: one key of an existing Secret as one variable."""

    env: str
    secret: str
    key: str


@dataclass
class RunnerSpec:
    image: str
    namespace: str
    record: str  # s3://bucket/prefix: where the runner writes its record
    secrets: list[str] = field(default_factory=list)  # envFrom: existing Secrets
    env: dict[str, str] = field(default_factory=dict)  # plain values ($(VAR) expanded)
    secret_keys: list[SecretKey] = field(default_factory=list)
    node_selector: dict[str, str] = field(default_factory=dict)
    service_account: str = SERVICE_ACCOUNT
    pytest_args: list[str] = field(default_factory=list)


def dns_label(text: str, limit: int) -> str:
    out = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return out[:limit].rstrip("-") or "profile"


def job_name(profile_name: str) -> str:
    """``rlark-runner-<profile>-<6 hex>``: a DNS label (63), unique per run."""
    return f"rlark-runner-{dns_label(profile_name, 42)}-{secrets.token_hex(3)}"


def _key(i: int, rel: str) -> str:
    base = re.sub(r"[^-._a-zA-Z0-9]+", "-", rel.rsplit("/", 1)[-1])
    return f"f{i}-{base}"[:253]


def config_map(name: str, bundle: Bundle, spec: RunnerSpec) -> dict[str, Any]:
    data = {
        _key(i, rel): body.decode() for i, (rel, body) in enumerate(sorted(bundle.files.items()))
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": spec.namespace, "labels": {LABEL: name}},
        "data": data,
    }


def owned_by(owner: dict[str, Any]) -> list[dict[str, Any]]:
    """An ownerReference to ``owner`` (the garbage collector removes the owned with it)."""
    meta = owner["metadata"]
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
    ]


def runner_args(bundle: Bundle, spec: RunnerSpec) -> list[str]:
    return [
        "--record",
        spec.record,
        "--reports-dir",
        REPORTS,
        "--",
        "features/",
        "--profile",
        bundle.pod_path(bundle.profile),
        "-p",
        "no:cacheprovider",
        *spec.pytest_args,
    ]


def job(name: str, profile_name: str, bundle: Bundle, spec: RunnerSpec) -> dict[str, Any]:
    labels = {LABEL: name, PROFILE_LABEL: dns_label(profile_name, 63)}
    env: list[dict[str, Any]] = [
        {"name": POD_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": POD_UID_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
    ]
    env += [
        {"name": k.env, "valueFrom": {"secretKeyRef": {"name": k.secret, "key": k.key}}}
        for k in spec.secret_keys
    ]
    env += [{"name": k, "value": v} for k, v in spec.env.items()]
    items = [{"key": _key(i, rel), "path": rel} for i, rel in enumerate(sorted(bundle.files))]
    pod: dict[str, Any] = {
        "serviceAccountName": spec.service_account,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": GRACE_SECONDS,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532},
        "containers": [
            {
                "name": "runner",
                "image": spec.image,
                "imagePullPolicy": "IfNotPresent",
                "args": runner_args(bundle, spec),
                "env": env,
                "envFrom": [{"secretRef": {"name": s}} for s in spec.secrets],
                "volumeMounts": [
                    {"name": "site", "mountPath": MOUNT, "readOnly": True},
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
            }
        ],
        "volumes": [
            {"name": "site", "configMap": {"name": name, "items": items}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    if spec.node_selector:
        pod["nodeSelector"] = dict(spec.node_selector)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": spec.namespace, "labels": labels},
        "spec": {
            # One acceptance run: a failed runner is a verdict, never retried.
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
