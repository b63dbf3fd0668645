"""``pytest features/ --collect-only``: the scenarios a run would take, listed. Nothing runs,
so the record of the run before stays as it was, and no record of this one is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.run.suite_runs import PROFILES, ROOT, _env, features_command


def test_listing_the_scenarios_keeps_the_earlier_record(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    earlier = {
        "run-summary.json": '{"verdict": "passed"}\n',
        "junit.xml": "<testsuites/>\n",
        "summary.md": "# passed\n",
        "allure-results/a-result.json": '{"status": "passed"}\n',
    }
    for name, text in earlier.items():
        (reports / name).parent.mkdir(parents=True, exist_ok=True)
        (reports / name).write_text(text, encoding="utf-8")
    command = features_command(PROFILES / "local.yaml", reports, ["--collect-only", "-q"])
    done = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "features/test_doc_checks.py::test_" in done.stdout
    assert "rlark-acceptance run record" not in done.stdout
    for name, text in earlier.items():
        assert (reports / name).read_text(encoding="utf-8") == text, name
    assert sorted(p.name for p in reports.rglob("*") if p.is_file()) == sorted(
        Path(n).name for n in earlier
    )
