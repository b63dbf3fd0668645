"""A run's OpenTelemetry trace, worked out after the run from its record (``tree``) and
sent to a collector when one is named (``export``)."""

from rlark_acceptance.trace.export import Exported, endpoint_of, export, traceparent_of
from rlark_acceptance.trace.tree import (
    Preflight,
    SelfCheck,
    Span,
    Submission,
    Timeline,
    pipeline_of,
    run_tree,
)

__all__ = [
    "Exported",
    "Preflight",
    "SelfCheck",
    "Span",
    "Submission",
    "Timeline",
    "endpoint_of",
    "export",
    "pipeline_of",
    "run_tree",
    "traceparent_of",
]
