"""The embodied runner's metric table, as RLinf 0.3 prints it after each global step.

The smoke config is embodied-shaped, so the smoke workload prints what RLinf's
``EmbodiedRunner`` prints (``rlinf/utils/metric_utils.py`` ``print_metrics_table``): a
box-drawn table, 120 columns wide, whose first row is
``│ Global Step:    2/5 │ Progress: ████…░░░ │  40.0%``; a profile's ``firstSignal`` written
against it matches a real embodied RLinf job (RLinf's reasoning / agent runners draw tqdm
``Global Step:  40%|████ | 2/5`` instead). What still differs from RLinf is the metric
sections: the smoke run has only the few metrics its toy policy has
(``tests/fidelity`` says which).
"""

from __future__ import annotations

from collections.abc import Mapping

WIDTH = 120
BAR_WIDTH = 40
# RLinf's section for each metric prefix, in its order.
SECTIONS = {
    "time": "Time",
    "env": "Environment",
    "rollout": "Rollout",
    "eval": "Evaluation",
    "replay_buffer": "Replay Buffer",
    "train": "Training/Other",
}


def _clock(seconds: float) -> str:
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _row(text: str) -> str:
    inner = WIDTH - 2
    text = text if len(text) <= inner else text[: inner - 1] + "…"
    return f"{text.ljust(inner)} │"


def _title(title: str) -> str:
    label = f" {title} "
    pad = WIDTH - 2 - len(label)
    return f"├{'─' * (pad // 2)}{label}{'─' * (pad - pad // 2)}┤"


def _value(v: object) -> str:
    if not isinstance(v, float):
        return str(v)
    a = abs(v)
    if (a < 0.001 and v != 0) or a > 10000:
        return f"{v:.2e}"
    if a < 0.01:
        return f"{v:.4f}"
    return f"{v:.1f}" if a > 100 else f"{v:.3f}"


def step_row(n: int, total: int) -> str:
    """``│ Global Step:    2/5 │ Progress: ████…░░░ │  40.0%`` padded to the table's width."""
    pct = n / total * 100 if total else 100.0
    filled = int(BAR_WIDTH * pct / 100)
    bar = "█" * filled + "░" * (BAR_WIDTH - filled)
    return _row(f"│ Global Step: {n:4d}/{total} │ Progress: {bar} │ {pct:5.1f}%")


def format_table(
    n: int, total: int, elapsed: float, metrics: Mapping[str, object], start: int = 0
) -> str:
    """The table after global step ``n`` of ``total`` (1-based), as one multi-line text;
    ``start``: the step the run resumed from (its elapsed time covers the steps after it)."""
    done = n - start
    eta = elapsed / done * (total - n) if done > 0 else 0.0
    lines = [
        "",
        f"╭{'─' * (WIDTH - 2)}╮",
        _title("Metric Table"),
        step_row(n, total),
        _row(
            f"│ Elapsed: {_clock(elapsed)} │ ETA: {_clock(eta)} │ "
            f"Step Time: {elapsed / max(done, 1):.3f}s"
        ),
    ]
    col = (WIDTH - 4) // 3
    widths = [col + 1, col + 1, col]  # 116 = 3 * 38 + 2: the first two columns one wider
    for prefix, title in SECTIONS.items():
        rows = sorted(
            (k.split("/", 1)[1], v) for k, v in metrics.items() if k.startswith(prefix + "/")
        )
        if not rows:
            continue
        lines += [_title(title), f"│{' ' * (WIDTH - 2)}│"]
        for i in range(0, len(rows), 3):
            cells = [f"{k}={_value(v)}" for k, v in rows[i : i + 3]]
            cells += [""] * (3 - len(cells))
            lines.append(
                "".join(f"│{c[:w].ljust(w)}" for c, w in zip(cells, widths, strict=True)) + "│"
            )
        lines.append(f"│{' ' * (WIDTH - 2)}│")
    lines += [f"╰{'─' * (WIDTH - 2)}╯", ""]
    return "\n".join(lines)
