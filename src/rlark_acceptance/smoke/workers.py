"""The three worker kinds of an RLinf embodied run (env, rollout, actor), as plain classes.

The runner turns each into a Ray actor with ``ray.remote(num_cpus=0)``: the smoke must not
reserve CPUs, so it cannot deadlock on a 2-core machine that other jobs share.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from rlark_acceptance.smoke import toy
from rlark_acceptance.smoke.atomic import write_safetensors
from rlark_acceptance.smoke.spec import SmokeSpec

PRODUCER = "rlark-acceptance smoke workload (CPU stand-in for RLinf, not RLinf)"
WEIGHTS_FILE = Path("model_state_dict") / "full_weights.safetensors"
OPTIM_FILE = Path("optim_state_dict") / "optim.safetensors"
# numpy's dtype names as safetensors (and the harness's record) name them.
SAFETENSORS_DTYPES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}


def weights_digest(tensors: Mapping[str, np.ndarray], key: str) -> str:
    """The digest the harness's record gives a checkpoint's model weights, of ``tensors`` as
    if saved in the file ``key`` (relative to the ``global_step_N`` folder): SHA-256 over
    ``<key>\\0<name>\\0<dtype>\\0<shape>\\0<SHA-256 of its bytes>\\n`` in name order. What
    a resumed run prints of the weights it holds at start, for T.4 to compare with the
    checkpoint it was told to resume from."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        own = hashlib.sha256(a.tobytes()).hexdigest()
        dtype = SAFETENSORS_DTYPES[a.dtype.name]
        h.update(f"{key}\0{name}\0{dtype}\0{list(a.shape)}\0{own}\n".encode())
    return h.hexdigest()


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

    def weights_digest(self, key: str) -> str:
        return weights_digest(self.params, key)

    def load_checkpoint(self, load_path: str) -> int:
        """The weights (and optimizer state, where saved) ``save_checkpoint`` wrote under
        ``load_path``, as RLinf's actor loads ``<resume_dir>/actor``; returns how many
        tensors. A checkpoint of another model (a name or shape this one lacks) is refused."""
        loaded = load_file(str(Path(load_path) / WEIGHTS_FILE))
        for name, value in self.params.items():
            if name not in loaded or loaded[name].shape != value.shape:
                got = loaded[name].shape if name in loaded else "missing"
                raise ValueError(
                    f"{load_path}: {name} is {got}, this actor's is {value.shape}: not its "
                    "checkpoint"
                )
        self.params = {name: loaded[name].astype(np.float32) for name in self.params}
        optim = Path(load_path) / OPTIM_FILE
        if optim.is_file():
            self.optim.load_state_tensors(load_file(str(optim)))
        return len(self.params)

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
        written = [write_safetensors(root / WEIGHTS_FILE, self.params, meta)]
        if self.spec.write_optimizer_state:
            written.append(write_safetensors(root / OPTIM_FILE, self.optim.state_tensors(), meta))
        return [str(p) for p in written]
