"""A release run as a user starts it, ``python -m pytest features/ --release FILE``, and
everything it wrote read back: the terminal, ``release-summary.json``, the one JUnit file
(junitparser, after the schema CI reads), each profile's own record, and the rendered
Allure report's tree (profile → doc section → check).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testenv import state
from tests.run.suite_runs import (
    LOADED_TIMEOUTS,
    ROOT,
    Site,
    output_until,
    ray_start_timed_out_in,
    set_aside,
    site_copy,
    warn_ray_start_rerun,
)


def variant(tmp: Path, name: str) -> Site:
    """A copy of the default local profile named ``name`` (its record's directory)."""
    site = site_copy(tmp / name)
    site.edit(site.profile, "name: smoke-ppo-mlp-local\n", f"name: {name}\n")
    return site


def loaded_clone(tmp: Path) -> Path:
    """The repository's release.yaml and profiles/ as they are, beside what they name by
    ``../`` (the virtualenv, the sources, testenv's files), with the loaded deadlines of
    ``site_copy``: the release's two local Ray heads start beside the other workers' suites
    on the same two cores, where 6.3 has met the profile's 60 s (both heads, at once)."""
    clone = tmp / "clone"
    clone.mkdir(parents=True)
    shutil.copy(ROOT / "release.yaml", clone / "release.yaml")
    shutil.copytree(ROOT / "profiles", clone / "profiles", symlinks=True)
    for name in (".venv", "src", ".testenv"):
        (clone / name).symlink_to(ROOT / name, target_is_directory=True)
    for profile in (clone / "profiles").glob("*.yaml"):
        text = profile.read_text(encoding="utf-8")
        for key in LOADED_TIMEOUTS:
            text = re.sub(rf"(?m)^(  {key}: )(\d+)\b", lambda m: f"{m[1]}{int(m[2]) * 3}", text)
        profile.write_text(text, encoding="utf-8")
    return clone / "release.yaml"


def release_file(path: Path, profiles: list[Path | str], **settings: Any) -> Path:
    """A release file listing ``profiles``, with the shared ``settings`` (its keys)."""
    lines = ["profiles:", *(f"  - {p}" for p in profiles)]
    lines += [f"{k}: {json.dumps(v)}" for k, v in settings.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def env() -> dict[str, str]:
    """What ``eval "$(testenv/testenv env)"`` gives a user: boto3's standard chain for the
    S3 server (each profile's kubeconfig is its own)."""
    out = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG", "PYTEST_"))
    }
    out.update({k: v for k, v in state.env_vars(state.load()).items() if k.startswith("AWS_")})
    return out | {"PYTHONUNBUFFERED": "1", "CI": "1"}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider", *args]


@dataclass
class ReleaseRun:
    returncode: int
    output: str
    reports: Path
    elapsed: float
    summary: dict[str, Any] = field(default_factory=dict)

    def explain(self) -> str:
        return f"exit {self.returncode}\n{self.output[-6000:]}{self.failed_logs()}"

    def failed_logs(self) -> str:
        """The text attachments (the Worker's log among them) of each profile that was not
        accepted: what a CI failure of a release leaves to read once its files are gone."""
        out = []
        for p in self.summary.get("profiles", []):
            if p.get("accepted") or not p.get("record"):
                continue
            for f in sorted((self.reports / p["record"] / "allure-results").glob("*.txt")):
                tail = f.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
                out.append(f"\n--- {p['name']}: {f.name}\n" + "\n".join(tail))
        return "".join(out)

    def profile(self, name: str) -> dict[str, Any]:
        found = [p for p in self.summary["profiles"] if p["name"] == name]
        assert len(found) == 1, (name, [p["name"] for p in self.summary["profiles"]])
        return dict(found[0])

    def run_summary(self, name: str) -> dict[str, Any]:
        """The profile's own record, where the release record says it is."""
        where = self.reports / self.profile(name)["record"] / "run-summary.json"
        return dict(json.loads(where.read_text(encoding="utf-8")))

    def junit_suites(self) -> dict[str, list[Any]]:
        """testsuite name → its testcases, as a JUnit consumer reads junit.xml, after
        checking it against the schema CI reads."""
        import junitparser

        from tests.run.junit_schema import problems

        path = self.reports / "junit.xml"
        assert problems(path) == [], problems(path)
        return {s.name: list(s) for s in junitparser.JUnitXml.fromfile(str(path))}

    def render(self) -> tuple[int, str, Path]:
        """The documented command over the release's reports: exit, output, report."""
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("rlark-acceptance")),
                "report",
                "--reports-dir",
                str(self.reports),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done.returncode, done.stdout + done.stderr, self.reports / "allure-report"


def tree(report: Path) -> dict[str, Any]:
    """The rendered report's tree as names: {group: {group: {...}}}, a leaf group's value
    its statistic (``{"total": 1, "failed": 1}``)."""
    data = json.loads((report / "widgets" / "tree.json").read_text(encoding="utf-8"))
    groups = data["groupsById"]

    def node(ids: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i in ids:
            g = groups[i]
            out[g["name"]] = node(g["groups"]) if g.get("groups") else g["statistic"]
        return out

    return node(data["root"]["groups"])


def run_release(cwd: Path, reports: Path, *args: str, timeout: float = 900) -> ReleaseRun:
    """The release as a user runs it; once more when a profile's Worker's Ray head gave up
    its start on the machine's load (``ray_start_timed_out_in``)."""
    run = _run_release_once(cwd, reports, args, timeout)
    if any(
        ray_start_timed_out_in(run.run_summary(p["name"]))
        for p in run.summary.get("profiles", [])
        if not p.get("accepted") and p.get("record")
    ):
        warn_ray_start_rerun("the release", set_aside(reports))
        run = _run_release_once(cwd, reports, args, timeout)
    return run


def _run_release_once(
    cwd: Path, reports: Path, args: tuple[str, ...], timeout: float
) -> ReleaseRun:
    t0 = time.monotonic()
    done = subprocess.run(
        command("--reports-dir", str(reports), *args),
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return read(done.returncode, done.stdout + done.stderr, reports, time.monotonic() - t0)


def run_release_interrupted(
    reports: Path, after: str, *args: str, sig: int = signal.SIGINT, timeout: float = 600
) -> ReleaseRun:
    """Start the release and send ``sig`` once ``after`` shows on its terminal."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        command("--reports-dir", str(reports), *args),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + timeout
    seen = output_until(proc, after, deadline)
    proc.send_signal(sig)
    rest, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    return read(
        proc.returncode, (seen + rest).decode(errors="replace"), reports, time.monotonic() - t0
    )


def read(code: int, output: str, reports: Path, elapsed: float) -> ReleaseRun:
    run = ReleaseRun(code, output, reports, elapsed)
    path = reports / "release-summary.json"
    assert path.is_file(), f"no release-summary.json after the release:\n{run.explain()}"
    run.summary = json.loads(path.read_text(encoding="utf-8"))
    return run
