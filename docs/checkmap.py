"""Writes docs/checks.md: every check of the page, where its scenarios and its code live.

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
# A Step 6 phase names its check as a class attribute (``check = "6.2"``) or a constant.
_RUNTIME_CHECK = re.compile(
    r"""^\s*(?:check|CHECK|check_id)\s*(?::\s*[\w\[\]]+\s*)?=\s*["']([\w.]+)["']"""
)
# ... or settles a check by name on the run (``run.done("1.1", ...)``).
_RUNTIME_DONE = re.compile(r"""\bdone\(\s*["']([\w.]+)["']""")
_TAG = re.compile(r"@check-([\w.]+)")

HEADER = """# The page's checks

Every check of the RLark page 在单个 GPU 节点上运行 RLinf (Run RLinf on a single GPU
node), in the order troubleshooting follows: the run record names the *earliest* failing
check in this order. **static** checks are decided offline from the RLinf config, the Job
YAML and the run information; **cluster** checks read the target cluster's nodes;
**runtime** checks need the submitted Job (Step 6).

For each check: what the page asks, the page's remedy when it fails (the run record's
`hint`), the feature files whose scenarios carry its tag (`@check-<ID>`; run them with
`./run acceptance -m check-<ID>`), the step definitions that verify it (the When and
Then lines of those scenarios), the code that decides it and the test modules that name it.

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
                out[m.group(1)].add(_rel(path))
        for cid in _RUNTIME_DONE.findall(text):
            out[cid].add(_rel(path))
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
    from gherkin.parser import Parser
    from gherkin.token_scanner import TokenScanner

    defs = _step_definitions()
    out: dict[str, set[str]] = defaultdict(set)
    for feature in sorted((ROOT / "features").glob("*.feature")):
        doc: Any = Parser().parse(TokenScanner(feature.read_text(encoding="utf-8")))
        feature_tags = [t["name"] for t in doc["feature"].get("tags", [])]
        for child in doc["feature"]["children"]:
            scenario = child.get("scenario")
            if not scenario:
                continue
            tags = feature_tags + [t["name"] for t in scenario.get("tags", [])]
            checks = [m.group(1) for t in tags if (m := _TAG.match(t))]
            kind = "given"
            for step in scenario["steps"]:
                word = step["keyword"].strip().lower()
                kind = word if word in ("given", "when", "then") else kind
                if kind == "given":
                    continue
                for typ, parser, where in defs:
                    if typ == kind and parser.is_matching(step["text"]):
                        for c in checks:
                            out[c].add(where)
    return {k: sorted(v) for k, v in out.items()}


def tests_by_check() -> dict[str, list[str]]:
    """Test modules that name a check ID as a string (``"6.2"``, ``'3.4'``)."""
    out: dict[str, set[str]] = defaultdict(set)
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name == "test_docs.py":  # names checks as examples of the contract's shapes
            continue
        for cid in re.findall(r"""["']([0-6P]\.\d)["']""", path.read_text(encoding="utf-8")):
            out[cid].add(_rel(path))
    return {k: sorted(v) for k, v in out.items()}


def render() -> str:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from rlark_acceptance.model.doc_checks import CHECKS

    scenarios = scenarios_by_check()
    static = static_code_by_check()
    runtime = runtime_code_by_check()
    tests = tests_by_check()
    steps = then_steps_by_check()
    lines = [HEADER]
    section = None
    for c in CHECKS:
        if c.section != section:
            section = c.section
            lines += ["", f"## {section}", ""]
        code = static.get(c.id, []) + runtime.get(c.id, [])
        features = [f"features/{f}" for f in scenarios.get(c.id, [])]
        lines += [
            f"### {c.id} ({c.kind})",
            "",
            f"- The page asks: {c.says}",
            f"- Remedy: {c.remedy}",
            "- Scenarios: " + _list(features, "none"),
            "- Steps: " + _list(steps.get(c.id, []), "none"),
            "- Code: " + _list(code, "none"),
            "- Tests: " + _list(tests.get(c.id, []), "the scenarios"),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


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
