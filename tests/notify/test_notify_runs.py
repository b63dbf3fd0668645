"""The suite run as a user runs it with ``--notify``: green, red, interrupted and a release,
each posting its verdict to a real HTTP receiver on loopback, and what was delivered read
back from the record. A receiver that is not there is a warning of the record, and the
verdict and exit status stay what they were."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from tests.notify.receiver import receiver
from tests.run.suite_runs import (
    AS_IT_IS,
    ROOT,
    STEP6_ONLY,
    run_suite,
    run_suite_interrupted,
    site_copy,
)

pytestmark = pytest.mark.slow

TOKEN = "T0KEN-of-the-channel"
STATIC = f"not runtime and ({AS_IT_IS})"


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_red_run_posts_its_earliest_failure_and_an_absent_receiver_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = site_copy(tmp_path)
    line = site.edit(
        site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}"
    )
    absent = f"http://127.0.0.1:{dead_port()}/hook/{TOKEN}"
    with receiver() as r:
        # As the how-to shows it: the channel's URL from the CI's secret variables.
        monkeypatch.setenv("RELEASE_CHANNEL", r.url())
        run = run_suite(
            site, "-m", STATIC, "--notify", "slack:${RELEASE_CHANNEL}", "--notify", r.url(),
            "--notify", absent, "--report-url", "https://ci.example/jobs/7",
        )  # fmt: skip
    assert run.returncode == 1, run.explain()
    slack, plain = (g.body for g in r.got)
    assert slack["text"] == ":x: smoke-ppo-mlp-local: NOT ACCEPTED at 3.7", slack["text"]
    first = plain["earliestFailure"]
    assert first["check"] == "3.7" and first["location"].endswith(f"job.yaml:{line}"), first
    assert first["remedy"] and plain["report"] == "https://ci.example/jobs/7"
    assert plain["runId"] == run.summary["runId"] and plain["verdict"] == "failed"
    said = run.summary["notifications"]
    assert [n["error"] for n in said[:2]] == [None, None] and said[2]["status"] is None
    (warning,) = [w for w in run.summary["warnings"] if w.startswith("notification not")]
    assert "json to http://127.0.0.1:" in warning and "after 3 attempts" in warning
    # Posted before the record's files were written: each says it, JUnit as CI reads it too.
    (suite,) = [x for x in JUnitXml.fromfile(str(run.reports / "junit.xml"))]
    assert warning in [p.value for p in suite.properties() if p.name == "warning"]
    assert "notify: notified slack to http://127.0.0.1:" in run.output
    everything = run.output + json.dumps(run.summary)
    assert TOKEN not in everything, "a webhook's URL carries its channel's token"
    assert run.summary["verdict"] == "failed" and run.summary["earliestFailure"]["check"] == "3.7"


def test_a_green_run_posts_accepted(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    with receiver() as r:
        run = run_suite(site, "-m", STATIC, "--notify", f"feishu:{r.url()}")
    assert run.returncode == 0, run.explain()
    (card,) = (g.body for g in r.got)
    assert card["card"]["header"]["title"]["content"] == "smoke-ppo-mlp-local: ACCEPTED"
    assert card["card"]["header"]["template"] == "green"
    assert run.summary["notifications"][0]["error"] is None


def test_an_interrupted_run_posts_where_it_was_interrupted(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    with receiver() as r:
        run = run_suite_interrupted(
            site, "任务列表中出现本次", "-m", STEP6_ONLY, "--notify", r.url()
        )
    assert run.returncode == 2, run.explain()
    (plain,) = (g.body for g in r.got)
    assert plain["verdict"] == "interrupted", plain
    assert plain["headline"] == "smoke-ppo-mlp-local: INTERRUPTED at 6.1"


def test_a_release_posts_once_its_own_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once to each target, the release file's (through the environment) and --notify's."""
    site = site_copy(tmp_path)
    release = tmp_path / "release.yaml"
    release.write_text(
        f"name: nightly\nprofiles:\n  - {site.profile}\nselect: '{STATIC}'\n"
        "notify: ['${RELEASE_HOOK}']\n",
        encoding="utf-8",
    )
    reports = tmp_path / "release-reports"
    with receiver() as r:
        monkeypatch.setenv("RELEASE_HOOK", r.url("/from-the-file"))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider",
             "--release", str(release), "--reports-dir", str(reports), "--notify", r.url()],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(g.path for g in r.got) == ["/from-the-file", "/hook/" + TOKEN], (
        "once to each target: the release's sessions post nothing of their own"
    )
    body: dict[str, Any] = r.got[0].body
    assert body["kind"] == "release" and body["headline"] == "release nightly: ACCEPTED on 1 of 1"
    assert [p["verdict"] for p in body["profiles"]] == ["passed"]
    record = json.loads((reports / "release-summary.json").read_text(encoding="utf-8"))
    assert [n["error"] for n in record["notifications"]] == [None, None]


def test_a_webhook_url_written_in_a_release_file_is_refused_at_its_line(tmp_path: Path) -> None:
    release = tmp_path / "release.yaml"
    release.write_text(
        f"name: nightly\nprofiles:\n  - {ROOT / 'profiles' / 'local.yaml'}\n"
        f"notify:\n  - slack:https://hooks.slack.com/services/{TOKEN}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider",
         "--release", str(release)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    said = proc.stderr.strip().splitlines()
    assert said == [
        f"ERROR: {release}:5: a notify URL in a file must come from the environment, as "
        "${NAME} (it carries the channel's token, and the file is shared): export NAME in the "
        "CI's secret variables"
    ], said
    assert TOKEN not in proc.stdout + proc.stderr
