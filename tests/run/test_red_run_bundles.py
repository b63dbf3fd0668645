"""The diagnostics bundle of red runs on the embedded target, run as a user would.

``pytest features/`` on a broken copy of the default profile (``suite_runs``), the bundle
read back from its reports folder. The Worker prints a token it reads from its data mount
(the credential injection the page allows), and the harness's environment holds the same
token under a secret name, as a CI job that logs in to a model hub would: every file of the
bundle is searched for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import junitparser
import pytest

from rlark_acceptance.run.step6.diagnostics import WRITTEN_BY
from tests.run.suite_runs import (
    AS_IT_IS,
    STEP6_ONLY,
    Site,
    run_suite,
    run_suite_interrupted,
    site_copy,
)
from tests.run.test_red_runs import assert_red_at

pytestmark = pytest.mark.slow

SECRET = "hf_Xk3pQm8RtV2wLn6YbZc9Jd4Fg7Hs"
PREPARE = "export PYTHONUNBUFFERED=1"
LOGIN = 'echo "hub login $(cat /mnt/data/hub-token)"'
COMMAND = Path(sys.executable).parent / "rlark-acceptance"


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def _prepare(site: Site, script: str) -> None:
    """The same prepare script in the Job and the profile's run information (P.1 / 5.6)."""
    site.edit(site.job, f"      {PREPARE}", f"      {script}")
    site.edit(site.profile, f"prepareCommand: {PREPARE}", f"prepareCommand: {script}")


def _prepare_fails(site: Site) -> None:
    _prepare(site, f"{PREPARE} && {LOGIN} && source /opt/venv/bin/activate")


def _signal_never_appears(site: Site) -> None:
    _prepare(site, f"{PREPARE} && {LOGIN}")
    signal = r"firstSignal: 'Global Step:.*\b[1-9]\d*/\d+'"
    site.edit(site.profile, signal, r"firstSignal: 'Epoch \d+ done'")


def _metrics_not_finite(site: Site) -> None:
    _prepare(site, f"{PREPARE} && {LOGIN}")
    old = "runner.logger.log_path=/mnt/ckpt/logs"
    site.edit(site.job, f"{old}\n", f"{old} smoke.nan_from_step=3\n")
    site.edit(site.profile, f"{old}\n", f"{old} smoke.nan_from_step=3\n")


RED_RUNS: list[tuple[str, Callable[[Site], None], set[str]]] = [
    # (check, mistake, files beyond pod.json, events.json, node.json, worker-log.txt)
    ("6.3", _prepare_fails, set()),
    ("6.4", _signal_never_appears, {"printed-config.json", "ray/raylet.err", "ray/gcs_server.err"}),
    ("T.2", _metrics_not_finite, {"printed-config.json", "ray/raylet.err", "ray/gcs_server.err"}),
]


