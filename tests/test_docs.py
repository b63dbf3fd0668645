"""docs/ says what the code does: the JSON shapes of the contract and the table of checks.

The documented JSON examples are parsed out of docs/contract.md and their keys compared
with what the command line really prints, so a key added to the code without the docs (or
the other way round) fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "contract.md"
PROFILE = ROOT / "profiles" / "local.yaml"
EXAMPLES = ROOT / "tests" / "data" / "rlinf-configs" / "examples"


def documented_json() -> list[dict[str, Any]]:
    blocks = re.findall(r"```json\n(.*?)```", CONTRACT.read_text(encoding="utf-8"), re.S)
    return [json.loads(b) for b in blocks]


def documented(first_key: str) -> dict[str, Any]:
    found = [d for d in documented_json() if first_key in d]
    assert len(found) == 1, f"docs/contract.md documents {len(found)} shapes with {first_key!r}"
    return found[0]


def cli(*args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "rlark_acceptance.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_preflight_json_has_the_documented_keys() -> None:
    doc = documented("findings")
    real = cli("preflight", "--profile", str(PROFILE), "--json")
    assert set(real) == set(doc)
    assert set(real["rlinf"]) == set(doc["rlinf"])
    # A profile whose Job names a `latest` image has at least one finding to compare.
    broken = cli(
        "preflight",
        "--rlinf-config",
        str(EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"),
        "--override",
        "cluster.num_nodes=2",
        "--json",
    )
    assert broken["findings"], "expected findings for num_nodes=2"
    for finding in broken["findings"]:
        assert set(finding) == set(doc["findings"][0])


def test_configs_rows_have_the_documented_keys() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    listed = re.search(r'`configs --json` is an array.*?`\{("path"[^}]*)\}`', text, re.S)
    assert listed, "docs/contract.md does not list the keys of a configs row"
    keys = {k.strip().strip('"') for k in listed.group(1).split(",")}
    rows = cli("configs", str(EXAMPLES / "embodiment/config"), "--json")
    assert rows
    for row in rows:
        assert set(row) == keys, row.get("path")


def test_checks_md_is_what_checkmap_writes() -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    import checkmap

    assert (ROOT / "docs" / "checks.md").read_text(encoding="utf-8") == checkmap.render(), (
        "docs/checks.md is stale: run docs/checkmap.py --write"
    )


def test_tests_md_is_what_testmap_writes() -> None:
    sys.path.insert(0, str(ROOT / "docs"))
    import testmap

    assert (ROOT / "docs" / "tests.md").read_text(encoding="utf-8") == testmap.render(), (
        "docs/tests.md is stale: run docs/testmap.py --write"
    )


def test_a_test_exercises_a_check_by_what_it_calls(tmp_path: Path) -> None:
    """The map's rule on a tree of its own: a direct call of the check's function counts;
    an entry counts only with the check's ID named in the test; naming the ID alone, or
    calling an entry without it, does not."""
    sys.path.insert(0, str(ROOT / "docs"))
    import testmap

    (tmp_path / "tests").mkdir()
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "tests" / "helpers.py").write_text(
        "from rlark_acceptance.preflight.entry import preflight_files\n"
        "def pre(p):\n    return preflight_files(p)\n"
    )
    (tmp_path / "tests" / "test_x.py").write_text(
        "from rlark_acceptance.preflight.checks import worker\n"
        "from tests.helpers import pre\n"
        "CASES = [('3.4', 'latest')]\n"
        "def test_direct(ctx):\n    list(worker.worker_gpus(ctx))\n"
        "def test_entry_and_id(p):\n    assert pre(p).outcome.status('3.4')\n"
        "@pytest.mark.parametrize('case', CASES)\n"
        "def test_entry_and_table(case):\n    pre(case)\n"
        "def test_entry_only(p):\n    pre(p)\n"
        "def test_id_only():\n    assert '3.4' in {'3.4'}\n"
    )
    calls = testmap.TestCalls.of(tmp_path)
    found = calls.exercising({"worker_image"}, {"preflight_files"}, "3.4")
    assert found == {"tests/test_x.py": ["test_entry_and_id", "test_entry_and_table"]}
    found = calls.exercising({"worker_gpus"}, {"preflight_files"}, "3.3")
    assert found == {"tests/test_x.py": ["test_direct"]}


def test_provenance_and_budgets_have_the_documented_keys(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from rlark_acceptance.model.budgets import Budgets
    from rlark_acceptance.run.budgets import evaluate
    from rlark_acceptance.run.provenance import collect

    now = datetime.now(UTC)
    real = collect(
        root=tmp_path,
        profile_name="p",
        profile=PROFILE,
        job_text=None,
        image=None,
        image_id=None,
        node=None,
        run_id="r",
        started=now,
        finished=now,
    ).as_dict()
    assert set(real) == set(documented("provenance")["provenance"])
    budgets = evaluate({"rayHead": 41.2}, Budgets({"rayHead": 20}), [{"rayHead": 6.1}] * 3)
    doc = documented("budgets")["budgets"]
    assert set(budgets.as_dict()) == set(doc)
    assert set(budgets.as_dict()["stages"]["rayHead"]) == set(doc["stages"]["rayHead"])
    assert budgets.as_dict()["failing"] == doc["failing"]


def test_run_summary_has_the_documented_keys() -> None:
    from rlark_acceptance.model.findings import Location
    from rlark_acceptance.run.report import (
        NOT_APPLICABLE,
        CheckResult,
        RunReport,
        ScenarioRecord,
        kind_of,
    )

    doc = documented("earliestFailure")
    report = RunReport("profiles/local.yaml")
    # The profile fails at a finding and a self-check fails with it: every key is present.
    report.add(ScenarioRecord("a", "logs", "Step 4", ["4.5"], kind_of(()))).finish(
        "failed",
        step="Then check 4.5 passes",
        message="check 4.5 is failed",
        details=[
            CheckResult(
                "4.5", "failed", "tensorboard-outside-mounts", Location("site/job.yaml", 12)
            )
        ],
    )
    report.add(ScenarioRecord("b", "6.5 not reached", "Step 6", ["6.5"], kind_of(()))).finish(
        "notReached", message="an earlier phase failed"
    )
    neg = ScenarioRecord("c", "no first signal", "troubleshooting", ["6.4"], kind_of(("negative",)))
    report.add(neg).finish("failed", message="boom")
    na = ScenarioRecord("d", "a stall", "training faults", ["T.1"], kind_of(("negative",)))
    report.add(na).finish("skipped", message=f"{NOT_APPLICABLE}another workload")
    report.outputs = {"checkpoint": "s3://b/p", "steps": [2], "kept": "s3://b/p", "removed": 0}
    report.error = "a usage error"
    report.interrupted, report.interrupted_at = True, "b"
    report.training = {"checks": ["T.1"], "steps": {"reached": 1, "printedTotal": 5}}
    report.first_cause = {"logLine": 9, "quote": "OSError: [Errno 5] Input/output error: '/m'"}
    real = report.summary()
    assert set(real["interruptedAt"]) == set(doc["interruptedAt"])
    assert set(real) == set(doc)
    assert set(real["earliestFailure"]) == set(doc["earliestFailure"])
    assert set(real["selfChecks"]) == set(doc["selfChecks"])
    assert set(real["selfChecks"]["inconclusive"][0]) == set(doc["selfChecks"]["inconclusive"][0])
    na_doc = doc["selfChecks"]["notApplicable"][0]
    assert set(real["selfChecks"]["notApplicable"][0]) == set(na_doc)
    assert set(real["outputs"]) == set(doc["outputs"])
    statuses = {"passed", "failed", "skipped", "notReached"}
    assert set(real["checks"].values()) <= statuses


def test_the_resume_record_has_the_documented_keys() -> None:
    """``training.resume`` of run-summary.json (T.4), as the record writes it."""
    from rlark_acceptance.model.job import read_job
    from rlark_acceptance.run.step6.record import Resumed, RunRecord

    job = read_job(str(ROOT / "profiles" / "local" / "job.yaml"))
    real = Resumed(5, "/mnt/ckpt/x/global_step_5", 7, RunRecord(job=job)).summary()
    doc = documented("earliestFailure")["training"]["resume"]
    assert set(real) == set(doc) and set(real["from"]) == set(doc["from"])
