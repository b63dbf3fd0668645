"""The harness's own removals at output locations, one line each, in this machine's state.

A checkpoint that was there while the Worker ran and is gone after its deletion was removed
by something: the Worker on its way out, another writer of the location, the store's own
lifecycle, or this harness. The last is the only one the harness can know of, so it writes
down every removal it makes (where, how many, by which run, why) before making it, and a
run whose checkpoint vanished asks this log first: the harness is then named as the
remover, never the RLinf config.

The log is bounded (``MAX_BYTES``: its older half is dropped past that), and it holds
object keys' count and a few of them, never their content.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 512 * 1024
SAMPLE = 3  # keys kept per removal: enough to recognise, never a whole listing


def state_root() -> Path:
    base = os.environ.get("RLARK_ACCEPTANCE_STATE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "rlark-acceptance"


def log_path() -> Path:
    return state_root() / "removals.jsonl"


@dataclass(frozen=True)
class Removal:
    at: float  # wall clock (s since the epoch)
    where: str  # the location's identity (``journal.identity``)
    count: int
    keys: tuple[str, ...]  # the first few
    by: str  # the run that removed
    why: str

    def text(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        return (
            f"the harness's run {self.by} removed {self.count} object(s) at {self.where} at "
            f"{when} ({self.why})"
        )


def log(where: str, keys: list[str], *, by: str, why: str) -> None:
    """Write down a removal about to be made; a log that cannot be written stops nothing."""
    line = json.dumps(
        {
            "at": time.time(),
            "where": where,
            "count": len(keys),
            "keys": keys[:SAMPLE],
            "by": by,
            "why": why,
        }
    )
    path = log_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # one writer at a time, the trim included
            fh.write(line + "\n")
            fh.flush()
            if fh.tell() > MAX_BYTES:
                fh.seek(0)
                lines = fh.readlines()
                fh.seek(0)
                fh.truncate()
                fh.writelines(lines[len(lines) // 2 :])


def _overlaps(a: str, b: str) -> bool:
    """One location lies within the other (a removal of the parent prefix reaches a run's
    own location, and one inside it reaches its checkpoints)."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def removed_at(where: str, since: float) -> list[Removal]:
    """The harness's removals that reached ``where`` since ``since`` (the wall clock)."""
    try:
        lines = log_path().read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    found: list[Removal] = []
    for line in lines:
        try:
            e = json.loads(line)
            keys = tuple(str(k) for k in e["keys"])
            r = Removal(float(e["at"]), str(e["where"]), int(e["count"]), keys, e["by"], e["why"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by a trim or a crash
        if r.at >= since and _overlaps(r.where, where):
            found.append(r)
    return found
