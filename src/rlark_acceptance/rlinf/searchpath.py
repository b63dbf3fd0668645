"""Hydra's config search path as RLinf uses it.

Many RLinf configs (all of ``evaluations/``, most end-to-end test configs, the diffusion
examples) find their defaults through ``hydra.searchpath`` entries such as
``file://${oc.env:EMBODIED_PATH}/config/``. RLinf's launch scripts export those variables
before Python starts (``export EMBODIED_PATH="$( cd "$(dirname "${BASH_SOURCE[0]}" )" && pwd )"``),
so the search path depends on which script runs the config. The values are taken, in
order, from the environment, then from what the launch scripts of the checkout the config
lives in export: read from the scripts themselves, never from a table of one RLinf
version's paths.

Only the forms those scripts use are evaluated (``export``/plain assignments whose value is
built from ``$VAR``, ``${VAR:-default}``, ``${BASH_SOURCE[0]}``, ``$0``, the script's own
arguments ``$1`` / ``${2:-default}``, ``$(dirname X)`` and ``$(cd X && pwd)``); anything else
leaves the variable unknown rather than guessed. ``Shell`` is the one reader of a shell
script's assignments: ``rlinf.launcher`` reads a launch script's command with it too.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.yamlsrc import read_bytes

_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
ENV_REF = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Scripts larger than this are not launch scripts; they are not read.
_MAX_SCRIPT_BYTES = 256 * 1024
# RLinf's launch scripts sit a few folders deep in a tree of a few thousand entries.
_MAX_WALK_DEPTH = 8
_MAX_WALK_ENTRIES = 50_000
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})


@dataclass(frozen=True)
class Exported:
    """A variable's value and the launch script that exports it."""

    value: str
    script: Path


@dataclass(frozen=True)
class Setting:
    """A variable as a Job sets it: its value (None: not knowable offline), what sets it
    (``the role's env``, a script) and where."""

    value: str | None
    by: str
    location: Location | None = None

    def __repr__(self) -> str:  # the value may be a secret
        return f"Setting(by={self.by!r}, {self.location})"


class JobVariables(Protocol):
    """The Job's environment as a search path is resolved in it (``rlinf.environment``)."""

    # The launch script the Job calls, where it is not on this machine: what it sets is
    # not known, so a variable nothing else sets is not judged.
    unread_launcher: str | None

    def setting(self, name: str) -> Setting | None: ...

    def local(self, path: str) -> Path | None: ...

    def unset_remedy(self, name: str) -> str: ...


class Unknown(Exception):
    """A shell construct outside the small subset evaluated here."""


