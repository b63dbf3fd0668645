"""Runs that overlap on one machine, each started as a user starts it, every verdict read
from its own record.

    python bench/overlaps.py [--only NAME,...] [--keep DIR] [--json FILE]

Needs RLinf's Worker environment for ``rlinf+release`` (``./run tests`` builds it); each run
starts the test services it needs itself, as ``./run acceptance`` does, and talks to
loopback only. The overlaps:

  rlinf+release   a real-RLinf run (profiles/rlinf-embodied.yaml, its Step 6), and 20 s into
                  it a release of two copies of the default profile (their Step 6)
  release+run     a release of two copies of the default profile, and, once one of its
                  profiles waits for 6.4, a single run of the default profile beside it
  two-checkouts   a second checkout of this commit (``git worktree``, its own virtualenv and
                  test services, as ``./run acceptance`` sets them up), its run of the
                  default profile started 10 s after one from this checkout

Each run must pass; the release must be accepted on every profile. Prints a Markdown table
of each run's verdict, earliest failure and time; ``--json`` writes it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.adapters.k8s_suite import SuiteRun, waits_for  # noqa: E402
from tests.release.release_runs import ReleaseRun, release_file, run_release, variant  # noqa: E402
from tests.run.real_rlinf import PROFILE as RLINF_PROFILE  # noqa: E402
from tests.run.suite_runs import STEP6_ONLY, _env, features_command, site_copy  # noqa: E402

RELEASE_AFTER_S = 20.0  # into the real-RLinf run, as the release engineer's colleague starts it
SECOND_CHECKOUT_AFTER_S = 10.0


def failure(first: dict[str, object] | None) -> str:
    """An earliest failure as the table shows it: its check and the start of its message."""
    return f"{first.get('check')}: {str(first.get('message'))[:160]}" if first else ""


@dataclass
class Row:
    overlap: str
    run: str
    verdict: str = "no record"
    earliest: str = ""
    seconds: float = 0.0
    passed: bool = False


@dataclass
class Overlap:
    name: str
    rows: list[Row] = field(default_factory=list)

    def suite(self, run: str, suite: SuiteRun) -> None:
        """A single run's row, from its run-summary.json."""
        row = Row(self.name, run, seconds=round(suite.elapsed, 1))
        if suite.summary:
            row.verdict = str(suite.summary.get("verdict"))
            row.earliest = failure(suite.summary.get("earliestFailure"))
            row.passed = suite.returncode == 0 and row.verdict == "passed"
        self.rows.append(row)

    def release(self, run: str, release: ReleaseRun | None, error: str = "") -> None:
        """A release's row, and a row per profile, from release-summary.json."""
        if release is None or not release.summary:
            self.rows.append(Row(self.name, run, earliest=error[:200]))
            return
        verdict = str(release.summary.get("verdict"))
        self.rows.append(
            Row(
                self.name,
                run,
                verdict,
                str(release.summary.get("line", "")),
                round(release.elapsed, 1),
                release.returncode == 0 and verdict == "accepted",
            )
        )
        for p in release.summary.get("profiles", []):
            self.rows.append(
                Row(
                    self.name,
                    f"{run}: {p.get('name')}",
                    str(p.get("verdict")),
                    failure(p.get("earliestFailure")),
                    float(p.get("elapsed") or 0.0),
                    bool(p.get("accepted")),
                )
            )


