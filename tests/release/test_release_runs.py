"""Releases run as a release engineer runs them, ``pytest features/ --release FILE``, and
read back in every form: the terminal's table and lines, ``release-summary.json``, each
profile's own record where the release record says it is, the one JUnit file (a testsuite
per profile, junitparser after the schema), and the rendered Allure report's tree
(profile → doc section → check), with its gate.

- the repository's release.yaml, three profiles in one run: the default local one, a
  variant of it (profiles/local-patient.yaml), and the Kubernetes one on testenv's real node;
- one profile broken (the Job's checkpoint mount read-only: 3.7): the release names it and
  its earliest check, and the other profile is still accepted; the merged report read in
  Chromium;
- SIGINT / SIGTERM while the profiles run: every profile's session is interrupted, and
  every record and the release record are written.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import junitparser
import pytest

from bench.report_screenshot import browse, serve
from rlark_acceptance.model.doc_checks import remedy
from rlark_acceptance.run.report_writers import SECTIONS, check_name
from tests.release.release_runs import (
    ReleaseRun,
    loaded_clone,
    release_file,
    run_release,
    run_release_interrupted,
    tree,
    variant,
)
from tests.run.suite_runs import AS_IT_IS, ROOT, run_suite

pytestmark = pytest.mark.slow

SECTION_LABELS = [f"{i + 1:02d} {s}" for i, s in enumerate(SECTIONS)]
STEP6 = ["6.1", "6.2", "6.3", "6.4", "6.5"]


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def assert_records(run: ReleaseRun) -> None:
    """Each profile's record is where the release record says, with its run id."""
    for p in run.summary["profiles"]:
        where = run.reports / p["record"]
        for name in ("run-summary.json", "junit.xml", "allure-results"):
            assert (where / name).exists(), (p["name"], name, run.explain())
        assert run.run_summary(p["name"])["runId"] == p["runId"]


def junit_matches_records(run: ReleaseRun) -> dict[str, list[Any]]:
    suites = run.junit_suites()
    assert list(suites) == [p["name"] for p in run.summary["profiles"]]
    for p in run.summary["profiles"]:
        own = junitparser.JUnitXml.fromfile(str(run.reports / p["record"] / "junit.xml"))
        names = [c.name for s in own for c in s if s.name != "other tests"]
        assert [c.name for c in suites[p["name"]]] == names, p["name"]
    return suites


@pytest.mark.cluster
def test_a_release_of_three_profiles_local_a_variant_and_kubernetes(
    tmp_path: Path, kube_env: Any
) -> None:
    # The repository's own release file and profiles, as a user runs them from a clone (with
    # the deadlines of a loaded machine: loaded_clone).
    release = loaded_clone(tmp_path)
    run = run_release(ROOT, tmp_path / "reports", "--release", str(release))
    names = ["smoke-ppo-mlp-local", "smoke-ppo-mlp-local-patient", "smoke-ppo-mlp-kubernetes"]

    assert run.returncode == 0, run.explain()
    s = run.summary
    assert s["verdict"] == "accepted" and (s["accepted"], s["total"]) == (3, 3), run.explain()
    assert [p["name"] for p in s["profiles"]] == names
    for p in s["profiles"]:
        assert p["verdict"] == "passed" and p["accepted"] and p["exitStatus"] == 0, p
        assert p["earliestFailure"] is None and p["notReached"] == []
        assert set(p["durations"]) >= {"submit", "scheduled", "rayHead", "firstSignal", "output"}
        assert all(x["status"] == "passed" for x in p["sections"].values()), p["sections"]
        assert p["elapsed"] > p["durations"]["output"]
    assert_records(run)
    assert run.run_summary("smoke-ppo-mlp-kubernetes")["outputs"]["checkpoint"].startswith("s3://")

    for p in s["profiles"]:  # the table: the profile's row, accepted, a column per section ok
        row = [x.split() for x in run.output.splitlines() if x.split()[:1] == [p["name"]]][-1]
        assert row[1:] == ["ACCEPTED"] + ["ok"] * len(p["sections"]), row
    assert "release testenv: ACCEPTED on 3 of 3" in run.output
    assert s["profiles"][1]["listedAt"] == f"{release}:10"

    suites = junit_matches_records(run)
    for name, cases in suites.items():
        # One testcase per check: each passed, but T.4 (opt-in), not selected.
        red = [c.name for c in cases if c.result and not c.is_skipped]
        assert cases and not red, f"{name}: a green case not green: {red}"
        assert [c.name for c in cases if c.is_skipped] == [check_name("T.4")], name

    code, said, report = run.render()
    assert code == 0, said
    assert "ACCEPTED on 3 of 3" in said
    seen = tree(report)
    assert sorted(seen) == sorted(names)
    for name in names:
        assert list(seen[name]) and set(seen[name]) <= set(SECTION_LABELS), seen[name]
        step6 = seen[name]["08 Step 6 确认任务开始运行"]
        assert [c.split()[0] for c in sorted(step6)] == STEP6, step6


@pytest.fixture(scope="module")
def one_broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReleaseRun, Path, int]:
    tmp = tmp_path_factory.mktemp("one-broken")
    variant(tmp, "site-good")
    broken = variant(tmp, "site-broken")
    line = broken.edit(
        broken.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}"
    )
    path = release_file(
        tmp / "release.yaml", ["site-*/site/local.yaml"], name="rc-1", select=AS_IT_IS
    )
    return run_release(ROOT, tmp / "reports", "--release", str(path)), broken.job, line


