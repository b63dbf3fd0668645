"""What a run script really starts: the RLinf command, its working directory and overrides.

Checks 0.1, 1.1, 3.7 and 4.4 depend on the *effective* config, and the run script is where
users change it (``cluster.num_nodes=2``). RLinf's launch scripts are not transparent: at the
version the sample configs come from, ``examples/embodiment/run_embodiment.sh NAME`` forwards
no further argument (its second one is the robot platform), forces
``runner.logger.log_path=<repo>/logs/<timestamp>-NAME`` inside the image, and adds
``cluster.num_nodes=$NODES`` when NODES is set. Where the RLinf tree is on this machine, the
script the Job calls is read for those facts (``rlinf.launcher``, applied by ``with_script``).
``LAUNCHERS`` records them for RLinf 0.3's scripts where it is not, so that an override
written after such a script is reported as ignored instead of trusted.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from dataclasses import dataclass, field

from rlark_acceptance.model.findings import Location
from rlark_acceptance.rlinf.config import Override
from rlark_acceptance.rlinf.launcher import PYTHON, ScriptLaunch


@dataclass(frozen=True)
class Launcher:
    """An RLinf launch script and what it does with its arguments."""

    suffix: str  # path suffix that identifies the script
    config_subdir: str  # where --config-path points, relative to the script's folder
    default_config: str
    positional: tuple[str, ...] = ("config",)  # what $1, $2... mean; the rest are dropped
    log_path: str | None = "{repo}/logs/TIMESTAMP-{config}"  # None: the config's own value
    extra: tuple[str, ...] = ()  # further fixed overrides, formatted like log_path
    env_overrides: tuple[tuple[str, str], ...] = ()


LAUNCHERS: tuple[Launcher, ...] = (
    Launcher(
        "examples/embodiment/run_embodiment.sh",
        "config",
        "maniskill_ppo_openvlaoft",
        positional=("config", "ROBOT_PLATFORM"),
        env_overrides=(
            ("STEPS", "runner.max_steps"),
            ("SAVE_INTER", "runner.save_interval"),
            ("NODES", "cluster.num_nodes"),
        ),
    ),
    Launcher("examples/embodiment/run_async.sh", "config", "maniskill_sac_mlp_async"),
    Launcher("examples/embodiment/run_realworld.sh", "config", "realworld_sac_cnn"),
    Launcher("examples/embodiment/run_realworld_async.sh", "config", "realworld_sac_cnn_async"),
    Launcher(
        "examples/embodiment/run_offline_rl.sh",
        "config",
        "d4rl_iql_mujoco",
        extra=("runner.logger.experiment_name={config}",),
    ),
    Launcher("examples/sft/run_vla_sft.sh", "config", "maniskill_ppo_openvlaoft"),
    Launcher(
        "examples/reasoning/run_main_grpo_math.sh",
        "config/math",
        "qwen2.5-1.5b-grpo-megatron",
        log_path=None,
    ),
    Launcher(
        "examples/reasoning/run_main_grpo_vqa.sh",
        "config/vqa",
        "qwen2.5-vl-3b-grpo-fsdp",
        log_path=None,
    ),
)

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OVERRIDE = re.compile(r"^(?:~|\+\+|\+)?[A-Za-z_][\w.@/\-]*(?:=|$)")


@dataclass
class Launch:
    """The RLinf invocation found in a run script."""

    workdir: str | None  # the directory the command runs in, when the script says (cd)
    argv: list[str]
    line: int  # 0-based line of the script the command stands on
    launcher: Launcher | None = None
    script_path: str | None = None  # the launch script or Python entry point, as resolved
    config_name: str | None = None
    config_dir: str | None = None
    overrides: list[Override] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # arguments the launcher drops
    env: dict[str, str] = field(default_factory=dict)
    relative_without_cd: list[str] = field(default_factory=list)
    where: Location | None = None  # the run command's line

    def __repr__(self) -> str:  # argv, overrides and env may hold secrets (--api-key X)
        return f"Launch({self.script_path!r}, line={self.line}, config={self.config_name!r})"

    def resolve(self, path: str) -> str | None:
        """An absolute container path for ``path`` as the process sees it, if knowable."""
        if posixpath.isabs(path):
            return posixpath.normpath(path)
        if self.workdir:
            return posixpath.normpath(posixpath.join(self.workdir, path))
        return None


def _commands(script: str) -> list[tuple[int, list[str]]]:
    """Split a shell script into simple commands (argv) with their line numbers."""
    out: list[tuple[int, list[str]]] = []
    logical: list[tuple[int, str]] = []
    buf, start = "", 0
    for i, line in enumerate(script.splitlines()):
        if not buf:
            start = i
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        logical.append((start, buf + line))
        buf = ""
    if buf:
        logical.append((start, buf))
    for lineno, text in logical:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:
            tokens = text.split()
        cmd: list[str] = []
        for tok in tokens:
            if tok and set(tok) <= set(";&|()"):
                if cmd:
                    out.append((lineno, cmd))
                cmd = []
            else:
                cmd.append(tok)
        if cmd:
            out.append((lineno, cmd))
    return out


def parse_run_script(script: str, origin: Location | None = None) -> Launch | None:
    """Find the RLinf command in ``script``; None when nothing looks like one."""
    workdir: str | None = None
    exported: dict[str, str] = {}
    found: Launch | None = None
    for lineno, argv in _commands(script):
        prefix_env: dict[str, str] = {}
        while argv and _ASSIGN.match(argv[0]):
            k, _, v = argv[0].partition("=")
            prefix_env[k] = v
            argv = argv[1:]
        if not argv:
            exported.update(prefix_env)
            continue
        head = argv[0]
        if head == "cd" and len(argv) >= 2:
            target = argv[1]
            if posixpath.isabs(target):
                workdir = posixpath.normpath(target)
            elif workdir:
                workdir = posixpath.normpath(posixpath.join(workdir, target))
            else:
                workdir = None
            continue
        if head == "export":
            for a in argv[1:]:
                if "=" in a:
                    k, _, v = a.partition("=")
                    exported[k] = v
            continue
        launch = _classify(argv, workdir, lineno, {**exported, **prefix_env}, origin)
        if launch is not None:
            found = launch  # the last RLinf command in the script is the one that runs
    return found


def _line_loc(origin: Location | None, lineno: int) -> Location | None:
    """``origin`` is where the script's first line stands (``YamlDoc.text_loc``)."""
    if origin is None or not origin.line:
        return origin
    return Location(origin.file, origin.line + lineno)


