"""Redaction: every detected secret value replaced, every other byte kept.

The one redaction for everything the harness shows: texts (logs, scripts, messages, YAML and
JSON attachments), single named values, and parsed trees (the RLinf config, a Job) printed or
attached. Every value a scan found earlier in the process is removed wherever it shows up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rlark_acceptance.preflight.secrets.hits import REDACTED
from rlark_acceptance.preflight.secrets.memory import remembered
from rlark_acceptance.preflight.secrets.names import is_literal, secret_name_kind
from rlark_acceptance.preflight.secrets.scan import scan_text, value_found


def redact(text: str, extra_values: Iterable[str] = ()) -> str:
    """Replace every detected secret value, and every ``extra_values`` entry, with ``***``.

    Everything else is kept byte-identical. Once a value is detected, its other occurrences
    are redacted too (values shorter than 4 characters only where detected, so that a
    one-letter password does not blank every letter of a log).

    >>> redact("https://bob:pw1234@h/x t=abc", ["abc"])  # pragma: allowlist secret
    'https://***@h/x t=***'
    """
    return _replace(text, [(f.start, f.end) for f in scan_text(text)], extra_values)


def redact_value(name: str | None, value: str, extra_values: Iterable[str] = ()) -> str:
    """One env var / YAML field: a literal under a secret name goes whole.

    >>> redact_value("DB_PASSWORD", "hunter" + "2")
    '***'
    """
    return _replace(value, [(f.start, f.end) for f in value_found(name, value)], extra_values)


def redact_tree(obj: Any, name: str | None = None) -> Any:
    """A copy of a parsed YAML / JSON tree with every secret value replaced by ``***``.

    Keys and structure are kept; env entries ``{name: X, value: Y}`` use ``X`` as the name;
    a number under a secret name (``password: 12345678``) goes too.

    >>> redact_tree({"wandb": {"api_key": "0123" + "abcd"}, "env": [{"name": "T", "value": "x"}]})
    {'wandb': {'api_key': '***'}, 'env': [{'name': 'T', 'value': 'x'}]}
    """
    if isinstance(obj, Mapping):
        env_name = obj.get("name") if isinstance(obj.get("name"), str) else None
        return {
            k: redact_tree(v, env_name if k == "value" and env_name else str(k))
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [redact_tree(item) for item in obj]
    if isinstance(obj, str):
        return redact_value(name, obj)
    secret_number = isinstance(obj, int) and not isinstance(obj, bool) and secret_name_kind(name)
    if secret_number and is_literal(str(obj)):
        return REDACTED
    return obj


def _replace(text: str, spans: list[tuple[int, int]], extra_values: Iterable[str]) -> str:
    values = {text[s:e] for s, e in spans if e - s >= 4}
    values.update(v for v in extra_values if v)
    values.update(v for v in remembered() if v in text)
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
