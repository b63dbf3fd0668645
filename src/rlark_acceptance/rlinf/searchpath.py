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
built from ``$VAR``, ``${VAR:-default}``, ``${BASH_SOURCE[0]}``, ``$0``, ``$(dirname X)`` and
``$(cd X && pwd)``); anything else leaves the variable unknown rather than guessed.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.yamlsrc import read_bytes

_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_ENV_REF = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
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


class _Unknown(Exception):
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
    raise _Unknown(s)


class _Shell:
    """Evaluates the assignments of one script, top to bottom."""

    def __init__(self, script: Path) -> None:
        self.script = script
        self.vars: dict[str, str] = {}
        self.exported: set[str] = set()

    def run(self, text: str) -> None:
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("export ") and "=" not in line:
                self.exported.update(n for n in line.split()[1:] if _NAME.fullmatch(n))
                continue
            m = _ASSIGN.match(line)
            if not m:
                continue
            name, value = m.group(1), _strip_comment(m.group(2).strip())
            try:
                self.vars[name] = self.expand(value)
            except (_Unknown, RecursionError):
                self.vars.pop(name, None)
            if line.startswith("export"):
                self.exported.add(name)

    def expand(self, s: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(s):
            c = s[i]
            if c == '"':
                i += 1
            elif c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise _Unknown(s)
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
                if s.startswith("$0", i):
                    out.append(str(self.script))
                    i += 2
                elif m:
                    out.append(self.param(m.group(0)))
                    i = m.end()
                else:
                    raise _Unknown(s)
            elif c in "`;|&<>*?" or c.isspace():
                raise _Unknown(s)
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def param(self, inner: str) -> str:
        if inner in ("BASH_SOURCE[0]", "BASH_SOURCE", "0"):
            return str(self.script)
        name, sep, default = inner.partition(":-")
        if not _NAME.fullmatch(name):
            raise _Unknown(inner)
        if name in self.vars and (self.vars[name] or not sep):
            return self.vars[name]
        if sep:
            return self.expand(default)
        raise _Unknown(inner)  # set by whoever calls the script: not knowable here

    def command(self, inner: str) -> str:
        cwd: str | None = None
        result: str | None = None
        for part in _split_and(inner):
            words = part.split(None, 1)
            if not words:
                raise _Unknown(inner)
            arg = self.expand(words[1].strip()) if len(words) > 1 else ""
            if words[0] == "cd" and arg:
                cwd = posixpath.normpath(arg)
            elif words[0] == "pwd" and len(words) == 1 and cwd and posixpath.isabs(cwd):
                result = cwd
            elif words[0] == "dirname" and arg:
                result = posixpath.dirname(arg.rstrip("/")) or "."
            else:
                raise _Unknown(inner)
        if result is None:
            raise _Unknown(inner)
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


def _strip_comment(value: str) -> str:
    if " #" in value and value.count('"') % 2 == 0:
        return value.split(" #", 1)[0].rstrip()
    return value


def script_exports(script: Path) -> dict[str, str]:
    """The variables ``script`` exports, for those whose value can be told offline."""
    text = _script_text(script)
    if "export" not in text:
        return {}
    shell = _Shell(Path(os.path.realpath(script)))
    shell.run(text)
    return {n: v for n, v in shell.vars.items() if n in shell.exported and v}


def _script_text(script: Path) -> str:
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

    def lookup(self, name: str, config: Path) -> Exported | None:
        """``name`` as the launch script nearest to ``config`` exports it.

        Scripts next to the config and in its parent folders come first (the script that
        runs a config usually lives above its ``config/`` folder), then the checkout's
        other scripts in path order.
        """
        near: list[Path] = []
        here = Path(os.path.realpath(config)).parent
        while True:
            near += [s for s in self.scripts if s.parent == here]
            if here == self.root or here.parent == here:
                break
            here = here.parent
        rest = [s for s in self.scripts if s not in set(near)]
        for script in near + rest:
            value = self.exports(script).get(name)
            if value:
                return Exported(value, script)
        return None

    def mentions(self, name: str) -> list[Path]:
        """Scripts that export ``name`` (with a value that is not knowable offline)."""
        pattern = re.compile(rf"\bexport\s+{name}\b")
        return [s for s in self.scripts if pattern.search(_script_text(s))]


@dataclass(frozen=True)
class SearchEntry:
    """One resolved ``hydra.searchpath`` entry, or why it could not be resolved."""

    text: str
    path: Path | None
    problem: str | None = None
    unset: str | None = None  # the environment variable that could not be told


def resolve_entry(
    text: str,
    config: Path,
    env: Mapping[str, str],
    checkout: Checkout | None,
    set_by: Mapping[str, str] | None = None,
) -> SearchEntry:
    """Resolve ``${oc.env:VAR}`` in one entry and turn ``file://`` into a folder.

    ``set_by`` names, per variable, what sets it where RLinf really runs (the Job's run
    script, inside the image): said in the finding when it is unknown here.
    """
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

    value = _ENV_REF.sub(sub, text)
    if missing:
        name = missing[0]
        where = (set_by or {}).get(name)
        return SearchEntry(text, None, _unset_message(name, text, checkout, where), name)
    if "${" in value:
        return SearchEntry(text, None, f"hydra.searchpath entry {text!r} cannot be resolved")
    if value.startswith("pkg://"):
        return SearchEntry(text, None, None)  # a Python package's configs: not on disk here
    path = value.removeprefix("file://")
    return SearchEntry(text, Path(path) if path else None)


def _unset_message(name: str, text: str, checkout: Checkout | None, set_by: str | None) -> str:
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
    scripts = checkout.mentions(name)
    if scripts:
        names = ", ".join(str(s.relative_to(checkout.root)) for s in scripts[:3])
        return f"{head}; {names} export{'s' if len(scripts) == 1 else ''} it: run through it"
    return f"{head}, and no launch script of {checkout.root} exports it"
