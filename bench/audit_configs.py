"""Benchmark: audit every RLinf config under a directory, against Hydra's compose API.

    python bench/audit_configs.py [DIR ...] [--env NAME=VALUE]   (default: the sample)

Point it at an RLinf checkout (its ``examples/``, ``evaluations/``, ``tests/e2e_tests/``):
the search path variables come from the environment, else from the checkout's launch
scripts, on both sides. Every config flagged is listed with whether Hydra refuses it too;
a config Hydra refuses that the audit passes is listed as NOT flagged.

The anchor composes each config that has a ``cluster`` section with Hydra's own
``initialize_config_dir`` + ``compose``, one after another in one process, which is what a
harness built directly on Hydra would do. The measured side is ``rlark-acceptance configs``'s
code path (``audit``): composition, overrides, interpolation, placement and classification.
Prints both wall times and the ratio anchor / ours.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rlark_acceptance.preflight.audit import audit, walk  # noqa: E402
from rlark_acceptance.rlinf.searchpath import Checkout, checkout_root  # noqa: E402


def launch_env(paths: list[Path]) -> dict[Path, dict[str, str]]:
    """Per config, the variables its search path names, as the checkout's launch scripts
    export them (what RLinf's own scripts set before Hydra starts)."""
    checkouts: dict[Path, Checkout] = {}
    out: dict[Path, dict[str, str]] = {}
    for path in paths:
        names = set(re.findall(r"\$\{oc\.env:(\w+)", path.read_text(errors="replace")))
        root = checkout_root(path)
        if root is None or not names:
            out[path] = {}
            continue
        checkout = checkouts.setdefault(root, Checkout(root))
        found = {n: checkout.lookup(n, path) for n in names}
        out[path] = {n: e.value for n, e in found.items() if e is not None}
    return out


def hydra_anchor(paths: list[Path], env: dict[Path, dict[str, str]]) -> tuple[float, list[Path]]:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    refused: list[Path] = []
    t0 = time.perf_counter()
    for path in paths:
        saved = dict(os.environ)
        os.environ.update(env.get(path, {}))
        GlobalHydra.instance().clear()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with initialize_config_dir(config_dir=str(path.parent), version_base="1.1"):
                    compose(config_name=path.stem)
        except Exception:  # any: whatever Hydra raises, the config is one it refuses
            refused.append(path)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return time.perf_counter() - t0, refused


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--rounds", type=int, default=3, help="best of N for our side")
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="export before both sides run (as a launch script would)",
    )
    args = ap.parse_args()
    if not args.dirs:
        # The sample carries no launch scripts: export what RLinf's would.
        sample = ROOT / "tests" / "data" / "rlinf-configs"
        args.dirs = [str(sample)]
        args.env += [f"EMBODIED_PATH={sample}/examples/embodiment", f"REPO_PATH={sample}"]
    for item in args.env:
        name, _, value = item.partition("=")
        os.environ[name] = value

    files = list(walk(args.dirs))
    best = float("inf")
    rows: list[dict[str, object]] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        rows = audit(args.dirs)  # a fresh loader each round: no cache carried over
        best = min(best, time.perf_counter() - t0)
    configs = [Path(str(r["path"])) for r in rows]
    anchor, refused = hydra_anchor(configs, launch_env(configs))
    flagged = [r for r in rows if r["error"]]
    print(f"yaml files walked:          {len(files)}")
    print(f"configs with a cluster:     {len(configs)} (flagged: {len(flagged)})")
    print(f"rlark-acceptance audit:     {best:.3f} s (best of {args.rounds})")
    print(f"anchor, Hydra compose:      {anchor:.3f} s ({len(refused)} refused)")
    print(f"ratio anchor / ours:        {anchor / best:.1f}x")
    hydra_refused = set(refused)
    for r in flagged:
        mark = "Hydra refuses too" if Path(str(r["path"])) in hydra_refused else "Hydra composes"
        print(f"  flagged ({mark}): {r['path']}: {str(r['error'])[:160]}")
    for p in sorted(hydra_refused - {Path(str(r["path"])) for r in flagged}):
        print(f"  NOT flagged, Hydra refuses: {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
