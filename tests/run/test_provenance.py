"""What a run ran with: the harness and its commit, the digests, the image, the node, and
what changed since the previous run."""

from __future__ import annotations

import doctest
import hashlib
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from rlark_acceptance.run.provenance import changes, collect, harness_commit, utc_iso


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_commit_of_a_checkout_and_whether_its_tree_is_dirty(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "f.txt").write_text("one\n", encoding="utf-8")
    _git(tmp_path, "add", "f.txt")
    _git(tmp_path, "commit", "-qm", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert harness_commit(tmp_path) == (head, False)
    (tmp_path / "f.txt").write_text("two\n", encoding="utf-8")
    assert harness_commit(tmp_path) == (head, True)


def test_outside_a_checkout_there_is_no_commit(tmp_path: Path) -> None:
    assert harness_commit(tmp_path / "not-a-checkout") == (None, None)


def test_collect_digests_the_files_and_names_the_run(tmp_path: Path) -> None:
    profile = tmp_path / "p.yaml"
    profile.write_bytes(b"name: p\n")
    start = datetime(2026, 12, 1, 23, 0, 5, tzinfo=timezone(timedelta(hours=8)))
    p = collect(
        root=tmp_path,
        profile_name="p",
        profile=profile,
        job_text="kind: Job\n",
        image="smoke:0.1.0",
        image_id=None,
        node="gpu-1",
        run_id="r1",
        started=start,
        finished=start + timedelta(seconds=30),
    ).as_dict()
    assert p["profileSha256"] == hashlib.sha256(b"name: p\n").hexdigest()
    assert p["jobSha256"] == hashlib.sha256(b"kind: Job\n").hexdigest()
    assert p["harnessVersion"]  # the installed package's metadata
    assert (p["startedAt"], p["finishedAt"]) == ("2026-12-01T15:00:05Z", "2026-12-01T15:00:35Z")
    assert {k: p[k] for k in ("profileName", "image", "imageId", "node", "runId")} == {
        "profileName": "p",
        "image": "smoke:0.1.0",
        "imageId": None,
        "node": "gpu-1",
        "runId": "r1",
    }
    assert utc_iso(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"


def test_changes_since_the_previous_run_are_named() -> None:
    before = {"image": "a:1", "imageId": "x", "node": "n1", "harnessCommit": "c" * 40}
    after = {"image": "a:2", "imageId": "y", "node": "n1", "harnessCommit": "d" * 40}
    assert changes(before, after) == [
        "image changed (a:1 → a:2)",
        f"harness commit changed ({'c' * 12} → {'d' * 12})",
    ]
    assert changes(before, before) == []
    assert changes(None, after) == []
    assert changes({"node": "n1", "jobSha256": "1"}, {"node": "n2", "jobSha256": "2"}) == [
        "node changed (n1 → n2)",
        "Job YAML changed",
    ]


def test_what_the_target_said_is_kept_and_its_image_id_comes_first(tmp_path: Path) -> None:
    now = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
    said = {
        "imageId": "env:sha256:" + "a" * 64,
        "rayVersion": "2.60.0",
        "unread": "the API server's version: refuses connections",
    }
    p = collect(
        root=tmp_path,
        profile_name="p",
        profile=tmp_path / "none.yaml",
        job_text=None,
        image="smoke:0.1.0",
        image_id="sha256:" + "b" * 64,  # the Pod's, where the adapter said none
        node="n",
        run_id="r",
        started=now,
        finished=now,
        described=said,
    ).as_dict()
    assert (p["imageId"], p["rayVersion"]) == (said["imageId"], "2.60.0")
    assert p["unread"] == said["unread"]
    assert p["rlinfVersion"] is None and p["kubeletVersion"] is None


def test_a_fact_one_of_two_runs_lacks_is_no_change() -> None:
    digest = "sha256:" + "1" * 64
    before = {"imageId": None, "kubeletVersion": "v1.31.0", "rayVersion": "2.60.0"}
    after = {"imageId": digest, "kubeletVersion": None, "rayVersion": "2.61.0"}
    assert changes(before, after) == ["Ray changed (2.60.0 → 2.61.0)"]
    rebuilt = {"imageId": "sha256:" + "2" * 64}
    assert changes({"imageId": digest}, rebuilt) == [
        "image changed (sha256:111111111111 → sha256:222222222222)"
    ]


def test_the_examples_in_the_docstrings_hold() -> None:
    from rlark_acceptance.run import provenance
    from rlark_acceptance.run.step6 import record

    for module in (provenance, record):
        assert doctest.testmod(module).failed == 0, module.__name__
