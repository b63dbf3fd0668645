"""What the local target runs as an image: the environment the profile names."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rlark_acceptance.adapters.local.images import resolve

VENV = Path(sys.prefix)


def test_an_environment_named_through_a_symlink_is_its_own_folder(tmp_path: Path) -> None:
    # ``environment: ~/envs/current``, a link to a versioned venv: the Pod's root shows the
    # venv's folder, so PATH and VIRTUAL_ENV must name that folder and not the link.
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "current").symlink_to(VENV, target_is_directory=True)
    image = resolve("smoke:1", {"smoke:1": {"environment": "envs/current"}}, tmp_path)
    assert image.environment == Path(os.path.realpath(VENV))
    assert image.bin == os.path.join(os.path.realpath(VENV), "bin")