def start_features(profile: Path, reports: Path, cwd: Path = ROOT) -> SuiteRun:
    """``pytest features/`` on ``profile``'s Step 6 scenarios, from ``cwd``, under way."""
    command = features_command(profile, reports, ["-m", STEP6_ONLY])
    proc = subprocess.Popen(
        command, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return SuiteRun(proc, reports, time.monotonic())


def finished(suite: SuiteRun, timeout: float = 1500) -> SuiteRun:
    try:
        return suite.finish(timeout)
    except AssertionError as exc:
        print(f"  {exc}".splitlines()[0], file=sys.stderr)
        return suite
    finally:
        suite.kill()


class Release(threading.Thread):
    """A release of two copies of the default profile (their Step 6), in the background."""

    def __init__(self, tmp: Path, name: str) -> None:
        super().__init__(daemon=True)
        root = tmp / name
        profiles: list[Path | str] = [variant(root, f"{name}-{x}").profile for x in "ab"]
        self.path = release_file(root / "release.yaml", profiles, name=name, select=STEP6_ONLY)
        self.reports = root / "reports"
        self.result: ReleaseRun | None = None
        self.error = ""

    def run(self) -> None:
        try:
            self.result = run_release(ROOT, self.reports, "--release", str(self.path), timeout=1500)
        except (AssertionError, subprocess.TimeoutExpired) as exc:
            self.error = str(exc)

    def waits_for(self, check: str, timeout: float = 900) -> bool:
        """Whether one of its profiles' sessions began waiting for ``check`` (read from the
        session logs the release writes as it goes)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.is_alive():
            for log in self.reports.glob("*/session.log"):
                if waits_for(check) in log.read_text(encoding="utf-8", errors="replace"):
                    return True
            time.sleep(0.5)
        return False


def rlinf_and_release(tmp: Path) -> Overlap:
    out = Overlap("rlinf+release")
    rlinf = start_features(RLINF_PROFILE, tmp / "rlinf" / "reports")
    time.sleep(RELEASE_AFTER_S)
    release = Release(tmp, "beside-rlinf")
    release.start()
    out.suite("real RLinf", finished(rlinf))
    release.join()
    out.release("release of two", release.result, release.error)
    return out


def release_and_run(tmp: Path) -> Overlap:
    out = Overlap("release+run")
    release = Release(tmp, "release-first")
    release.start()
    single: SuiteRun | None = None
    if release.waits_for("6.4"):
        single = start_features(site_copy(tmp / "single").profile, tmp / "single" / "reports")
    release.join()
    out.release("release of two", release.result, release.error)
    if single is None:
        out.rows.append(Row(out.name, "single run", earliest="the release never reached 6.4"))
    else:
        out.suite("single run", finished(single))
    return out


def two_checkouts(tmp: Path) -> Overlap:
    out = Overlap("two-checkouts")
    other = tmp / "checkout-b"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(other), "HEAD"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        # Its own set-up first (virtualenv, the S3 server's binary), as `./run acceptance`
        # does, so that the two runs overlap in Step 6, not in pip.
        subprocess.run(
            ["./run", "acceptance", "--collect-only", "-q"],
            cwd=other,
            check=True,
            capture_output=True,
            timeout=900,
        )
        here = start_features(site_copy(tmp / "a").profile, tmp / "a" / "reports")
        time.sleep(SECOND_CHECKOUT_AFTER_S)
        there = SuiteRun(
            subprocess.Popen(
                ["./run", "acceptance", "-m", STEP6_ONLY, "--reports-dir", str(tmp / "b")],
                cwd=other,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            ),
            tmp / "b",
            time.monotonic(),
        )
        out.suite("this checkout", finished(here))
        out.suite("the second checkout", finished(there))
    finally:
        subprocess.run(["testenv/testenv", "down", "all"], cwd=other, capture_output=True)
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True
        )
    return out


OVERLAPS: dict[str, Callable[[Path], Overlap]] = {
    "rlinf+release": rlinf_and_release,
    "release+run": release_and_run,
    "two-checkouts": two_checkouts,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(OVERLAPS), help="which overlaps, comma-separated")
    ap.add_argument("--keep", type=Path, help="copy every run's records here")
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rlark-overlaps-"))
    rows: list[Row] = []
    try:
        for name in args.only.split(","):
            print(f"overlap {name} ...", file=sys.stderr, flush=True)
            rows += OVERLAPS[name](tmp / name).rows
    finally:
        if args.keep:
            shutil.copytree(tmp, args.keep, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print("| overlap | run | verdict | earliest failure | s |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.overlap} | {r.run} | {r.verdict} | {r.earliest or '-'} | {r.seconds:.0f} |")
    right = sum(r.passed for r in rows)
    print(f"\n{right} of {len(rows)} passed")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1), encoding="utf-8")
    return 0 if right == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
