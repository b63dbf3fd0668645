"""The Job's environment: the variables RLinf's process starts with, as the Job sets them.

RLinf's configs read ``${oc.env:REPO_PATH}`` (or ``EMBODIED_PATH``, ``DIFFUSION_PATH``) in
``hydra.searchpath`` and in paths, and Hydra stops at start-up on one that is not set. Where
RLinf runs, that environment is the Worker's: the role's ``env``, then what its prepare
script exports (it runs in the same shell as the run script, ``model.worker``), then what the
run script sets before the RLinf command, then what the launch script that command calls
exports. The launch script is read from the RLinf tree the config lives in, found by the
path the run command gives it in the image, never from a table of one version's scripts:
what it exports, and what it passes to RLinf (``rlinf.launcher``). Where it is not on this
machine, what it sets is not known: a variable nothing else sets is not judged.

The values are the image's paths (``/workspace/RLinf``); ``local`` turns one into the folder
of this machine's tree that holds the same files, so the defaults found there are checked.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.job import Job
from rlark_acceptance.rlinf.launch import Launch
from rlark_acceptance.rlinf.launcher import ScriptLaunch, read_launcher
from rlark_acceptance.rlinf.searchpath import Setting, checkout_root, run_shell, script_text

WORKSPACE = "/workspace"  # where an image's workspace folders are (the local target's)
# Records one variable: its name, value (None: not knowable), what sets it, where.
_Put = Callable[[str, str | None, str, Location | None], None]


@dataclass
class JobEnvironment:
    """What ``${oc.env:NAME}`` reads in the Job's RLinf process."""

    settings: dict[str, Setting] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)  # what sets variables, in order
    roots: list[tuple[str, Path]] = field(default_factory=list)  # image folder → local
    tree: Path | None = None  # the local RLinf tree the config lives in
    script: ScriptLaunch | None = None  # what the launch script passes to RLinf, read
    unread_launcher: str | None = None  # the launch script it calls, not on this machine

    def __repr__(self) -> str:  # values may be secrets
        return f"JobEnvironment({sorted(self.settings)}, read={self.read})"

    def setting(self, name: str) -> Setting | None:
        return self.settings.get(name)

    def local(self, path: str) -> Path | None:
        """The local folder holding what ``path`` holds in the image, if one does."""
        path = posixpath.normpath(path)
        for image, here in self.roots:
            if path == image or path.startswith(image.rstrip("/") + "/"):
                return here / posixpath.relpath(path, image)
        if self.tree is not None:
            parts = PurePosixPath(path).parts[1:]
            for i in range(len(parts)):
                candidate = self.tree.joinpath(*parts[i:])
                if candidate.exists():
                    return candidate
        local = Path(path)
        return local if local.exists() else None

    def unset_remedy(self, name: str) -> str:
        """Where the Job looked, and what to change so that it is set."""
        return (
            f"the Job never sets {name} ({', '.join(self.read)} read): export {name} in the "
            "role's prepareScript, or add it to the role's env"
        )


def _shell_loc(origin: Location, text: str, name: str) -> Location:
    """The line of a script that sets ``name`` (its last), else the script's first."""
    lines = [i for i, line in enumerate(text.splitlines()) if f"{name}=" in line]
    if not lines or not origin.line:
        return origin
    return Location(origin.file, origin.line + lines[-1])


def job_environment(
    job: Job, launch: Launch | None, config: Path, workspace: Mapping[str, Path] | None = None
) -> JobEnvironment:
    """The environment ``job`` gives the RLinf command ``launch`` that runs ``config``;
    ``workspace``: the folders here that the image's ``/workspace/NAME`` hold, where the
    profile declares them (they come before the config's own tree)."""
    env = JobEnvironment(tree=checkout_root(config))
    role = job.worker
    known: dict[str, str] = {}

    def put(name: str, value: str | None, by: str, loc: Location | None) -> None:
        env.settings[name] = Setting(value, by, loc)
        if value is None:
            known.pop(name, None)
        else:
            known[name] = value

    if role is not None:
        env.read.append("the role's env")
        for var in role.env:
            put(var.name, var.value, "the role's env", var.location)
        if role.prepare_script:
            env.read.append("its prepareScript")
            origin = job.doc.text_loc("spec", "roles", role.index, "prepareScript")
            for name, value in run_shell(role.prepare_script, known).items():
                put(name, value, "the prepareScript", _shell_loc(origin, role.prepare_script, name))
    script = job.run_script or ""
    if launch is not None and script:
        env.read.append("the run script")
        origin = job.doc.text_loc("spec", "runScript")
        before = "\n".join(script.splitlines()[: launch.line])
        for name, value in run_shell(before, known).items():
            put(name, value, "the run script", _shell_loc(origin, script, name))
        for name, raw in launch.env.items():  # ``NAME=value python ...`` on the command
            if name not in env.settings or env.settings[name].by != "the run script":
                (value,) = run_shell(f"export {name}={raw}", known).values() or (None,)
                put(name, value, "the run script", _shell_loc(origin, script, name))
        declared = [(posixpath.join(WORKSPACE, n), Path(p)) for n, p in (workspace or {}).items()]
        # The longest image folder first: a nested one wins over its parent.
        env.roots = sorted(declared, key=lambda r: -len(r[0])) + _roots(launch, config)
        _launch_script(env, launch, known, put)
    return env


def _roots(launch: Launch, config: Path) -> list[tuple[str, Path]]:
    """The image folder that is the config's folder here, by the path the command names."""
    image = launch.config_dir
    if not image or not posixpath.isabs(image):
        return []
    here = Path(os.path.realpath(config)).parent
    image_parts = list(PurePosixPath(posixpath.normpath(image)).parts)
    local_parts = list(here.parts)
    matched = 0
    while len(image_parts) > 1 and len(local_parts) > 1 and image_parts[-1] == local_parts[-1]:
        image_parts.pop()
        local_parts.pop()
        matched += 1
    if matched == 0:
        return [(posixpath.normpath(image), here)]
    return [(str(PurePosixPath(*image_parts)), Path(*local_parts))]


def _launch_script(env: JobEnvironment, launch: Launch, known: dict[str, str], put: _Put) -> None:
    """What the launch script the run command calls exports, read from the local tree."""
    path = launch.script_path
    if not path or not path.endswith(".sh") or not posixpath.isabs(path):
        return
    local = env.local(path)
    if local is None or not local.is_file():
        env.unread_launcher = path
        return
    shown = (
        str(local.relative_to(env.tree)) if env.tree and local.is_relative_to(env.tree) else path
    )
    env.read.append(shown)
    text = script_text(local)
    env.script = read_launcher(text, path, launch.argv[1:], known)
    for name, value in run_shell(text, known, source=path).items():
        put(name, value, shown, None)
