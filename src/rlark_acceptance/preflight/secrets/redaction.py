"""Redaction: every detected secret value replaced, every other byte kept."""

from __future__ import annotations

from collections.abc import Iterable

from rlark_acceptance.preflight.secrets.hits import REDACTED
from rlark_acceptance.preflight.secrets.scan import scan_text


def redact(text: str, extra_values: Iterable[str] = ()) -> str:
    """Replace every detected secret value, and every ``extra_values`` entry, with ``***``.

    Everything else is kept byte-identical. Once a value is detected, its other occurrences
    are redacted too (values shorter than 4 characters only where detected, so that a
    one-letter password does not blank every letter of a log).

    >>> redact("https://bob:pw1234@h/x t=abc", ["abc"])  # pragma: allowlist secret
    'https://***@h/x t=***'
    """
    spans = [(f.start, f.end) for f in scan_text(text)]
    values = {text[s:e] for s, e in spans if e - s >= 4}
    values.update(v for v in extra_values if v)
    for v in values:
        i = text.find(v)
        while i >= 0:
            spans.append((i, i + len(v)))
            i = text.find(v, i + 1)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for s, e in _merge(spans):
        out += [text[pos:s], REDACTED]
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged
