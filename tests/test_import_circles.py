"""No module of ``src/`` imports, however indirectly, a module that imports it back.

The imports are read from the source (``ast``, nothing is executed), all of them: at module
level, inside functions and under ``TYPE_CHECKING`` alike, since a circle that only type
checking closes still ties the two modules into one. A package's ``__init__`` counts as the
module its name imports; the implicit import of a parent package does not count (every
submodule of a face package would otherwise be in a circle with it).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the file at ``path`` imports."""
    name = module_name(path)
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


def import_graph() -> dict[str, set[str]]:
    files = sorted(SRC.rglob("*.py"))
    known = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, known) for f in files}


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
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_src() -> None:
    found = circles(import_graph())
    assert not found, "import circles in src/: " + "; ".join(" ↔ ".join(c) for c in found)
