"""A red run's diagnostics bundle, written by Step 6 before the Worker is deleted.

The scripted target stands in for the RLark platform (it cannot exist here); the bundle is
read back from the folder as a user reads it, and a secret the run's redaction knows is
shown absent from every byte of it.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance import cli
from rlark_acceptance.adapters.base import JobRef, WorkerEvidence
from rlark_acceptance.run.step6 import build_plan, confirm_running
from rlark_acceptance.run.step6.confirm import Interrupted
from rlark_acceptance.run.step6.diagnostics import (
    INDEX,
    LAST_LINES,
    clear_earlier,
    excerpt_lines,
    log_excerpt,
)
from rlark_acceptance.run.step6.record import LogTail
from rlark_acceptance.secrets import Redactor
from tests.run.scripted import (
    CONFIG,
    ScriptedTarget,
    Step,
    call,
    end,
    happy_script,
    line,
    lines,
    pod,
    started,
)

SECRET = "Zq8vTfW2kLm9Rb3xNc7yHd4s"  # a value the run's scans found (a token in its Job)


@dataclass
class EvidenceTarget(ScriptedTarget):
    """The scripted target, also saying what it holds of the Worker (``Diagnoses``)."""

    asked: list[str] = field(default_factory=list)

    def worker_evidence(self, ref: JobRef, pod: str) -> WorkerEvidence:
        self.asked.append(pod)
        assert not self.deleted, "asked after the Worker was deleted"
        return WorkerEvidence(
            pod={"metadata": {"name": pod}, "spec": {"containers": [{"image": "smoke"}]}},
            node={
                "name": "local-node",
                "conditions": [{"type": "MemoryPressure", "status": "False"}],
                "allocatable": {"cpu": "2", "nvidia.com/gpu": "8"},
            },
            ray_logs={"raylet.err": f"[raylet] worker died; token={SECRET}\n"},
            unread=("Ray's dashboard_agent.log: not in the session's logs",),
        )


def _red_script() -> list[Step]:
    """Ray started, the config printed, then a traceback whose cause names the secret."""
    config = {**CONFIG, "runner": {"hub_token": SECRET}}
    return [
        *started(),
        *lines(2.1, *json.dumps(config, indent=2).splitlines()),
        *lines(2.2, *(f"setting up env {i}" for i in range(300))),
        *lines(
            2.3,
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            f"ValueError: bad task id for token {SECRET}",
        ),
        *lines(2.4, *(f"shutting down {i}" for i in range(30))),
        end(2.5),
        pod(2.6, "Failed", exit_code=1, reason="Error"),
    ]


def _confirm(
    base: Any, tmp_path: Path, target: ScriptedTarget, redactor: Redactor | None = None
) -> Any:
    prof, job = base
    (tmp_path / "store").mkdir(exist_ok=True)
    if redactor is None:
        redactor = Redactor()
        redactor.remember([SECRET])
    return confirm_running(
        target,  # type: ignore[arg-type]
        build_plan(prof, job),
        clock=target.clock,
        diagnostics=tmp_path / "reports" / "diagnostics",
        redactor=redactor,
    )


def _every_byte(folder: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file())


def test_a_red_run_writes_its_bundle_before_the_worker_is_deleted(
    base: Any, tmp_path: Path
) -> None:
    target = EvidenceTarget(_red_script(), tmp_path / "store")
    rec = _confirm(base, tmp_path, target)
    assert rec.earliest_failure is not None and rec.earliest_failure.check == "6.4"
    folder = tmp_path / "reports" / "diagnostics"
    index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    assert target.asked == [rec.worker.name]
    assert index["why"] == "6.4 failed" and index["runId"] == rec.run_id
    assert index["firstCause"]["logLine"] == rec.first_cause.line + 1
    assert index["firstCause"]["quote"].startswith("ValueError: bad task id")
    files = set(index["files"])
    assert files == {
        "pod.json",
        "events.json",
        "node.json",
        "worker-log.txt",
        "printed-config.json",
        "ray/raylet.err",
    }, files
    assert "Ray's dashboard_agent.log: not in the session's logs" in index["unread"]
    node = json.loads((folder / "node.json").read_text(encoding="utf-8"))
    assert node["conditions"][0]["type"] == "MemoryPressure"
    # The window around the cause: the traceback before it, the shutdown after it.
    text = (folder / "worker-log.txt").read_text(encoding="utf-8")
    assert "Traceback (most recent call last):" in text and "shutting down 29" in text
    assert "around the first cause" in text and "the first lines" in text
    # The secret the run's scans found is nowhere, in any file (raw).
    every = _every_byte(folder)
    assert SECRET not in every
    assert "***" in (folder / "ray" / "raylet.err").read_text(encoding="utf-8")
    printed = json.loads((folder / "printed-config.json").read_text(encoding="utf-8"))
    assert printed["runner"]["hub_token"] == "***"
    # The record says where it is and what it holds, for run-summary.json and the terminal.
    assert rec.diagnostics is not None
    summary = rec.diagnostics.summary()
    assert summary["dir"] == str(folder) and summary["index"] == INDEX
    assert set(summary["files"]) == files | {INDEX}
    assert summary["bytes"] == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert rec.diagnostics.line().startswith(f"diagnostics: {folder} (7 files, ")


def test_a_green_run_writes_no_bundle_and_removes_an_earlier_one(base: Any, tmp_path: Path) -> None:
    red = EvidenceTarget(_red_script(), tmp_path / "store")
    _confirm(base, tmp_path, red)
    folder = tmp_path / "reports" / "diagnostics"
    (folder / "notes.txt").write_text("the user's own", encoding="utf-8")
    green = EvidenceTarget(happy_script(tmp_path / "store"), tmp_path / "store")
    rec = _confirm(base, tmp_path, green)
    assert rec.passed, {c: p.message for c, p in rec.phases.items()}
    assert rec.diagnostics is None and green.asked == []
    # Only what the earlier bundle's index listed went; a file it did not write stays.
    assert sorted(p.name for p in folder.rglob("*")) == ["notes.txt"]


def test_an_interrupted_run_writes_what_it_has(base: Any, tmp_path: Path) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    script = [*started(), line(2.1, f"loading with {SECRET}"), call(2.2, interrupt)]
    target = EvidenceTarget(script, tmp_path / "store")
    with pytest.raises(Interrupted) as caught:
        _confirm(base, tmp_path, target)
    rec = caught.value.record
    assert rec.diagnostics is not None
    index = json.loads((tmp_path / "reports" / "diagnostics" / INDEX).read_text())
    assert index["why"] == "the run was interrupted"
    assert "the config RLinf printed: not in the log read" in index["unread"]
    assert SECRET not in _every_byte(tmp_path / "reports" / "diagnostics")


def test_a_target_that_cannot_say_gives_the_records_own_evidence(base: Any, tmp_path: Path) -> None:
    rec = _confirm(base, tmp_path, ScriptedTarget(_red_script(), tmp_path / "store"))
    index = json.loads((tmp_path / "reports" / "diagnostics" / INDEX).read_text())
    assert (
        "the Pod, its node, Ray's session logs: the scripted target cannot say" in index["unread"]
    )
    assert "pod.json" in index["files"] and "node.json" not in index["files"]
    pod_json = json.loads((tmp_path / "reports" / "diagnostics" / "pod.json").read_text())
    assert pod_json["status"]["exit_code"] == 1 and rec.diagnostics is not None


def test_the_window_follows_the_cause_anywhere_in_a_long_log() -> None:
    log = LogTail()
    text = [f"line {i}" for i in range(5000)]
    log.extend(text[:2000])
    log.around(1990)  # named when its block ended, a few lines on
    log.extend(text[2000:])
    assert log.window_from == 1990 - LogTail.BEFORE
    assert log.window == text[1990 - LogTail.BEFORE : 1990 + LogTail.AFTER + 1]
    excerpt, segments = log_excerpt(log)
    assert [(s["from"], s["to"]) for s in segments] == [
        (1, 50),
        (1990 - LogTail.BEFORE + 1, 1990 + LogTail.AFTER + 1),
        (5000 - LAST_LINES + 1, 5000),
    ]
    back = excerpt_lines(excerpt, segments)
    assert [(first, kept[0], kept[-1]) for first, kept in back] == [
        (0, "line 0", "line 49"),
        (1950, "line 1950", "line 2070"),
        (4800, "line 4800", "line 4999"),
    ]


def test_a_cause_read_past_keeps_the_lines_still_kept() -> None:
    log = LogTail()
    log.extend([f"line {i}" for i in range(3000)])
    log.around(2550)  # more than the tail back: what is still kept of its window
    assert log.window_from == 2600 and log.window[0] == "line 2600"
    assert log.window[-1] == f"line {2550 + LogTail.AFTER}"
    log.extend(["later"])
    assert log.window[-1] == f"line {2550 + LogTail.AFTER}", "past the window's end"


def test_an_index_not_a_bundles_own_removes_nothing(tmp_path: Path) -> None:
    (tmp_path / INDEX).write_text(json.dumps({"files": {"a.txt": 1}}), encoding="utf-8")
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "other").mkdir()
    assert clear_earlier(tmp_path) == []
    assert (tmp_path / "a.txt").exists()
    forged = {"writtenBy": "rlark-acceptance diagnostics bundle", "files": {"../outside": 1}}
    (tmp_path / INDEX).write_text(json.dumps(forged), encoding="utf-8")
    (tmp_path.parent / "outside").write_text("keep", encoding="utf-8")
    clear_earlier(tmp_path)
    assert (tmp_path.parent / "outside").read_text(encoding="utf-8") == "keep"


def _diagnose(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["diagnose", *args])
    return status, out.getvalue(), err.getvalue()


def test_diagnose_reads_a_red_run_by_its_run_id(base: Any, tmp_path: Path) -> None:
    rec = _confirm(base, tmp_path, EvidenceTarget(_red_script(), tmp_path / "store"))
    reports = str(tmp_path / "reports")
    status, words, err = _diagnose(str(rec.run_id), "--reports-dir", reports)
    assert (status, err) == (1, ""), words
    line = rec.first_cause.line + 1
    assert f"verdict: failed  first cause at log line {line} of {rec.log.count}" in words, words
    assert '"ValueError: bad task id for token ***"' in words and SECRET not in words
    assert f"run {rec.run_id} ({reports}): failed at 6.4" in words, words
    assert (
        "node local-node: no Ready condition reported (its conditions: MemoryPressure False)"
        in words
    )
    status, out, _ = _diagnose(str(rec.run_id), "--reports-dir", reports, "--json")
    found = json.loads(out)
    assert found["firstCause"]["line"] == line and found["check"] == "6.4", found
    assert found["run"]["bundle"] == str(tmp_path / "reports" / "diagnostics"), found
    assert found["pod"]["nodeConditions"]["conditions"][0]["type"] == "MemoryPressure"


def test_a_run_id_not_in_the_reports_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "run-summary.json").write_text(
        json.dumps({"runId": "261207000000-aaaaaa", "verdict": "passed"}), encoding="utf-8"
    )
    status, out, err = _diagnose("261207000001-bbbbbb", "--reports-dir", str(tmp_path))
    assert status == 2 and out == "", out
    assert err == (
        f"rlark-acceptance: run 261207000001-bbbbbb: not found in {tmp_path} (the record "
        "there is run 261207000000-aaaaaa's): give --reports-dir\n"
    ), err
    status, out, err = _diagnose("261207000000-aaaaaa", "--reports-dir", str(tmp_path))
    assert (status, err) == (0, ""), out
    assert "verdict: no failure" in out
    (tmp_path / "run-summary.json").write_text("{not json", encoding="utf-8")
    status, _, err = _diagnose("261207000000-aaaaaa", "--reports-dir", str(tmp_path))
    assert status == 2 and err.count("\n") == 1 and "run-summary.json: is not JSON" in err
