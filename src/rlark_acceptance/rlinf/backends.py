"""The config's logger backends: what RLinf's MetricLogger writes, and so what 4.5 and T.2
can expect to find.

RLinf reads ``runner.logger.logger_backends``: absent, it logs to TensorBoard alone; a string
is one backend; null is none; a name other than ``wandb``, ``swanlab`` or ``tensorboard``
fails its start-up assertion. TensorBoard events land under ``<log_path>/tensorboard``. wandb
runs online unless ``WANDB_MODE`` says otherwise, and online it needs an API key and a way
out of the Pod to its server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

KEY = "runner.logger.logger_backends"
SUPPORTED = ("wandb", "swanlab", "tensorboard")
DEFAULT = ("tensorboard",)
# WANDB_MODE values that keep wandb off the network (wandb's own settings).
WANDB_LOCAL_MODES = frozenset({"offline", "disabled", "dryrun"})


@dataclass(frozen=True)
class Backends:
    """The backends the run logs to, as RLinf reads the key."""

    names: tuple[str, ...]
    declared: bool  # the config names them; else RLinf's default
    judged: bool = True  # False: the value is not knowable before the run

    @property
    def tensorboard(self) -> bool:
        return "tensorboard" in self.names

    @property
    def unknown(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n not in SUPPORTED)

    def said(self) -> str:
        if not self.declared:
            return f"{KEY} is not set (RLinf's default: tensorboard)"
        return f"{KEY} is [{', '.join(self.names)}]"


def backends_of(value: Any, *, present: bool) -> Backends:
    """``value``: the key's value in the composed config; ``present``: whether it is set."""
    if not present:
        return Backends(DEFAULT, declared=False)
    if value is None:
        return Backends((), declared=True)
    if isinstance(value, str):
        return Backends((value,), declared=True, judged="${" not in value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return Backends(tuple(value), declared=True, judged=not any("${" in v for v in value))
    return Backends((), declared=True, judged=False)


def in_config(config: Mapping[str, Any] | None) -> Backends:
    """The backends of a resolved config (``runner.logger``), as a plain mapping."""
    runner = config.get("runner") if isinstance(config, Mapping) else None
    logger = runner.get("logger") if isinstance(runner, Mapping) else None
    if not isinstance(logger, Mapping):
        return Backends(DEFAULT, declared=False)
    return backends_of(logger.get("logger_backends"), present="logger_backends" in logger)


def wandb_goes_online(variable: Callable[[str], str | None]) -> bool:
    """Whether wandb would log online needing a key it has not got: no local mode and no
    ``WANDB_API_KEY``. ``variable`` reads the Job's environment (None: not set)."""
    mode = (variable("WANDB_MODE") or "").strip().lower()
    return mode not in WANDB_LOCAL_MODES and not variable("WANDB_API_KEY")


WANDB_REMEDY = (
    "set WANDB_MODE=offline in the role's env (the run's wandb files then stay under "
    "<log_path>/wandb, on the mount), or give the Worker WANDB_API_KEY from the platform's "
    "secrets (never in the Job YAML: 3.6) and make sure the Pod can reach the wandb server"
)
