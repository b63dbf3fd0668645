"""The suite's profile: seconds per test file, from a run's JUnit XML, the slowest first.

``./run tests`` runs ``tests/`` on several workers, a file to a worker; a file's seconds
are what its worker spent in it, waits on a busy machine included. What to look at first
when the suite gets slower:

    python tests/durations.py reports/tests/junit.xml

``--timeline reports/tests/timeline.jsonl`` (written by ``./run tests``,
``fixtures/timeline.py``) says where the workers' time went instead: how long each ran
tests, waited for a turn at the cluster, or sat idle with nothing left to take, and which
tests waited longest.

``--write`` keeps the figures in ``tests/durations.json``: the next runs hand out the longest
files first (``fixtures/test_order.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DURATIONS = HERE / "durations.json"  # read by fixtures/test_order.py


def per_file(junit: Path) -> dict[str, float]:
    """Seconds of each test file (``tests/...py``) in ``junit``, the slowest first."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname") or ""
        if not module.startswith("tests."):
            continue  # a feature's scenario: the features run on their own
        parts = module.split(".")
        # classname is the module, or the module and a class in it
        while parts and not (HERE.parent.joinpath(*parts).with_suffix(".py")).is_file():
            parts.pop()
        if parts:
            seconds["/".join(parts) + ".py"] += float(case.get("time") or 0)
    return dict(sorted(seconds.items(), key=lambda kv: -kv[1]))


@dataclass
class Worker:
    """One worker's share of a session's span, in seconds."""

    running: float = 0.0  # in a test, its turns' waits left out
    waiting: float = 0.0  # for a turn at a shared service
    last_end: float = 0.0

    def idle(self, span: float) -> float:
        return span - self.running - self.waiting


def timeline(lines: list[dict[str, Any]]) -> tuple[float, dict[str, Worker]]:
    """The session's span (its first test's start to its last test's end) and each
    worker's share of it, from ``fixtures/timeline.py``'s lines."""
    if not lines:
        return 0.0, {}
    first = min(line["start"] for line in lines)
    workers: dict[str, Worker] = defaultdict(Worker)
    for line in lines:
        w = workers[line["worker"]]
        w.waiting += line["waited"]
        w.running += line["end"] - line["start"] - line["waited"]
        w.last_end = max(w.last_end, line["end"] - first)
    span = max(line["end"] for line in lines) - first
    return span, dict(sorted(workers.items()))


class Unreadable(Exception):
    """A timeline that cannot be read: the message names the file, and the line."""


def read_timeline(path: Path) -> list[dict[str, Any]]:
    """The lines of ``fixtures/timeline.py``'s file; ``Unreadable`` names what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise Unreadable(f"{path}: {e.strerror if isinstance(e, OSError) else e}") from None
    lines = []
    for n, raw in enumerate(text.splitlines(), 1):
        try:
            if not raw.strip():
                continue
            line = json.loads(raw)
            lines.append(
                {"test": str(line["test"]), "worker": str(line["worker"])}
                | {key: float(line[key]) for key in ("start", "end", "waited")}
            )
        except (ValueError, TypeError, KeyError) as e:
            raise Unreadable(f"{path}:{n}: not a timeline line ({type(e).__name__}: {e})") from None
    if not lines:
        raise Unreadable(f"{path}: no test in it")
    return lines


def print_timeline(path: Path) -> None:
    lines = read_timeline(path)
    span, workers = timeline(lines)
    total = span * len(workers) or 1.0
    running = sum(w.running for w in workers.values())
    waiting = sum(w.waiting for w in workers.values())
    print(
        f"{span:.0f} s on {len(workers)} workers: running {running / total:.0%}, "
        f"waiting for a turn {waiting / total:.0%}, idle {1 - (running + waiting) / total:.0%}"
    )
    for name, w in workers.items():
        print(
            f"  {name}: running {w.running:7.1f} s, waiting {w.waiting:7.1f} s, "
            f"idle {w.idle(span):7.1f} s, done at {w.last_end:7.1f} s"
        )
    waits = sorted((line for line in lines if line["waited"] >= 1.0), key=lambda x: -x["waited"])
    if waits:
        print("longest waits for a turn:")
    first = min(line["start"] for line in lines)
    for line in waits[:30]:
        print(
            f"{line['waited']:8.1f} s  {line['worker']} at {line['start'] - first:7.1f} s  "
            f"{line['test']}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path, nargs="?")
    ap.add_argument(
        "--timeline",
        type=Path,
        metavar="FILE",
        help="say where the workers' time went, from ./run tests' timeline.jsonl",
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="also write tests/durations.json, the order the next runs hand files out in",
    )
    args = ap.parse_args(argv)
    if args.junit is None and args.timeline is None:
        ap.error("give a run's JUnit XML, --timeline FILE, or both")
    if args.timeline is not None:
        try:
            print_timeline(args.timeline)
        except Unreadable as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if args.junit is None:
        return 0
    seconds = per_file(args.junit)
    if args.write:
        rounded = {name: round(s, 1) for name, s in seconds.items()}
        DURATIONS.write_text(json.dumps(rounded, indent=1) + "\n", encoding="utf-8")
    for name, s in list(seconds.items())[:30]:
        print(f"{s:8.1f} s  {name}")
    print(f"{sum(seconds.values()):8.1f} s  in {len(seconds)} files")
    return 0


def run(argv: list[str] | None = None) -> int:
    """``main`` as a command: a reader that goes away (``| head``) ends it quietly."""
    try:
        return main(argv)
    except BrokenPipeError:
        # Nothing more can be said; stdout is pointed at nothing so the flush at exit
        # does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(run())
