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


# Launch scripts in the shapes RLinf's take (written here): one that holds its command in an
# array, forces a dated log folder and forwards its arguments past the first; one that holds
# it in a string, forwards nothing (its second argument is the robot platform) and adds
# cluster.num_nodes when NODES is set.
FORWARDING_DIFFUSION_SCRIPT = """\
#!/bin/bash
export DIFFUSION_PATH="$( cd "$(dirname "${BASH_SOURCE[0]}" )" && pwd )"
export REPO_PATH=$(dirname $(dirname "$DIFFUSION_PATH"))
CONFIG_NAME=$1
EXTRA_ARGS=("${@:2}")
LOG_DIR="${REPO_PATH}/logs/$(date +'%Y%m%d')-${CONFIG_NAME}" # /$(date +'%H')"
CMD=(python "${REPO_PATH}/examples/embodiment/train.py" --config-path "${DIFFUSION_PATH}/config/" \\
  --config-name "${CONFIG_NAME}" "runner.logger.log_path=${LOG_DIR}" "${EXTRA_ARGS[@]}")
"${CMD[@]}" 2>&1 | tee "${LOG_DIR}/run.log"
"""
EMBODIED_SCRIPT = """\
#!/bin/bash
export EMBODIED_PATH="$( cd "$(dirname "${BASH_SOURCE[0]}" )" && pwd )"
export REPO_PATH=$(dirname $(dirname "$EMBODIED_PATH"))
PLATFORM=${2:-"LIBERO"}
EXTRA=""
[ -n "${NODES:-}" ] && EXTRA+=" cluster.num_nodes=${NODES}"
CMD="python ${REPO_PATH}/examples/embodiment/train.py --config-path ${EMBODIED_PATH}/config/ \\
  --config-name $1 runner.logger.log_path=${REPO_PATH}/logs/$1${EXTRA}"
${CMD}
"""


def embodied_config(tree: Path) -> Path:
    """A config beside ``EMBODIED_SCRIPT`` (in ``examples/embodiment/config``)."""
    config = tree / "examples" / "embodiment" / "config" / "e.yaml"
    config.write_text(
        DIFFUSION_CONFIG.replace(
            "    - file://${oc.env:DIFFUSION_PATH}/config/\n"
            "    - file://${oc.env:REPO_PATH}/examples/embodiment/config/\n",
            "    - file://${oc.env:EMBODIED_PATH}/config/\n",
        )
    )
    (tree / "examples" / "embodiment" / "run_embodiment.sh").write_text(EMBODIED_SCRIPT)
    return config
