"""Job YAMLs and RLinf-shaped trees for the tests of the Job's environment and logger
backends: the real-RLinf profile's Job with another run command, prepare script or env, and
a checkout with a diffusion config run through its own launch script (written here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = (ROOT / "profiles" / "rlinf-embodied" / "job.yaml").read_text()

DIFFUSION_CONFIG = """\
defaults:
  - env/toy@env.train
  - _self_
hydra:
  searchpath:
    - file://${oc.env:DIFFUSION_PATH}/config/
    - file://${oc.env:REPO_PATH}/examples/embodiment/config/
cluster:
  num_nodes: 1
  component_placement:
    actor,env,rollout: all
runner:
  task_type: embodied
  logger:
    log_path: /mnt/ckpt/logs
    experiment_name: diff
    logger_backends: ["tensorboard"]
"""
# The way RLinf's launch scripts find themselves (BASH_SOURCE), then run the config.
DIFFUSION_SCRIPT = """\
#!/bin/bash
export DIFFUSION_PATH="$( cd "$(dirname "${BASH_SOURCE[0]}" )" && pwd )"
export REPO_PATH=$(dirname $(dirname "$DIFFUSION_PATH"))
python ${REPO_PATH}/examples/embodiment/train_embodied_agent.py \\
  --config-path ${DIFFUSION_PATH}/config/ --config-name $1
"""


def job(tmp: Path, run: str, prepare: str = "export PYTHONUNBUFFERED=1", env: str = "") -> Path:
    text = re.sub(r"(runScript: \|\n    ).*\n", lambda m: m.group(1) + run + "\n", JOB)
    text = re.sub(r"(prepareScript: \|\n      ).*\n", lambda m: m.group(1) + prepare + "\n", text)
    if env:
        text = text.replace("    env:\n", f"    env:\n    - {env}\n")
    path = tmp / "job.yaml"
    path.write_text(text)
    return path


def diffusion_tree(tmp: Path) -> Path:
    tree = tmp / "RLinf"
    (tree / "examples" / "embodiment" / "config" / "env").mkdir(parents=True)
    (tree / "examples" / "embodiment" / "config" / "env" / "toy.yaml").write_text("name: toy\n")
    (tree / "examples" / "diffusion" / "config").mkdir(parents=True)
    (tree / "examples" / "diffusion" / "run_diffusion.sh").write_text(DIFFUSION_SCRIPT)
    config = tree / "examples" / "diffusion" / "config" / "diff.yaml"
    config.write_text(DIFFUSION_CONFIG)
    return config
