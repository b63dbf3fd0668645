"""The training loop: RLinf's EmbodiedRunner reduced to what a smoke run needs.

Same step semantics as RLinf (``max_steps`` capped by ``max_epochs``; ``check_progress``
for when to save), same checkpoint layout, same TensorBoard location, same resume: with
``runner.resume_dir`` (a ``.../checkpoints/global_step_N`` folder) the actor is loaded from
its ``actor/`` and the run goes on at step N+1 (RLinf's ``init_workers``); it then prints the
digest of the actor's weights at start, which RLinf does not, for T.4 to compare with the
checkpoint's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rlark_acceptance.smoke.progress import format_table
from rlark_acceptance.smoke.spec import SmokeSpec
from rlark_acceptance.smoke.workers import WEIGHTS_FILE, ActorWorker, EnvWorker, RolloutWorker


def compute_max_steps(runner: dict[str, Any]) -> int:
    """As RLinf: one step per epoch, ``max_steps`` caps it when it is >= 0."""
    max_steps = int(runner["max_epochs"])
    if (cap := int(runner.get("max_steps", -1))) >= 0:
        max_steps = min(max_steps, cap)
    return max_steps


def should_save(step: int, max_steps: int, save_interval: int) -> bool:
    """RLinf's ``check_progress``: at save intervals and at the last step, if saving is on."""
    if save_interval <= 0:
        return False
    return step % save_interval == 0 or step == max_steps


def checkpoints_dir(cfg: dict[str, Any]) -> Path:
    logger = cfg["runner"]["logger"]
    return Path(logger["log_path"]) / logger["experiment_name"] / "checkpoints"


class MetricLogger:
    """TensorBoard when ``tensorboard`` is among ``logger_backends`` (as RLinf's MetricLogger)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        logger = cfg["runner"]["logger"]
        self.writer = None
        if "tensorboard" in (logger.get("logger_backends") or []):
            from tensorboardX import SummaryWriter

            self.writer = SummaryWriter(log_dir=os.path.join(logger["log_path"], "tensorboard"))

    def log(self, metrics: dict[str, float], step: int) -> None:
        if self.writer is not None:
            for k, v in metrics.items():
                self.writer.add_scalar(k, v, step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def finish(self) -> None:
        if self.writer is not None:
            self.writer.close()


def run(cfg: dict[str, Any]) -> None:
    """Create the worker groups on the attached Ray cluster and train ``max_steps`` steps."""
    import ray

    remote = ray.remote(num_cpus=0)  # tiny requests: never wait for a free CPU
    spec = SmokeSpec.from_cfg(cfg)
    # Ray actor handles: their methods gain .remote(), which static typing cannot see.
    env: Any = remote(EnvWorker).options(name=spec.env_group)
    env = env.remote(spec.obs_dim, spec.num_actions, spec.env_seed)
    rollout: Any = remote(RolloutWorker).options(name=spec.rollout_group)
    rollout = rollout.remote(spec.actor_seed + 1)
    actor: Any = remote(ActorWorker).options(name=spec.actor_group).remote(spec)

    runner_cfg = cfg["runner"]
    max_steps = compute_max_steps(runner_cfg)
    save_interval = int(runner_cfg.get("save_interval", -1))
    ckpt_root = checkpoints_dir(cfg)
    start_step = resume(actor, runner_cfg.get("resume_dir"), spec)
    metric_logger = MetricLogger(cfg)
    start = time.monotonic()
    try:
        for global_step in range(start_step + 1, max_steps + 1):
            t0 = time.monotonic()
            # update_rollout_weights, then generate_rollouts, as in RLinf's runner
            ray.get(rollout.sync_model_from_actor.remote(actor.get_weights.remote()))
            batch = rollout.generate.remote(env.reset.remote(spec.num_envs))
            rewards: Any = ray.get(env.step.remote(batch))
            train = ray.get(actor.run_training.remote(batch, rewards, global_step))
            metrics = {
                "rollout/reward": float(rewards.mean()),
                **{f"train/{k}": v for k, v in train.items()},
                "time/step": time.monotonic() - t0,
            }
            if should_save(global_step, max_steps, save_interval):
                path = ckpt_root / f"global_step_{global_step}" / "actor"
                ray.get(actor.save_checkpoint.remote(str(path), global_step))
                print(f"Saved checkpoint: {path}", flush=True)
            metric_logger.log(metrics, global_step)
            elapsed = time.monotonic() - start
            table = format_table(global_step, max_steps, elapsed, metrics, start_step)
            print(table, flush=True)
            if spec.stall_after_step is not None and global_step >= spec.stall_after_step:
                metric_logger.flush()
                stall(spec.stall_seconds)
            if spec.step_seconds and global_step < max_steps:
                time.sleep(spec.step_seconds)
    except Exception:
        if spec.kill_actors_on_failure:
            knock_on(env, rollout)
        raise
    finally:
        metric_logger.finish()


def resume(actor: Any, resume_dir: Any, spec: SmokeSpec) -> int:
    """The step a run with ``runner.resume_dir`` goes on from, its actor loaded from the
    folder's ``actor/``, as RLinf's embodied runner does (0: no resume). The smoke's fault
    knobs: ``smoke.ignore_resume`` starts at step 1 anyway (a runner that never reads the
    key), ``smoke.skip_resume_weights`` takes the step but keeps the initial weights."""
    import ray

    if resume_dir is None or spec.ignore_resume:
        return 0
    resume_dir = str(resume_dir)
    print(f"Resuming training from checkpoint directory {resume_dir}.", flush=True)
    actor_path = os.path.join(resume_dir, "actor")
    if not os.path.exists(actor_path):  # RLinf's own assertion, word for word
        raise AssertionError(f"resume_dir {actor_path} does not exist.")
    if not spec.skip_resume_weights:
        tensors = ray.get(actor.load_checkpoint.remote(actor_path))
        print(f"Loaded {tensors} actor tensors from {actor_path}", flush=True)
    digest = ray.get(actor.weights_digest.remote(f"actor/{WEIGHTS_FILE.as_posix()}"))
    print(f"smoke: actor weights at start: sha256 {digest}", flush=True)
    return int(resume_dir.split("global_step_")[-1])


def stall(seconds: float) -> None:
    """What a run that hangs looks like from outside: alive, and printing no further step
    (a dead-locked collective, an environment worker that never answers), for ``seconds``;
    then it gives up, as a collective's own timeout would."""
    print("smoke.stall_after_step: the run hangs here", flush=True)
    time.sleep(seconds)
    raise RuntimeError(f"smoke.stall_after_step: hung for {seconds:.0f} s, giving up")


def knock_on(*actors: Any) -> None:
    """As RLinf's teardown after a failed actor: the others are killed, and the next call to
    one of them raises ``ActorDiedError``, the knock-on that a log then ends with."""
    import ray

    for actor in actors:
        ray.kill(actor)
    try:
        ray.get(actors[0].reset.remote(1))
    except ray.exceptions.RayActorError as exc:
        print(f"knock-on of the failed actor: {type(exc).__name__}", flush=True)
        raise
