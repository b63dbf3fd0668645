"""``rlark-acceptance report``: the Allure report of one reports directory, rendered whole.

The renderer is Allure 3 (npm package ``allure``, pinned in ``package.json``, configured by
``allurerc.mjs``). Rendered here, never by hand, because by hand is how a red run read
ACCEPTED: ``allure generate`` into a directory that holds an older report leaves the older
files in place, and the report's name came from ``./reports`` whatever results were given.

- The report is generated into a new directory next to the old one, then replaces it whole:
  no file of an older report survives, and a reader never sees half of one.
- Its name and verdict come from the results being rendered (``executor.json``, written by
  the run that wrote them).
- The history (``allure-history.jsonl`` beside the results) is appended, never reset; when
  the run kept its summary in a history store, the store's Allure points of the profile are
  read into it first and this render's is added to the store (``run/allure_history.py``).
- The exit status is the quality gate's over the same results: 0 accepted, 1 not accepted
  (the gate's line names the earliest check), 2 nothing to render.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.run import allure_history

RESULTS, REPORT, HISTORY = "allure-results", "allure-report", "allure-history.jsonl"
RENDER = "allure-render.mjs"  # the renderer with the gate, beside allurerc.mjs
_RENDER_TIMEOUT = 600  # seconds: a cold npx start plus a few thousand results


@dataclass
class Rendered:
    report: Path  # the directory holding index.html
    gate_status: int  # the quality gate's exit status
    gate_text: str  # what the gate said
    history: str | None = None  # the store its Allure history was read from and added to
    history_key: str | None = None  # this render's point in that store (None: not added)
    warnings: tuple[str, ...] = ()


def renderer_root(start: Path | None = None) -> Path:
    """The checkout that holds ``allurerc.mjs`` and the renderer (``node_modules``): the
    working directory or one above it, else the one this package is installed from."""
    here = (start or Path.cwd()).resolve()
    package = Path(__file__).resolve().parents[3]
    for d in (here, *here.parents, package):
        if (d / "allurerc.mjs").is_file():
            return d
    raise InputError("allurerc.mjs", "not found here or above: run in the checkout")


def _allure(root: Path) -> str:
    exe = root / "node_modules" / ".bin" / "allure"
    if not exe.exists():
        raise InputError(
            str(exe), f"the report renderer is not installed: `npm install` in {root} does it"
        )
    return str(exe)


def _node() -> str:
    found = shutil.which("node")
    if found is None:
        raise InputError("node", "Node.js is not installed: the report renderer needs it")
    return found


def render(reports: Path, *, root: Path | None = None, history: str | None = None) -> Rendered:
    """Render ``reports/allure-results`` into ``reports/allure-report`` and run the gate;
    ``history``: the store of Allure points (default: the one the run kept its summary in)."""
    reports = reports.resolve()
    results = reports / RESULTS
    if not results.is_dir() or not any(results.glob("*-result.json")):
        raise InputError(str(results), "no Allure results: run the acceptance suite first")
    root = renderer_root(root)
    _allure(root)  # installed, else the answer says how
    shared = allure_history.of_run(reports, history)
    if history is not None and shared is None:
        raise InputError(
            str(reports / "run-summary.json"),
            f"--history {history}: no run record here names the profile and the run",
        )
    warnings: list[str] = []
    has_point = None
    if shared is not None:
        pulled = allure_history.pull(shared, reports / HISTORY)
        warnings += pulled.warnings
        has_point = pulled.has_point
    before = allure_history.uuids(reports / HISTORY)
    fresh = reports / f".{REPORT}.new"
    shutil.rmtree(fresh, ignore_errors=True)
    env = dict(
        os.environ,
        RLARK_REPORTS_DIR=str(reports),
        RLARK_RESULTS_DIR=str(results),
        RLARK_REPORT_OUTPUT=str(fresh),
    )
    # One pass renders the report and evaluates the gate into it (``allure-render.mjs``):
    # ``allure generate`` alone leaves the report's gate empty.
    done = subprocess.run(
        [_node(), str(root / RENDER), str(root / "allurerc.mjs"), str(results)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=_RENDER_TIMEOUT,
    )
    if done.returncode not in (0, 1) or not (fresh / "index.html").is_file():
        shutil.rmtree(fresh, ignore_errors=True)
        raise RuntimeError(
            f"the report failed to render (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    target = reports / REPORT
    old = reports / f".{REPORT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)  # out of the way first: the new one is moved in whole
    fresh.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    key = None
    if shared is not None:
        key, more = allure_history.push(shared, reports / HISTORY, before, has_point)
        warnings += more
    return Rendered(
        target,
        done.returncode,
        _plain(done.stderr),
        shared.describe() if shared is not None else None,
        key,
        tuple(warnings),
    )


def _plain(text: str) -> str:
    """The gate's words without the terminal colours."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip()


def serve(report: Path, root: Path | None = None) -> int:
    """``allure open``: serve the rendered report on localhost until interrupted."""
    root = renderer_root(root)
    try:
        return subprocess.call([_allure(root), "open", str(report)], cwd=root)
    except KeyboardInterrupt:
        return 0


def main(reports: Path, *, open_after: bool = False, history: str | None = None) -> int:
    done = render(reports, history=history)
    name = _report_name(done.report)
    print(f"report: {done.report / 'index.html'}")
    if name:
        print(f"  {name}")
    if done.history is not None:
        added = "this run's point added" if done.history_key else "this run's point already there"
        print(f"Allure history: {done.history} ({added})")
    for warning in done.warnings:
        print(f"warning: {warning}")
    lines = [x for x in done.gate_text.splitlines() if x.strip()]
    said = (x.strip(" ⨯").split("    ")[0] for x in lines if "ACCEPTED" in x)  # not the rule id
    verdict = next(said, None)
    print(f"quality gate: {verdict or ('passed' if done.gate_status == 0 else lines[-1:])}")
    sys.stdout.flush()
    if open_after:
        serve(done.report)
    return 0 if done.gate_status == 0 else 1


def _report_name(report: Path) -> str | None:
    """The name the rendered report shows (its summary file), to say it on the terminal."""
    import json

    for path in (report / "summary.json", report / "widgets" / "summary.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = data.get("name") if isinstance(data, dict) else None
        if name:
            return str(name)
    return None
