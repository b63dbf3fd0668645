"""The effective RLinf view of one run: composed config + run command → what RLinf will do.

This is where the pre-flight learns the values the page talks about: the effective
``cluster.num_nodes`` (0.1), the GPUs the placement uses (3.3), whether the job is a
real-robot one (0.5), and where logs and checkpoints land inside the container (3.7, 4.5).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.keypath import KeyPath
from rlark_acceptance.rlinf.backends import KEY as BACKENDS_KEY
from rlark_acceptance.rlinf.backends import Backends, backends_of
from rlark_acceptance.rlinf.config import (
    ConfigLoader,
    ConfigProblem,
    Override,
    RLinfConfig,
    Unresolved,
)
from rlark_acceptance.rlinf.launch import Launch
from rlark_acceptance.rlinf.placement import ClusterSummary, redirect_reasons, summarize_cluster
from rlark_acceptance.rlinf.searchpath import JobVariables

# Where RLinf's runners save (rlinf/runners/*.py, _save_checkpoint).
LOG_PATH_RUNNERS = frozenset({"embodied", "offline", "sft"})
OUTPUT_DIR_RUNNERS = frozenset({"reasoning", "coding_online_rl"})


@dataclass
class EffectiveRLinf:
    config: RLinfConfig
    launch: Launch | None
    cluster: ClusterSummary
    task_type: str | None
    log_path: str | None  # absolute container path, when knowable
    log_path_raw: Any
    checkpoint_dir: str | None
    checkpoint_key: str | None  # the config key that decides checkpointDir
    problems: list[ConfigProblem] = field(default_factory=list)
    job_env: JobVariables | None = None  # what the Job's RLinf reads ${oc.env:...} from

    def __repr__(self) -> str:  # the config and the run script may hold secrets
        return (
            f"EffectiveRLinf({self.config.path!r}, task_type={self.task_type!r}, "
            f"num_nodes={self.num_nodes!r}, problems={len(self.problems)})"
        )

    @property
    def num_nodes(self) -> int | None:
        return self.cluster.num_nodes

    @property
    def redirect_reasons(self) -> list[str]:
        return redirect_reasons(self.cluster)

    def location(self, key: str | KeyPath) -> Location:
        return self.config.location(key)

    @property
    def backends(self) -> Backends:
        """What RLinf's MetricLogger writes (``rlinf.backends``)."""
        present = self.config.has(BACKENDS_KEY)
        return backends_of(self.config.raw(BACKENDS_KEY) if present else None, present=present)


def _select(cfg: RLinfConfig, key: str, problems: list[ConfigProblem]) -> Any:
    try:
        return cfg.select(key)
    except Unresolved as exc:
        problems.append(ConfigProblem(str(exc), cfg.location(key), fatal=exc.cycle))
        return None


def evaluate(
    loader: ConfigLoader,
    config_path: str | Path,
    *,
    config_dir: str | Path | None = None,
    overrides: list[Override] | None = None,
    launch: Launch | None = None,
    shown: str | None = None,
    job_env: JobVariables | None = None,
) -> EffectiveRLinf:
    """The effective view; ``job_env`` (``rlinf.environment``): what the Job's RLinf
    reads ``${oc.env:...}`` from, in place of this machine's environment."""
    all_overrides = list(overrides or [])
    if launch is not None:
        all_overrides += launch.overrides
    set_by: dict[str, str] = {}
    if launch is not None:
        set_by = {name: "the run script" for name in launch.env}
    cfg = loader.load(
        config_path,
        config_dir=config_dir,
        overrides=all_overrides,
        shown=shown,
        set_by=set_by,
        job_env=job_env,
    )
    problems: list[ConfigProblem] = []
    cfg.cycles()
    cluster_raw = cfg.resolved("cluster") if cfg.has("cluster") else None
    cluster = summarize_cluster(cluster_raw)
    task_type = _select(cfg, "runner.task_type", problems)
    if task_type is not None and not isinstance(task_type, str):
        problems.append(
            ConfigProblem(
                f"runner.task_type must be a runner name, not {type(task_type).__name__}",
                cfg.location("runner.task_type"),
                fatal=True,
            )
        )
        task_type = None
    log_raw = cfg.raw("runner.logger.log_path")
    log_value = _select(cfg, "runner.logger.log_path", problems)
    log_path = _absolute(log_value, launch)
    checkpoint_dir: str | None = None
    key: str | None = None
    if task_type in LOG_PATH_RUNNERS or (task_type is None and cfg.has("runner.logger.log_path")):
        key = "runner.logger.log_path"
        exp = _select(cfg, "runner.logger.experiment_name", problems)
        if log_path and exp is not None:
            checkpoint_dir = posixpath.join(log_path, str(exp), "checkpoints")
    elif task_type in OUTPUT_DIR_RUNNERS:
        key = "runner.output_dir"
        out = _absolute(_select(cfg, "runner.output_dir", problems), launch)
        exp = _select(cfg, "runner.experiment_name", problems)
        if out and exp is not None:
            checkpoint_dir = posixpath.join(out, str(exp), "checkpoints")
    elif isinstance(task_type, str) and "eval" in task_type:
        key = None  # eval-only runners write logs, not checkpoints
    else:
        problems.append(
            ConfigProblem(
                f"runner.task_type {task_type!r}: where this runner saves checkpoints is not known",
                cfg.location("runner.task_type"),
            )
        )
    return EffectiveRLinf(
        config=cfg,
        launch=launch,
        cluster=cluster,
        task_type=task_type if isinstance(task_type, str) else None,
        log_path=log_path,
        log_path_raw=log_raw,
        checkpoint_dir=checkpoint_dir,
        checkpoint_key=key,
        problems=list(dict.fromkeys(problems + cfg.problems)),
        job_env=job_env,
    )


def _absolute(value: Any, launch: Launch | None) -> str | None:
    """A container path as the RLinf process sees it (relative to the run command's cd)."""
    if not isinstance(value, str) or not value or "${" in value:
        return None
    if posixpath.isabs(value):
        return posixpath.normpath(value)
    return launch.resolve(value) if launch else None
