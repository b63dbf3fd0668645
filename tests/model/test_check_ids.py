"""Check IDs are named once, in ``doc_checks``: the names match the page, and no code outside it
spells an ID as a bare string (a typo there would be a check that silently never matches)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rlark_acceptance.model.doc_checks import ALL_CHECKS, CHECKS, TRAINING, CheckId

ROOT = Path(__file__).resolve().parents[2]
# Where code decides or records checks. tests/ and features/ keep the IDs as the record and
# the tags spell them: that is the public contract they assert.
CODE = ("src", "steps", "fixtures", "testenv", "conftest.py")
DEFINED_IN = ROOT / "src/rlark_acceptance/model/doc_checks.py"


def _ids() -> dict[str, str]:
    return {v: k for k, v in vars(CheckId).items() if not k.startswith("_")}


def test_every_check_of_the_page_has_one_name_in_page_order() -> None:
    names = _ids()
    assert list(names) == [c.id for c in ALL_CHECKS]
    assert len(set(names.values())) == len(ALL_CHECKS)
    # The training checks come after the page's 41, in an ID space the page does not use.
    assert len(CHECKS) == 41 and all(c.id.startswith("T.") for c in TRAINING)
    assert not any(c.id.startswith("T.") for c in CHECKS)


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, kinds)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }


def bare_ids(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line "ID"`` for each string constant equal to a check ID, docstrings aside."""
    ids = set(_ids())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{n.lineno} {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in ids and id(n) not in skip
    ]


def test_no_code_spells_a_check_id_outside_doc_checks() -> None:
    files = [
        p
        for part in CODE
        for p in ((ROOT / part).rglob("*.py") if (ROOT / part).is_dir() else [ROOT / part])
        if p != DEFINED_IN
    ]
    assert len(files) > 50
    found = [hit for p in sorted(files) for hit in bare_ids(p)]
    assert found == [], "use CheckId.<name>: " + ", ".join(found)


def test_the_walk_finds_a_bare_id(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('"""6.4 in a docstring is prose."""\nCHECK = "6.4"\n', encoding="utf-8")
    assert bare_ids(probe, tmp_path) == ["probe.py:2 '6.4'"]
    assert re.fullmatch(r"[0-6P]\.\d", CheckId.PROGRESS_LOGGED)
