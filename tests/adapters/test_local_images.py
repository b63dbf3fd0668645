"""What the local target runs as an image: the environment the profile names."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from rlark_acceptance.adapters.local.images import LocalImage, describe, resolve

VENV = Path(sys.prefix)


def test_an_environment_named_through_a_symlink_is_its_own_folder(tmp_path: Path) -> None:
    # ``environment: ~/envs/current``, a link to a versioned venv: the Pod's root shows the
    # venv's folder, so PATH and VIRTUAL_ENV must name that folder and not the link.
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "current").symlink_to(VENV, target_is_directory=True)
    image = resolve("smoke:1", {"smoke:1": {"environment": "envs/current"}}, tmp_path)
    assert image.environment == Path(os.path.realpath(VENV))
    assert image.bin == os.path.join(os.path.realpath(VENV), "bin")


def test_an_environment_is_described_by_its_own_interpreter(tmp_path: Path) -> None:
    """The image ID digests what the environment holds, so one rebuilt with another package
    is another image; Ray's version is the one it holds, as pip's metadata says."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    image = resolve("w:1", {"w:1": {"environment": str(env)}}, tmp_path)
    bare = describe(image)
    assert set(bare) == {"imageId"} and bare["imageId"].startswith("env:sha256:"), bare
    (site,) = env.glob("lib/python3*/site-packages")
    info = site / "ray-9.9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ray\nVersion: 9.9.9\n")
    rebuilt = describe(image)
    assert rebuilt["rayVersion"] == "9.9.9" and rebuilt["imageId"] != bare["imageId"]
    # This checkout's environment, as the default profile names it.
    ours = describe(resolve("w:1", {"w:1": {"environment": str(VENV)}}, tmp_path))
    assert ours["rayVersion"] == metadata.version("ray")


def test_a_locked_environment_is_its_lock_files_digest(tmp_path: Path) -> None:
    lock = tmp_path / "worker.lock"
    lock.write_text("ray==2.60.0\n")
    image = LocalImage("w:1", VENV, lock=lock)
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    assert describe(image)["imageId"] == f"lock:sha256:{digest}"


def test_an_environment_that_cannot_answer_is_unread(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text("#!/bin/sh\necho broken >&2; exit 3\n")
    (tmp_path / "bin" / "python").chmod(0o755)
    said = describe(LocalImage("w:1", tmp_path))
    assert said == {"unread": f"the environment {tmp_path}: broken"}
