"""The profile and Job that Step 6's unit tests submit to the scripted target; a history of
runs on a folder and on the S3 test server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.model.training import OFF
from rlark_acceptance.preflight.entry import preflight_profile
from rlark_acceptance.run.history import History, open_history
from rlark_acceptance.storage import S3Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base() -> tuple[Profile, Any]:
    """The page's phases alone: the scripted Workers of these tests print one step and write
    no TensorBoard events, so the training checks (on by default) are off here; they have
    their own tests with them on (``training``)."""
    path = ROOT / "profiles" / "local.yaml"
    pre = preflight_profile(path)
    assert pre.job is not None
    return replace(load_profile(path), training=OFF), pre.job


@pytest.fixture(scope="module")
def training() -> tuple[Profile, Any]:
    """The embedded default as it is: the training checks on."""
    path = ROOT / "profiles" / "local.yaml"
    pre = preflight_profile(path)
    assert pre.job is not None
    return load_profile(path), pre.job


@pytest.fixture(params=["folder", "s3"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[History]:
    if request.param == "folder":
        yield open_history("history", tmp_path)
        return
    s3_env = request.getfixturevalue("s3_env")
    prefix = f"rlark-acceptance-tests/{uuid.uuid4().hex}"
    found = open_history(f"s3://{s3_env.bucket}/{prefix}", tmp_path, client=s3_env.client())
    try:
        yield found
    finally:
        store = S3Store(s3_env.client(), s3_env.bucket, prefix)
        store.delete([o.key for o in store.list("")])