@pytest.mark.parametrize(("check", "mistake", "more"), RED_RUNS, ids=[r[0] for r in RED_RUNS])
def test_a_red_run_leaves_its_bundle_with_no_secret_in_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    check: str,
    mistake: Callable[[Site], None],
    more: set[str],
) -> None:
    site = site_copy(tmp_path)
    (site.root / "local" / "data" / "hub-token").write_text(SECRET + "\n", encoding="utf-8")
    monkeypatch.setenv("HF_TOKEN", SECRET)
    mistake(site)
    run = run_suite(site, "-m", STEP6_ONLY)
    assert_red_at(run, check)

    folder = run.reports / "diagnostics"
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    assert index["why"] == f"{check} failed", index
    assert index["runId"] == run.summary["runId"]
    files = set(index["files"])
    assert {"pod.json", "events.json", "node.json", "worker-log.txt"} | more <= files, index
    assert all((folder / name).stat().st_size == size for name, size in index["files"].items())
    # The record links it in every form: run-summary.json, the terminal, JUnit as CI reads it.
    linked = run.summary["diagnostics"]
    assert Path(linked["dir"]).resolve() == folder.resolve()
    assert set(linked["files"]) == {"index.json", *index["files"]}, linked["files"]
    assert f"diagnostics: {linked['dir']} ({len(linked['files'])} files" in run.output
    junit = junitparser.JUnitXml.fromfile(str(run.reports / "junit.xml"))
    (own,) = [x for x in junit if x.name.endswith("the profile as it is")]
    assert {p.name: p.value for p in own.properties()}["diagnostics"] == linked["dir"]
    # And the Allure report carries each of its files, as the run's own attachments.
    (shared,) = (run.reports / "allure-results").glob("*-globals.json")
    names = {a["name"] for a in json.loads(shared.read_text(encoding="utf-8"))["attachments"]}
    assert {f"diagnostics/{n}" for n in linked["files"]} <= names, names
    # The Worker printed the token; the bundle shows where, not what.
    log = (folder / "worker-log.txt").read_text(encoding="utf-8")
    assert "hub login ***" in log, log[:2000]
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    pod = json.loads((folder / "pod.json").read_text(encoding="utf-8"))
    assert pod["spec"]["containers"][0]["image"] == "rlark-acceptance/smoke:0.1.0"
    assert pod["metadata"]["name"] == index["pod"]
    assert pod["metadata"]["namespace"] == "rlinf-acceptance", pod["metadata"]
    node = json.loads((folder / "node.json").read_text(encoding="utf-8"))
    kinds = {c["type"] for c in node["conditions"]}
    assert {"Ready", "MemoryPressure", "DiskPressure"} <= kinds, node
    assert node["allocatable"]["nvidia.com/gpu"] == "2", node
    events = json.loads((folder / "events.json").read_text(encoding="utf-8"))
    assert any(e["reason"] == "Scheduled" for e in events), events
    if check == "6.3":
        assert any(u.startswith("Ray's session logs: no Ray session") for u in index["unread"])
        assert "activate" in log
    else:
        assert "Ray runtime started" in log or "Global Step" in log
        printed = json.loads((folder / "printed-config.json").read_text(encoding="utf-8"))
        assert printed["runner"]["logger"]["log_path"] == "/mnt/ckpt/logs"
    if check == "T.2":
        # Gathered before 6.5 deleted the Worker: Ray's logs were still in its scratch.
        assert run.summary["checks"]["6.5"] == "passed", run.summary["checks"]
    print(f"\n{folder}:", *(f"{n} {b} B" for n, b in index["files"].items()), sep="\n  ")
    print("  unread:", *index["unread"], sep="\n    ")

    # The run by its id, as an engineer on call asks about it.
    done = subprocess.run(
        [str(COMMAND), "diagnose", run.summary["runId"], "--reports-dir", str(run.reports)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(f"$ rlark-acceptance diagnose {run.summary['runId']} --reports-dir …\n{done.stdout}")
    assert (done.returncode, done.stderr) == (1, ""), done
    assert f"failed at {check}" in done.stdout and SECRET not in done.stdout
    assert "diagnostics bundle: " in done.stdout


def test_a_run_red_in_its_pre_flight_leaves_no_earlier_run_s_bundle(tmp_path: Path) -> None:
    """The folder says this run's story or none: an earlier red run's bundle goes when a
    run starts, though a run red at 3.7 submits nothing and writes no bundle of its own;
    a file no bundle wrote stays."""
    site = site_copy(tmp_path)
    site.edit(site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}")
    earlier = tmp_path / "reports" / "diagnostics"
    (earlier / "ray").mkdir(parents=True)
    (earlier / "pod.json").write_text("{}", encoding="utf-8")
    (earlier / "ray" / "raylet.err").write_text("", encoding="utf-8")
    (earlier / "mine.txt").write_text("a user's note", encoding="utf-8")
    files = {"pod.json": 2, "ray/raylet.err": 0}
    index = {"writtenBy": WRITTEN_BY, "runId": "261207000000-aaaaaa", "files": files}
    (earlier / "index.json").write_text(json.dumps(index), encoding="utf-8")
    run = run_suite(site, "-m", AS_IT_IS)
    assert_red_at(run, "3.7")
    assert sorted(p.name for p in earlier.rglob("*")) == ["mine.txt"]


def test_an_interrupted_run_writes_what_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while Step 6 waits for 6.4 on a Worker that is still running: the interrupt
    removes the Worker first, so the bundle holds what the run had read (its log, its
    events) and says what it could no longer read."""
    site = site_copy(tmp_path)
    (site.root / "local" / "data" / "hub-token").write_text(SECRET + "\n", encoding="utf-8")
    monkeypatch.setenv("HF_TOKEN", SECRET)
    _prepare(site, f"{PREPARE} && {LOGIN}")
    run_script = "cd /workspace/smoke && python -m rlark_acceptance.smoke"
    site.edit(site.job, f"    {run_script}", f"    echo starting; sleep 120; {run_script}")
    site.edit(
        site.profile,
        f"startCommand: {run_script}",
        f"startCommand: echo starting; sleep 120; {run_script}",
    )
    run = run_suite_interrupted(site, "Step 6 waits for 6.4", "-m", STEP6_ONLY)
    assert run.summary["verdict"] == "interrupted", run.explain()
    folder = run.reports / "diagnostics"
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    assert index["why"] == "the run was interrupted", index
    assert {"events.json", "worker-log.txt"} <= set(index["files"]), index
    assert "hub login ***" in (folder / "worker-log.txt").read_text(encoding="utf-8")
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    # The Events the run saw, though the Job that had them is gone.
    events = json.loads((folder / "events.json").read_text(encoding="utf-8"))
    assert any(e["reason"] == "Scheduled" for e in events), events
    print(f"\n{folder}:", *(f"{n} {b} B" for n, b in index["files"].items()), sep="\n  ")
    print("  unread:", *index["unread"], sep="\n    ")
