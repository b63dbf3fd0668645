"""Scanning: one text, one named value, a whole parsed YAML tree (with key paths)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rlark_acceptance.model.keypath import KeyPath
from rlark_acceptance.secrets.commands import command_assignments
from rlark_acceptance.secrets.formats import b64_found, format_found
from rlark_acceptance.secrets.hits import Found, SecretHit, to_hits
from rlark_acceptance.secrets.names import (
    assignments,
    is_literal,
    overlaps,
    secret_name_kind,
    strip_span,
)

# Where a scan hands the values it found, so that a run's redaction removes them wherever
# they show up later (``Redactor.remember``); a bare scan keeps nothing.
Remember = Callable[[Iterable[str]], None]


def _forget(values: Iterable[str]) -> None:
    return None


def scan_text(text: str, remember: Remember = _forget) -> list[Found]:
    """All hits in ``text`` with spans: formats, URL credentials and named literal values."""
    strong = [*format_found(text), *b64_found(text)]
    weak: list[Found] = []
    for a in [*assignments(text), *command_assignments(text)]:
        span = strip_span(text, a.start, a.end)
        inside = [f for f in strong if overlaps((f.start, f.end), span)]
        for f in inside:
            # HF_TOKEN=hf_... reports name HF_TOKEN; a "name" the secret itself starts
            # before (a base64 blob ending in "==" reads as NAME==) is part of the value.
            if f.name is None and f.start >= span[0]:
                f.name = a.name
        value = text[span[0] : span[1]]
        if value.lower() == a.name.lstrip("-").lower():
            continue  # token=token passes a variable on (code in a heredoc / python -c)
        if a.kind and not inside and span[0] < span[1] and is_literal(value):
            weak.append(Found(a.kind, a.name, span[0], span[1], strong=False))
    found = _dedupe([*strong, *weak])
    remember(text[f.start : f.end] for f in found)
    return found


def _dedupe(found: Iterable[Found]) -> list[Found]:
    seen: dict[tuple[str, int, int], Found] = {}
    for f in found:
        key = (f.kind, f.start, f.end)
        if key not in seen or (seen[key].name is None and f.name is not None):
            seen[key] = f
    # A weak hit nested in another weak hit (X="--password y") keeps the innermost name.
    out = sorted(seen.values(), key=lambda f: (f.start, -f.end, f.kind))
    weak = [f for f in out if not f.strong]
    starts = [g.start for g in weak]

    def holds_another(f: Found) -> bool:
        # Only weak hits starting inside f can be nested in it: a bisect keeps this linear
        # for texts with thousands of hits.
        for i in range(bisect.bisect_left(starts, f.start), len(weak)):
            g = weak[i]
            if g.start > f.end:
                return False
            if g is not f and g.end <= f.end and (g.start, g.end) != (f.start, f.end):
                return True
        return False

    return [f for f in out if f.strong or not holds_another(f)]


def scan_script(text: str, remember: Remember = _forget) -> list[SecretHit]:
    """Hits in a script or any free text, ordered by position.

    >>> [(h.kind, h.name) for h in scan_script("export WANDB_API_KEY=abc123def\\nrun")]
    [('secret-variable', 'WANDB_API_KEY')]
    """
    return to_hits(text, scan_text(text, remember))


def scan_value(name: str | None, value: str, remember: Remember = _forget) -> list[SecretHit]:
    """Hits in one env var / YAML string field; ``name`` is the variable name or YAML key.

    The value is also scanned as text (it may be a script). Hits in a one-line value carry
    ``name``; hits in a multi-line value carry the name found inside it when there is one.

    >>> doc_id = "AKIAIOSFODNN7EXAMPLE"  # pragma: allowlist secret
    >>> [h.kind for h in scan_value("AWS_ACCESS_KEY_ID", doc_id)]
    ['aws-access-key']
    """
    return to_hits(value, value_found(name, value, remember))


def value_found(name: str | None, value: str, remember: Remember = _forget) -> list[Found]:
    """The hits of :func:`scan_value` with their spans, ordered by position."""
    found = scan_text(value, remember)
    single_line = "\n" not in value.strip()
    for f in found:
        # A one-line value is reported under its field (AZURE_CONN, not the AccountKey inside
        # it); a script carried in YAML keeps the names found inside it (DB_PASSWORD).
        if f.name is None or (single_line and name):
            f.name = name
    kind = secret_name_kind(name)
    if kind:
        span = strip_span(value, 0, len(value))
        covered = any(overlaps((f.start, f.end), span) for f in found)
        if not covered and is_literal(value):
            found.append(Found(kind, name, span[0], span[1], strong=False))
    remember(value[f.start : f.end] for f in found)
    return sorted(found, key=lambda f: (f.start, f.kind))


# A key path into the scanned document: the model's one key path type.
TreePath = KeyPath


def scan_tree(
    obj: Any, path: TreePath = (), remember: Remember = _forget
) -> list[tuple[TreePath, SecretHit]]:
    """Scan every string in a parsed YAML document; returns ``(key path, hit)`` pairs.

    Env entries ``{name: X, value: Y}`` are scanned with ``X`` as the name; scripts and
    other multi-line strings with their own lines (``hit.line``).

    >>> scan_tree({"env": [{"name": "HF_TOKEN", "value": "${HF_TOKEN}"}]})
    []
    """
    out: list[tuple[TreePath, SecretHit]] = []
    if isinstance(obj, Mapping):
        env_name = obj.get("name") if isinstance(obj.get("name"), str) else None
        for key, val in obj.items():
            sub = (*path, str(key))
            if isinstance(val, str | int) and not isinstance(val, bool):
                # A number under a secret name (password: 12345678) is a literal too.
                name = env_name if key == "value" and env_name else str(key)
                out += [(sub, h) for h in scan_value(name, str(val), remember)]
            else:
                out += scan_tree(val, sub, remember)
    elif isinstance(obj, Sequence) and not isinstance(obj, str | bytes):
        for i, item in enumerate(obj):
            sub = (*path, i)
            if isinstance(item, str):
                out += [(sub, h) for h in scan_value(None, item, remember)]
            else:
                out += scan_tree(item, sub, remember)
    return out
