"""Every test that stops part of the shared cluster is marked ``cluster_alone``.

On several test workers the cluster is shared: a test that kills the API server or the
kubelet, or takes the node down, under another worker's Kubernetes run makes that run red
for a cause of the test's own. ``turns.sole`` keeps such a test alone at the cluster, but
only if it carries the mark; this reads the test sources and names any that do not."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# What stops (part of) the cluster every worker shares: KubeEnv's faults, testenv's node.
STOPS = {"kill_apiserver", "kill_kubelet", "restart_apiserver"}
STOPS_ON = {("node", "down")}


def _stops(fn: ast.AST) -> bool:
    for call in ast.walk(fn):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        attr, owner = call.func.attr, call.func.value
        if attr in STOPS:
            return True
        if isinstance(owner, ast.Name) and (owner.id, attr) in STOPS_ON:
            return True
    return False


def _alone(decorators: list[ast.expr]) -> bool:
    return any("cluster_alone" in ast.unparse(d) for d in decorators)


def _module_alone(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            return "cluster_alone" in ast.unparse(node.value)
    return False


def unmarked(path: Path) -> list[str]:
    """The tests in ``path`` that stop part of the cluster without the mark."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if _module_alone(tree):
        return []
    name = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path.name
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        if _stops(node) and not _alone(node.decorator_list):
            found.append(f"{name}::{node.name}")
    return found


def marked(path: Path) -> bool:
    """Whether ``path`` holds a ``cluster_alone`` test (the module's mark, or a test's)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return _module_alone(tree) or any(
        isinstance(node, ast.FunctionDef)
        and node.name.startswith("test_")
        and _alone(node.decorator_list)
        for node in ast.walk(tree)
    )


def test_every_test_that_stops_part_of_the_cluster_is_alone_at_it() -> None:
    missing = [name for path in sorted(TESTS.rglob("test_*.py")) for name in unmarked(path)]
    assert missing == [], f"mark these @pytest.mark.cluster_alone: {missing}"


def test_the_check_finds_an_unmarked_test(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    body = "def test_x(kube_env):\n    kube_env.kill_apiserver()\n"
    marked = "import pytest\n@pytest.mark.cluster_alone\n" + body.replace("test_x", "test_y")
    sample.write_text(body + marked, encoding="utf-8")
    assert unmarked(sample) == ["test_sample.py::test_x"]
