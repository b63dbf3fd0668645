"""``-m as-is`` selects the profile's own scenarios, the same as the four-part expression
that leaves out every self-check's tag, and nothing a self-check is tagged with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.run.suite_runs import AS_IT_IS

REPO = Path(__file__).resolve().parents[1]


PYTEST = (sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider")


def _collected(expr: str) -> list[str]:
    out = subprocess.run(
        [*PYTEST, "--collect-only", "-q", "-m", expr],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return sorted(line for line in out.stdout.splitlines() if "::" in line)


def test_as_is_selects_the_profiles_own_scenarios_as_the_long_expression_does() -> None:
    own = _collected("as-is")
    assert own and own == _collected(AS_IT_IS)
    self_checks = _collected("negative or variant or fault-injection or modified-job")
    assert self_checks and not set(own) & set(self_checks)
