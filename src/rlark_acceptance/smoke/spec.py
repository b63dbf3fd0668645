"""What the smoke workload takes from an RLinf config, with defaults for what is missing.

Reading leniently lets the smoke run on real RLinf embodied configs too (e.g. a validated
``maniskill_ppo_openvlaoft.yaml``): the harness then checks the very config a GPU run
would load, while the policy trained here stays tiny whatever model the config names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Upper bounds that keep every step in milliseconds on a shared 2-core machine.
MAX_OBS_DIM = 64
MAX_ACTIONS = 32
MAX_HIDDEN = 64
MAX_ENVS = 256


def _get(cfg: Any, path: str, default: Any) -> Any:
    node = cfg
    for part in path.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return default
        node = node[part]
    return node


def _dim(cfg: Any, path: str, default: int, cap: int) -> int:
    value = _get(cfg, path, default)
    return max(1, min(int(value), cap)) if isinstance(value, int) else default


@dataclass(frozen=True)
class SmokeSpec:
    obs_dim: int
    num_actions: int
    hidden_dim: int
    num_envs: int
    env_seed: int
    actor_seed: int
    lr: float
    adam_beta1: float
    adam_beta2: float
    adam_eps: float
    clip_grad: float
    update_epoch: int
    clip_ratio_low: float
    clip_ratio_high: float
    normalize_advantages: bool
    crash_at_step: int | None
    nan_from_step: int | None
    stall_after_step: int | None
    stall_seconds: float
    step_seconds: float
    kill_actors_on_failure: bool
    write_optimizer_state: bool
    ignore_resume: bool
    skip_resume_weights: bool
    actor_group: str
    rollout_group: str
    env_group: str

    @classmethod
    def from_cfg(cls, cfg: dict[str, Any]) -> SmokeSpec:
        crash = _get(cfg, "smoke.crash_at_step", None)
        nan = _get(cfg, "smoke.nan_from_step", None)
        stall = _get(cfg, "smoke.stall_after_step", None)
        return cls(
            obs_dim=_dim(cfg, "actor.model.obs_dim", 6, MAX_OBS_DIM),
            num_actions=_dim(cfg, "actor.model.action_dim", 4, MAX_ACTIONS),
            hidden_dim=_dim(cfg, "actor.model.hidden_dim", 16, MAX_HIDDEN),
            num_envs=_dim(cfg, "env.train.total_num_envs", 64, MAX_ENVS),
            env_seed=int(_get(cfg, "env.train.seed", 7)),
            actor_seed=int(_get(cfg, "actor.seed", 1234)),
            lr=float(_get(cfg, "actor.optim.lr", 3e-2)),
            adam_beta1=float(_get(cfg, "actor.optim.adam_beta1", 0.9)),
            adam_beta2=float(_get(cfg, "actor.optim.adam_beta2", 0.999)),
            adam_eps=float(_get(cfg, "actor.optim.adam_eps", 1e-8)),
            clip_grad=float(_get(cfg, "actor.optim.clip_grad", 1.0)),
            update_epoch=max(1, int(_get(cfg, "algorithm.update_epoch", 1))),
            clip_ratio_low=float(_get(cfg, "algorithm.clip_ratio_low", 0.2)),
            clip_ratio_high=float(_get(cfg, "algorithm.clip_ratio_high", 0.2)),
            normalize_advantages=bool(_get(cfg, "algorithm.normalize_advantages", True)),
            crash_at_step=None if crash is None else int(crash),
            nan_from_step=None if nan is None else int(nan),
            stall_after_step=None if stall is None else int(stall),
            stall_seconds=float(_get(cfg, "smoke.stall_seconds", 3600.0)),
            step_seconds=max(0.0, float(_get(cfg, "smoke.step_seconds", 0.0))),
            kill_actors_on_failure=bool(_get(cfg, "smoke.kill_actors_on_failure", False)),
            write_optimizer_state=bool(_get(cfg, "smoke.write_optimizer_state", True)),
            ignore_resume=bool(_get(cfg, "smoke.ignore_resume", False)),
            skip_resume_weights=bool(_get(cfg, "smoke.skip_resume_weights", False)),
            actor_group=str(_get(cfg, "actor.group_name", "ActorGroup")),
            rollout_group=str(_get(cfg, "rollout.group_name", "RolloutGroup")),
            env_group=str(_get(cfg, "env.group_name", "EnvGroup")),
        )
