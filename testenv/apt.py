"""Debian packages the real node and the Worker image need, installed only when missing.

`testenv up cluster` calls ``ensure()`` itself, so a fresh machine needs nothing installed
by hand: one ``apt-get install`` of the missing packages (after ``apt-get update`` if the
package lists do not know them yet), idempotent and quiet when everything is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from testenv import versions
from testenv.build import BuildError, say


def missing(packages: tuple[str, ...]) -> list[str]:
    out = []
    for pkg in packages:
        res = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Status}", pkg],
            capture_output=True,
            text=True,
        )
        if res.stdout.strip() != "installed":
            out.append(pkg)
    return out


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        ["apt-get", "-q", "-y", *args], capture_output=True, text=True, env=env, timeout=900
    )


def ensure(packages: tuple[str, ...] = versions.APT_PACKAGES) -> list[str]:
    """Install what is missing; returns the packages installed now."""
    todo = missing(packages)
    if not todo:
        return []
    if shutil.which("apt-get") is None:
        raise BuildError(f"missing Debian packages {', '.join(todo)} and no apt-get to install")
    say(f"installing Debian packages: {' '.join(todo)}")
    # Recommends stay out: runc would pull in criu, which nothing here uses.
    res = _apt("install", "--no-install-recommends", *todo)
    if res.returncode != 0:
        _apt("update")
        res = _apt("install", "--no-install-recommends", *todo)
    if res.returncode != 0:
        raise BuildError(f"apt-get install {' '.join(todo)} failed:\n{res.stderr[-2000:]}")
    return todo
