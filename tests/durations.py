"""The suite's profile: seconds per test file, from a run's JUnit XML.

``./run tests`` runs ``tests/`` on several workers, a file to a worker (its module fixtures
are made once). Files are handed out in the order of ``tests/durations.json``, longest
first, so the longest do not start last and leave the other workers idle at the end; a
file not listed goes after them. Regenerate it from a whole run's JUnit on this kind of
machine:

    python tests/durations.py reports/tests/junit.xml          # print the slowest files
    python tests/durations.py reports/tests/junit.xml --write  # and keep them
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DURATIONS = HERE / "durations.json"


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


def known() -> dict[str, float]:
    if not DURATIONS.is_file():
        return {}
    data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in data.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--write", action="store_true", help=f"write {DURATIONS.name}")
    args = ap.parse_args(argv)
    seconds = per_file(args.junit)
    for name, s in list(seconds.items())[:30]:
        print(f"{s:8.1f} s  {name}")
    print(f"{sum(seconds.values()):8.1f} s  in {len(seconds)} files")
    if args.write:
        rounded = {k: round(v, 1) for k, v in seconds.items()}
        DURATIONS.write_text(json.dumps(rounded, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
