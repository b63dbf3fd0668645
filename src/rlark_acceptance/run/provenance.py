"""What a run ran with (docs/contract.md §4 ``provenance``): so that two runs of one profile,
a release apart, say what changed between them.

The harness (its version, and its commit when run from a checkout), digests of the profile
and of the Job YAML as submitted (its redacted text: what the record may show is what is
digested), the Worker's image and, where the target reports one, the image it resolved to,
the node, the run's id and its start and end (UTC).

>>> changes({"node": "a", "image": "x"}, {"node": "b", "image": "x"})
['node changed (a → b)']
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.base import DESCRIBED

PACKAGE = "rlark-acceptance"
_GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Provenance:
    profile_name: str  # the history's folder: runs of one name are compared
    harness_version: str | None
    harness_commit: str | None
    harness_dirty: bool | None  # uncommitted changes in the checkout
    profile_sha256: str | None
    job_sha256: str | None  # of the Job YAML as submitted, redacted
    image: str | None
    image_id: str | None  # what the target resolved the image to, where it says
    node: str | None
    # As the target reports them (``adapters.base.Describes``): on Kubernetes the API
    # server's and the node's kubelet and runtime, locally Ray's and RLinf's in the image.
    api_server_version: str | None
    kubelet_version: str | None
    container_runtime_version: str | None
    ray_version: str | None
    rlinf_version: str | None
    run_id: str
    started_at: str  # UTC, ISO 8601
    finished_at: str
    unread: str | None = None  # what the target could not say, and why

    def as_dict(self) -> dict[str, Any]:
        """The record's keys (camelCase, as every key of run-summary.json)."""
        return {_camel(k): v for k, v in asdict(self).items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join("Sha256" if p == "sha256" else p.capitalize() for p in rest)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def harness_version() -> str | None:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def harness_commit(root: Path) -> tuple[str | None, bool | None]:
    """The checkout's ``HEAD`` and whether its tree differs from it; (None, None) outside
    a checkout (an installed harness)."""
    head = _git(root, "rev-parse", "HEAD")
    if head is None:
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), (None if status is None else bool(status.strip()))


def utc_iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def collect(
    *,
    root: Path,
    profile_name: str,
    profile: Path,
    job_text: str | None,
    image: str | None,
    image_id: str | None,
    node: str | None,
    run_id: str,
    started: datetime,
    finished: datetime,
    described: Mapping[str, str] | None = None,
) -> Provenance:
    """``job_text``: the Job YAML as submitted, already redacted (None: nothing submitted);
    ``described``: what the target said of the Worker (``Describes.describe``), whose
    ``imageId`` is taken over ``image_id``."""
    commit, dirty = harness_commit(root)
    said = dict(described or {})
    return Provenance(
        profile_name=profile_name,
        harness_version=harness_version(),
        harness_commit=commit,
        harness_dirty=dirty,
        profile_sha256=sha256_file(profile),
        job_sha256=None if job_text is None else sha256_text(job_text),
        image=image,
        image_id=said.get("imageId") or image_id,
        node=node,
        api_server_version=said.get("apiServerVersion"),
        kubelet_version=said.get("kubeletVersion"),
        container_runtime_version=said.get("containerRuntimeVersion"),
        ray_version=said.get("rayVersion"),
        rlinf_version=said.get("rlinfVersion"),
        run_id=run_id,
        started_at=utc_iso(started),
        finished_at=utc_iso(finished),
        unread=said.get("unread"),
    )


# What a reader of two runs asks first, in that order: what ran, where, and by what harness.
_WATCHED = (
    ("image", "image"),
    ("imageId", "image"),
    ("node", "node"),
    ("kubeletVersion", "kubelet"),
    ("containerRuntimeVersion", "container runtime"),
    ("apiServerVersion", "API server"),
    ("rlinfVersion", "RLinf"),
    ("rayVersion", "Ray"),
    ("harnessCommit", "harness commit"),
    ("harnessVersion", "harness version"),
    ("jobSha256", "Job YAML"),
    ("profileSha256", "profile"),
)


# Facts only a target says, and not always (a plugin, a cluster that did not answer): one
# run without one is no change.
_SAID_BY_TARGET = frozenset(DESCRIBED)


def changes(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> list[str]:
    """What differs from the previous run's provenance: ``image changed (a → b)``; one line
    per subject (an image whose reference and id both changed is one change)."""
    if not previous:
        return []
    out: dict[str, str] = {}
    for key, subject in _WATCHED:
        before, now = previous.get(key), current.get(key)
        if before == now or subject in out:
            continue
        if key in _SAID_BY_TARGET and (before is None or now is None):
            continue  # a target that did not say (or a record from before it was asked)
        if key.endswith("Sha256"):
            out[subject] = f"{subject} changed"
        else:
            out[subject] = f"{subject} changed ({_short(before)} → {_short(now)})"
    return list(out.values())


def _short(value: Any) -> str:
    """A commit or a digest by its first 12 hex digits, as git and container tools show them.

    >>> _short("docker.io/library/worker@sha256:" + "ab" * 32)
    'docker.io/library/worker@sha256:abababababab'
    """
    text = "none" if value is None else str(value)
    if len(text) == 40 and all(c in "0123456789abcdef" for c in text):
        return text[:12]
    head, sep, digest = text.rpartition("sha256:")
    if sep and len(digest) == 64:
        return f"{head}{sep}{digest[:12]}"
    return text


__all__ = ["Provenance", "changes", "collect", "harness_commit", "sha256_text", "utc_iso"]
