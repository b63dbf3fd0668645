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
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"

# Only the scenarios that exercise the profile as it is (no self-checks): the verdict
# stays the profile's, and the run stays short.
AS_IT_IS = "not negative and not variant and not fault-injection and not modified-job"
STEP6_ONLY = f"runtime and ({AS_IT_IS})"


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

    def allure_results(self) -> list[dict[str, Any]]:
        out = []
        for p in sorted((self.reports / "allure-results").glob("*-result.json")):
            out.append(json.loads(p.read_text(encoding="utf-8")))
        return out

    def allure_result(self, scenario: str) -> dict[str, Any]:
        found = [r for r in self.allure_results() if r.get("name") == scenario]
        assert found, f"no Allure result named {scenario!r}"
        return found[0]

    def attachment(self, result: dict[str, Any], name: str) -> str:
        for a in _attachments(result):
            if a["name"] == name:
                return (self.reports / "allure-results" / a["source"]).read_text(encoding="utf-8")
        names = [a["name"] for a in _attachments(result)]
        raise AssertionError(f"no attachment {name!r} on {result['name']!r}: {names}")

    def explain(self) -> str:
        return f"exit {self.returncode}\n{self.output[-4000:]}"


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


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def run_suite(site: Site, *args: str, timeout: float = 300) -> SuiteRun:
    reports = site.root.parent / "reports"
    t0 = time.monotonic()
    proc = subprocess.run(
        _command(site, reports, list(args)),
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return _read(proc.returncode, proc.stdout + proc.stderr, reports, time.monotonic() - t0)


def run_suite_interrupted(site: Site, after: str, *args: str, timeout: float = 300) -> SuiteRun:
    """Start the suite, and send SIGINT (Ctrl-C) once ``after`` shows on its output."""
    reports = site.root.parent / "reports"
    t0 = time.monotonic()
    env = _env() | {"PYTHONUNBUFFERED": "1"}  # the scenario's name shows before it runs
    proc = subprocess.Popen(
        _command(site, reports, ["-v", *args]),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while after.encode() not in seen:
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk and time.monotonic() < deadline, seen.decode(errors="replace")
        seen += chunk
    time.sleep(1.0)  # inside the scenario's setup: the Worker is being started
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    output = (seen + rest).decode(errors="replace")
    return _read(proc.returncode, output, reports, time.monotonic() - t0)


def _read(code: int, output: str, reports: Path, elapsed: float) -> SuiteRun:
    run = SuiteRun(code, output, reports, elapsed)
    path = reports / "run-summary.json"
    assert path.is_file(), f"no run-summary.json after the run:\n{run.explain()}"
    run.summary = json.loads(path.read_text(encoding="utf-8"))
    return run
