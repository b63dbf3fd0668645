"""Running the features as a user would, on a broken copy of the default profile.

A copy is made by editing the text of ``profiles/local.yaml`` and its Job YAML (so lines
stay where the user wrote them), then ``python -m pytest features/ --profile COPY`` runs in
a subprocess with ``--reports-dir`` pointing into the test's own directory: the outer run's
``reports/`` is never touched. What it wrote is read back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
# How long a suite interrupted past its bound has to remove its Worker and stop its services.
INTERRUPT_GRACE_S = 60.0

# Only the scenarios that exercise the profile as it is (no self-checks): the verdict
# stays the profile's, and the run stays short.
AS_IT_IS = "not negative and not variant and not fault-injection and not modified-job"
STEP6_ONLY = f"runtime and ({AS_IT_IS})"
# timeouts: of a site copy (see site_copy): the profile's figure, the copy's.
LOADED_TIMEOUTS = {
    "scheduled": (30, 90),
    "rayHead": (60, 180),
    "firstSignal": (120, 360),
    "output": (120, 360),
}


@dataclass
class Site:
    """A copy of the default profile that a test breaks in one place."""

    root: Path

    @property
    def profile(self) -> Path:
        return self.root / "local.yaml"

    @property
    def job(self) -> Path:
        return self.root / "local" / "job.yaml"

    def edit(self, file: Path, old: str, new: str) -> int:
        """Replace the one occurrence of ``old``; returns the 1-based line it is on."""
        text = file.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} is not once in {file.name}"
        line = text[: text.index(old)].count("\n") + 1
        file.write_text(text.replace(old, new), encoding="utf-8")
        return line


def site_copy(tmp: Path) -> Site:
    root = tmp / "site"
    root.mkdir(parents=True)
    shutil.copy(PROFILES / "local.yaml", root / "local.yaml")
    shutil.copytree(PROFILES / "local", root / "local")
    site = Site(root)
    # The embedded profile names its RLinf config relative to the repository.
    site.edit(site.profile, "config: ../src/", f"config: {ROOT / 'src'}/")
    site.edit(site.profile, "environment: ../.venv", f"environment: {ROOT / '.venv'}")
    # A copy runs beside other suites' Ray heads and Workers on the same two cores, where 6.3,
    # 6 s alone, has met its 60 s deadline: its deadlines are three times the profile's, so
    # a red run is red for the fault its test puts in, not for the load. What
    # each deadline decides is tested with the profile's own figures (test_step6_phases).
    for key, (was, seconds) in LOADED_TIMEOUTS.items():
        site.edit(site.profile, f"\n  {key}: {was}\n", f"\n  {key}: {seconds}\n")
    return site


@dataclass
class SuiteRun:
    returncode: int
    output: str
    reports: Path
    elapsed: float
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def junit(self) -> ET.Element:
        return ET.parse(self.reports / "junit.xml").getroot()

    def junit_cases(self) -> list[tuple[str, Any]]:
        """(suite name, testcase) as a JUnit consumer reads junit.xml, after checking it
        against the schema CI reads."""
        import junitparser

        from tests.run.junit_schema import problems

        path = self.reports / "junit.xml"
        assert problems(path) == [], problems(path)
        return [
            (suite.name, case)
            for suite in junitparser.JUnitXml.fromfile(str(path))
            for case in suite
        ]

    def render(self) -> Rendered:
        """The documented command, ``rlark-acceptance report --reports-dir``, and what a
        reader of the rendered report sees first: its name (the summary widget's title)."""
        command = Path(sys.executable).with_name("rlark-acceptance")
        t0 = time.monotonic()
        done = subprocess.run(
            [str(command), "report", "--reports-dir", str(self.reports)],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        report = self.reports / "allure-report"
        summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
        return Rendered(
            done.returncode, done.stdout + done.stderr, report, summary, time.monotonic() - t0
        )

    def allure_results(self) -> list[dict[str, Any]]:
        out = []
        for p in sorted((self.reports / "allure-results").glob("*-result.json")):
            out.append(json.loads(p.read_text(encoding="utf-8")))
        return out

    def allure_check(self, check: str) -> dict[str, Any]:
        """The one Allure result of ``check`` (named ``[check] <what it says>``)."""
        found = [r for r in self.allure_results() if r.get("name", "").startswith(f"[{check}] ")]
        assert len(found) == 1, f"{len(found)} Allure results of {check}"
        return found[0]

    def allure_scenario(self, check: str, scenario: str) -> dict[str, Any]:
        """The step of ``check``'s result that is the Gherkin scenario named so (named
        ``[check] …`` as in JUnit)."""
        steps = self.allure_check(check).get("steps", [])
        found = [s for s in steps if _unprefixed(s.get("name", "")) == scenario]
        assert found, f"no scenario {scenario!r} in {check}: {[s['name'] for s in steps]}"
        return found[0]

    def allure_counts(self) -> dict[str, int]:
        """The Allure results by status, and their total: what Allure's header counts."""
        results = self.allure_results()
        out = {s: sum(1 for r in results if r["status"] == s) for s in STATUSES}
        return out | {"total": len(results)}

    def attachment(self, result: dict[str, Any], name: str) -> str:
        for a in _attachments(result):
            if a["name"] == name:
                return (self.reports / "allure-results" / a["source"]).read_text(encoding="utf-8")
        names = [a["name"] for a in _attachments(result)]
        raise AssertionError(f"no attachment {name!r} on {result['name']!r}: {names}")

    def explain(self) -> str:
        return f"exit {self.returncode}\n{self.output[-4000:]}"


@dataclass
class Rendered:
    returncode: int
    output: str
    report: Path
    summary: dict[str, Any]  # the rendered report's summary.json: name, stats, status
    elapsed: float

    @property
    def title(self) -> str:
        return str(self.summary.get("name", ""))

    @property
    def gate(self) -> list[dict[str, Any]]:
        """The quality gate as the report holds it (its Quality Gates tab reads this file)."""
        found = json.loads((self.report / "quality-gate.json").read_text(encoding="utf-8"))
        assert isinstance(found, list), found
        return found

    def test_results(self) -> list[dict[str, Any]]:
        return [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((self.report / "data" / "test-results").glob("*.json"))
        ]


# Allure's statuses, and the record's counts (run-summary.json's ``counts``) each shows.
STATUSES = ("passed", "failed", "broken", "skipped")
SHOWN_AS = {
    "passed": ("passed",),
    "failed": ("failed",),
    "broken": ("broken", "error"),
    "skipped": ("notReached", "notSelected"),
}


def allure_counts_of(counts: dict[str, int]) -> dict[str, int]:
    """run-summary.json's ``counts`` in Allure's statuses."""
    out = {s: sum(counts[k] for k in SHOWN_AS[s]) for s in STATUSES}
    return out | {"total": counts["total"]}


def _unprefixed(name: str) -> str:
    """``[6.3] 日志显示…`` → ``日志显示…``."""
    return name.split("] ", 1)[1] if name.startswith("[") and "] " in name else name


def _attachments(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(result.get("attachments", []))
    for step in result.get("steps", []):
        out += _attachments(step)
    return out


def features_command(profile: Path, reports: Path, args: list[str]) -> list[str]:
    """``pytest features/`` on ``profile`` as a user runs it, its record in ``reports``."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "features/",
        "-p",
        "no:cacheprovider",
        "--profile",
        str(profile),
        "--reports-dir",
        str(reports),
        *args,
    ]


def _command(site: Site, reports: Path, args: list[str]) -> list[str]:
    return features_command(site.profile, reports, args)


def _env(site: Site | None = None) -> dict[str, str]:
    """The test session's environment; with ``site``, a state folder beside the copy (its
    default history among it): a test's runs compare with each other, never with those of
    the tests beside it."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    if site is not None:
        env["RLARK_ACCEPTANCE_STATE"] = str(site.root.parent / "state")
    return env


def run_suite(
    site: Site, *args: str, timeout: float = 600, wrapper: list[str] | None = None
) -> SuiteRun:
    """``wrapper``: a command that runs the suite's command line given as its arguments.

    ``timeout`` is a hang's bound, not a speed check: the whole suite on a profile broken at
    6.4 took 186 s alone and over 300 s on three test workers sharing 2 cores.

    A run whose Worker's ``ray start --head`` gave up under this machine's load is run once
    more, with a warning in the test session's summary (see ``ray_start_timed_out``)."""
    return again_if_ray_start_timed_out(lambda: _run_suite_once(site, list(args), timeout, wrapper))


def again_if_ray_start_timed_out(run_once: Callable[[], SuiteRun]) -> SuiteRun:
    """``run_once()``, and once more if that run failed on a Worker's Ray head that gave up
    its start under this machine's load (``ray_start_timed_out``), its record set aside."""
    run = run_once()
    if ray_start_timed_out(run):
        warn_ray_start_rerun("the suite", set_aside(run.reports))
        run = run_once()
    return run


# Ray's own message when a starting node's raylet has not registered with its GCS within
# 30 s. On two cores shared by three test workers, a Kubernetes node weighted as eight busy
# processes and a real RLinf run, the Ray head a Worker starts has missed it: the raylet
# gives its dashboard agent (a Python process with heavy imports) 15 s to write its port
# file and aborts past that (Ray 2.60's WaitForDashboardAgentPorts: no setting widens it;
# RAY_raylet_start_wait_time_s widens only ``ray start``'s wait for a raylet that is then
# dead). The harness is right to fail such a run at 6.3; it is not what a test that runs
# the suite on a broken copy asks about, so that run alone is repeated.
RAY_START_TIMED_OUT = "The current node timed out during startup"
RAY_START_WAIT_S = 30


def set_aside(reports: Path) -> Path:
    """Move a first run's ``reports`` out of the second's way, under a name not yet taken."""
    for n in range(1, 100):
        kept = reports.with_name(f"{reports.name}-ray-start-timeout-{n}")
        if not kept.exists():
            return reports.rename(kept)
    raise AssertionError(f"no free name beside {reports}")


def warn_ray_start_rerun(what: str, first: Path) -> None:
    """Say in the test session's warnings summary that ``what`` ran twice, and where the
    first run's record was kept."""
    warnings.warn(
        f"{what} ran again: a Worker's Ray head timed out during startup (its raylet gave up"
        f" on its dashboard agent, or ray start on its raylet within {RAY_START_WAIT_S} s) on"
        " this loaded machine, a fault the test did not put in; the"
        f" first run's record is in {first}",
        stacklevel=3,
    )


def ray_start_timed_out(run: SuiteRun) -> bool:
    """The run failed, and a Worker's Ray head gave up its start on the machine's load."""
    return run.returncode != 0 and ray_start_timed_out_in(run.summary)


def ray_start_timed_out_in(summary: dict[str, Any]) -> bool:
    """A run-summary.json whose earliest failure, or one of whose failed self-checks, quotes
    Ray's own start timeout: 6.3 of the run, 6.3 of T.4's second submission (named by T.4),
    or a self-check's own run red at 6.3 instead of the check it breaks on purpose. No test
    puts that fault in (Ray's wait is fixed), so its text is enough."""
    first = summary.get("earliestFailure") or {}
    failed = (summary.get("selfChecks") or {}).get("failed") or []
    return any(RAY_START_TIMED_OUT in json.dumps(f, ensure_ascii=False) for f in [first, *failed])


def _run_suite_once(
    site: Site, args: list[str], timeout: float, wrapper: list[str] | None
) -> SuiteRun:
    reports = site.root.parent / "reports"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*(wrapper or []), *_command(site, reports, args)],
        cwd=ROOT,
        env=_env(site),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Ctrl-C, as a user would, so the suite removes what it submitted and stops the
        # services it started (a SIGKILL would leave them to the next test); then its last
        # lines, which say the scenario and the Step 6 wait it was in.
        proc.send_signal(signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        tail = "\n".join(output.splitlines()[-40:])
        raise AssertionError(
            f"the suite did not end in {timeout:.0f} s and was interrupted; its last lines:\n{tail}"
        ) from None
    return _read(proc.returncode, output, reports, time.monotonic() - t0)


def run_suites_at_once(site: Site, count: int, *args: str, timeout: float = 300) -> list[SuiteRun]:
    """``count`` runs of the one profile started together (a CI retry, two engineers), each
    writing its own record."""
    t0 = time.monotonic()
    started = []
    for i in range(count):
        reports = site.root.parent / f"reports-{i + 1}"
        proc = subprocess.Popen(
            _command(site, reports, list(args)),
            cwd=ROOT,
            env=_env(site),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append((proc, reports))
    runs = []
    for proc, reports in started:
        output, _ = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        runs.append(_read(proc.returncode, output, reports, time.monotonic() - t0))
    return runs


def run_suite_interrupted(site: Site, after: str, *args: str, timeout: float = 300) -> SuiteRun:
    """Start the suite, and send SIGINT (Ctrl-C) once ``after`` shows on its output."""
    reports = site.root.parent / "reports"
    t0 = time.monotonic()
    env = _env(site) | {"PYTHONUNBUFFERED": "1"}  # the scenario's name shows before it runs
    proc = subprocess.Popen(
        _command(site, reports, ["-v", *args]),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout
    seen = output_until(proc, after, deadline)
    time.sleep(1.0)  # inside the scenario's setup: the Worker is being started
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    output = (seen + rest).decode(errors="replace")
    return _read(proc.returncode, output, reports, time.monotonic() - t0)


def output_until(proc: subprocess.Popen[bytes], after: str, deadline: float) -> bytes:
    """What ``proc`` printed up to and including ``after`` (monotonic ``deadline``)."""
    assert proc.stdout is not None
    seen = b""
    while after.encode() not in seen:
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk and time.monotonic() < deadline, seen.decode(errors="replace")
        seen += chunk
    return seen


def _read(code: int, output: str, reports: Path, elapsed: float) -> SuiteRun:
    run = SuiteRun(code, output, reports, elapsed)
    path = reports / "run-summary.json"
    assert path.is_file(), f"no run-summary.json after the run:\n{run.explain()}"
    run.summary = json.loads(path.read_text(encoding="utf-8"))
    return run
