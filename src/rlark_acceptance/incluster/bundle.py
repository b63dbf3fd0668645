"""The profile and the files it names, as the runner Pod reads them from a ConfigMap.

The files keep their layout relative to one another (the profile's relative paths hold
inside the Pod unchanged): the RLinf config's whole folder (its defaults are found there),
``rlinf.configDir`` and the Job YAML. The one change is the connection: the runner talks to
the API server with its ServiceAccount (in-cluster config), so ``target.kubeconfig`` and
``target.context`` are commented out on their own lines, every other line (and so every
line a finding names) left where it was.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.profile import Profile

# A ConfigMap holds at most 1 MiB (etcd's object limit); keys and metadata need room too.
MAX_BYTES = 900 * 1024
# Where the runner Pod mounts the ConfigMap; the profile lies at MOUNT/<its relative path>.
MOUNT = "/etc/rlark-acceptance/site"
_CONFIG_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Bundle:
    root: Path  # the common folder of every file, as the runner sees it at MOUNT
    files: dict[str, bytes]  # relative path -> content (the profile already rewritten)
    profile: str  # the profile's relative path

    def pod_path(self, rel: str) -> str:
        return f"{MOUNT}/{rel}"


def _config_tree(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in _CONFIG_SUFFIXES)


# The profile's file fields: an absolute path in one is replaced by where the file is in
# the Pod (a relative one holds as it is, the layout being kept).
FILE_KEYS = (("rlinf", "config"), ("rlinf", "configDir"), ("job",))


def in_cluster_profile(profile: Profile, root: Path) -> bytes:
    """The profile's text with its kubeconfig and context commented out and its absolute
    file paths moved to the Pod's, line for line."""
    lines = profile.path.read_text(encoding="utf-8").splitlines(keepends=True)
    for keys in FILE_KEYS:
        section = profile.doc.data if len(keys) == 1 else profile.doc.data.get(keys[0]) or {}
        value = section.get(keys[-1]) if isinstance(section, dict) else None
        line = profile.doc.line_of(*keys) or 0
        if isinstance(value, str) and value.startswith("/") and line and value in lines[line - 1]:
            moved = f"{MOUNT}/{Path(value).resolve().relative_to(root)}"
            lines[line - 1] = lines[line - 1].replace(value, moved, 1)
    for key in ("kubeconfig", "context"):
        if key not in (profile.doc.data.get("target") or {}):
            continue
        line = profile.doc.line_of("target", key) or 0
        text = lines[line - 1] if line else ""
        found = re.match(rf"^(\s*){key}\s*:", text)
        rest = text[found.end() :].strip() if found else ""
        if not found or not rest or rest[0] in "|>[{&*!":
            raise InputError(
                str(profile.loc("target", key)),
                f"--in-cluster needs target.{key} on a line of its own "
                "(the runner connects with its ServiceAccount instead)",
            )
        lines[line - 1] = f"{found.group(1)}# {key}: in-cluster, the runner's ServiceAccount\n"
    return "".join(lines).encode()


def bundle(profile: Profile) -> Bundle:
    """Every file the runner needs of the profile; exit-2 errors name the profile line."""
    named: list[Path] = [profile.path.resolve()]
    if profile.rlinf_config is not None:
        named += _config_tree(profile.rlinf_config.resolve().parent)
    if profile.rlinf_config_dir is not None:
        named += _config_tree(profile.rlinf_config_dir.resolve())
    if profile.job is not None:
        named.append(profile.job.resolve())
    root = Path(os.path.commonpath([str(p.parent) for p in named]))
    files: dict[str, bytes] = {}
    for path in named:
        rel = str(path.relative_to(root))
        if rel not in files:
            try:
                files[rel] = path.read_bytes()
            except OSError as e:
                raise InputError(
                    str(path), f"cannot be read for the runner: {e.strerror}"
                ) from None
    rel_profile = str(profile.path.resolve().relative_to(root))
    files[rel_profile] = in_cluster_profile(profile, root)
    size = sum(len(v) for v in files.values())
    if size > MAX_BYTES:
        raise InputError(
            str(profile.path),
            f"the profile and the files it names are {size // 1024} KiB: more than a "
            f"ConfigMap holds ({MAX_BYTES // 1024} KiB); name a smaller rlinf.configDir",
        )
    return Bundle(root, files, rel_profile)
