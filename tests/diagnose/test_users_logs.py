"""First-cause accuracy of ``rlark-acceptance diagnose`` on the logs users of RLinf and of
other Ray-based RL trainers pasted into public issues (``tests/diagnose/users/``): messier
than the constructed corpus and the harness's own real runs (logs cut at the top and at the
bottom, a user's "...", vLLM's logger prefix on every traceback line, a terminal's wrapped
lines), and written by other hands than the classifier's.

Measured as ``test_accuracy`` measures the other corpora: the share whose class is right,
the share whose quoted line is the first cause, the share of knock-on lines never quoted.
What each log's first cause is comes from its thread and fix (``users/manifest.yaml``); a
log ``diagnose`` misses must say why there (``miss``), and one that says so but no longer
misses fails too."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlark_acceptance.diagnose import Diagnosis, batches, diagnose
from rlark_acceptance.rlinf.failures import FAILURE_CLASSES
from tests.diagnose.test_accuracy import (
    Score,
    coloured,
    crlf,
    first_line_holding,
    knock_ons,
    tqdm,
)

USERS = Path(__file__).resolve().parent / "users"
MANIFEST = USERS / "manifest.yaml"
COMMAND = Path(sys.executable).parent / "rlark-acceptance"
KNOWN = {c.id for c in FAILURE_CLASSES}


@dataclass(frozen=True)
class Report:
    """A user's log and what its thread says its first cause is."""

    file: str
    lines: list[str]
    kind: str | None  # None: no class fits
    cause: str  # a substring of the first-cause line
    actor: str | None
    miss: str | None
    entry: dict[str, Any]


def reports() -> list[Report]:
    entries = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))["logs"]
    return [
        Report(
            e["file"],
            (USERS / e["file"]).read_text(encoding="utf-8").splitlines(),
            e["class"],
            e["cause"],
            e["actor"],
            e["miss"],
            e,
        )
        for e in entries
    ]


REPORTS = reports()


def judge(r: Report, d: Diagnosis, score: Score) -> list[str]:
    """Score one log as ``test_accuracy.judge`` does, the expected line named by a
    substring of it; what it missed, in words."""
    missed = []
    score.logs += 1
    c = d.cause
    found = c.kind.id if c is not None and c.kind is not None else None
    if c is not None and found == r.kind:
        score.class_right += 1
    else:
        missed.append(f"class {found}, not {r.kind}")
    if c is not None and r.cause in c.quote and c.line == first_line_holding(r.lines, r.cause):
        score.line_right += 1
    else:
        missed.append(f"quoted line {c.line + 1 if c else None}: {c.quote if c else None!r}")
    if r.actor is not None and (c is None or c.actor != r.actor):
        missed.append(f"actor {c.actor if c else None}, not {r.actor}")
    return missed + knock_ons(r.kind, r.lines, c, score)


def test_the_manifest_names_each_log_once_with_its_source_and_reasons() -> None:
    files = sorted(p.name for p in USERS.glob("*.log"))
    assert sorted(r.file for r in REPORTS) == files and len(files) >= 17
    for r in REPORTS:
        src = r.entry["source"]
        assert src["url"] == f"https://github.com/{src['repository']}/issues/{src['issue']}"
        assert r.kind is None or r.kind in KNOWN, r.file
        assert all(r.entry[k] for k in ("trainer", "excerpt", "thread", "why")), r.file
        assert any(r.cause in line for line in r.lines), (r.file, r.cause)
    # RLinf's own users first: the issue names these threads.
    rlinf = {r.entry["source"]["issue"] for r in REPORTS if "RLinf/" in r.entry["source"]["url"]}
    assert {681, 953} <= rlinf


def test_first_cause_accuracy_on_users_reports(capsys: pytest.CaptureFixture[str]) -> None:
    score, misses = Score(), {}
    for r in REPORTS:
        missed = judge(r, diagnose([r.lines]), score)
        if missed:
            misses[r.file] = "; ".join(missed)
    with capsys.disabled():
        sys.stderr.write("\n" + score.line("users' reports") + "\n")
    explained = {r.file for r in REPORTS if r.miss}
    assert sorted(misses) == sorted(explained), misses
    assert score.logs == len(REPORTS) and score.knock_on_lines > 0, score


@pytest.mark.parametrize("r", REPORTS, ids=lambda r: r.file.removesuffix(".log"))
def test_the_command_on_each_users_log(tmp_path: Path, r: Report) -> None:
    """The installed command on the file, as the user would have run it on their log."""
    done = subprocess.run(
        [str(COMMAND), "diagnose", str(USERS / r.file), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = json.loads(done.stdout)
    inside = diagnose([r.lines]).cause
    assert out["lines"] == len(r.lines) and done.stderr == "", done.stderr
    if inside is None:  # a miss the manifest explains: the log read as showing no failure
        assert done.returncode == 0 and out["firstCause"] is None and r.miss, out
        return
    assert done.returncode == 1 and out["class"] == (inside.kind.id if inside.kind else None)
    assert (out["firstCause"]["line"], out["firstCause"]["text"]) == (inside.line + 1, inside.quote)
    assert out["knockOns"] == inside.knock_ons and (out["remedy"] is None) == (inside.kind is None)


@pytest.mark.parametrize("variant", [crlf, coloured, tqdm], ids=lambda v: v.__name__)
def test_a_users_log_saved_another_way_reads_the_same(
    variant: Callable[[list[str]], list[str]],
) -> None:
    for r in REPORTS:
        plain = diagnose([r.lines]).cause
        text = "\n".join(variant(r.lines)) + "\n"
        for chunk in (7, 1 << 20):
            seen = diagnose(batches(io.BytesIO(text.encode()), chunk)).cause
            assert seen == plain, (r.file, chunk, seen)