def _classify(
    argv: list[str],
    workdir: str | None,
    lineno: int,
    env: dict[str, str],
    origin: Location | None,
) -> Launch | None:
    args = argv
    if args[0] in {"bash", "sh", "exec", "source", "."} and len(args) >= 2:
        args = args[1:]
        if args and args[0] in {"bash", "sh"} and len(args) >= 2:
            args = args[1:]
    where = _line_loc(origin, lineno)
    launch = None
    if args and args[0].endswith(".sh"):
        launch = _from_launcher(args, workdir, lineno, env, where)
    elif args and PYTHON.match(args[0]):
        launch = _from_python(args, workdir, lineno, env, where)
    if launch is not None:
        launch.where = where
    return launch


def with_script(launch: Launch, read: ScriptLaunch) -> Launch:
    """``launch`` with what its launch script, read from the RLinf tree, passes to RLinf in
    place of the table's facts."""
    where = launch.where
    args = launch.argv[1:]
    names = tuple(f"${n}" for n in range(1, read.reads + 1))
    overrides = [Override(text, where, "launch script") for text in read.fixed]
    overrides += [Override(text, where, "environment") for text in read.added]
    start = read.forwards_from
    forwarded = args[start - 1 :] if start is not None else []
    # Forwarded after its own: on RLinf's command line the later one wins.
    overrides += [Override(a, where, "run script") for a in forwarded if _is_override(a)]
    own = args[: read.reads] if start is None else args[: start - 1]
    ignored = [a for a in own[1:] if _is_override(a)]
    if start is None:
        ignored += args[read.reads :]
    return dataclasses.replace(
        launch,
        launcher=Launcher(read.script, "", read.config_name or "", positional=names),
        config_dir=read.config_dir or launch.config_dir,
        config_name=read.config_name or launch.config_name,
        overrides=overrides,
        ignored=ignored,
    )


