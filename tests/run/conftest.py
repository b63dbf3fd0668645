"""The profile and Job that Step 6's unit tests submit to the scripted target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.preflight.entry import preflight_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base() -> tuple[Profile, Any]:
    path = ROOT / "profiles" / "local.yaml"
    pre = preflight_profile(path)
    assert pre.job is not None
    return load_profile(path), pre.job
