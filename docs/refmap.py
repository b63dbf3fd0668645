"""Writes the reference pages that the code can say itself: docs/reference/cli.md (the
``./run`` commands, ``rlark-acceptance`` and the suite's pytest options) and
docs/reference/target-options.md (the profile's ``timeouts:`` and ``target:`` keys, every
adapter's own).

    .venv/bin/python docs/refmap.py          # print both
    .venv/bin/python docs/refmap.py --write  # rewrite both

Derived, never hand-kept: the commands from the header of ``run``, the options from
``rlark_acceptance.cli.build_parser`` and the ``pytest_addoption`` of every plugin the root
conftest loads, the timeouts from ``model.timeouts``, the target keys from
``model.profile.Target`` and the adapter option types named under the entry-point group
``rlark_acceptance.adapter_options`` of pyproject.toml, each key's meaning from the comment
above it in the code. ``tests/test_site.py`` fails when a page is not what this script
writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "docs" / "reference" / "cli.md"
TARGET = ROOT / "docs" / "reference" / "target-options.md"
NOTE = "This page is written by `docs/refmap.py`; do not edit it by hand."


# -- comments in the code, as the meaning of a field -----------------------------------


def field_comments(cls: type) -> dict[str, str]:
    """``{name: comment}`` for each ``name: ...`` / ``NAME = ...`` line of ``cls``'s body:
    the comment at its end, else the comment lines just above it up to an empty ``#`` line
    (what follows that is about the code, not the key)."""
    out: dict[str, str] = {}
    above: list[str] = []
    closed = False
    for line in inspect.getsource(cls).splitlines()[1:]:
        text = line.strip()
        if text.startswith("#"):
            said = text.lstrip("#").strip()
            if not said:
                closed = bool(above)
            elif not closed:
                above.append(said)
            continue
        closed = False
        m = re.match(r"(\w+)\s*[:=]", text)
        if m and not text.startswith(("def ", "return ")):
            trailing = text.split("  # ", 1)[1].strip() if "  # " in text else ""
            said = trailing or " ".join(above)
            if said:
                out[m.group(1)] = said
        above = []
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- the command line -------------------------------------------------------------------


def run_usage() -> str:
    """The header of ``run``: the commands as the script itself lists them."""
    lines = []
    for line in (ROOT / "run").read_text(encoding="utf-8").splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(lines).strip("\n")


def _argument(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.option_strings:
        return f"`{action.metavar or action.dest.upper()}`"
    shown = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return f"`{shown}`" + (" …" if action.nargs in ("+", "*") else "")


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, [], argparse.SUPPRESS):
        return ""
    return f"`{action.default}`"


def _options_table(actions: list[argparse.Action], required_one: set[str]) -> list[str]:
    rows = ["| option | argument | default | what it does |", "|---|---|---|---|"]
    for a in actions:
        if isinstance(a, argparse._HelpAction):
            continue
        name = ", ".join(f"`{s}`" for s in a.option_strings) or f"`{a.dest}`"
        said = a.help or ""
        if a.dest in required_one:
            said = f"{said} (one of these is required)".strip()
        elif a.required:  # a positional that may be left out (nargs "?") is not
            said = f"{said} (required)".strip()
        if a.choices:
            said += " — one of " + ", ".join(f"`{c}`" for c in a.choices)
        if a.option_strings and getattr(a, "nargs", None) is None and _repeatable(a):
            said += " (repeatable)" if "repeatable" not in said else ""
        rows.append(f"| {name} | {_argument(a)} | {_default(a)} | {_cell(said)} |")
    return rows


def _repeatable(a: argparse.Action) -> bool:
    return isinstance(a, argparse._AppendAction)


def rlark_acceptance_section() -> list[str]:
    from rlark_acceptance.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = [
        "## `rlark-acceptance`",
        "",
        "The pre-flight, the config audit and the rendering of a run's report "
        "(`.venv/bin/rlark-acceptance` once `./run` has set up the virtualenv). Exit status "
        "and JSON: [the contract, §3](../contract.md#3-command-line).",
        "",
    ]
    for name, command in sub.choices.items():
        required_one = {
            a.dest
            for group in command._mutually_exclusive_groups
            if group.required
            for a in group._group_actions
        }
        said = helps.get(name) or ""
        out += [f"### `rlark-acceptance {name}`", "", f"{said[:1].upper()}{said[1:]}.", ""]
        out += [*_options_table(command._actions, required_one), ""]
        if command.epilog:  # its exit status, as its --help ends
            out += ["```text", command.epilog, "```", ""]
    return out


class _Recorder:
    """What a plugin's ``pytest_addoption`` adds, in the order it adds it."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))

    def addini(self, *args: Any, **kwargs: Any) -> None:
        return None


