"""Benchmark: the secret scan (3.6 / 5.8) on the labelled corpus, against a named baseline.

    python bench/secret_scan.py [--baseline REV] [--configs DIR ...] [--rounds N]

The corpus is ``tests/secret_corpus.py`` (fake secrets of every kind in every place a Job
holds them, and benign lookalikes). Each case runs through the pre-flight as a user runs it
(``preflight_files``): a positive counts as found when a secret finding of one of its kinds
is at its line, a benign case as a false positive when it gets any secret finding, and a
finding that quotes 8 characters of a value as an echo. Time per Job YAML is the 5.8 scan
of the parsed Job (``scan_tree``) and the whole pre-flight of it. ``--baseline REV`` runs the
same corpus on the scanner of that commit (``git archive`` of its ``src/``, in a
subprocess) and prints both. ``--configs DIR`` also counts secret findings on every RLinf
config under DIR (expected: none).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def measure(rounds: int, config_dirs: list[str]) -> dict[str, Any]:
    import rlark_acceptance
    from rlark_acceptance.model.yamlsrc import load_yaml
    from rlark_acceptance.preflight.entry import preflight_files

    try:
        from rlark_acceptance.secrets import scan_tree
    except ImportError:  # a baseline from before the scan moved out of the pre-flight
        from rlark_acceptance.preflight.secrets import scan_tree  # type: ignore[no-redef]
    from tests.secret_corpus import CONFIG, JOB, build

    cases = build()
    scanner = str(Path(rlark_acceptance.__file__).parent)
    found = missed = false_pos = echoed = 0
    missed_labels: list[str] = []
    fp_labels: list[str] = []
    scan_times: list[float] = []
    whole_times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            path = Path(tmp) / ("job.yaml" if case.file == "job" else "config.yaml")
            path.write_text(case.text)
            job, config = (path, CONFIG) if case.file == "job" else (JOB, path)
            t0 = time.perf_counter()
            result = preflight_files(config, job=job)
            whole_times.append(time.perf_counter() - t0)
            if case.file == "job":
                data = load_yaml(path).data
                best = float("inf")
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    scan_tree(data)
                    best = min(best, time.perf_counter() - t0)
                scan_times.append(best)
            hits = [
                f
                for f in result.findings
                if f.code.startswith("secret-") and f.location and f.location.file == str(path)
            ]
            if case.planted:
                pieces = {case.planted[i : i + 8] for i in range(max(1, len(case.planted) - 7))}
                echoed += any(p in f.message for f in hits for p in pieces)
            if not case.kinds:
                false_pos += bool(hits)
                if hits:
                    fp_labels.append(case.label)
            elif any(
                f.code.removeprefix("secret-") in case.kinds and f.location.line == case.line
                for f in hits
                if f.location
            ):
                found += 1
            else:
                missed += 1
                missed_labels.append(case.label)
    config_hits = 0
    config_files = 0
    for d in config_dirs:
        for p in sorted(Path(d).rglob("*.y*ml")):
            text = p.read_text(errors="replace")
            if "cluster:" not in text:
                continue
            config_files += 1
            try:
                r = preflight_files(p)
            except Exception:  # a file the pre-flight refuses has no secret finding
                continue
            config_hits += sum(1 for f in r.findings if f.code.startswith("secret-"))
    scan_times.sort()
    whole_times.sort()
    return {
        "scanner": scanner,
        "positives": found + missed,
        "found": found,
        "missed": missed_labels,
        "benign": sum(1 for c in cases if not c.kinds),
        "falsePositives": fp_labels,
        "echoed": echoed,
        "scanMsPerJob": 1000 * scan_times[len(scan_times) // 2],
        "preflightMsPerJob": 1000 * whole_times[len(whole_times) // 2],
        "configFiles": config_files,
        "configSecretFindings": config_hits,
    }


def baseline(rev: str, rounds: int, config_dirs: list[str]) -> dict[str, Any]:
    """The same measurement with the ``src/`` of ``rev`` (this tree's corpus and tests)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = subprocess.run(
            [sys.executable, __file__, "--json", "--rounds", str(rounds)]
            + [a for d in config_dirs for a in ("--configs", d)],
            env={**os.environ, "RLARK_BENCH_SRC": str(Path(tmp) / "src")},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def show(name: str, r: dict[str, Any]) -> None:
    recall = 100 * r["found"] / r["positives"]
    print(f"{name} ({r['scanner']}):")
    print(f"  recall           {r['found']}/{r['positives']} ({recall:.1f} %)")
    print(f"  false positives  {len(r['falsePositives'])} of {r['benign']} benign cases")
    print(f"  values echoed    {r['echoed']}")
    print(f"  scan per Job     {r['scanMsPerJob']:.2f} ms (median, best of rounds)")
    print(f"  pre-flight/Job   {r['preflightMsPerJob']:.1f} ms (median)")
    if r["configFiles"]:
        print(f"  RLinf configs    {r['configFiles']} files, {r['configSecretFindings']} findings")
    for label in r["missed"]:
        print(f"    missed: {label}")
    for label in r["falsePositives"]:
        print(f"    false positive: {label}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", metavar="REV", help="also measure the scanner of this commit")
    ap.add_argument("--configs", action="append", default=[], metavar="DIR")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, os.environ.get("RLARK_BENCH_SRC", str(ROOT / "src")))
    sys.path.insert(1, str(ROOT))
    ours = measure(args.rounds, args.configs)
    if args.json:
        print(json.dumps(ours))
        return 0
    if args.baseline:
        show(f"baseline {args.baseline}", baseline(args.baseline, args.rounds, args.configs))
    show("this tree", ours)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
