"""A red run's diagnostics bundle: what the Worker, its Pod and its node showed, gathered
before the Worker is deleted and written, redacted, under the run's reports folder.

What a user needs to look further is gone with the Worker: the Pod's spec, status and
events, its node's conditions and allocatable resources, Ray's own session logs. The engine
gathers them (``gather``) at the last moment the Worker is still there, once the run is red
(or interrupted: it writes what it has), and ``write`` puts them in one folder with an
``index.json`` that says what each file is and what could not be read:

- ``pod.json`` (spec and status), ``events.json``, ``node.json`` (conditions, allocatable);
- ``worker-log.txt``: the Worker log's first lines, the window around the first cause and
  its last lines, each stretch headed by the log lines it holds;
- ``printed-config.json``: the config RLinf printed at start-up;
- ``ray/<name>``: the end of each of Ray's session logs the target could still read.

Every file goes through the run's ``Redactor``; each is cut at ``MAX_FILE_BYTES``. A green run
writes none. Before a run, an earlier run's bundle in the folder is removed, file by file as
its index lists them: the folder holds one run's bundle, and only files a bundle wrote go.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from rlark_acceptance.adapters.base import Adapter, Diagnoses, Event, JobRef, WorkerEvidence
from rlark_acceptance.secrets import Redactor

if TYPE_CHECKING:
    from rlark_acceptance.rlinf.failures import Cause
    from rlark_acceptance.run.step6.record import LogTail, RunRecord

INDEX = "index.json"
WRITTEN_BY = "rlark-acceptance diagnostics bundle"
# What a bundle keeps of the Worker log besides the window around the first cause.
FIRST_LINES = 50
LAST_LINES = 200
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 256 * 1024
_CUT = "\n[cut: the file's size bound was reached]\n"


@dataclass(frozen=True)
class Gathered:
    """What the target held of the Worker when the run was red (``gather``)."""

    pod: str | None
    evidence: WorkerEvidence
    events: tuple[Event, ...]


@dataclass(frozen=True)
class Bundle:
    """A bundle as written: its folder, its files (relative name, bytes) and why."""

    directory: Path
    files: tuple[tuple[str, int], ...]
    why: str
    unread: tuple[str, ...] = field(default=())

    @property
    def bytes(self) -> int:
        return sum(n for _, n in self.files)

    def summary(self) -> dict[str, Any]:
        """For the run record (``run-summary.json``): where, what, why."""
        return {
            "dir": str(self.directory),
            "index": INDEX,
            "files": dict(self.files),
            "bytes": self.bytes,
            "why": self.why,
            "unread": list(self.unread),
        }

    def line(self) -> str:
        """One line for the terminal: where, how many files, how big."""
        names = ", ".join(f"{n} {_size(b)}" for n, b in self.files)
        return (
            f"diagnostics: {self.directory} ({len(self.files)} files, {_size(self.bytes)}: {names})"
        )


def gather(adapter: Adapter, ref: JobRef, pod: str | None, seen: Sequence[Event]) -> Gathered:
    """What the target holds of the Worker now; never raises (a part it cannot read is
    said in ``unread``). ``seen``: the Events the run saw, kept when the target's are gone."""
    unread: list[str] = []
    evidence = WorkerEvidence()
    if pod is None:
        unread.append("the Pod: the Job never had one")
    elif isinstance(adapter, Diagnoses):
        try:
            evidence = adapter.worker_evidence(ref, pod)
        except Exception as e:  # any adapter's: the bundle says what it could not read
            unread.append(f"the Pod, its node, Ray's session logs: {type(e).__name__}: {e}")
    else:
        unread.append(
            f"the Pod, its node, Ray's session logs: the {adapter.name} target cannot say"
        )
    events = list(seen)
    try:
        events = _merged(adapter.events(ref), seen)
    except Exception as e:  # as above; the Events the run saw are kept
        unread.append(f"the Job's Events now: {type(e).__name__}: {e} (those the run saw kept)")
    return Gathered(pod, _with_unread(evidence, unread), tuple(events))


def write(
    directory: Path,
    rec: RunRecord,
    cause: Cause | None,
    found: Gathered | None,
    redactor: Redactor,
    why: str,
    failure: str | None = None,
) -> Bundle:
    """The bundle of ``rec`` into ``directory``; ``found`` None: the Worker was gone before
    anything could be read of it (the record's own evidence is written). ``why``: the check
    that failed (or the interrupt), ``failure`` its message."""
    directory.mkdir(parents=True, exist_ok=True)
    unread = list(found.evidence.unread) if found is not None else ["the Worker: already deleted"]
    files: dict[str, bytes] = {}

    def put(name: str, text: str) -> None:
        data = redactor.redact(text).encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            data = data[: MAX_FILE_BYTES - len(_CUT)] + _CUT.encode()
        files[name] = data

    def put_json(name: str, tree: Any) -> None:
        put(name, json.dumps(redactor.redact_tree(tree), indent=2, ensure_ascii=False) + "\n")

    pod = found.evidence.pod if found is not None else None
    if pod is None and rec.worker is not None:
        pod = {"metadata": {"name": rec.worker.name}, "status": asdict(rec.worker)}
        unread.append("the Pod's spec: the target no longer has it (its last status is kept)")
    if pod is not None:
        put_json("pod.json", pod)
    events = found.events if found is not None else tuple(rec.events)
    put_json("events.json", [asdict(e) for e in events])
    if found is not None and found.evidence.node is not None:
        put_json("node.json", found.evidence.node)
    text, segments = log_excerpt(rec.log)
    if segments:
        put("worker-log.txt", text)
    else:
        unread.append("the Worker log: it printed nothing")
    if rec.printed_config is not None:
        put_json("printed-config.json", rec.printed_config)
    else:
        unread.append("the config RLinf printed: not in the log read")
    for name, log in (found.evidence.ray_logs if found is not None else {}).items():
        put(f"ray/{name}", log)
    index = {
        "writtenBy": WRITTEN_BY,
        "runId": rec.run_id,
        "job": str(rec.job.name),
        "pod": found.pod if found is not None else None,
        "why": why,
        "failure": failure,  # the failing check's message, as the record has it
        "firstCause": _cause(cause),
        "log": {"lines": rec.log.count, "segments": segments},
        "files": {name: len(data) for name, data in files.items()},
        "unread": unread,
    }
    put(INDEX, json.dumps(index, indent=2, ensure_ascii=False) + "\n")
    for name, data in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    listed = ((INDEX, len(files[INDEX])), *((n, len(d)) for n, d in files.items() if n != INDEX))
    return Bundle(directory, listed, why, tuple(unread))


