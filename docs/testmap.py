"""Which tests call what: an AST walk of ``tests/``, read by ``checkmap.py`` and writing
docs/tests.md (for each module of ``src/``, the test modules that call into it).

    .venv/bin/python docs/testmap.py          # print docs/tests.md
    .venv/bin/python docs/testmap.py --write  # rewrite it

A call is resolved through the module's imports (``from rlark_acceptance.run import
report_writers as writers`` makes ``writers.junit_xml(...)`` a call of
``rlark_acceptance.run.report_writers.junit_xml``) and then to where the name is defined (a
package's re-export is its defining module's). A call of a helper or a fixture of ``tests/``
counts as the calls that helper makes, as far as they go. ``tests/test_docs.py`` fails when
docs/tests.md is not what this script writes.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "tests.md"
SRC = ROOT / "src" / "rlark_acceptance"
ID = re.compile(r"[0-6PTB]\.\d")
# A command a test starts: the CLI reaches the pre-flight, ``pytest features/`` every check.
CLI = "rlark_acceptance.<cli>"
SUITE = "rlark_acceptance.<suite>"


@dataclass
class Fn:
    """One function of ``tests/`` (or of ``fixtures/``): what it calls and which IDs it names."""

    qual: str
    module: str  # repo-relative path
    name: str
    calls: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    params: list[str] = field(default_factory=list)
    fixture: bool = False

    @property
    def is_test(self) -> bool:
        return self.name.startswith("test_") and Path(self.module).name.startswith("test_")


@functools.cache
def canonical(qual: str) -> str:
    """``qual`` named where it is defined (a re-export names its defining module)."""
    if not qual.startswith("rlark_acceptance.") or "<" in qual:
        return qual
    parts = qual.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return qual
        module = inspect.getmodule(obj)
        if module is None or inspect.ismodule(obj):
            return qual
        return f"{module.__name__}.{'.'.join(parts[cut:])}"
    return qual


def _dotted_module(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name → what it names, from every import of the module (functions' too)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = (a.asname and a.name) or a.name.split(".")[
                    0
                ]
    return out


def _resolve(node: ast.expr, local: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return local.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, local)
        return f"{base}.{node.attr}" if base else None
    return None


def _is_fixture(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
        if isinstance(target, ast.Name) and target.id == "fixture":
            return True
    return False


def _constants(node: ast.AST) -> list[str]:
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _read(path: Path, root: Path) -> list[Fn]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _dotted_module(path, root)
    local = _imports(tree)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    defs += [
        m
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for m in c.body
        if isinstance(m, ast.FunctionDef)
    ]
    for d in defs:
        local.setdefault(d.name, f"{module}.{d.name}")
    # Module constants a test reads (a table of cases its parametrize names).
    tables = {
        t.id: _constants(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    }
    out = []
    for d in defs:
        fn = Fn(f"{module}.{d.name}", path.relative_to(root).as_posix(), d.name)
        fn.fixture = _is_fixture(d)
        fn.params = [a.arg for a in d.args.args]
        texts = _constants(d)
        for n in ast.walk(d):
            if isinstance(n, ast.Call):
                for target in (n.func, *n.args):
                    q = _resolve(target, local)
                    if q:
                        fn.calls.add(canonical(q))
            elif isinstance(n, ast.Name) and n.id in tables:
                texts += tables[n.id]
        if any("rlark_acceptance.cli" in t for t in texts):
            fn.calls.add(CLI)
        if any(t in ("features", "features/") for t in texts):
            fn.calls.add(SUITE)
        fn.ids = {t for t in texts if ID.fullmatch(t)}
        out.append(fn)
    return out


@dataclass
class TestCalls:
    fns: dict[str, Fn]

    @classmethod
    def of(cls, root: Path) -> TestCalls:
        sys.path[:0] = [str(root / "src"), str(root)]
        fns: dict[str, Fn] = {}
        for folder in ("tests", "fixtures"):
            for path in sorted((root / folder).rglob("*.py")):
                for fn in _read(path, root):
                    fns[fn.qual] = fn
        return cls(fns)

    def _fixtures_for(self, fn: Fn) -> list[Fn]:
        """The fixtures ``fn`` takes: its module's, its folders' conftests', the plugins'."""
        folder = Path(fn.module).parent
        visible = {fn.module, *(f"{p.as_posix()}/conftest.py" for p in (folder, *folder.parents))}
        return [
            f
            for f in self.fns.values()
            if f.fixture
            and f.name in fn.params
            and (f.module in visible or f.module.startswith("fixtures/"))
        ]

    def reaching(self, entries: set[str]) -> set[str]:
        """Every function of ``tests/`` that reaches one of ``entries`` (names of ``src``
        functions, or ``CLI`` / ``SUITE``), through its helpers and fixtures."""

        def entry(q: str) -> bool:
            return q.startswith("rlark_acceptance.") and q.rsplit(".", 1)[-1] in entries

        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for fn in self.fns.values():
                if fn.qual in found:
                    continue
                hits = any(entry(q) or q in found for q in fn.calls)
                hits = hits or any(f.qual in found for f in self._fixtures_for(fn))
                if hits:
                    found.add(fn.qual)
                    changed = True
        return found

    def exercising(self, names: set[str], entries: set[str], check: str) -> dict[str, list[str]]:
        """Test functions that call one of ``names`` (a check's code), or that reach one of
        ``entries`` and name ``check`` themselves; by test module."""
        reach = self.reaching(entries)
        out: dict[str, list[str]] = defaultdict(list)
        for fn in self.fns.values():
            if not fn.is_test:
                continue
            direct = any(
                q.startswith("rlark_acceptance.") and q.rsplit(".", 1)[-1] in names
                for q in fn.calls
            )
            if direct or (fn.qual in reach and check in fn.ids):
                out[fn.module].append(fn.name)
        return dict(sorted(out.items()))

    def by_module(self) -> dict[str, dict[str, int]]:
        """``{src module: {test module: tests calling into it}}``."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for fn in self.fns.values():
            if not fn.is_test:
                continue
            helpers = self._helper_calls(fn)
            for module in {q.rsplit(".", 1)[0] for q in fn.calls | helpers}:
                if module.startswith("rlark_acceptance."):
                    out[module][fn.module] += 1
        return out

    def _helper_calls(self, fn: Fn, seen: set[str] | None = None) -> set[str]:
        """What the helpers and fixtures of ``tests/`` that ``fn`` uses call, transitively."""
        seen = seen if seen is not None else {fn.qual}
        out: set[str] = set()
        nexts = [self.fns[q] for q in fn.calls if q in self.fns] + self._fixtures_for(fn)
        for h in nexts:
            if h.qual in seen:
                continue
            seen.add(h.qual)
            out |= h.calls | self._helper_calls(h, seen)
        return out


HEADER = """# Where each module's tests are

`tests/` is laid out by subject, mostly as `src/` is (`tests/rlinf/` for `rlinf/`,
`tests/run/` for `run/`), but a module's tests are wherever tests call it. For each module
of `src/rlark_acceptance/`, the test modules whose tests call something defined in it
(directly, or through a helper or fixture of `tests/`; a re-export counts for the module
that defines the name), with how many tests do. A module no test calls is exercised only
through others (the checks through the pre-flight's entries, the phases through Step 6's:
docs/checks.md names those tests per check), by the features and red runs, or by code a
test runs in a subprocess from a string of its own, which this walk does not read.

This file is written by `docs/testmap.py`; do not edit it by hand.
"""


def _logic_modules() -> list[str]:
    """Modules of ``src/`` that hold logic: every module but packages that only re-export."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        holds = any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in tree.body)
        if path.name == "__main__.py" or not holds:
            continue
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def render() -> str:
    calls = TestCalls.of(ROOT)
    tested = calls.by_module()
    modules = _logic_modules()
    with_tests = [m for m in modules if tested.get(m)]
    lines = [
        HEADER,
        f"{len(with_tests)} of {len(modules)} modules that hold logic are called by a test.",
        "",
        "| module | tests that call it |",
        "|---|---|",
    ]
    for m in modules:
        found = tested.get(m) or {}
        cell = ", ".join(f"`{t}` ({n})" for t, n in sorted(found.items())) or "none directly"
        lines.append(f"| `{m.removeprefix('rlark_acceptance.')}` | {cell} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if "--write" in sys.argv[1:]:
        OUT.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