def test_a_release_with_one_broken_profile_names_it_and_still_accepts_the_other(
    one_broken: tuple[ReleaseRun, Path, int],
) -> None:
    run, job, line = one_broken
    assert run.returncode == 1, run.explain()
    s = run.summary
    assert s["verdict"] == "notAccepted" and (s["accepted"], s["total"]) == (1, 2)
    assert s["line"] == "release rc-1: NOT ACCEPTED on 1 of 2: site-broken fails at 3.7"
    bad, good = run.profile("site-broken"), run.profile("site-good")  # globbed, sorted
    assert [p["name"] for p in s["profiles"]] == ["site-broken", "site-good"]
    assert good["accepted"] and good["verdict"] == "passed", good
    assert not bad["accepted"] and bad["verdict"] == "failed"
    first = bad["earliestFailure"]
    assert first["check"] == "3.7" and first["hint"] == remedy("3.7")
    assert first["location"] == f"{job}:{line}", "not the line in the user's own file"
    assert set(STEP6) <= set(bad["notReached"])
    assert bad["sections"]["05 Step 3 配置一个 Worker"] == {"status": "failed", "check": "3.7"}
    assert bad["sections"]["08 Step 6 确认任务开始运行"] == {"status": "notReached", "check": "6.1"}
    assert_records(run)

    # The terminal: the table's row, then the failure with its location and remedy.
    row = next(x.split() for x in run.output.splitlines() if x.startswith("site-broken "))
    assert row[:2] == ["site-broken", "failed"] and "3.7" in row and "6.1" in row, row
    assert f"3.7 ({job}:{line})" in run.output and remedy("3.7") in run.output
    assert s["line"] in run.output

    suites = junit_matches_records(run)
    failures = [
        r for c in suites["site-broken"] for r in c.result if isinstance(r, junitparser.Failure)
    ]
    assert [f.type for f in failures] == ["3.7"], failures
    assert not any(
        isinstance(r, junitparser.Failure) for c in suites["site-good"] for r in c.result
    )

    code, said, report = run.render()
    assert code == 1, said
    assert not (run.reports / ".allure-report.new").exists(), "the rendering left its scratch"
    assert "NOT ACCEPTED at site-broken 3.7" in said, said
    seen = tree(report)
    assert sorted(seen) == ["site-broken", "site-good"]
    step3 = seen["site-broken"]["05 Step 3 配置一个 Worker"]
    assert step3["3.7 the program reads and writes through mount paths"]["failed"] == 1, step3
    assert all("failed" not in c for s in seen["site-good"].values() for c in s.values())


def test_the_merged_report_in_chromium_is_grouped_by_profile(
    one_broken: tuple[ReleaseRun, Path, int], tmp_path: Path
) -> None:
    run = one_broken[0]
    _, _, report = run.render()
    shot = tmp_path / "release-overview.png"
    with serve(report, "") as base:
        page = browse(f"{base}/index.html", screenshot=shot, size="1400,1400")
    assert "RLark release" in page and "rc-1: NOT ACCEPTED on 1 of 2" in page, page[:3000]
    assert page.index("site-broken") < page.index("site-good"), "profiles not the tree's top"
    assert shot.stat().st_size > 10_000


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_release_interrupts_every_profile_and_writes_every_record(
    tmp_path: Path, sig: signal.Signals
) -> None:
    a, b = variant(tmp_path, "site-a"), variant(tmp_path, "site-b")
    run = run_release_interrupted(
        tmp_path / "reports",
        "Step 6 waits for 6.3",
        "--profile",
        str(a.profile),
        "--profile",
        str(b.profile),
        "-m",
        AS_IT_IS,
        sig=sig,
    )
    assert run.returncode == 2, run.explain()
    s = run.summary
    assert s["verdict"] == "interrupted" and s["accepted"] == 0, run.explain()
    assert f"release: {sig.name}: interrupting every profile's session" in run.output
    for p in s["profiles"]:
        assert p["verdict"] == "interrupted" and p["exitStatus"] == 2, p
        own = run.run_summary(p["name"])
        assert own["interrupted"] is True
        assert "6.5" in own["notReached"]
    assert_records(run)
    suites = junit_matches_records(run)
    for name, cases in suites.items():
        errors = [c.name for c in cases for r in c.result if isinstance(r, junitparser.Error)]
        assert errors and errors[0].startswith("[run] interrupted"), (name, errors)
    assert s["line"].startswith("release release: INTERRUPTED on 0 of 2")


def test_a_single_run_after_a_release_leaves_no_release_record_behind(tmp_path: Path) -> None:
    a, b = variant(tmp_path, "site-a"), variant(tmp_path, "site-b")
    quick = "check-0.1 and not negative and not variant"
    reports = a.root.parent / "reports"  # where run_suite writes a's single run
    run = run_release(
        ROOT, reports, "--profile", str(a.profile), "--profile", str(b.profile), "-m", quick
    )
    assert run.returncode == 0 and run.summary["verdict"] == "accepted", run.explain()
    single = run_suite(a, "-m", quick)
    assert single.reports == reports and single.returncode == 0, single.explain()
    assert not (reports / "release-summary.json").exists(), "the release's record survived"
    assert single.summary["profile"] == str(a.profile)