def log_excerpt(log: LogTail) -> tuple[str, list[dict[str, Any]]]:
    """The log's first lines, the window around the first cause, its last lines, as one
    text with each stretch headed by its log lines (1-based), and those stretches."""
    kept: dict[int, str] = {}
    why: dict[int, str] = {}

    def take(first: int, lines: Sequence[str], what: str) -> None:
        for i, line in enumerate(lines, first):
            kept.setdefault(i, line)
            why.setdefault(i, what)

    take(0, log.head[:FIRST_LINES], "the first lines")
    if log.window_from is not None and log.cause_line is not None:
        take(log.window_from, log.window, f"around the first cause (log line {log.cause_line + 1})")
    tail = list(log.tail)[-LAST_LINES:] if log.tail else log.head[-LAST_LINES:]
    take(log.count - len(tail), tail, "the last lines")
    segments: list[dict[str, Any]] = []
    stretches: list[list[str]] = []
    for i in sorted(kept):
        if not segments or segments[-1]["to"] != i:  # 1-based "to" is the 0-based next
            segments.append({"from": i + 1, "to": i + 1, "what": []})
            stretches.append([])
        seg = segments[-1]
        seg["to"] = i + 1
        if why[i] not in seg["what"]:
            seg["what"].append(why[i])
        line = kept[i]
        stretches[-1].append(
            line[:MAX_LINE_CHARS] + (" …[cut]" if len(line) > MAX_LINE_CHARS else "")
        )
    text: list[str] = []
    for seg, lines in zip(segments, stretches, strict=True):
        seg["what"] = "; ".join(seg["what"])
        text += [_head(seg, log.count), *lines]
    return "\n".join(text) + ("\n" if text else ""), segments


def _head(seg: dict[str, Any], count: int) -> str:
    return f"----- log lines {seg['from']}-{seg['to']} of {count}: {seg['what']} -----"


def excerpt_lines(text: str, segments: Sequence[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """``worker-log.txt`` read back: each stretch's first log line (0-based) and its lines."""
    rows = text.split("\n")
    out: list[tuple[int, list[str]]] = []
    at = 0
    for seg in segments:
        n = int(seg["to"]) - int(seg["from"]) + 1
        out.append((int(seg["from"]) - 1, rows[at + 1 : at + 1 + n]))
        at += 1 + n
    return out


def clear_earlier(directory: Path) -> list[str]:
    """Remove an earlier run's bundle from ``directory``: only the files its index lists
    (a bundle wrote them), then the index; returns what was removed."""
    index = directory / INDEX
    try:
        listed = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(listed, dict) or listed.get("writtenBy") != WRITTEN_BY:
        return []
    removed: list[str] = []
    for name in listed.get("files") or {}:
        rel = PurePosixPath(str(name))
        if rel.is_absolute() or ".." in rel.parts:
            continue  # never outside the folder, whatever an index says
        try:
            (directory / rel).unlink()
        except OSError:
            continue
        removed.append(str(rel))
        _rmdir_empty(directory / rel.parent, directory)
    index.unlink(missing_ok=True)
    return [*removed, INDEX]


def _rmdir_empty(folder: Path, top: Path) -> None:
    if folder != top:
        with contextlib.suppress(OSError):  # not empty: another file is there
            os.rmdir(folder)


def _cause(cause: Cause | None) -> dict[str, Any] | None:
    if cause is None:
        return None
    out: dict[str, Any] = {"logLine": cause.line + 1, "quote": cause.quote, "actor": cause.actor}
    if cause.kind is not None:
        out["class"] = cause.kind.id
    out["knockOns"] = cause.knock_ons
    return out


def _merged(now: Sequence[Event], seen: Sequence[Event]) -> list[Event]:
    """The target's Events, with those the run saw that it no longer has."""
    known = {(e.involved, e.reason, e.message) for e in now}
    return sorted(
        [*now, *(e for e in seen if (e.involved, e.reason, e.message) not in known)],
        key=lambda e: e.time,
    )


def _with_unread(evidence: WorkerEvidence, more: Sequence[str]) -> WorkerEvidence:
    if not more:
        return evidence
    return WorkerEvidence(evidence.pod, evidence.node, evidence.ray_logs, (*evidence.unread, *more))


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"
