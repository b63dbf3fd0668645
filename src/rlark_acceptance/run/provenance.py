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
    run_id: str
    started_at: str  # UTC, ISO 8601
    finished_at: str

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
) -> Provenance:
    """``job_text``: the Job YAML as submitted, already redacted (None: nothing submitted)."""
    commit, dirty = harness_commit(root)
    return Provenance(
        profile_name=profile_name,
        harness_version=harness_version(),
        harness_commit=commit,
        harness_dirty=dirty,
        profile_sha256=sha256_file(profile),
        job_sha256=None if job_text is None else sha256_text(job_text),
        image=image,
        image_id=image_id,
        node=node,
        run_id=run_id,
        started_at=utc_iso(started),
        finished_at=utc_iso(finished),
    )


# What a reader of two runs asks first, in that order: what ran, where, and by what harness.
_WATCHED = (
    ("image", "image"),
    ("imageId", "image"),
    ("node", "node"),
    ("harnessCommit", "harness commit"),
    ("harnessVersion", "harness version"),
    ("jobSha256", "Job YAML"),
    ("profileSha256", "profile"),
)


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
        if key.endswith("Sha256"):
            out[subject] = f"{subject} changed"
        else:
            out[subject] = f"{subject} changed ({_short(before)} → {_short(now)})"
    return list(out.values())


def _short(value: Any) -> str:
    text = "none" if value is None else str(value)
    return text[:12] if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else text


__all__ = ["Provenance", "changes", "collect", "harness_commit", "sha256_text", "utc_iso"]
