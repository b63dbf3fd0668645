"""A loud Worker on the embedded default target, run as a user would: its run script prints
hundreds of MB before RLinf's work (or instead of it), and the verdict stays right.

The Worker is a real local Pod with a real Ray head; the run script prints with ``yes`` as
fast as it can. Memory and speed are the benchmark's (bench/step6_log_size.py); here the
verdict and the record are read back as a user reads them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.doc_checks import remedy
from tests.run.suite_runs import STEP6_ONLY, Site, run_suite, site_copy

pytestmark = pytest.mark.slow

START = "cd /workspace/smoke && python -m rlark_acceptance.smoke"
LINE = "loud worker output " * 5  # 95 characters and a newline
LOUD_MB = 300


def make_loud(site: Site, before: str) -> None:
    """The run script (and the prepared start command, which 4.4 holds it to) does
    ``before`` first, on the same line."""
    site.edit(site.job, f"    {START}", f"    {before}; {START}")
    site.edit(site.profile, f"startCommand: {START}", f"startCommand: {before}; {START}")


def loud(mb: int) -> str:
    """``mb`` MB of whole lines."""
    return f"yes '{LINE}' | head -n {mb * 1_000_000 // (len(LINE) + 1)}"


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def test_a_worker_printing_300_mb_before_its_work_passes(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    make_loud(site, loud(LOUD_MB))
    run = run_suite(site, "-m", STEP6_ONLY)

    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None, s
    assert {s["checks"][c] for c in ("6.1", "6.2", "6.3", "6.4", "6.5")} == {"passed"}
    assert s["outputs"]["removed"] > 0, s["outputs"]
    assert all(c.find("failure") is None for c in run.junit.iter("testcase"))
    # The first signal is found after every loud line: 3 million lines were read.
    assert run.allure_check("6.4")["status"] == "passed"


def test_a_loud_worker_that_dies_fails_6_4_at_once_with_its_last_lines(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    make_loud(site, f"{loud(100)}; echo 'fatal - out of ideas'; exit 3")
    run = run_suite(site, "-m", STEP6_ONLY)

    s = run.summary
    assert run.returncode == 1, run.explain()
    first = s["earliestFailure"]
    assert first["check"] == "6.4", first
    assert "the Worker ended" in first["message"] and "exit code 3" in first["message"], first
    assert "(timeouts." not in first["message"], "waited for the deadline"
    assert s["checks"]["6.5"] == "notReached"
    assert remedy("6.4") in run.output
    result = run.allure_scenario("6.4", "RLinf 日志出现预先确定的训练进展")
    excerpt = run.attachment(result, "Worker log (excerpt)")
    assert excerpt.splitlines()[-1] == "fatal - out of ideas"
    assert "earlier lines of" in excerpt.splitlines()[0]  # the excerpt says what it left out
    assert len(excerpt.splitlines()) <= 41
