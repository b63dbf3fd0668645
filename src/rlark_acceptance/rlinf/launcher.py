"""What a launch script passes to RLinf, read from the script the Job calls.

RLinf's launch scripts differ in what reaches RLinf: ``run_embodiment.sh NAME [PLATFORM]``
forwards nothing more and forces ``runner.logger.log_path`` inside the image;
``run_diffusion.sh NAME …`` forwards the rest. A table of one version's scripts misses the
others, so the script itself is read (with ``searchpath.Shell``, the one reader of a shell
script), with the arguments the run command gives it: the Python command it ends in (run
directly, or held in a variable, ``CMD="python …"`` or ``CMD=(python …)``), its
``--config-path`` and ``--config-name``, the overrides it always passes, those it adds when
a variable is set (``EXTRA+=" cluster.num_nodes=${NODES}"``), and where it forwards its own
arguments (``"$@"``, ``"${@:2}"``, an array made of them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rlark_acceptance.rlinf.searchpath import Shell, Unknown, split_words

# The part of a value a command makes that is not knowable (a timestamp): enough to tell
# which folder a dated log path lies in.
STAMP = "TIMESTAMP"
PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
_FORWARD = re.compile(r'^"?\$(?:@|\{@(?::(\d+))?\})"?$')
_ARRAY_REF = re.compile(r'^"?\$\{(\w+)\[@\]\}"?$')
_OVERRIDE = re.compile(r"^(?:~|\+\+|\+)?[A-Za-z_][\w.@/\-]*=")
_APPEND = re.compile(r'(\w+)\+=\s*"\s*([A-Za-z_][\w.]*)=\$\{?(\w+)(?::-[^}]*)?\}?\s*"')
_POSITIONAL = re.compile(r"\$\{?([1-9])\b")
# RLinf's scripts read NODES=-2 and the like as "not given".
_NOT_GIVEN = (None, "", "-2")


@dataclass(frozen=True)
class ScriptLaunch:
    """What the script passes to RLinf, as read."""

    script: str  # its path in the image
    config_dir: str | None
    config_name: str | None
    fixed: tuple[str, ...]  # overrides it always passes (values expanded)
    added: tuple[str, ...]  # overrides it adds because a variable it reads is set
    forwards_from: int | None  # the first of its arguments it passes on; None: none
    reads: int  # how many of its own arguments it reads ($1, ${2:-…})

    def __repr__(self) -> str:  # overrides may hold secrets
        return f"ScriptLaunch({self.script!r}, config={self.config_name!r})"


def read_launcher(
    text: str, script: str, args: Sequence[str], env: Mapping[str, str]
) -> ScriptLaunch | None:
    """``text``, the launch script at ``script`` in the image, called with ``args`` in the
    environment ``env``; None when it runs no RLinf entry point that can be found, or when
    which config it runs cannot be told (a name chosen in an ``if`` on an argument not
    given: the two branches are not told apart here)."""
    shell = Shell(Path(script), tuple(args), placeholder=STAMP)
    shell.vars.update(env)
    direct: list[str] = []

    def at_command(words: list[str]) -> None:
        plain = [w.strip("\"'") for w in words[:2]]
        if "--config-path" in words and any(PYTHON.match(w) for w in plain):
            direct[:] = words

    shell.run(text, at_command)
    words = direct or _held_command(shell)
    if not words:
        return None
    config_dir = config_name = None
    fixed: list[str] = []
    forwards: int | None = None
    accumulators: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("--config-path", "--config-name") and i + 1 < len(words):
            value = _expand(shell, words[i + 1])
            if word == "--config-path":
                config_dir = value.rstrip("/") if value else None
            else:
                config_name = value
            i += 2
            continue
        forward = _forwarded(shell, word)
        if forward is not None:
            forwards = forward if forwards is None else min(forwards, forward)
        else:
            accumulators |= set(re.findall(r"\$\{?(\w+)", word))
            value = _expand(shell, word)
            if value is not None:
                fixed += [w for w in value.split() if _OVERRIDE.match(w)]
        i += 1
    # ``EXTRA+=" key=${VAR}"`` under a test of VAR: the key is passed when VAR is set.
    added = tuple(
        f"{m.group(2)}={shell.vars[m.group(3)]}"
        for m in _APPEND.finditer(text)
        if m.group(1) in accumulators and shell.vars.get(m.group(3)) not in _NOT_GIVEN
    )
    if not config_name:
        return None
    reads = max((int(n) for n in _POSITIONAL.findall(text)), default=0)
    return ScriptLaunch(script, config_dir, config_name, tuple(fixed), added, forwards, reads)


def _held_command(shell: Shell) -> list[str]:
    """The last variable holding an RLinf command line, as words."""
    for _name, raw in reversed(shell.held):
        if "python" in raw and "--config-path" in raw:
            body = raw.strip()
            array = body.startswith("(") and body.endswith(")")
            quoted = body[:1] in "\"'" and body[-1:] == body[:1]
            if array or quoted:
                body = body[1:-1]
            return split_words(body) or []
    return []


def _forwarded(shell: Shell, word: str) -> int | None:
    """The first of the script's arguments ``word`` passes on, if it passes any."""
    m = _FORWARD.match(word)
    if m:
        return int(m.group(1) or 1)
    ref = _ARRAY_REF.match(word)
    if ref and ref.group(1) in shell.arrays:
        inner = split_words(shell.arrays[ref.group(1)].strip()[1:-1]) or []
        return next((f for f in map(lambda w: _forwarded(shell, w), inner) if f), None)
    return None


def _expand(shell: Shell, word: str) -> str | None:
    try:
        return shell.expand(word)
    except (Unknown, RecursionError):
        return None
