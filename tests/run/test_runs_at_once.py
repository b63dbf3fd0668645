"""Runs never collide: two runs of one profile at once on the embedded default target (a CI
retry, two engineers on one machine) both pass, each with its own Job, Pod and outputs, and
each removes only what it created.

Both are ``pytest features/`` of the same profile copy, started together; their records are
read back, and the bucket afterwards.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.run.suite_runs import STEP6_ONLY, run_suites_at_once, site_copy

pytestmark = pytest.mark.slow

RUN_ID = re.compile(r"^\d{12}-[0-9a-f]{6}$")


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def test_two_runs_of_one_profile_at_once_both_pass_each_with_its_own(
    tmp_path: Path, s3_env: Any
) -> None:
    site = site_copy(tmp_path)
    client = s3_env.client()
    prefix = "acceptance/smoke/"
    # What was there before: an object of this test's own under the runs' prefix (other
    # runs on the machine write and remove their own there meanwhile).
    there = f"{prefix}there-before-{secrets.token_hex(3)}/object"
    client.put_object(Bucket=s3_env.bucket, Key=there, Body=b"kept")

    runs = run_suites_at_once(site, 2, "-m", STEP6_ONLY)

    ids = []
    for run in runs:
        s = run.summary
        assert run.returncode == 0, run.explain()
        assert s["verdict"] == "passed" and s["earliestFailure"] is None, s
        assert RUN_ID.match(s["runId"]), s.get("runId")
        ids.append(s["runId"])
        # Its own outputs: found under its own prefix, and removed from there.
        assert f"/{prefix}{s['runId']}/" in s["outputs"]["checkpoint"], s["outputs"]
        assert s["outputs"]["removed"] > 0 and s["outputs"]["kept"] is None, s["outputs"]
        assert s["runId"] in run.output  # the terminal names it too
    assert ids[0] != ids[1]
    # Nothing of either run is left; what was there before is untouched.
    assert client.get_object(Bucket=s3_env.bucket, Key=there)["Body"].read() == b"kept"
    client.delete_object(Bucket=s3_env.bucket, Key=there)
    for run_id in ids:
        left = client.list_objects_v2(Bucket=s3_env.bucket, Prefix=f"{prefix}{run_id}")
        assert not left.get("Contents"), left
