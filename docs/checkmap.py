"""Writes docs/checks.md: every check of the page (and, after them, the training checks
beyond it), where its scenarios and its code live.

    .venv/bin/python docs/checkmap.py          # print
    .venv/bin/python docs/checkmap.py --write  # rewrite docs/checks.md

The table is derived, never hand-kept: the checks and remedies from
``rlark_acceptance.model.doc_checks``, the scenarios from the ``@check-<ID>`` tags of
``features/*.feature``, the static code from the pre-flight's check registry and the
runtime code from the Step 6 phases that name the check. ``tests/test_docs.py`` fails when
the file is not what this script writes.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "checks.md"
RUN = ROOT / "src" / "rlark_acceptance" / "run"
# A Step 6 phase names its check as a class attribute (``check = CheckId.ONE_POD_ON_NODE``).
_RUNTIME_CHECK = re.compile(
    r"""^\s*(?:check|CHECK|check_id)\s*(?::\s*[\w\[\]]+\s*)?=\s*"""
    r"""(?:["']([\w.]+)["']|CheckId\.(\w+))"""
)
# ... or settles a check by name on the run (``run.done("1.1", ...)``).
_RUNTIME_DONE = re.compile(r"""\bdone\(\s*(?:["']([\w.]+)["']|CheckId\.(\w+))""")


def _check_id(m: re.Match[str]) -> str:
    """The ID a match names: as a string, or as ``model.doc_checks.CheckId``'s name."""
    from rlark_acceptance.model.doc_checks import CheckId

    return m.group(1) or str(getattr(CheckId, m.group(2)))


_TAG = re.compile(r"@check-([\w.]+)")
SELF_CHECK = {"@negative", "@fault-injection", "@modified-job", "@variant"}

HEADER = """# The page's checks

Every check of the RLark page 在单个 GPU 节点上运行 RLinf (Run RLinf on a single GPU
node), in the order troubleshooting follows: the run record names the *earliest* failing
check in this order. **static** checks are decided offline from the RLinf config, the Job
YAML and the run information; **cluster** checks read the target cluster's nodes;
**runtime** checks need the submitted Job (Step 6). After the page's 41 come the training
checks (`T.1`–`T.4`, a section the page does not have): whether the run really trained
(`T.4`, a second submission that resumes from the checkpoint, is opt-in: its scenarios are
tagged `@resume`).
"""

DETAIL = """## What each entry says

For each check: what the page asks, the page's remedy when it fails (the run record's
`hint`), the feature files whose scenarios carry its tag (`@check-<ID>`; run them with
`./run acceptance -m check-<ID>`), the step definitions that verify it (the When and
Then lines of those scenarios), the Givens that make it fail, the code that decides it and
the unit tests that exercise that code.

- **Givens that make it fail**: the Given and When lines of its `@negative` and
  `@fault-injection` scenarios that the scenarios of the profile as it is (`@positive`, not
  a self-check) do not have: what changes the default profile, or how it is submitted, so
  that the check goes red; with their feature.
- **Code**: the function registered for its ID in the pre-flight's registry
  (`@check(CheckId.IMAGE_PULLABLE)`, i.e. 3.4), and the Step 6 phase classes
  (`check = CheckId.ONE_POD_ON_NODE`) and modules that settle it by name.
- **Unit tests**: the test functions under `tests/` (an AST walk, not a string search) that
  either call the check's code by name (its registered function, its phase class), or call
  an entry that dispatches to it and name its ID in the test itself, as a string of its
  own (`"3.4"`, in the body, a decorator or a module constant the test reads). The entries
  are the pre-flight's (`preflight_profile`, `preflight_files`, `run_checks`, `accept`) for
  static and cluster checks, Step 6's (`confirm_running`, `submit_and_confirm`, `accept`)
  for runtime checks, and a test helper, fixture or command that reaches one: a helper of
  `tests/` that calls an entry, a fixture that does, or a command that starts
  `rlark_acceptance.cli` or `pytest features/` (which reach every check).

This file is written by `docs/checkmap.py`; do not edit it by hand.
"""


def _rel(path: str | Path) -> str:
    return Path(path).resolve().relative_to(ROOT).as_posix()


def scenarios_by_check() -> dict[str, list[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for feature in sorted((ROOT / "features").glob("*.feature")):
        for tag in _TAG.findall(feature.read_text(encoding="utf-8")):
            found[tag].add(feature.name)
    return {k: sorted(v) for k, v in found.items()}


def static_code_by_check() -> dict[str, list[str]]:
    from rlark_acceptance.preflight.checks import base

    out: dict[str, set[str]] = defaultdict(set)
    for reg in base.REGISTRY:
        fn = inspect.unwrap(reg.fn)
        out[reg.id].add(f"{_rel(inspect.getfile(fn))}:{fn.__name__}")
    return {k: sorted(v) for k, v in out.items()}


def runtime_code_by_check() -> dict[str, list[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for path in sorted(RUN.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            m = _RUNTIME_CHECK.match(line)
            if m:
                out[_check_id(m)].add(_rel(path))
        for done in _RUNTIME_DONE.finditer(text):
            out[_check_id(done)].add(_rel(path))
    return {k: sorted(v) for k, v in out.items()}


def _step_definitions() -> list[tuple[str, Any, str]]:
    """(step type, parser, ``steps/module.py:function``) of every step definition.

    pytest-bdd keeps a step's parser in the closure of the fixture it registers; reading it
    from there is what lets this map name the function a step line runs.
    """
    out = []
    for path in sorted((ROOT / "steps").glob("*_steps.py")):
        module = importlib.import_module(f"steps.{path.stem}")
        for name, obj in vars(module).items():
            if not name.startswith("pytestbdd_stepdef_"):
                continue
            fn = obj._get_wrapped_function()
            ctx = inspect.getclosurevars(fn).nonlocals["context"]
            out.append((ctx.type, ctx.parser, f"{_rel(path)}:{ctx.step_func.__name__}"))
    return out


def then_steps_by_check() -> dict[str, list[str]]:
    """The step functions that verify each check: the When and Then lines of its scenarios."""
    defs = _step_definitions()
    out: dict[str, set[str]] = defaultdict(set)
    for _, checks, _, steps in _scenarios():
        for kind, text in steps:
            if kind == "given":
                continue
            for typ, parser, where in defs:
                if typ == kind and parser.is_matching(text):
                    for c in checks:
                        out[c].add(where)
    return {k: sorted(v) for k, v in out.items()}


def _scenarios() -> list[tuple[str, list[str], list[str], list[tuple[str, str]]]]:
    """(feature file, check IDs, tags, [(given | when | then, step text)]) per scenario."""
    from gherkin.parser import Parser
    from gherkin.token_scanner import TokenScanner

    out = []
    for feature in sorted((ROOT / "features").glob("*.feature")):
        doc: Any = Parser().parse(TokenScanner(feature.read_text(encoding="utf-8")))
        feature_tags = [t["name"] for t in doc["feature"].get("tags", [])]
        for child in doc["feature"]["children"]:
            scenario = child.get("scenario")
            if not scenario:
                continue
            tags = feature_tags + [t["name"] for t in scenario.get("tags", [])]
            checks = [m.group(1) for t in tags if (m := _TAG.match(t))]
            kind, steps = "given", []
            for step in scenario["steps"]:
                word = step["keyword"].strip().lower()
                kind = word if word in ("given", "when", "then") else kind
                steps.append((kind, step["text"]))
            out.append((feature.name, checks, tags, steps))
    return out


def givens_by_check() -> dict[str, list[str]]:
    """The Given / When lines that make each check fail: those of its negative scenarios
    that none of its positive scenarios has."""
    scenarios = _scenarios()
    usual: dict[str, set[str]] = defaultdict(set)
    for _, checks, tags, steps in scenarios:
        if "@positive" in tags and not set(tags) & SELF_CHECK:
            for c in checks:
                usual[c].update(text for kind, text in steps if kind != "then")
    out: dict[str, dict[str, None]] = defaultdict(dict)
    for feature, checks, tags, steps in scenarios:
        if "@positive" in tags or not {"@negative", "@fault-injection"} & set(tags):
            continue  # a self-check that passes on its changed input makes nothing fail
        for c in checks:
            for kind, text in steps:
                if kind != "then" and text not in usual[c]:
                    out[c][f"{kind.capitalize()} {text} ({feature})"] = None
    return {k: list(v) for k, v in out.items()}


def tests_by_check() -> dict[str, dict[str, list[str]]]:
    """``{check: {test module: [test function, ...]}}`` by what the tests call."""
    import testmap

    calls = testmap.TestCalls.of(ROOT)
    out: dict[str, dict[str, list[str]]] = {}
    for c, names in code_names_by_check().items():
        kinds = RUNTIME_ENTRIES if c in runtime_code_by_check() else set()
        if c in static_code_by_check():
            kinds = kinds | STATIC_ENTRIES
        found = calls.exercising(names, kinds, c)
        if found:
            out[c] = found
    return out


# What dispatches to a check's code for its ID: the pre-flight's entries for a static or
# cluster check, Step 6's for a runtime one (1.1 / 1.2 are both: RLinf prints its config).
# ``<cli>`` / ``<suite>``: a command that starts the CLI, or ``pytest features/``.
STATIC_ENTRIES = {
    "preflight_profile",
    "preflight_files",
    "run_checks",
    "accept",
    "<cli>",
    "<suite>",
}
RUNTIME_ENTRIES = {"confirm_running", "submit_and_confirm", "accept", "<suite>"}


def code_names_by_check() -> dict[str, set[str]]:
    """The names a test calls to run a check's code directly: its registered functions and
    the phase classes that name it."""
    import ast

    from rlark_acceptance.preflight.checks import base

    out: dict[str, set[str]] = defaultdict(set)
    for reg in base.REGISTRY:
        out[reg.id].add(inspect.unwrap(reg.fn).__name__)
    for path in sorted(RUN.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                for line in (ast.get_source_segment(text, node) or "").splitlines():
                    m = _RUNTIME_CHECK.match(line)
                    if m:
                        out[_check_id(m)].add(node.name)
    return out


def render() -> str:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "docs")]
    from rlark_acceptance.model.doc_checks import ALL_CHECKS

    scenarios = scenarios_by_check()
    static = static_code_by_check()
    runtime = runtime_code_by_check()
    tests = tests_by_check()
    steps = then_steps_by_check()
    givens = givens_by_check()
    lines = [HEADER, "", "## The checks at a glance", ""]
    lines += ["| ID | what is checked | kind | section |", "|---|---|---|---|"]
    lines += [
        f"| [{c.id}](#{_anchor(c.id)}) | {_cell(c.says)} | {c.kind} | {_cell(c.section)} |"
        for c in ALL_CHECKS
    ]
    lines += ["", DETAIL.rstrip()]
    section = None
    for c in ALL_CHECKS:
        if c.section != section:
            section = c.section
            lines += ["", f"## {section}", ""]
        code = static.get(c.id, []) + runtime.get(c.id, [])
        features = [f"features/{f}" for f in scenarios.get(c.id, [])]
        lines += [
            f"### {c.id} {c.says} {{#{_anchor(c.id)}}}",
            "",
            f"- Kind: {c.kind}",
            f"- {'The page asks' if not c.id.startswith('T.') else 'Beyond the page'}: {c.says}",
            f"- Remedy: {c.remedy}",
            "- Scenarios: " + _list(features, "none"),
            "- Steps: " + _list(steps.get(c.id, []), "none"),
            "- Givens that make it fail:" + ("" if givens.get(c.id) else " none"),
            *(f"  - {g}" for g in givens.get(c.id, [])),
            "- Code: " + _list(code, "none"),
            "- Unit tests:" + ("" if tests.get(c.id) else " none (the scenarios only)"),
            *(
                f"  - `{module}`: " + ", ".join(f"`{t}`" for t in names)
                for module, names in tests.get(c.id, {}).items()
            ),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def _anchor(check: str) -> str:
    """The check's anchor on this page, as the run record's doc links spell it."""
    return "check-" + check.replace(".", "-").lower()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _list(items: list[str], empty: str) -> str:
    return ", ".join(f"`{i}`" for i in items) or empty


def main() -> int:
    text = render()
    if "--write" in sys.argv[1:]:
        OUT.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
