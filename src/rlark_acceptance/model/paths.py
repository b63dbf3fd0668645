"""A path as a user writes it in a file the harness reads: ``~`` and ``$VAR`` expanded as
the shell they would type it in does, relative paths relative to the file's folder.

A site engineer copies a path from a terminal (``~/.kube/config``,
``$SITE_HOME/rlinf.yaml``); read literally it names a folder ``~`` beside the profile and
fails far from the line that wrote it. A variable that is not set is refused, since its
path cannot be what was meant.

>>> user_path("conf/x.yaml", Path("/site"), ValueError)
PosixPath('/site/conf/x.yaml')
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

# What ``os.path.expandvars`` leaves of a variable that is not set: ``$NAME`` or ``${NAME}``.
_UNEXPANDED = re.compile(r"\$(?:\w+|\{[^}]*\})")


def expanded(text: str, fail: Callable[[str], Exception]) -> str:
    """``text`` with ``~`` and ``$VAR`` expanded; ``fail(why)`` is raised for a variable that
    is not set or a user that does not exist."""
    out = os.path.expandvars(os.path.expanduser(text))
    unset = _UNEXPANDED.search(out)
    if unset:
        raise fail(f"{unset.group(0)} is not set in the environment")
    if out.startswith("~"):
        raise fail(f"{out.split('/', 1)[0]} names no user of this machine")
    return out


def user_path(text: str, base: Path, fail: Callable[[str], Exception]) -> Path:
    """``text`` expanded, and under ``base`` when relative."""
    p = Path(expanded(text, fail))
    return p if p.is_absolute() else base / p
