"""The secret scan on a labelled corpus, through the pre-flight as a user runs it (3.6 / 5.8).

Every planted secret is found at its line with one of its kinds, no benign lookalike is
flagged, no finding echoes a value, and RLinf's real configs in ``tests/data`` give no
secret finding at all. ``bench/secret_scan.py`` prints the same figures and the time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.preflight.entry import preflight_files
from tests.secret_corpus import CONFIG, JOB, Case, build

CASES = build()
DATA = Path(__file__).resolve().parents[1] / "data" / "rlinf-configs"


def secret_findings(case: Case, tmp: Path) -> list[tuple[str, int | None, str]]:
    """(kind, line, message) of every secret finding the pre-flight gives the case."""
    path = tmp / ("job.yaml" if case.file == "job" else "config.yaml")
    path.write_text(case.text)
    job, config = (path, CONFIG) if case.file == "job" else (JOB, path)
    result = preflight_files(config, job=job)
    return [
        (f.code.removeprefix("secret-"), f.location.line if f.location else None, f.message)
        for f in result.findings
        if f.code.startswith("secret-") and f.location and f.location.file.endswith(path.name)
    ]


@pytest.mark.parametrize("case", [c for c in CASES if c.kinds], ids=lambda c: c.label)
def test_a_planted_secret_is_found_at_its_line_by_kind(case: Case, tmp_path: Path) -> None:
    found = secret_findings(case, tmp_path)
    assert any(kind in case.kinds and line == case.line for kind, line, _ in found), found
    if case.planted:
        pieces = {case.planted[i : i + 8] for i in range(max(1, len(case.planted) - 7))}
        assert not any(p in message for _, _, message in found for p in pieces), found


@pytest.mark.parametrize("case", [c for c in CASES if not c.kinds], ids=lambda c: c.label)
def test_a_benign_lookalike_is_not_flagged(case: Case, tmp_path: Path) -> None:
    assert secret_findings(case, tmp_path) == []


def test_the_corpus_covers_every_place_and_form() -> None:
    positives = [c for c in CASES if c.kinds]
    kinds = set().union(*(c.kinds for c in positives))
    assert len(positives) >= 60 and len(CASES) - len(positives) >= 25
    assert {"command-argument", "docker-auth", "cloud-secret-key", "private-key"} <= kinds
    assert {c.file for c in positives} == {"job", "config"}


def _real_configs() -> list[Path]:
    return [
        p
        for p in sorted(DATA.rglob("*.yaml"))
        if p.read_text(errors="replace").lstrip().startswith(("defaults:", "cluster:"))
        or "\ncluster:" in p.read_text(errors="replace")
    ]


def test_real_rlinf_configs_give_no_secret_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBODIED_PATH", str(DATA / "examples" / "embodiment"))
    monkeypatch.setenv("REPO_PATH", str(DATA))
    configs = _real_configs()
    assert len(configs) >= 50
    flagged = {
        str(p.relative_to(DATA)): [f.message for f in r.findings if f.code.startswith("secret-")]
        for p in configs
        if (r := preflight_files(p))
    }
    assert {k: v for k, v in flagged.items() if v} == {}
