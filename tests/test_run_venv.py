"""``./run``'s virtualenv step: ``acceptance`` installs what the suite imports, ``tests``
and ``check`` the tools as well, and neither installs again what is there."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "run"


def ensure_venv(folder: Path, extras: str) -> list[str]:
    """``ensure_venv EXTRAS`` of ``./run`` in ``folder``, whose ``.venv/bin/python`` records
    each call; returns the pip commands it ran."""
    calls = folder / "calls.txt"
    calls.write_text("")
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    python.chmod(0o755)
    script = (
        'say() { :; }; eval "$(sed -n \'/^ensure_venv() {/,/^}/p\' "$1")"; '
        'set -euo pipefail; cd "$2"; ensure_venv "$3"'
    )
    subprocess.run(["bash", "-c", script, "x", str(RUN), str(folder), extras], check=True)
    return [c for c in calls.read_text().splitlines() if "-e" in c.split()]


@pytest.mark.parametrize(
    ("stamp", "extras", "installs"),
    [
        (None, "local,charts", ".[local,charts]"),
        ("{h} local,charts", "local,charts", None),
        ("{h} dev", "local,charts", None),  # dev holds the suite's extras
        ("{h} local,charts", "dev", ".[dev]"),
        ("{h} dev", "dev", None),
        ("{h}", "dev", ".[dev]"),  # a stamp without its extras (an older ./run's)
        ("0123 dev", "dev", ".[dev]"),  # pyproject.toml changed since
    ],
)
def test_the_virtualenv_is_installed_with_the_extras_asked_unless_it_has_them(
    tmp_path: Path, stamp: str | None, extras: str, installs: str | None
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    digest = hashlib.sha256((tmp_path / "pyproject.toml").read_bytes()).hexdigest()
    (tmp_path / ".venv").mkdir()
    if stamp is not None:
        (tmp_path / ".venv" / ".rlark-installed").write_text(stamp.format(h=digest) + "\n")
    ran = ensure_venv(tmp_path, extras)
    assert ran == ([] if installs is None else [f"-m pip install -q -e {installs}"])
    kept = (stamp or "").format(h=digest)
    expected = f"{digest} {extras}" if installs else kept
    assert (tmp_path / ".venv" / ".rlark-installed").read_text() == expected + "\n"
