"""6.1 任务列表中出现本次 Job: the platform accepts the Job and lists it.

Decided at once from two probes: the submission (a refusal or an unreachable target fails
it) and the platform's Job list (the Job missing from it fails it).
"""

from __future__ import annotations

from typing import ClassVar

from rlark_acceptance.adapters.base import TargetUnreachable
from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.run.step6.observed import Observed, unreachable_text
from rlark_acceptance.run.step6.phase import Decision, Failed, ListJobs, Passed, Phase, Submit


class Listed(Phase):
    check: ClassVar[str] = CheckId.JOB_LISTED

    def __init__(self, manifest: str) -> None:
        self.manifest = manifest

    def verdict(self, seen: Observed) -> Decision:
        if isinstance(seen.refused, TargetUnreachable):
            return Failed(unreachable_text(seen.refused))
        if seen.refused is not None:
            return Failed(f"the platform refused the Job: {seen.refused}")
        if seen.ref is None:
            return Submit(self.manifest)
        if seen.listed is None:
            return ListJobs()
        if isinstance(seen.listed, TargetUnreachable):
            return Failed(unreachable_text(seen.listed))
        if seen.ref.name not in seen.listed:
            return Failed(f"job {seen.ref.name} was submitted but the platform does not list it")
        return Passed(f"job {seen.ref.name} is listed")
