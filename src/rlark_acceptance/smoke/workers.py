"""The three worker kinds of an RLinf embodied run (env, rollout, actor), as plain classes.

The runner turns each into a Ray actor with ``ray.remote(num_cpus=0)``: the smoke must not
reserve CPUs, so it cannot deadlock on a 2-core machine that other jobs share.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rlark_acceptance.smoke import toy
from rlark_acceptance.smoke.atomic import write_safetensors
from rlark_acceptance.smoke.spec import SmokeSpec

PRODUCER = "rlark-acceptance smoke workload (CPU stand-in for RLinf, not RLinf)"


class EnvWorker:
    """Holds the toy environment, like RLinf's EnvWorker holds the simulator."""

    def __init__(self, obs_dim: int, num_actions: int, seed: int) -> None:
        self.env = toy.ContextualBandit(obs_dim, num_actions, seed)

    def reset(self, num_envs: int) -> np.ndarray:
        return self.env.reset(num_envs)

    def step(self, rollout_batch: dict[str, np.ndarray]) -> np.ndarray:
        # Takes the whole rollout batch so it goes rollout -> env through the object store.
        return self.env.step(rollout_batch["actions"])


class RolloutWorker:
    """Generates actions with the latest weights synced from the actor."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.params: toy.Params | None = None

    def sync_model_from_actor(self, params: toy.Params) -> None:
        self.params = params

    def generate(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        if self.params is None:
            raise RuntimeError("rollout has no weights: sync_model_from_actor first")
        actions, logp, values = toy.sample(self.params, obs, self.rng)
        return {"obs": obs, "actions": actions, "logprobs": logp, "values": values}


class ActorWorker:
    """Owns the policy and optimizer; trains on rollout batches and saves checkpoints."""

    def __init__(self, spec: SmokeSpec) -> None:
        self.spec = spec
        self.params = toy.init_params(
            spec.obs_dim, spec.hidden_dim, spec.num_actions, spec.actor_seed
        )
        self.optim = toy.Adam(
            lr=spec.lr, beta1=spec.adam_beta1, beta2=spec.adam_beta2, eps=spec.adam_eps
        )

    def get_weights(self) -> toy.Params:
        return self.params

    def run_training(self, batch: dict[str, np.ndarray], rewards: np.ndarray, step: int) -> dict:
        """One PPO update on a batch; ``step`` is the global step being produced (1-based)."""
        spec = self.spec
        if spec.crash_at_step is not None and step == spec.crash_at_step:
            # A deliberate failure for the negative acceptance tests, raised where a real
            # training error would be, so the log carries a genuine remote traceback.
            raise RuntimeError(f"smoke.crash_at_step={step}: deliberate failure in the actor")
        # One-step episodes: the return is the reward, GAE reduces to reward - value.
        returns = rewards.astype(np.float32)
        adv = returns - batch["values"]
        if spec.normalize_advantages and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        metrics: dict[str, float] = {}
        diverged = spec.nan_from_step is not None and step >= spec.nan_from_step
        for _ in range(spec.update_epoch):
            grads, metrics = toy.ppo_grads(
                self.params,
                batch["obs"],
                batch["actions"],
                batch["logprobs"],
                adv,
                returns,
                spec.clip_ratio_low,
                spec.clip_ratio_high,
            )
            if diverged:
                # What a broken kernel or driver does to a real run: the loss and the
                # gradients turn NaN, the optimizer carries it into every weight.
                grads = {k: g * np.float32("nan") for k, g in grads.items()}
                metrics = {k: float("nan") for k in metrics}
            metrics["grad_norm"] = toy.clip_grad_norm(grads, spec.clip_grad)
            self.optim.step(self.params, grads)
        metrics["lr"] = self.optim.lr
        return metrics

    def save_checkpoint(self, save_path: str, global_step: int) -> list[str]:
        """Write ``<save_path>/model_state_dict/full_weights.safetensors`` (and optimizer state).

        safetensors, not torch pickles: there is no torch here, and the harness verifies the
        files structurally without unpickling anything.
        """
        meta = {"global_step": str(global_step), "producer": PRODUCER, "pid": str(os.getpid())}
        root = Path(save_path)
        written = [
            write_safetensors(
                root / "model_state_dict" / "full_weights.safetensors", self.params, meta
            )
        ]
        if self.spec.write_optimizer_state:
            written.append(
                write_safetensors(
                    root / "optim_state_dict" / "optim.safetensors",
                    self.optim.state_tensors(),
                    meta,
                )
            )
        return [str(p) for p in written]
