"""docs/layout.md names every module where it is: a module added to ``src/``, ``testenv/`` or
``fixtures/`` without a word in the map of the code fails here, and so does a row that names
a package that is not there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs" / "layout.md"
TREES = ("src/rlark_acceptance", "testenv", "fixtures")


def _rows() -> dict[str, set[str]]:
    """Each table row's package path (its first backticked path of a tree) → the words of
    everything it puts in backticks."""
    rows: dict[str, set[str]] = {}
    for line in LAYOUT.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| "):
            continue
        quoted = re.findall(r"`([^`]+)`", line)
        where = next((q for q in quoted if q.startswith(TREES)), None)
        if where is None:
            continue
        words = {w for q in quoted for w in re.split(r"[^\w]+", q) if w}
        rows.setdefault(where.rstrip("/"), set()).update(words)
    return rows


def _row_of(module: str, rows: dict[str, set[str]]) -> str | None:
    """The row of the deepest package path that holds ``module`` (a path from the root)."""
    found = [w for w in rows if module == w or module.startswith(w.removesuffix(".py") + "/")]
    return max(found, key=len, default=None)


def test_every_module_is_named_in_the_row_of_its_package() -> None:
    rows = _rows()
    missing = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            if path.name == "__init__.py" or "__pycache__" in path.parts:
                continue
            module = path.relative_to(ROOT).as_posix()
            row = _row_of(module, rows)
            if row is None or (row != module and path.stem not in rows[row]):
                missing.append(f"{module} (row {row})")
    assert missing == [], "docs/layout.md does not name: " + ", ".join(missing)


def test_every_package_a_row_names_is_there() -> None:
    absent = [where for where in _rows() if not (ROOT / where).exists()]
    assert absent == [], absent


def test_testenv_row_names_every_module_of_src_that_testenv_imports() -> None:
    """The row's list of what testenv uses of ``src/`` beyond the public API is whole: a new
    import of an adapter's or the model's module fails here until the map says so."""
    row = next(
        line for line in LAYOUT.read_text(encoding="utf-8").splitlines() if "| `testenv/`" in line
    )
    _, _, beyond = row.partition("beyond the public API")
    imported: set[str] = set()
    for path in (ROOT / "testenv").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "rlark_acceptance."
            ):
                parts = (node.module or "").split(".")
                # ``from rlark_acceptance.adapters.local import images``: a module imported by name
                for alias in node.names:
                    as_module = ROOT / "src" / Path(*parts, alias.name)
                    named = as_module.with_suffix(".py").is_file() or as_module.is_dir()
                    imported.add(alias.name if named else parts[-1])
    unnamed = sorted(m for m in imported if f"`{m}`" not in beyond and f".{m}`" not in beyond)
    assert not unnamed, f"testenv imports these modules of src/ the map does not name: {unnamed}"


# -- Step 6's record: written by the engine alone ------------------------------------------

STEP6 = ROOT / "src" / "rlark_acceptance" / "run" / "step6"
# The names a Step 6 module holds a run record (or a part of it) by.
_RECORD_NAMES = {"rec", "record", "sub", "resumed"}
_MUTATORS = {"append", "extend", "insert", "setdefault", "update", "pop", "clear"}


def _into_record(target: ast.expr) -> bool:
    """``rec.x``, ``engine.rec.x``, ``rec.phases[...]``: a target inside a record (binding
    ``self.record`` writes into no record)."""
    if not isinstance(target, ast.Attribute | ast.Subscript):
        return False
    node = target.value
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute) and node.attr in _RECORD_NAMES:
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id in _RECORD_NAMES


def record_writes(source: str) -> list[int]:
    """The lines of ``source`` that assign into a run record or change one of its lists."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
        ):
            targets = [node.func.value]
        flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if any(_into_record(t) for t in flat):
            lines.append(flat[0].lineno)
    return sorted(lines)


def test_only_the_engine_writes_the_step6_record() -> None:
    """The record of a run is written in one place, the engine, which also calls the adapter
    for what goes into it: a module that writes it on the side fails here."""
    writers = {
        path.name: found
        for path in sorted(STEP6.glob("*.py"))
        if path.name not in ("engine.py", "record.py")
        if (found := record_writes(path.read_text(encoding="utf-8")))
    }
    assert writers == {}, f"Step 6 modules writing the run record besides the engine: {writers}"


def test_the_record_writes_rule_finds_each_way_of_writing() -> None:
    source = (
        "rec.step = 1\n"
        "engine.rec.worker_left = 'x'\n"
        "rec.warnings.append('w')\n"
        "rec.phases[c] = r\n"
        "rec.step, rec.total = 1, 2\n"
        "sub.durations['submit'] += 1.0\n"
        "resumed.started = 3\n"
        "seen.pods = []\n"  # the observed state, not the record
        "rec = RunRecord()\n"  # a name bound, nothing written into a record
        "engine.done(c, True, 'm')\n"
        "self.record = record\n"
    )
    assert record_writes(source) == [1, 2, 3, 4, 5, 6, 7]
