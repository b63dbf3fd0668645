"""Exploration: the log machine's promise over many more random worlds than CI draws.

    python bench/log_worlds.py [--seconds 300] [--worlds N] [--seed S]

The property tests (``tests/adapters/test_kubernetes_log_machine.py``) replay a fixed set of
worlds in every CI run, so they catch a regression, not a new way to lose a line. This draws
fresh worlds (``tests/adapters/kubelet.py``'s ``random_world``, as the tests' strategy draws
them) from the seed ``S`` (a random one if not given, printed so a run can be repeated) until
``--seconds`` or ``--worlds`` is reached, and holds each to the tests' promise: every line
put once, in order and whole, or inside a gap said as lost, and the reading ended. Every
other world has the API server up throughout, and is also held to saying nothing lost (a
warning there is a false alarm). It prints how many worlds it tried and how many broke the
promise, each failing world as a ``World(...)`` literal to paste as an ``@example`` of the
tests (they shrink it further when it fails there).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from rlark_acceptance.adapters.kubernetes import logcursor  # noqa: E402
from tests.adapters.kubelet import Sim, World, random_world, unaccounted  # noqa: E402
from tests.adapters.test_kubernetes_log_machine import SKIP_AFTER_BYTES  # noqa: E402


def broken(world: World, *, api_up: bool) -> str | None:
    """What the world breaks of the promise (None: nothing)."""
    sim = Sim(world)
    out = sim.go()
    if not out.finished:
        return f"the reading did not end by {sim.horizon} s"
    wrong = unaccounted(sim.written(), out.lines, out.lost)
    if wrong is None and api_up and out.lost:
        wrong = f"said lost with the API server up: {out.lost[0]}"
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--worlds", type=int, default=0, help="at most this many (0: no bound)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randint(0, 2**32 - 1)
    rng = random.Random(seed)
    # The stand-in's files are a few entries: scaled as the tests scale it.
    logcursor.SKIP_AFTER_BYTES = SKIP_AFTER_BYTES
    tried, failed, api_up_tried = 0, [], 0
    start = time.monotonic()
    while time.monotonic() - start < args.seconds and (not args.worlds or tried < args.worlds):
        api_up = tried % 2 == 1
        world = random_world(rng, api_up=api_up)
        tried += 1
        api_up_tried += api_up
        wrong = broken(world, api_up=api_up)
        if wrong is not None:
            failed.append((world, wrong))
    took = time.monotonic() - start
    print(
        f"seed {seed}: {tried} worlds in {took:.0f} s ({api_up_tried} with the API server up"
        f" throughout), {tried - len(failed)} kept the promise, {len(failed)} broke it"
    )
    for world, wrong in failed:
        print(f"# {wrong}\n{world!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
