"""6.1 任务列表中出现本次 Job: the platform accepts the Job and lists it."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rlark_acceptance.adapters.base import SubmitRejected, TargetUnreachable
from rlark_acceptance.run.step6.run import unreachable_text

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


class Listed:
    """Passes when the submitted Job is in the platform's list; a refusal fails it."""

    check: ClassVar[str] = "6.1"

    def __init__(self, manifest: str) -> None:
        self.manifest = manifest

    def run(self, run: Step6Run) -> None:
        rec = run.rec
        try:
            rec.ref = run.adapter.submit(rec.job, self.manifest)
        except SubmitRejected as exc:
            raise run.fail("6.1", f"the platform refused the Job: {exc}") from None
        except TargetUnreachable as exc:
            raise run.fail("6.1", unreachable_text(exc)) from None
        rec.durations["submit"] = run.since()
        ref = rec.ref
        try:
            listed = run.adapter.list_jobs(ref.namespace)
        except TargetUnreachable as exc:
            raise run.fail("6.1", unreachable_text(exc)) from None
        if ref.name not in listed:
            raise run.fail("6.1", f"job {ref.name} was submitted but the platform does not list it")
        run.done("6.1", "passed", f"job {ref.name} is listed")
