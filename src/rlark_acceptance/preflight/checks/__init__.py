"""The static and cluster checks of §0 to Step 5, one module per doc section."""

from rlark_acceptance.preflight.checks import (
    keep_config,
    review,
    run_command,
    run_info,
    single_node,
    worker,
    worker_role,
)
from rlark_acceptance.preflight.checks.base import REGISTRY, Context, Outcome, run_checks

__all__ = [
    "REGISTRY",
    "Context",
    "Outcome",
    "keep_config",
    "review",
    "run_checks",
    "run_command",
    "run_info",
    "single_node",
    "worker",
    "worker_role",
]
