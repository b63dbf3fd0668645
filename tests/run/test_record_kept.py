"""A pytest session of the tests alone leaves the last run's record as it was.

A release engineer's ``reports/`` holds the record of the last ``pytest features/``; running
some of ``tests/`` afterwards (a fix being tried, a module's tests) must not clear it, replace
its ``junit.xml`` or empty its Allure results.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.suite_runs import AS_IT_IS, ROOT, _env, run_suite, site_copy

pytestmark = pytest.mark.slow

# Quick model-only tests: what a user runs between two runs of the suite.
UNIT_TESTS = ("tests/run/test_report.py", "tests/run/test_report_junit.py")


def _hashes(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` by its path there, with its content's digest."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _checkout(tmp_path: Path) -> Path:
    """The checkout again, its pytest side copied (its plugins, steps, features, tests) and
    the rest linked, so the session below has a default ``reports/`` of its own: the
    user's is never touched."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    copied = ("conftest.py", "pyproject.toml", "fixtures", "steps", "features", "tests")
    skip = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for entry in ROOT.iterdir():
        if entry.name in copied:
            if entry.is_dir():
                shutil.copytree(entry, copy / entry.name, ignore=skip)
            else:
                shutil.copy(entry, copy / entry.name)
        elif entry.name not in ("reports", ".git", ".pytest_cache"):
            (copy / entry.name).symlink_to(entry)
    return copy


def test_tests_run_between_two_suite_runs_leave_the_record_byte_identical(
    tmp_path: Path,
) -> None:
    site = site_copy(tmp_path)
    run = run_suite(site, "-m", f"not runtime and ({AS_IT_IS})")
    assert run.returncode == 0, run.explain()
    checkout = _checkout(tmp_path)
    reports = run.reports.rename(checkout / "reports")  # the checkout's default record
    before = _hashes(reports)
    for name in ("run-summary.json", "junit.xml", "summary.md"):
        assert name in before, sorted(before)
    assert any(n.startswith("allure-results/") for n in before), sorted(before)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *UNIT_TESTS],
        cwd=checkout,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout, done.stdout[-3000:]
    assert _hashes(reports) == before, "pytest tests/... changed the last run's record"


@pytest.mark.parametrize(
    ("args", "runs"),
    [
        (["features/"], True),
        (["features/test_doc_checks.py::test_x"], True),
        (["."], True),
        (["tests/run"], False),
        (["tests/", "features/"], True),
    ],
)
def test_a_checkout_whose_features_are_a_link_keeps_its_record(
    tmp_path: Path, args: list[str], runs: bool
) -> None:
    """A checkout whose features/ is a link to the tree's (the Kubernetes tests run the
    suite so) is still one whose session writes the record: the link and where it points
    are the same folder."""
    from types import SimpleNamespace

    from fixtures.reports import runs_features

    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "features").symlink_to(ROOT / "features")
    (checkout / "tests").mkdir()
    config = SimpleNamespace(
        rootpath=checkout, args=args, invocation_params=SimpleNamespace(dir=checkout)
    )
    assert runs_features(config) is runs  # type: ignore[arg-type]
