"""Step 6 确认任务开始运行: submit the Job and confirm, in the page's order, that it works.

``plan.Step6Plan`` is the run as data (built once from the pre-flight); ``phase`` is the one
shape of a check (a verdict from the ``observed`` state, probes for what it must look at);
one module per check (``listed`` 6.1, ``scheduled`` 6.2, ``ray_head`` 6.3, ``first_signal``
6.4, ``output`` 6.5, ``printed_config`` 1.1 / 1.2 read along); ``engine`` alone waits,
keeps the clock and writes ``record.RunRecord``, which the steps and reports read: the
verdicts, the evidence and what the run leaves; ``confirm`` lists the output location before
submitting, then runs the phases in order on the engine.
"""

from __future__ import annotations

from rlark_acceptance.model.profile import KEEP_OUTPUTS
from rlark_acceptance.run.step6.confirm import Interrupted, confirm_running
from rlark_acceptance.run.step6.engine import PhaseFailed, Progress
from rlark_acceptance.run.step6.log import RAY_STARTED, is_script_output
from rlark_acceptance.run.step6.plan import Step6Plan, build_plan, manifest_of, plan_for
from rlark_acceptance.run.step6.record import ORDER, PHASES, PhaseResult, RunRecord, Status

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
    "Step6Plan",
    "build_plan",
    "confirm_running",
    "is_script_output",
    "manifest_of",
    "plan_for",
]