def plugins() -> Iterator[str]:
    """The plugins the root conftest.py loads (read from its file: under pytest, the name
    ``conftest`` may be another directory's)."""
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("_root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield from module.pytest_plugins


def pytest_section() -> list[str]:
    out = [
        "## `pytest features/`",
        "",
        "The acceptance suite's own options (`./run acceptance [PYTEST ARGS]` passes them "
        "on), beside pytest's (`-m`, `-k`, `-q`, …). What a run writes: "
        "[the run record](record.md); a release: [the contract, §6]"
        "(../contract.md#6-a-release-and-its-record).",
        "",
        "| option | argument | default | what it does | plugin |",
        "|---|---|---|---|---|",
    ]
    for module in plugins():
        hook = getattr(importlib.import_module(module), "pytest_addoption", None)
        if hook is None:
            continue
        recorder = _Recorder()
        hook(recorder)
        for names, kw in recorder.options:
            flag = kw.get("action") in ("store_true", "store_false")
            arg = "" if flag else f"`{kw.get('metavar') or names[0].lstrip('-').upper()}`"
            default = kw.get("default")
            shown = "" if flag or default in (None, []) else f"`{default}`"
            said = kw.get("help") or ""
            if kw.get("choices"):
                said += " — one of " + ", ".join(f"`{c}`" for c in kw["choices"])
            if kw.get("action") == "append" and "repeatable" not in said:
                said += " (repeatable)"
            names_cell = ", ".join(f"`{n}`" for n in names)
            out.append(f"| {names_cell} | {arg} | {shown} | {_cell(said)} | `{module}` |")
    return [*out, ""]


def render_cli() -> str:
    out = [
        "# Command line",
        "",
        "Every command the harness has, as its code declares it.",
        "",
        NOTE,
        "",
        "## `./run`",
        "",
        "The project's commands, as the header of the `run` script lists them:",
        "",
        "```text",
        run_usage(),
        "```",
        "",
    ]
    out += rlark_acceptance_section()
    out += pytest_section()
    return "\n".join(out).rstrip("\n") + "\n"


# -- the profile's timeouts and target options ------------------------------------------


def _fields_table(cls: type, comments: dict[str, str], prefix: str) -> list[str]:
    from rlark_acceptance.model.options import camel

    rows = ["| key | type | default | what it is |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "options":
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        shown = "" if default in (None, (), {}) else f"`{default}`"
        kind = f"`{f.type if isinstance(f.type, str) else getattr(f.type, '__name__', f.type)}`"
        said = comments.get(f.name, "")
        rows.append(f"| `{prefix}{camel(f.name)}` | {_cell(kind)} | {shown} | {_cell(said)} |")
    return rows


def adapter_options() -> list[tuple[str, str]]:
    """(adapter, ``module:Type``) as pyproject.toml declares them."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    group = data["project"]["entry-points"]["rlark_acceptance.adapter_options"]
    return sorted(group.items())


def render_target() -> str:
    from rlark_acceptance.model.profile import Target
    from rlark_acceptance.model.timeouts import Bound, Timeouts

    bounds = field_comments(Bound)
    by_field = {b.name.lower(): bounds.get(b.name, "") for b in Bound}
    out = [
        "# Timeouts and target options",
        "",
        "The keys of a profile's `timeouts:` and `target:` that the code declares with their "
        "types and defaults. The whole profile, annotated: [the contract, §2]"
        "(../contract.md#2-the-acceptance-profile); every field in one place: "
        "[the profile and release file](profile.md).",
        "",
        NOTE,
        "",
        "## `timeouts:`",
        "",
        "Seconds, each positive; a key that is none of these is refused at its line.",
        "",
    ]
    out += _fields_table(Timeouts, by_field, "timeouts.")
    out += [
        "",
        "## `target:`, every adapter",
        "",
        "The keys every target has; the others are the adapter's own (below), refused at "
        "their line when the adapter does not declare them.",
        "",
    ]
    out += _fields_table(Target, field_comments(Target), "target.")
    for adapter, where in adapter_options():
        module, name = where.split(":")
        cls = getattr(importlib.import_module(module), name)
        out += [
            "",
            f"## `target:`, adapter `{adapter}`",
            "",
            f"`{name}` (`{module}`).",
            "",
        ]
        out += _fields_table(cls, field_comments(cls), "target.")
    return "\n".join(out).rstrip("\n") + "\n"


PAGES = {CLI: render_cli, TARGET: render_target}


def main() -> int:
    for path, render in PAGES.items():
        text = render()
        if "--write" in sys.argv[1:]:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