def _from_launcher(
    args: list[str],
    workdir: str | None,
    lineno: int,
    env: dict[str, str],
    where: Location | None,
) -> Launch | None:
    script = args[0]
    launch = Launch(workdir=workdir, argv=args, line=lineno, env=env)
    launch.script_path = launch.resolve(script) or script
    if not posixpath.isabs(script) and workdir is None:
        launch.relative_without_cd.append(script)
    norm = posixpath.normpath(script)
    launcher = next((lc for lc in LAUNCHERS if norm.endswith(lc.suffix)), None)
    if launcher is None:
        # An unknown wrapper: its own overrides cannot be seen; take the visible ones.
        launch.overrides = [
            Override(a, where, "run script") for a in args[1:] if _OVERRIDE.match(a) and "=" in a
        ]
        return launch
    launch.launcher = launcher
    positional = args[1:]
    config = positional[0] if positional else env.get("CONFIG_NAME", launcher.default_config)
    launch.config_name = config
    # Positionals past the script's own are dropped; an override in a positional slot (such
    # as run_embodiment.sh's ROBOT_PLATFORM) is taken as that value. Neither reaches RLinf.
    launch.ignored = [a for a in positional[1 : len(launcher.positional)] if _is_override(a)]
    launch.ignored += positional[len(launcher.positional) :]
    script_dir = posixpath.dirname(launch.script_path)
    launch.config_dir = posixpath.join(script_dir, launcher.config_subdir)
    repo = posixpath.dirname(posixpath.dirname(script_dir))
    fixed = []
    if launcher.log_path:
        fixed.append("runner.logger.log_path=" + launcher.log_path.format(repo=repo, config=config))
    fixed += [e.format(repo=repo, config=config) for e in launcher.extra]
    launch.overrides = [Override(text, where, "launch script") for text in fixed]
    for var, key in launcher.env_overrides:
        if env.get(var) not in (None, "", "-2"):
            launch.overrides.append(Override(f"{key}={env[var]}", where, "environment"))
    return launch


def _is_override(arg: str) -> bool:
    return bool(_OVERRIDE.match(arg)) and ("=" in arg or arg.startswith("~"))


def _from_python(
    args: list[str],
    workdir: str | None,
    lineno: int,
    env: dict[str, str],
    where: Location | None,
) -> Launch | None:
    launch = Launch(workdir=workdir, argv=args, line=lineno, env=env)
    rest = args[1:]
    entry: str | None = None
    i = 0
    overrides: list[str] = []
    while i < len(rest):
        a = rest[i]
        if a == "-m" and i + 1 < len(rest):
            entry = rest[i + 1]
            i += 2
            continue
        if (
            a.startswith("-")
            and a not in {"-cp", "-cn", "--config-path", "--config-name"}
            and not a.startswith(("--config-path=", "--config-name="))
        ):
            i += 1
            continue
        if a in {"--config-path", "-cp"} and i + 1 < len(rest):
            launch.config_dir = rest[i + 1]
            i += 2
            continue
        if a.startswith("--config-path="):
            launch.config_dir = a.partition("=")[2]
        elif a in {"--config-name", "-cn"} and i + 1 < len(rest):
            launch.config_name = rest[i + 1]
            i += 2
            continue
        elif a.startswith("--config-name="):
            launch.config_name = a.partition("=")[2]
        elif entry is None and a.endswith(".py"):
            entry = a
        elif _is_override(a):
            overrides.append(a)
        i += 1
    if entry is None:
        return None
    launch.script_path = (
        entry if entry.endswith(".py") is False else (launch.resolve(entry) or entry)
    )
    if entry.endswith(".py") and not posixpath.isabs(entry) and workdir is None:
        launch.relative_without_cd.append(entry)
    if launch.config_dir:
        if not posixpath.isabs(launch.config_dir) and workdir is None:
            launch.relative_without_cd.append(launch.config_dir)
        launch.config_dir = launch.resolve(launch.config_dir) or launch.config_dir
    if launch.config_name and launch.config_name.endswith(".yaml"):
        launch.config_name = launch.config_name[: -len(".yaml")]
    launch.overrides = [Override(o, where, "run script") for o in overrides]
    return launch
