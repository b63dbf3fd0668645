"""No module of ``src/``, ``testenv/``, ``fixtures/`` or ``steps/`` imports, however
indirectly, a module of its tree that imports it back.

The imports are read from the source (``ast``, nothing is executed), all of them: at module
level, inside functions and under ``TYPE_CHECKING`` alike, since a circle that only type
checking closes still ties the two modules into one. A package's ``__init__`` counts as the
module its name imports; the implicit import of a parent package does not count (every
submodule of a face package would otherwise be in a circle with it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
# Each tree and the folder its modules' names start from.
TREES = {"src": SRC, "testenv": ROOT, "fixtures": ROOT, "steps": ROOT}


def module_name(path: Path, base: Path = SRC) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, known: set[str], root: Path = SRC) -> set[str]:
    """The modules of ``known`` that the file at ``path`` imports."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # ``from pkg import mod`` imports the submodule
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def import_graph(tree: str = "src") -> dict[str, set[str]]:
    base = TREES[tree]
    files = sorted((ROOT / tree).rglob("*.py"))
    known = {module_name(f, base) for f in files}
    return {module_name(f, base): imports_of(f, known, base) for f in files}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_the_imports_it_should() -> None:
    """The walk itself can fail: it finds a module's known imports, and a planted circle."""
    graph = import_graph()
    assert "rlark_acceptance.model.profile" in graph["rlark_acceptance.preflight.entry"]
    assert "testenv.node_config" in import_graph("testenv")["testenv.node"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("tree", list(TREES))
def test_no_import_circle_in_the_tree(tree: str) -> None:
    found = circles(import_graph(tree))
    assert not found, f"import circles in {tree}/: " + "; ".join(" ↔ ".join(c) for c in found)
