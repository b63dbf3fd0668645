"""The suite's profile: seconds per test file, from a run's JUnit XML, the slowest first.

``./run tests`` runs ``tests/`` on several workers, a file to a worker; a file's seconds
are what its worker spent in it, waits on a busy machine included. What to look at first
when the suite gets slower:

    python tests/durations.py reports/tests/junit.xml

``--write`` keeps the figures in ``tests/durations.json``: the next runs hand out the longest
files first (``fixtures/test_order.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument(
        "--write",
        action="store_true",
        help="also write tests/durations.json, the order the next runs hand files out in",
    )
    args = ap.parse_args(argv)
    seconds = per_file(args.junit)
    if args.write:
        rounded = {name: round(s, 1) for name, s in seconds.items()}
        DURATIONS.write_text(json.dumps(rounded, indent=1) + "\n", encoding="utf-8")
    for name, s in list(seconds.items())[:30]:
        print(f"{s:8.1f} s  {name}")
    print(f"{sum(seconds.values()):8.1f} s  in {len(seconds)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
