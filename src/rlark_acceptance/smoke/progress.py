"""tqdm-shaped "Global Step" lines, one per step with a newline (logs are read line by line).

RLinf's runners draw ``tqdm(desc="Global Step")``; a Pod log only ever shows what tqdm
flushed, so the harness's first-signal regex matches this same text.
"""

from __future__ import annotations

from collections.abc import Mapping

BAR_WIDTH = 10
BLOCKS = " ▏▎▍▌▋▊▉█"


def _clock(seconds: float) -> str:
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def _bar(frac: float) -> str:
    eighths = int(frac * BAR_WIDTH * 8)
    full, part = divmod(eighths, 8)
    bar = "█" * full + (BLOCKS[part] if full < BAR_WIDTH else "")
    return bar.ljust(BAR_WIDTH)


def _fmt(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def format_line(n: int, total: int, elapsed: float, postfix: Mapping[str, object]) -> str:
    """``Global Step:  40%|████      | 2/5 [00:01<00:01,  1.50it/s, k=v]``."""
    frac = n / total if total else 1.0
    rate = n / elapsed if elapsed > 0 else 0.0
    remaining = (total - n) / rate if rate > 0 else 0.0
    rate_s = f"{rate:5.2f}it/s" if rate >= 1 or rate == 0 else f"{1 / rate:5.2f}s/it"
    extra = "".join(f", {k}={_fmt(v)}" for k, v in postfix.items())
    return (
        f"Global Step: {frac * 100:3.0f}%|{_bar(frac)}| {n}/{total} "
        f"[{_clock(elapsed)}<{_clock(remaining)}, {rate_s}{extra}]"
    )
