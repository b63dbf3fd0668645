"""The self-checks side by side hand their one Ray head start on whatever happens to a run
(fixtures/side_by_side.py); no test service needed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import rlark_acceptance.adapters as adapters
from fixtures.side_by_side import Planned, SideBySide

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "local.yaml"


def test_a_run_whose_adapter_cannot_open_hands_the_start_on(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails before its submission (its adapter refused to open) still hands
    the start on, so the runs after it do not wait for ever."""

    def refuse(profile: object) -> object:
        raise RuntimeError("the target cannot be opened")

    monkeypatch.setattr(adapters, "open_adapter", refuse)
    profile = SimpleNamespace(target=SimpleNamespace(adapter="local"))
    ahead = SideBySide(pytestconfig, PROFILE, profile, None, tmp_path)
    with pytest.raises(RuntimeError, match="cannot be opened"):
        ahead._run(Planned("a::b", "{}", None))
    assert ahead._starting.acquire(blocking=False), "the start was not handed on"
