"""Entry point, shaped like RLinf's ``examples/embodiment/train_embodied_agent.py``."""

from __future__ import annotations

import json
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

from rlark_acceptance.smoke.cluster import NoRayHeadError, attach
from rlark_acceptance.smoke.runner import run

BANNER = (
    "rlark-acceptance smoke workload: CPU-only stand-in for an RLinf embodied PPO run (not RLinf)"
)
EXIT_NO_RAY_HEAD = 3


def train(cfg: DictConfig) -> None:
    print(BANNER, flush=True)
    # Exactly what RLinf prints right after start-up, before it creates the cluster: the
    # harness re-reads num_nodes (1.1) and the fingerprinted keys (1.2) from it.
    resolved = OmegaConf.to_container(cfg, resolve=True)
    print(json.dumps(resolved, indent=2), flush=True)
    try:
        address = attach()
    except NoRayHeadError as e:
        print(f"ERROR: {e}", file=sys.stderr, flush=True)
        # SystemExit passes through Hydra's error reporting: a clean message, no traceback.
        raise SystemExit(EXIT_NO_RAY_HEAD) from None
    print(f"Attached to Ray head at {address}", flush=True)
    assert isinstance(resolved, dict)
    run(resolved)  # type: ignore[arg-type]
    print("Smoke training finished.", flush=True)


@hydra.main(version_base="1.3", config_path="config", config_name="smoke_ppo_mlp")
def main(cfg: DictConfig) -> None:
    train(cfg)


if __name__ == "__main__":
    main()
