"""Step 6 确认任务开始运行: submit the Job and confirm, in the page's order, that it works.

One object per check (``listed`` 6.1, ``scheduled`` 6.2, ``ray_head`` 6.3, ``first_signal``
6.4, ``output`` 6.5; ``printed_config`` reads 1.1 / 1.2 from the log at run time), each with
its timeout key, what advances it and what fails it; ``run.Step6Run`` holds the shared state
and the observation loop; ``record.RunRecord`` is what the steps and reports read.
"""

from __future__ import annotations

from rlark_acceptance.run.step6.confirm import Interrupted, confirm_running
from rlark_acceptance.run.step6.log import RAY_STARTED, is_script_output
from rlark_acceptance.run.step6.outputs import KEEP_OUTPUTS, keep_outputs_policy
from rlark_acceptance.run.step6.record import ORDER, PHASES, PhaseResult, RunRecord, Status
from rlark_acceptance.run.step6.run import PhaseFailed, Progress, Step6Run

__all__ = [
    "KEEP_OUTPUTS",
    "ORDER",
    "PHASES",
    "RAY_STARTED",
    "Interrupted",
    "PhaseFailed",
    "PhaseResult",
    "Progress",
    "RunRecord",
    "Status",
    "Step6Run",
    "confirm_running",
    "is_script_output",
    "keep_outputs_policy",
]
