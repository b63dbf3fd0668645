"""The numpy pieces of the smoke workload: a contextual bandit, a tiny MLP policy, a PPO update.

Pure functions and small classes with no Ray in them, so they can be tested on their own.
This is a CPU-only stand-in for RLinf's embodied PPO (not RLinf): the point is honest
training steps, with weights that really change, in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

Params = dict[str, np.ndarray]


class ContextualBandit:
    """Each episode is one decision: observe a context, pick an arm, get 1 for the best arm."""

    def __init__(self, obs_dim: int, num_actions: int, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        # The hidden best-arm map is fixed by the seed, so the task is learnable.
        self._w_star = np.random.default_rng(seed + 1).normal(size=(obs_dim, num_actions))
        self._obs: np.ndarray | None = None
        self.obs_dim = obs_dim

    def reset(self, num_envs: int) -> np.ndarray:
        self._obs = self._rng.normal(size=(num_envs, self.obs_dim)).astype(np.float32)
        return self._obs

    def step(self, actions: np.ndarray) -> np.ndarray:
        if self._obs is None or len(actions) != len(self._obs):
            raise ValueError("step() needs one action per observation from the last reset()")
        best = np.argmax(self._obs @ self._w_star, axis=1)
        return (actions == best).astype(np.float32)


def init_params(obs_dim: int, hidden_dim: int, num_actions: int, seed: int) -> Params:
    """torch-style state_dict names and (out, in) weight shapes, as in an RLinf MLP policy."""
    rng = np.random.default_rng(seed)

    def linear(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
        bound = 1.0 / np.sqrt(n_in)
        w = rng.uniform(-bound, bound, size=(n_out, n_in)).astype(np.float32)
        return w, np.zeros(n_out, dtype=np.float32)

    w1, b1 = linear(obs_dim, hidden_dim)
    wa, ba = linear(hidden_dim, num_actions)
    wv, bv = linear(hidden_dim, 1)
    return {
        "backbone.0.weight": w1,
        "backbone.0.bias": b1,
        "actor_head.weight": wa,
        "actor_head.bias": ba,
        "value_head.weight": wv,
        "value_head.bias": bv,
    }


def forward(p: Params, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hidden activations, log-probabilities over arms, state values."""
    h = np.tanh(obs @ p["backbone.0.weight"].T + p["backbone.0.bias"])
    logits = h @ p["actor_head.weight"].T + p["actor_head.bias"]
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    values = (h @ p["value_head.weight"].T + p["value_head.bias"])[:, 0]
    return h, logp, values


def sample(
    p: Params, obs: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Actions, their log-probabilities and the value estimates (the rollout's generate)."""
    _, logp, values = forward(p, obs)
    probs = np.exp(logp)
    u = rng.random((len(obs), 1))
    actions = np.minimum((probs.cumsum(axis=1) < u).sum(axis=1), probs.shape[1] - 1)
    return actions, logp[np.arange(len(obs)), actions], values


@dataclass
class Adam:
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: Params = field(default_factory=dict)
    v: Params = field(default_factory=dict)

    def step(self, p: Params, g: Params) -> None:
        self.t += 1
        for k, grad in g.items():
            m = self.m.setdefault(k, np.zeros_like(grad))
            v = self.v.setdefault(k, np.zeros_like(grad))
            m[...] = self.beta1 * m + (1 - self.beta1) * grad
            v[...] = self.beta2 * v + (1 - self.beta2) * grad * grad
            m_hat = m / (1 - self.beta1**self.t)
            v_hat = v / (1 - self.beta2**self.t)
            p[k] = (p[k] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)).astype(np.float32)

    def load_state_tensors(self, state: Params) -> None:
        """The state ``state_tensors`` wrote, back into this optimizer (a resumed run's)."""
        self.t = int(state["step"][0]) if "step" in state else 0
        for name, value in state.items():
            key, _, moment = name.removeprefix("state.").rpartition(".")
            if name.startswith("state.") and moment == "exp_avg":
                self.m[key] = value.astype(np.float32)
            elif name.startswith("state.") and moment == "exp_avg_sq":
                self.v[key] = value.astype(np.float32)

    def state_tensors(self) -> Params:
        """Optimizer state as flat named tensors (exp_avg / exp_avg_sq as torch names them)."""
        out: Params = {"step": np.array([self.t], dtype=np.int64)}
        for k in self.m:
            out[f"state.{k}.exp_avg"] = self.m[k]
            out[f"state.{k}.exp_avg_sq"] = self.v[k]
        return out


def ppo_grads(
    p: Params,
    obs: np.ndarray,
    actions: np.ndarray,
    old_logp: np.ndarray,
    adv: np.ndarray,
    returns: np.ndarray,
    clip_low: float,
    clip_high: float,
) -> tuple[Params, dict[str, float]]:
    """Gradients of the clipped PPO objective plus a value loss, by hand (no autograd here)."""
    n = len(obs)
    h, logp_all, values = forward(p, obs)
    logp = logp_all[np.arange(n), actions]
    ratio = np.exp(logp - old_logp)
    clipped = np.clip(ratio, 1 - clip_low, 1 + clip_high)
    pg_loss = np.maximum(-adv * ratio, -adv * clipped)
    # The gradient flows only where the unclipped term is the active one.
    active = (-adv * ratio) >= (-adv * clipped)
    g_logp = np.where(active, -adv * ratio, 0.0) / n
    onehot = np.zeros_like(logp_all)
    onehot[np.arange(n), actions] = 1.0
    g_logits = g_logp[:, None] * (onehot - np.exp(logp_all))
    g_values = (values - returns) / n
    g_h = g_logits @ p["actor_head.weight"] + g_values[:, None] @ p["value_head.weight"]
    g_pre = g_h * (1 - h * h)
    grads = {
        "backbone.0.weight": g_pre.T @ obs,
        "backbone.0.bias": g_pre.sum(axis=0),
        "actor_head.weight": g_logits.T @ h,
        "actor_head.bias": g_logits.sum(axis=0),
        "value_head.weight": g_values[None, :] @ h,
        "value_head.bias": np.array([g_values.sum()]),
    }
    metrics = {
        "pg_loss": float(pg_loss.mean()),
        "value_loss": float(0.5 * np.mean((values - returns) ** 2)),
        "approx_kl": float(np.mean(old_logp - logp)),
        "clip_fraction": float(np.mean(~active)),
    }
    return {k: v.astype(np.float32) for k, v in grads.items()}, metrics


def clip_grad_norm(grads: Params, max_norm: float) -> float:
    """Scale gradients in place to a global norm of at most ``max_norm``; return the norm."""
    norm = float(np.sqrt(sum(float((g * g).sum()) for g in grads.values())))
    if max_norm > 0 and norm > max_norm:
        for g in grads.values():
            g *= max_norm / (norm + 1e-6)
    return norm
