"""The fingerprint of check 1.2: the settings that decide how RLinf uses the Worker's GPUs.

The page says to keep the validated component_placement, the components' world sizes,
offload, pipeline_stage_num, and the algorithm / model / data / checkpoint settings. The
fingerprint is those leaves, by dotted key, so a difference can be named key by key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

ROOTS = ("cluster.component_placement", "cluster.node_groups", "algorithm", "data")
# Leaves whose key path contains one of these words belong to the fingerprint wherever they are.
WORDS = (
    "world_size",
    "offload",
    "pipeline_stage_num",
    "checkpoint",
    "ckpt",
    "model_type",
    "precision",
)
PATH_SUFFIXES = ("path", "paths", "dir", "dirs", "_file", "_root")
MODEL_PARENTS = ("actor.model", "rollout.model", "critic.model", "reward.model")
# RLinf rewrites these at start-up or they only name where output goes: not part of "how".
IGNORED_PREFIXES = ("runner.logger", "hydra")


def leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(tree, dict):
        if not tree and prefix:
            out[prefix] = {}
        for k, v in tree.items():
            out.update(leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix] = tree
    return out


def _wanted(key: str) -> bool:
    if key.startswith(IGNORED_PREFIXES):
        return False
    # Where data, models and checkpoints live is not how RLinf uses the GPUs: 3.7 asks for
    # exactly such paths to be moved onto the mounts, in the config or the run command.
    if key.rsplit(".", 1)[-1].endswith(PATH_SUFFIXES):
        return False
    if any(key == r or key.startswith(r + ".") for r in ROOTS + MODEL_PARENTS):
        return True
    return any(w in key for w in WORDS)


def fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    """The fingerprinted leaves of a resolved config, keyed by dotted path."""
    return {k: v for k, v in leaves(config).items() if _wanted(k)}


def digest(fp: dict[str, Any]) -> str:
    text = json.dumps(fp, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def differences(validated: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Human lines naming each fingerprinted key that differs, is missing or is new."""
    out: list[str] = []
    for key in sorted(set(validated) | set(actual)):
        a, b = validated.get(key, "<absent>"), actual.get(key, "<absent>")
        if _norm(a) != _norm(b):
            out.append(f"{key}: validated {a!r}, ran with {b!r}")
    return out


def _norm(v: Any) -> Any:
    # RLinf prints its config as JSON: tuples become lists, and ints stay ints.
    return json.loads(json.dumps(v, default=str))
