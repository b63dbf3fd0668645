"""What the local target runs as a role's image: an environment of this machine, by name.

A container image brings the Worker its interpreter, its libraries and its files. On the
local target the profile says which environment each image reference is
(``target.images``)::

    images:
      rlark-acceptance/smoke:0.1.0:
        environment: ../.venv                  # an environment that exists (bin/python)
      rlark-acceptance/rlinf:0.3.0-cpu:
        environment: {lock: rlinf/worker-env.lock}   # a virtualenv built from a lock file
        workspace: {RLinf: ../third_party/rlinf-v0.3}  # the image's /workspace content

The prepare script, ``ray start --head`` and the run script all run with that environment
first on PATH, at the path it was built for (a virtualenv is not relocatable: its scripts'
shebangs are absolute), never with the harness's own. An image the profile does not name is
not on this node: the Pod fails as a container runtime reports a missing image.

A locked environment lives under ``$XDG_CACHE_HOME/rlark-acceptance/worker-envs/`` keyed by
the hash of its lock file, so it is rebuilt only when the lock changes
(``python -m rlark_acceptance.adapters.local.images build LOCK``, which ``./run tests`` runs).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlark_acceptance.model.paths import user_path

BUILT_STAMP = ".rlark-built"


class ImageError(RuntimeError):
    """The image cannot be run here; the message is what a container runtime would say."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rlark-acceptance" / "worker-envs"


def locked_env_dir(lock: Path) -> Path:
    """Where the virtualenv of ``lock`` is built: its name and the hash of its content."""
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    return cache_root() / f"{lock.stem}-{digest}"


@dataclass
class LocalImage:
    reference: str
    environment: Path  # a prefix with bin/python: the Worker's interpreter and its libraries
    workspace: dict[str, Path] = field(default_factory=dict)  # /workspace/<name> <- folder
    lock: Path | None = None  # the lock file it was built from, if any

    @property
    def bin(self) -> str:
        return str(self.environment / "bin")


def resolve(reference: str, images: dict[str, Any] | None, base: Path) -> LocalImage:
    """The environment of image ``reference`` as ``target.images`` names it."""
    entry = (images or {}).get(reference)
    if not isinstance(entry, dict) or "environment" not in entry:
        named = ", ".join(sorted(images or {})) or "none"
        raise ImageError(
            f'Failed to pull image "{reference}": not on this node (the profile\'s '
            f"target.images names {named})"
        )
    env = entry["environment"]
    lock: Path | None = None

    def unexpanded(why: str) -> ImageError:
        return ImageError(f'image "{reference}": target.images: {why}')

    if isinstance(env, dict) and "lock" in env:
        lock = user_path(str(env["lock"]), base, unexpanded)
        if not lock.is_file():
            raise ImageError(f'image "{reference}": lock file {lock} not found')
        prefix = locked_env_dir(lock)
        if not (prefix / BUILT_STAMP).is_file():
            raise ImageError(
                f'Failed to pull image "{reference}": its environment is not built '
                f"(python -m rlark_acceptance.adapters.local.images build {lock})"
            )
    else:
        # Through its symlinks: the Pod's root shows the environment's own folder, not a
        # link to it (``~/envs/current`` → a versioned venv), so a link's PATH finds no ray.
        prefix = Path(os.path.realpath(user_path(str(env), base, unexpanded)))
    if not (prefix / "bin" / "python").exists():
        raise ImageError(f'Failed to pull image "{reference}": {prefix} has no bin/python')
    workspace = {
        str(k): user_path(str(v), base, unexpanded).resolve()
        for k, v in (entry.get("workspace") or {}).items()
    }
    return LocalImage(reference, prefix, workspace, lock)


# What the environment's own interpreter reports of its distributions (pip's metadata):
# every ``name==version``, sorted, as JSON on one line.
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps(sorted({f\"{d.metadata['Name']}=={d.version}\" "
    "for d in m.distributions() if d.metadata['Name']})))"
)
_DESCRIBE_TIMEOUT_S = 30.0
# The Worker's libraries the record names, by their normalised distribution names.
NAMED = {"ray": "rayVersion", "rlinf": "rlinfVersion"}


def describe(image: LocalImage) -> dict[str, str]:
    """What this node runs as ``image``, for the record's provenance: its image ID (a
    locked environment by its lock file's digest; another by the digest of what it holds,
    so an environment rebuilt with other packages is another image) and the versions of
    Ray and RLinf in it, as its own interpreter reports them. ``unread`` says why not."""
    python = str(image.environment / "bin" / "python")
    try:
        done = subprocess.run(
            [python, "-c", _LIST_DISTRIBUTIONS],
            capture_output=True,
            text=True,
            timeout=_DESCRIBE_TIMEOUT_S,
            check=False,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONNOUSERSITE": "1"},
        )
        held: list[str] = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        return {"unread": f"the environment {image.environment}: {e}"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"unread": f"the environment {image.environment}: {last}"}
    found: dict[str, str] = {}
    if image.lock is not None:
        found["imageId"] = "lock:sha256:" + hashlib.sha256(image.lock.read_bytes()).hexdigest()
    else:
        found["imageId"] = "env:sha256:" + hashlib.sha256("\n".join(held).encode()).hexdigest()
    for entry in held:
        name, _, version = entry.partition("==")
        key = NAMED.get(name.lower().replace("_", "-"))
        if key is not None:
            found[key] = version
    return found


def absolute(images: dict[str, Any], base: Path) -> dict[str, Any]:
    """``target.images`` with every path absolute: for a copy of the profile elsewhere."""
    out: dict[str, Any] = {}
    for ref, entry in images.items():
        if not isinstance(entry, dict):
            out[ref] = entry
            continue
        entry = dict(entry)
        env = entry.get("environment")
        if isinstance(env, dict) and "lock" in env:
            entry["environment"] = {**env, "lock": str((base / str(env["lock"])).resolve())}
        elif isinstance(env, str):
            entry["environment"] = os.path.abspath(base / os.path.expanduser(env))
        if isinstance(entry.get("workspace"), dict):
            entry["workspace"] = {
                k: str((base / str(v)).resolve()) for k, v in entry["workspace"].items()
            }
        out[ref] = entry
    return out


def build(lock: Path, python: str = "python3") -> Path:
    """Build the virtualenv of ``lock`` in place (once), every package as locked, no resolver.

    Built at its final path (shebangs are absolute); the stamp is written last, so a build
    that was interrupted is started afresh.
    """
    prefix = locked_env_dir(lock)
    if (prefix / BUILT_STAMP).is_file():
        return prefix
    print(f"run: building the Worker environment {prefix.name} ({lock})", file=sys.stderr)
    if prefix.exists():
        shutil.rmtree(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([python, "-m", "venv", str(prefix)], check=True)
    pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input"]
    subprocess.run([*pip, "--no-deps", "-r", str(lock)], check=True)
    (prefix / BUILT_STAMP).write_text(lock.read_text(encoding="utf-8"), encoding="utf-8")
    return prefix


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "build":
        print("usage: python -m rlark_acceptance.adapters.local.images build LOCK", file=sys.stderr)
        return 2
    lock = Path(argv[2])
    if not lock.is_file():
        print(f"{lock}: no such lock file", file=sys.stderr)
        return 2
    print(build(lock))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
