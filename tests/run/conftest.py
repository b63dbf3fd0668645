"""The profile and Job that Step 6's unit tests submit to the scripted target."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.model.training import OFF
from rlark_acceptance.preflight.entry import preflight_profile

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
