"""The red run's Allure report, rendered with the documented command (``rlark-acceptance
report``), read in a real browser.

Headless Chromium (Debian's, installed by ``.ci/run``) opens the failed check of the
profile, presses its ``Job YAML`` attachment as a reader would, and the test reads the text
the page shows: the failed check, its message, the doc's remedy and the line, its scenarios
and the Job YAML with the mistake in it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.report_screenshot import PROBE, browse, failed_profile_test, generate, seen_text, serve
from rlark_acceptance.model.doc_checks import remedy
from tests.run.suite_runs import run_suite, site_copy

pytestmark = pytest.mark.slow


def test_a_reader_sees_the_failed_check_its_remedy_and_the_job_yaml(
    tmp_path: Path, s3_env: Any
) -> None:
    site = site_copy(tmp_path)
    site.edit(site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}")
    # The static scenarios, self-checks included: the tree holds both kinds under 3.7.
    run = run_suite(site, "-m", "not runtime")
    assert run.summary["earliestFailure"]["check"] == "3.7", run.explain()
    assert run.summary["selfChecks"]["inconclusive"], "no inconclusive self-check to look at"

    report = generate(run.reports)
    test = failed_profile_test(report)
    with serve(report, str(test["id"])) as base:
        overview = browse(f"{base}/index.html", screenshot=tmp_path / "overview.png")
        seen = seen_text(browse(f"{base}/{PROBE}", screenshot=tmp_path / "failed.png"))

    assert "NOT ACCEPTED at 3.7" in overview, "the report's name does not carry the verdict"
    assert "— ACCEPTED" not in overview
    # The tree lists each check once, by what it says; its scenarios are not the tree's.
    title = "[3.7] the program reads and writes through mount paths"
    assert overview.count(title) == 1, "the failed check is not once in the tree"
    assert "[3.1-3.7]" not in overview and "|self-check]" not in overview
    # The failed check's page: its message, the remedy and the line of the user's file, then
    # its scenarios as steps: the profile's first, then the self-checks of 3.7. The results
    # say the message once; Allure 3 shows a failed result's error in its Error block and
    # again in the test body (at the step that says the same, else after the last step).
    first = run.summary["earliestFailure"]
    assert title in seen
    assert seen.count(first["message"][:50]) == 2, "the message is repeated"
    assert remedy("3.7") in seen, seen[:3000]
    assert first["location"] in seen, "the file:line is not shown"
    mine = seen.index("[3.1-3.7] the default Worker is configured as the page says")
    assert mine < seen.index("[3.7|self-check]"), "a self-check before the profile's scenario"
    # A self-check made inconclusive by the profile's failure is a skipped step of its check.
    for entry in run.summary["selfChecks"]["inconclusive"]:
        step = run.allure_scenario(entry["check"], entry["scenario"])
        assert step["status"] == "skipped", step
        said = step["statusDetails"]["message"]
        assert said == "inconclusive: the profile itself fails at 3.7", said
    assert "Job YAML" in seen
    assert "kind: Job" in seen and "readOnly: true}" in seen, "the Job YAML is not shown"
    for repr_ in ("PreflightResult(", "<Verdict.", "AcceptanceRun("):
        assert repr_ not in seen and repr_ not in overview, repr_
    assert (tmp_path / "failed.png").stat().st_size > 10_000

    # Every rendering appends to the history file next to the results: no copying by hand.
    history = run.reports / "allure-history.jsonl"
    before = len(history.read_text(encoding="utf-8").splitlines())
    rendered = run.render()
    assert len(history.read_text(encoding="utf-8").splitlines()) == before + 1

    # The release gate reads the same results: not accepted, at the check.
    assert rendered.returncode == 1, rendered.output
    assert "NOT ACCEPTED at 3.7" in rendered.output, rendered.output
