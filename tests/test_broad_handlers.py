"""A handler that catches everything (``except Exception``, ``except BaseException``, a bare
``except``, ``contextlib.suppress(Exception)``) hides the error it catches unless it says why
it may. Each one, in the code that runs a verdict and in its tests, benchmarks and docs
scripts, either passes the error on (a bare ``raise`` in its body: clean up, then re-raise; or
a ``raise`` of the error it becomes) or carries its reason on its own line, as a comment. A new
one without either fails here, naming its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("src", "fixtures", "steps", "testenv", "conftest.py", "bench", "docs", "tests")
BROAD = {"Exception", "BaseException"}


def _broad(handler: ast.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(isinstance(n, ast.Name) and n.id in BROAD for n in names)


def _passes_on(handler: ast.ExceptHandler) -> bool:
    """The error goes on: re-raised after a clean-up (a bare ``raise`` in the body), or
    translated (the body ends in a ``raise``)."""
    body = handler.body
    return isinstance(body[-1], ast.Raise) or any(
        isinstance(s, ast.Raise) and s.exc is None for s in body
    )


def unjustified(path: Path) -> list[int]:
    """The lines of ``path``'s broad handlers that neither pass the error on nor say why."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.ExceptHandler) and _broad(node) and not _passes_on(node):
            if "#" not in lines[node.lineno - 1].partition("except")[2]:
                out.append(node.lineno)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if _suppresses_all(item.context_expr):
                    line = lines[item.context_expr.lineno - 1]
                    if "#" not in line.partition("suppress")[2]:
                        out.append(item.context_expr.lineno)
    return sorted(out)


def _suppresses_all(expr: ast.expr) -> bool:
    """``suppress(Exception)`` (or ``contextlib.suppress(..., BaseException)``)."""
    if not isinstance(expr, ast.Call):
        return False
    f = expr.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name == "suppress" and any(isinstance(a, ast.Name) and a.id in BROAD for a in expr.args)


def files() -> list[Path]:
    out: list[Path] = []
    for tree in TREES:
        top = ROOT / tree
        out += [top] if top.is_file() else sorted(top.rglob("*.py"))
    return out


def test_every_broad_handler_passes_the_error_on_or_says_why_it_may_not() -> None:
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files() for n in unjustified(p)]
    assert found == [], "broad handlers that swallow without a reason:\n" + "\n".join(found)


def test_the_rule_tells_a_swallowing_handler_from_a_justified_or_reraising_one(
    tmp_path: Path,
) -> None:
    code = tmp_path / "m.py"
    code.write_text(
        "def f():\n"
        "    try:\n        g()\n    except Exception:\n        return None\n"  # 4: swallows
        "    try:\n        g()\n    except Exception:  # the record says so\n        pass\n"
        "    try:\n        g()\n    except BaseException:\n        undo()\n        raise\n"
        "    try:\n        g()\n    except:\n        pass\n"  # 17: bare, swallows
        "    try:\n        g()\n    except (OSError, Exception) as e:\n        log(e)\n"  # 21
        "    try:\n        g()\n    except ValueError:\n        pass\n"
        "    try:\n        g()\n    except Exception as e:\n        raise Err(e) from None\n"
        "    with contextlib.suppress(Exception):\n        g()\n"  # 31
        "    with contextlib.suppress(OSError):\n        g()\n"
        "    with suppress(ValueError, BaseException):  # closing: the error was said\n"
        "        g()\n",
        encoding="utf-8",
    )
    assert unjustified(code) == [4, 17, 21, 31]
