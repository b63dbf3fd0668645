"""release-summary.json has exactly the keys docs/contract.md §6 documents, read from a
profile's record shaped as §4 documents it (every optional key present)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlark_acceptance.release.record import ProfileResult, release_summary
from rlark_acceptance.release.release_file import ListedProfile, ReleaseFile
from rlark_acceptance.release.runner import ProfileOutcome
from rlark_acceptance.secrets import Redactor
from tests.test_docs import documented


def _summary(tmp_path: Path, run: dict[str, Any], jobs: int = 2) -> dict[str, Any]:
    """The release record of one broken profile whose record is ``run``."""
    listed = ListedProfile("site-broken", tmp_path / "p.yaml", "release.yaml:2", "p.yaml")
    outcome = ProfileOutcome(tmp_path / "site-broken", 1, 1.8e9, 12.0, "the session …")
    release = ReleaseFile("rc-1", (listed,), path=Path("release.yaml"))
    return release_summary(
        release,
        [ProfileResult(listed, outcome, run)],
        Redactor(),
        reports=tmp_path,
        started=1.8e9,
        elapsed=13.0,
        interrupted=False,
        jobs=jobs,
        runner="local session",
    )


def test_release_summary_has_the_documented_keys(tmp_path: Path) -> None:
    doc = documented("releaseFile")
    run = documented("earliestFailure") | {"warnings": ["LeftoversRemoved: …"]}
    real = _summary(tmp_path, run)
    assert set(real) == set(doc)
    profile = real["profiles"][0]
    assert set(profile) - {"warnings"} == set(doc["profiles"][0])
    assert list(profile["sections"]) == [f"{i:02d} {s}" for i, s in enumerate(_sections(), 1)]
    assert profile["sections"]["08 Step 6 确认任务开始运行"] == {"status": "failed", "check": "6.2"}
    assert profile["verdict"] == "error" and not profile["accepted"]  # its record has "error"
    assert real["line"] == "release rc-1: NOT ACCEPTED on 0 of 1: site-broken fails at 6.2"


def _sections() -> list[str]:
    from rlark_acceptance.run.report_writers import SECTIONS

    return list(SECTIONS)


def test_the_terminal_table_has_a_column_for_every_section_of_the_record(tmp_path: Path) -> None:
    """profile × section, the page's and the training's and the stages' after them: each
    section of the record has its column and its line in the legend."""
    from rlark_acceptance.release.record import table_lines
    from rlark_acceptance.run import report_writers as writers

    run = documented("earliestFailure") | {"warnings": []}
    real = _summary(tmp_path, run, jobs=1)
    lines = table_lines(real)
    head, rule, row, legend = lines
    assert head.split() == [
        "profile",
        "verdict",
        "§0",
        "info",
        *["S1", "S2", "S3", "S4", "S5", "S6", "T", "B"],
    ]
    assert row.startswith("site-broken") and "FAIL 6.2" in row, row
    assert len(rule.split()) == len(head.split())
    for section in writers.SECTIONS:
        assert f"= {section}" in legend, (section, legend)


def test_a_profiles_warnings_are_its_suites_properties_in_the_releases_junit(
    tmp_path: Path,
) -> None:
    import junitparser

    from rlark_acceptance.release.record import junit_xml
    from tests.run.junit_schema import problems

    warned = ["LogRotated: … lines written between a and b (8 s) may be missing"]
    real = _summary(tmp_path, documented("earliestFailure") | {"warnings": warned})
    path = tmp_path / "junit.xml"
    path.write_text(junit_xml(real, tmp_path, Redactor()), encoding="utf-8")
    assert problems(path) == []
    (suite,) = list(junitparser.JUnitXml.fromfile(str(path)))
    assert [p.value for p in suite.properties() if p.name == "warning"] == warned
