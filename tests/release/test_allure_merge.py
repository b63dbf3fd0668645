"""The profiles' Allure results merged for a release, on results the run's writer made from
reports built by hand: each check once per profile, under profile → doc section → check."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rlark_acceptance.model.doc_checks import ALL_CHECKS
from rlark_acceptance.release.allure_merge import merge
from rlark_acceptance.run import allure_results
from rlark_acceptance.secrets import Redactor
from tests.run.test_allure_results import green_report, red_report_at_37


def test_each_check_is_one_result_per_profile_and_its_own_history(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    for name, report in (("site-a", green_report()), ("site-b", red_report_at_37())):
        files = allure_results.results(report, Redactor())
        allure_results.write(reports / name / "allure-results", files)
    data = {
        "release": "rc-1",
        "verdict": "notAccepted",
        "line": "release rc-1: NOT ACCEPTED on 1 of 2: site-b fails at 3.7",
        "profiles": [
            {"name": "site-a", "record": "site-a", "verdict": "passed"},
            {"name": "site-b", "record": "site-b", "verdict": "failed"},
        ],
    }
    out = merge(data, reports, Redactor())
    results = [json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*-result.json")]
    labels = [{x["name"]: x["value"] for x in r["labels"]} for r in results]
    per_profile = Counter(x["parentSuite"] for x in labels)
    assert per_profile == {"site-a": len(ALL_CHECKS), "site-b": len(ALL_CHECKS)}
    # The tree's leaf is the check: one per profile and check.
    leaves = Counter((x["parentSuite"], x["suite"], x["subSuite"]) for x in labels)
    assert set(leaves.values()) == {1} and len(leaves) == 2 * len(ALL_CHECKS)
    assert len({r["historyId"] for r in results}) == len(results), "two profiles, one history"
    failed = [
        (x["profile"], x["subSuite"])
        for r, x in zip(results, labels, strict=True)
        if r["status"] == "failed"
    ]
    assert failed == [("site-b", "3.7 the program reads and writes through mount paths")]
    # Every attachment a result names was copied with it.
    for r in results:
        for step in r["steps"]:
            for a in step["attachments"]:
                assert (out / a["source"]).is_file(), a
    assert json.loads((out / "executor.json").read_text(encoding="utf-8"))["release"] == "rc-1"
