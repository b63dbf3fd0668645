"""What one acceptance run came to: its pre-flight, and Step 6's record if it got that far."""

from __future__ import annotations

from dataclasses import dataclass, field

from rlark_acceptance.preflight.entry import PreflightResult
from rlark_acceptance.run.step6.record import RunRecord


@dataclass
class AcceptanceRun:
    preflight: PreflightResult
    record: RunRecord | None  # None: stopped at the pre-flight, nothing submitted
    # What the target said the Worker ran on and with (``Describes.describe``): provenance.
    described: dict[str, str] = field(default_factory=dict)
    # When the pre-flight ran (wall clock, seconds since the epoch: start, end): the trace's.
    preflight_at: tuple[float, float] | None = None

    def __repr__(self) -> str:  # a traceback shows step arguments' reprs: compact, no inputs
        return f"AcceptanceRun({self.preflight!r}, {self.record!r})"

    @property
    def submitted(self) -> bool:
        return self.record is not None and self.record.ref is not None
