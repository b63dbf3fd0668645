"""``reports/summary.md``: the record as a CI job's page shows it (docs/contract.md §4.4).

The verdict, the earliest failure with its remedy, each Step 6 stage against its budget and
the median of the profile's last runs, what changed since the previous run (image, node,
harness commit) and the record's warnings; the same text is appended to the file
``$GITHUB_STEP_SUMMARY`` names, when it is set. A trend chart of each stage over the last
runs (``stage-trend.svg``, drawn with matplotlib's Agg backend) is linked from it when
matplotlib is installed (``rlark-acceptance[charts]``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlark_acceptance.run.budgets import BudgetReport
from rlark_acceptance.run.history import Entry

SUMMARY_MD = "summary.md"
CHART = "stage-trend.svg"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
_WORD = {"passed": "ACCEPTED", "interrupted": "INTERRUPTED"}


def _name(summary: Mapping[str, Any]) -> str:
    """The profile's name (its history's folder), else its file."""
    return str((summary.get("provenance") or {}).get("profileName") or summary.get("profile"))


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def render(
    summary: Mapping[str, Any],
    budgets: BudgetReport | None,
    changes: Sequence[str] | None,
    chart: str | None,
) -> str:
    """``changes``: since the previous run of the profile (None: there is none)."""
    verdict = str(summary.get("verdict", "failed"))
    lines = [
        f"# RLark acceptance of `{_name(summary)}`: {_WORD.get(verdict, 'NOT ACCEPTED')}",
        "",
        f"Run `{summary.get('runId')}` of `{summary.get('profile')}`.",
        "",
    ]
    first = summary.get("earliestFailure")
    if first:
        where = f" ({first['location']})" if first.get("location") else ""
        lines += [
            f"**Earliest failure**: [{first['check']}]{where} {first.get('message') or ''}",
            "",
            f"**Remedy**: {first.get('hint') or ''}",
            "",
        ]
    lines += _stages(summary, budgets)
    lines += ["", "## Since the previous run", ""]
    if changes is None:
        lines.append("No previous run of this profile in the history.")
    elif changes:
        lines += [f"- {c}" for c in changes]
    else:
        lines.append(
            "Nothing changed: the same image, node, versions the target reported, harness, "
            "profile and Job YAML."
        )
    warnings = summary.get("warnings") or []
    if warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in warnings]
    if chart:
        lines += ["", f"![each stage over the last runs]({chart})"]
    return "\n".join(lines) + "\n"


def _stages(summary: Mapping[str, Any], budgets: BudgetReport | None) -> list[str]:
    lines = ["## Step 6 stages", ""]
    if budgets is None or not budgets.stages:
        durations = summary.get("durations") or {}
        if not durations:
            return [*lines, "No stage was reached."]
        return [*lines, *(f"- {k}: {_seconds(v)} s" for k, v in durations.items())]
    lines += [
        "| stage | this run (s) | budget (s) | median of the last runs (s) | ratio | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for s in budgets.stages:
        ratio = "–" if s.ratio is None else f"{s.ratio:.1f}×"
        what = [w for w, on in (("over budget", s.over_budget), ("regressed", s.regressed)) if on]
        budget = "–" if s.budget is None else f"{s.budget:g}"
        median = "–" if s.median is None else f"{s.median:.1f} ({s.runs})"
        lines.append(
            f"| {s.stage} | {s.seconds:.1f} | {budget} | {median} | {ratio} | "
            f"{', '.join(what) or 'holds'} |"
        )
    lines += ["", budgets.note() + f"; a regression is over {budgets.limit:g}× the median."]
    return lines


def trend_chart(path: Path, earlier: Sequence[Entry], current: Mapping[str, Any]) -> Path | None:
    """Each stage's seconds over the earlier runs and this one, as an SVG; None when
    matplotlib is not installed (the summary then has no chart)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    runs = [(e.summary.get("runId"), e.durations) for e in earlier]
    runs.append((current.get("runId"), dict(current.get("durations") or {})))
    stages = list(dict.fromkeys(k for _, d in runs for k in d))
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    xs = list(range(len(runs)))
    for stage in stages:
        ys = [d.get(stage) for _, d in runs]
        points = [(x, float(y)) for x, y in zip(xs, ys, strict=True) if y is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=stage)
    ax.set_xticks(xs, [str(r or "?")[-6:] for r, _ in runs], rotation=45, fontsize=7)
    ax.set_xlabel("run (last 6 of its id; this run last)")
    ax.set_ylabel("seconds since submission")
    ax.set_title(f"Step 6 stages of {_name(current)}")
    if stages:
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    return path


def write(directory: Path, text: str, environ: Mapping[str, str] = os.environ) -> Path:
    """``summary.md`` in ``directory``; appended to ``$GITHUB_STEP_SUMMARY`` when set."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SUMMARY_MD
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    step_summary = environ.get(STEP_SUMMARY_ENV)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as f:
            f.write(text)
    return path


__all__ = ["CHART", "SUMMARY_MD", "render", "trend_chart", "write"]
