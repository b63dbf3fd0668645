"""A diagnosis in words, as the run record prints a run: its verdict, then what to do."""

from __future__ import annotations

from rlark_acceptance.diagnose.diagnosis import Diagnosis
from rlark_acceptance.diagnose.harness_run import RunSide
from rlark_acceptance.diagnose.pod import PodSide
from rlark_acceptance.model.doc_checks import BY_ID
from rlark_acceptance.rlinf.failures import FailureClass

WIDTH = 80


def render(d: Diagnosis, name: str, run: RunSide | None = None) -> str:
    """The diagnosis as the run record prints a run: its verdict, then what to do; for a
    harness run, what its record says first."""
    out = [" rlark-acceptance diagnosis ".center(WIDTH, "=")]
    out += _run(run)
    c, p = d.cause, d.pod_cause
    if not d.failed:
        if run is not None and run.red:
            kept = (
                f"{d.lines} log lines, of which the bundle kept some" if run.bundle else "no bundle"
            )
            out.append(f"the Worker log shows no error line ({kept}): the record's failure stands")
            return _joined([*out, *_pod(d.pod)])
        out.append(f"verdict: no failure  ({name}: {d.lines} log lines, no error line)")
        return _joined([*out, *_pod(d.pod)])
    if p is not None:
        out.append(
            f"verdict: failed  first cause in the Pod's status and events: {p.reason}  ({name})"
        )
        out.append(f'  "{p.text}"')
    else:
        assert c is not None
        where = f"first cause at log line {c.line + 1} of {d.lines}, in {c.actor or 'the driver'}"
        out.append(f"verdict: failed  {where}  ({name})")
        out.append(f'  "{c.quote}"')
    out += _class(d.kind)
    assert d.check is not None
    check = BY_ID[d.check]
    out += [f"check: {check.id} ({check.says}): {d.stood()}", f"  → {check.remedy}"]
    if d.fix_at is not None and d.fix_at != d.check:
        fix = BY_ID[d.fix_at]
        out += [f"fixed at: {fix.id} ({fix.says})", f"  → {fix.remedy}"]
    if c is not None:
        if c.mount_path:
            out.append(f"path: {c.mount_path}")
        if p is not None:
            actor = c.actor or "the driver"
            out.append(f'the log\'s first error: log line {c.line + 1}, in {actor}: "{c.quote}"')
        out.append(f"knock-ons passed over: {c.knock_ons}")
    return _joined([*out, *_pod(d.pod, p.reason if p is not None else None)])


def _run(run: RunSide | None) -> list[str]:
    """What a harness run's record says: its verdict, its check, where its bundle is."""
    if run is None:
        return []
    said = f"run {run.run_id} ({run.reports}): {run.verdict or 'no verdict recorded'}"
    if run.check:
        said += f" at {run.check}"
    out = [said]
    if run.message:
        out.append(f"  {run.message}")
    if run.bundle is not None:
        out.append(f"diagnostics bundle: {run.bundle} ({', '.join(run.files)})")
    elif run.red:
        out.append("diagnostics bundle: none (the run failed before its Worker was submitted)")
    return out


def _class(kind: FailureClass | None) -> list[str]:
    if kind is None:
        return ["class: none of the known classes fits; the line above is the log's first error"]
    return [f"class: {kind.id} — {kind.title}", f"  → {kind.remedy}"]


def _pod(side: PodSide | None, named: str | None = None) -> list[str]:
    """What the Pod's status and Warning events said, and what it adds beyond the cause."""
    if side is None:
        return []
    s = side.status
    state = ", ".join(
        str(x)
        for x in (
            s.phase,
            s.reason,
            f"exit code {s.exit_code}" if s.exit_code is not None else None,
            f"restarts {s.restarts}",
        )
        if x
    )
    read = f"the log of container {side.container}" if side.container else "no container"
    if not side.ran:
        read = "no log: its container never ran"
    elif side.previous:
        read += ", its run before the restart"
    out = [f"pod: {side.namespace}/{side.name} on node {s.node or 'none'}: {state} ({read})"]
    out += [
        f"  the Pod adds: {x.reason} [{x.kind.id}]: {x.text}"
        for x in side.findings
        if x.reason != named
    ]
    out += [f"  Warning {e.reason}: {e.message}" for e in side.events[-5:]]
    node = side.node
    if node is not None and node.unread is not None:
        out.append(f"node {node.name}: its conditions could not be read: {node.unread}")
    elif node is not None and node.wrong:
        out += [f"node {node.name}: {c.said()}" for c in node.wrong]
    elif node is not None and any(c.type == "Ready" for c in node.conditions):
        out.append(f"node {node.name}: Ready, no memory, disk or PID pressure")
    elif node is not None:
        said = ", ".join(c.said() for c in node.conditions) or "none"
        out.append(f"node {node.name}: no Ready condition reported (its conditions: {said})")
    return out


def _joined(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