def _closing(s: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    quote = ""
    for i in range(start, len(s)):
        c = s[i]
        if quote:
            if c == quote:
                quote = ""
            continue
        if c == "'":
            quote = c
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
    raise Unknown(s)


class Shell:
    """Evaluates the assignments of one script, top to bottom.

    ``args`` are ``$1``, ``$2`` …, what the script is called with. ``placeholder`` stands
    for the output of a command that is not knowable (``$(date …)``) where a caller needs
    only the rest of a value (the folder a dated log path lies in); None: the value is
    unknown. ``held`` keeps every assignment as written, in order, and ``arrays`` those
    that make an array (``CMD=(python …)``): a launch script may run its command through
    one (``rlinf.launcher``).
    """

    def __init__(
        self, script: Path, args: tuple[str, ...] = (), placeholder: str | None = None
    ) -> None:
        self.script = script
        self.vars: dict[str, str] = {}
        self.exported: set[str] = set()
        self.args = args
        self.placeholder = placeholder
        self.held: list[tuple[str, str]] = []
        self.arrays: dict[str, str] = {}

    def run(self, text: str, on_command: Callable[[list[str]], None] | None = None) -> None:
        """``on_command`` is given every other command's words, quotes kept."""
        for raw in logical_lines(text):
            line = raw.strip()
            if line.startswith("export ") and "=" not in line:
                self.exported.update(n for n in line.split()[1:] if _NAME.fullmatch(n))
                continue
            if not _ASSIGN.match(line):
                if on_command is not None and line and not line.startswith("#"):
                    words = split_words(_strip_comment(line))
                    if words:
                        on_command(words)
                continue
            export = line.startswith("export")
            words = split_words(_strip_comment(line.removeprefix("export").strip()))
            # ``A=1 cmd``: A is that command's alone, not the script's.
            if words is None or not all(_ASSIGN.match(w) for w in words):
                if words and on_command is not None:
                    on_command(words)
                continue
            for word in words:
                name, _, value = word.partition("=")
                self.held.append((name, value))
                if value.startswith("("):
                    self.arrays[name] = value
                try:
                    self.vars[name] = self.expand(value)
                except (Unknown, RecursionError):
                    self.vars.pop(name, None)
                if export:
                    self.exported.add(name)

    def expand(self, s: str) -> str:
        out: list[str] = []
        i, quoted = 0, False
        while i < len(s):
            c = s[i]
            if c == '"':
                quoted = not quoted
                i += 1
            elif quoted and (c in "`;|&<>*?" or c.isspace()):
                out.append(c)  # inside double quotes, text like any other
                i += 1
            elif c == "'" and not quoted:
                j = s.find("'", i + 1)
                if j < 0:
                    raise Unknown(s)
                out.append(s[i + 1 : j])
                i = j + 1
            elif s.startswith("$(", i):
                j = _closing(s, i + 1, "(", ")")
                out.append(self.command(s[i + 2 : j]))
                i = j + 1
            elif s.startswith("${", i):
                j = _closing(s, i + 1, "{", "}")
                out.append(self.param(s[i + 2 : j]))
                i = j + 1
            elif c == "$":
                m = _NAME.match(s, i + 1)
                if i + 1 < len(s) and s[i + 1] in "123456789":
                    out.append(self.param(s[i + 1]))
                    i += 2
                elif s.startswith("$0", i):
                    out.append(str(self.script))
                    i += 2
                elif m:
                    out.append(self.param(m.group(0)))
                    i = m.end()
                else:
                    raise Unknown(s)
            elif c in "`;|&<>*?" or c.isspace():
                raise Unknown(s)
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def param(self, inner: str) -> str:
        if inner in ("BASH_SOURCE[0]", "BASH_SOURCE", "0"):
            return str(self.script)
        name, sep, default = inner.partition(":-")
        if name.isdigit() and name != "0":
            n = int(name)
            if n <= len(self.args) and (self.args[n - 1] or not sep):
                return self.args[n - 1]
            if sep:
                return self.expand(default)
            raise Unknown(inner)  # an argument the script is not called with
        if not _NAME.fullmatch(name):
            raise Unknown(inner)
        if name in self.vars and (self.vars[name] or not sep):
            return self.vars[name]
        if sep:
            return self.expand(default)
        raise Unknown(inner)  # set by whoever calls the script: not knowable here

    def command(self, inner: str) -> str:
        try:
            return self._command(inner)
        except Unknown:
            if self.placeholder is None:
                raise
            return self.placeholder

    def _command(self, inner: str) -> str:
        cwd: str | None = None
        result: str | None = None
        for part in _split_and(inner):
            words = part.split(None, 1)
            if not words:
                raise Unknown(inner)
            arg = self.expand(words[1].strip()) if len(words) > 1 else ""
            if words[0] == "cd" and arg:
                cwd = posixpath.normpath(arg)
            elif words[0] == "pwd" and len(words) == 1 and cwd and posixpath.isabs(cwd):
                result = cwd
            elif words[0] == "dirname" and arg:
                result = posixpath.dirname(arg.rstrip("/")) or "."
            else:
                raise Unknown(inner)
        if result is None:
            raise Unknown(inner)
        return result


def _split_and(s: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(s):
        if s[i] == "(":
            depth += 1
        elif s[i] == ")":
            depth -= 1
        elif depth == 0 and s.startswith("&&", i):
            parts.append(s[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    parts.append(s[start:].strip())
    return parts


def split_words(line: str) -> list[str] | None:
    """``line`` split at blanks outside quotes and ``$( )`` / ``${ }``, quotes kept (the
    shell's own word splitting of an assignment list); None where a quote is left open."""
    words: list[str] = []
    cur: list[str] = []
    depth = 0
    quote = ""
    for i, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            break  # a comment, whatever quotes it holds
        elif c in "'\"":
            quote = c
        elif c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c.isspace() and depth == 0:
            if cur:
                words.append("".join(cur))
                cur = []
            continue
        cur.append(c)
    if quote:
        return None
    if cur:
        words.append("".join(cur))
    return words


def logical_lines(text: str) -> list[str]:
    """``text``'s lines with those continued by a trailing backslash joined."""
    out: list[str] = []
    buf = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


def _strip_comment(value: str) -> str:
    if " #" in value and value.count('"') % 2 == 0:
        return value.split(" #", 1)[0].rstrip()
    return value


def run_shell(
    text: str, known: Mapping[str, str], *, source: str | None = None
) -> dict[str, str | None]:
    """The variables ``text`` exports, run with ``known`` set: each one's value, or None
    where it cannot be told offline. ``source`` is the script's path where it runs."""
    shell = Shell(Path(source or "script.sh"))
    shell.vars.update(known)
    shell.run(text)
    return {n: shell.vars.get(n) for n in sorted(shell.exported)}


def script_exports(script: Path) -> dict[str, str]:
    """The variables ``script`` exports, for those whose value can be told offline."""
    text = script_text(script)
    if "export" not in text:
        return {}
    shell = Shell(Path(os.path.realpath(script)))
    shell.run(text)
    return {n: v for n, v in shell.vars.items() if n in shell.exported and v}


def script_text(script: Path) -> str:
    """A launch script's text; a script that cannot be read (a FIFO, too large) has none."""
    try:
        return read_bytes(script, "launch script", _MAX_SCRIPT_BYTES).decode("utf-8", "replace")
    except InputError:
        return ""


def checkout_root(config: Path) -> Path | None:
    """The RLinf checkout a config lives in: the nearest folder with ``examples/`` in it."""
    for parent in Path(os.path.realpath(config)).parents:
        if (parent / "examples").is_dir() or (parent / ".git").exists():
            return parent
    return None


@dataclass
class Checkout:
    """The launch scripts of one checkout, read once."""

    root: Path
    _scripts: list[Path] | None = None
    _exports: dict[Path, dict[str, str]] = field(default_factory=dict)

    @property
    def scripts(self) -> list[Path]:
        if self._scripts is None:
            found: list[Path] = []
            seen = 0
            for dirpath, dirs, files in os.walk(self.root):
                # Bounded: a folder mistaken for a checkout (a home directory with a .git)
                # must not turn a look-up into a walk of the whole disk.
                depth = len(Path(dirpath).relative_to(self.root).parts)
                dirs[:] = (
                    []
                    if depth >= _MAX_WALK_DEPTH
                    else sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
                )
                found += [Path(dirpath) / f for f in sorted(files) if f.endswith(".sh")]
                seen += len(files) + len(dirs)
                if seen > _MAX_WALK_ENTRIES:
                    break
            self._scripts = found
        return self._scripts

    def exports(self, script: Path) -> dict[str, str]:
        if script not in self._exports:
            self._exports[script] = script_exports(script)
        return self._exports[script]

    def launchers(self, config: Path) -> list[Path]:
        """The scripts that run ``config``: those of its folder, else of the nearest folder
        above it that has any (the script that runs a config usually lives above its
        ``config/`` folder)."""
        here = Path(os.path.realpath(config)).parent
        while True:
            level = [s for s in self.scripts if s.parent == here]
            if level or here == self.root or here.parent == here:
                return level
            here = here.parent

    def sets(self, script: Path, name: str) -> bool:
        """Whether ``script`` assigns or exports ``name`` (its value knowable or not)."""
        pattern = rf"(?m)(?:^|[\s;&]){name}=|\bexport\s+(?:\w+=\S*\s+)*{name}\b"
        return bool(re.search(pattern, script_text(script)))

    def reads(self, script: Path, name: str) -> bool:
        """Whether ``script`` uses ``name`` without setting it: its caller must."""
        text = script_text(script)
        return bool(re.search(rf"\$\{{?{name}\b", text)) and not self.sets(script, name)

    def lookup(self, name: str, config: Path) -> Exported | None:
        """``name`` as the launch script that runs ``config`` exports it.

        Its launchers (``launchers``) come first. One that reads ``name`` from its caller
        leaves it to whoever calls it: the checkout's other scripts are asked, in path
        order, as those callers. Launchers that neither set nor read it settle it: unset.
        """
        near = self.launchers(config)
        for script in near:
            value = self.exports(script).get(name) or self._with_callers(script, name, near)
            if value:
                return Exported(value, script)
        if near and not any(self.reads(s, name) for s in near):
            return None  # set there but not knowable offline, or never set
        return self._elsewhere(name, near)

    def _elsewhere(self, name: str, near: list[Path]) -> Exported | None:
        """``name`` as the checkout's scripts other than ``near`` export it, in path order."""
        for script in (s for s in self.scripts if s not in set(near)):
            value = self.exports(script).get(name)
            if value:
                return Exported(value, script)
        return None

    def _with_callers(self, script: Path, name: str, near: list[Path]) -> str | None:
        """``name`` as ``script`` exports it from what its caller sets (``EMBODIED_PATH=
        ${REPO_PATH}/...``), those taken as the checkout's other scripts export them."""
        if not self.sets(script, name):
            return None
        text = script_text(script)
        callers: dict[str, str] = {}
        for var in dict.fromkeys(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", text)):
            found = self._elsewhere(var, near) if self.reads(script, var) else None
            if found is not None:
                callers[var] = found.value
        if not callers:
            return None
        return run_shell(text, callers, source=os.path.realpath(script)).get(name)

    def never_sets(self, name: str, config: Path) -> list[Path]:
        """The launchers of ``config`` when none of them sets or reads ``name``."""
        near = self.launchers(config)
        if any(self.sets(s, name) or self.reads(s, name) for s in near):
            return []
        return near

    def mentions(self, name: str) -> list[Path]:
        """Scripts that export ``name`` (with a value that is not knowable offline)."""
        pattern = re.compile(rf"\bexport\s+{name}\b")
        return [s for s in self.scripts if pattern.search(script_text(s))]


@dataclass(frozen=True)
class SearchEntry:
    """One resolved ``hydra.searchpath`` entry, or why it could not be resolved."""

    text: str
    path: Path | None
    problem: str | None = None
    unset: str | None = None  # the environment variable that could not be told
    never_set: bool = False  # nothing that runs the config sets it: Hydra stops on it
    outside: bool = False  # a folder of the image only: not checked here


def resolve_entry(
    text: str,
    config: Path,
    env: Mapping[str, str],
    checkout: Checkout | None,
    set_by: Mapping[str, str] | None = None,
    job: JobVariables | None = None,
) -> SearchEntry:
    """Resolve ``${oc.env:VAR}`` in one entry and turn ``file://`` into a folder.

    ``set_by`` names, per variable, what sets it where RLinf really runs (the Job's run
    script, inside the image): said in the finding when it is unknown here. Given the
    Job's environment (``job``), the variables are that environment's alone: what this
    machine or the checkout's other scripts set does not reach the Job's RLinf.
    """
    if job is not None:
        return _resolve_in_job(text, job, config, checkout)
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if checkout is not None:
            found = checkout.lookup(name, config)
            if found is not None:
                return found.value
        if default is not None:
            return default.strip().strip("'\"")
        missing.append(name)
        return ""

    value = ENV_REF.sub(sub, text)
    if missing:
        name = missing[0]
        where = (set_by or {}).get(name)
        message = _unset_message(name, text, checkout, where, config)
        never = checkout is not None and where is None and bool(checkout.never_sets(name, config))
        return SearchEntry(text, None, message, name, never_set=never)
    if "${" in value:
        return SearchEntry(text, None, f"hydra.searchpath entry {text!r} cannot be resolved")
    if value.startswith("pkg://"):
        return SearchEntry(text, None, None)  # a Python package's configs: not on disk here
    path = value.removeprefix("file://")
    return SearchEntry(text, Path(path) if path else None)


def _resolve_in_job(
    text: str, job: JobVariables, config: Path, checkout: Checkout | None
) -> SearchEntry:
    missing: list[str] = []
    unknown: list[tuple[str, Setting]] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        setting = job.setting(name)
        if setting is None:
            if default is not None:
                return default.strip().strip("'\"")
            if job.unread_launcher is not None and checkout is not None:
                # The launch script is not here: the checkout's own launch scripts are the
                # best knowledge of what it sets, to look the defaults up with.
                found = checkout.lookup(name, config)
                if found is not None:
                    return found.value
            missing.append(name)
        elif setting.value is None:
            unknown.append((name, setting))
        else:
            return setting.value
        return ""

    value = ENV_REF.sub(sub, text)
    head = f"hydra.searchpath entry {text!r}"
    if missing and job.unread_launcher is not None:
        name = missing[0]
        message = (
            f"{head} reads {name}, which nothing the Job runs before {job.unread_launcher} "
            "sets, and that launch script is not on this machine: not judged"
        )
        return SearchEntry(text, None, message, name)
    if missing:
        name = missing[0]
        message = f"{head} reads {name}, and {job.unset_remedy(name)}"
        return SearchEntry(text, None, message, name, never_set=True)
    if unknown:
        name, setting = unknown[0]
        message = f"{head}: {setting.by} sets {name} to a value not knowable before the run"
        return SearchEntry(text, None, message, name)
    if "${" in value:
        return SearchEntry(text, None, f"{head} cannot be resolved")
    if value.startswith("pkg://"):
        return SearchEntry(text, None, None)
    path = value.removeprefix("file://")
    local = job.local(path) if path else None
    if local is None:
        message = (
            f"{head} is {path} in the image, and no folder here holds the same files: "
            "the defaults found there are not checked"
        )
        return SearchEntry(text, None, message, outside=True)
    return SearchEntry(text, local)


def _unset_message(
    name: str,
    text: str,
    checkout: Checkout | None,
    set_by: str | None,
    config: Path | None = None,
) -> str:
    head = f"hydra.searchpath entry {text!r}: environment variable {name} is not set"
    if set_by:
        return (
            f"{head} here; {set_by} sets it where RLinf runs: export {name} to the local "
            "folder it stands for to check the defaults found there"
        )
    if checkout is None:
        return (
            f"{head}, and the config is not inside an RLinf checkout whose launch scripts "
            f"export it; export {name} as the launch script that runs this config does"
        )
    launchers = checkout.never_sets(name, config) if config is not None else []
    if launchers:
        names = ", ".join(str(s.relative_to(checkout.root)) for s in launchers[:3])
        return (
            f"{head}: {names}, the launch script{'s' if len(launchers) > 1 else ''} beside "
            f"this config, never set{'s' if len(launchers) == 1 else ''} it and Hydra stops "
            f"on it; export {name} there, or name its folder in the run command's "
            "hydra.searchpath"
        )
    scripts = checkout.mentions(name)
    if scripts:
        names = ", ".join(str(s.relative_to(checkout.root)) for s in scripts[:3])
        return f"{head}; {names} export{'s' if len(scripts) == 1 else ''} it: run through it"
    return f"{head}, and no launch script of {checkout.root} exports it"
