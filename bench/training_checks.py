"""Benchmark: what the training checks (T.1-T.3) add to one Step 6 run.

    python bench/training_checks.py [--runs 5] [--profile profiles/local.yaml]

Runs Step 6 of the profile ``--runs`` times with its training checks as they are and as
many times with ``training: false`` (the baseline), in turn, in one process, and prints the
median time from the submission to Step 6's end (the Worker deleted, the outputs settled),
the ratio of the two, and where the difference goes: the wait from 6.4 to the last step
(T.1), the scalars' reading (T.2) and the checkpoints' tensors (T.3); and the checks' own
work: the time spent in every reading of the scalars and of the tensors, the rest of T.2 and
T.3 being a wait for the Worker to end (its TensorBoard writer flushes when it closes).

Needs the S3 server of the test services (``testenv/testenv up s3`` and
``eval "$(testenv/testenv env)"``), as the acceptance suite does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from rlark_acceptance.adapters import open_adapter  # noqa: E402
from rlark_acceptance.model.training import OFF  # noqa: E402
from rlark_acceptance.preflight.entry import preflight_profile  # noqa: E402
from rlark_acceptance.run.step6 import (  # noqa: E402
    confirm_running,
    engine,
    plan_for,
)

# Seconds spent in the checks' own readings during the current run.
READING: list[float] = []


def timed(fn: Any) -> Any:
    def reading(*args: Any, **kw: Any) -> Any:
        t0 = time.monotonic()
        try:
            return fn(*args, **kw)
        finally:
            READING.append(time.monotonic() - t0)

    return reading


engine.scalars_at = timed(engine.scalars_at)
engine.checkpoints_at = timed(engine.checkpoints_at)


def one(profile: Path, *, training: bool) -> tuple[float, dict[str, float]]:
    READING.clear()
    pre = preflight_profile(profile)
    assert pre.verdict == "pass" and pre.profile is not None, pre
    profile_ = pre.profile if training else replace(pre.profile, training=OFF)
    pre = replace(pre, profile=profile_)
    adapter = open_adapter(profile_)
    try:
        t0 = time.monotonic()
        rec = confirm_running(adapter, plan_for(pre))
        total = time.monotonic() - t0
    finally:
        adapter.close()
    assert rec.passed, {c: (p.status, p.message) for c, p in rec.phases.items()}
    at = {c: p.at for c, p in rec.phases.items() if p.at is not None}
    return total, at


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", type=Path, default=ROOT / "profiles" / "local.yaml")
    args = parser.parse_args()
    on: list[float] = []
    off: list[float] = []
    parts: dict[str, list[float]] = {"T.1": [], "T.2": [], "T.3": []}
    reading: list[float] = []
    one(args.profile, training=True)  # warm-up: the first run's imports and caches
    for _ in range(args.runs):
        total, at = one(args.profile, training=True)
        on.append(total)
        parts["T.1"].append(at["T.1"] - at["6.4"])
        parts["T.2"].append(at["T.2"] - at["T.1"])
        parts["T.3"].append(at["T.3"] - at["6.5"])
        reading.append(sum(READING))
        off.append(one(args.profile, training=False)[0])
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"Step 6, submission to its end, median of {args.runs} ({args.profile.name}):")
    print(f"  training checks on : {m_on:6.2f} s  (min {min(on):.2f}, max {max(on):.2f})")
    print(f"  training: false    : {m_off:6.2f} s  (min {min(off):.2f}, max {max(off):.2f})")
    print(f"  on / off           : {m_on / m_off:.3f}  (+{m_on - m_off:.2f} s)")
    # With ``training: false`` Step 6 ends at the first intact checkpoint and deletes the
    # Worker; a run of more steps than one is cut short there, so on / off also counts the
    # training of the later steps. What the checks themselves add is T.2 and T.3 (reading
    # and judging) and the wait T.1 adds after the last step's line, which is nil.
    own = [a + b for a, b in zip(parts["T.2"], parts["T.3"], strict=True)]
    share = statistics.median(o / t for o, t in zip(own, on, strict=True))
    print(
        f"  T.2 + T.3 (the checks' reading)    : median {statistics.median(own):.2f} s, "
        f"{100 * share:.1f} % of the run with them"
    )
    share = statistics.median(r / t for r, t in zip(reading, on, strict=True))
    print(
        f"  the checks' own readings (scalars and tensors, every time): median "
        f"{statistics.median(reading):.2f} s, {100 * share:.1f} % of the run with them"
    )
    for check, values in parts.items():
        what = {
            "T.1": "6.4 passed → the last step",
            "T.2": "the last step → the scalars judged",
            "T.3": "6.5 passed → the tensors judged",
        }[check]
        print(f"  {check} {what}: median {statistics.median(values):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
