"""One key path type for every place a finding points into a YAML document.

A ``KeyPath`` is the tuple of mapping keys and list indexes from the document's root to a
node: ``("cluster", "node_groups", 1, "label")``. Placement problems, config locations and
YAML line tables all use it; ``dotted`` is its one text form, as users write keys in Hydra
overrides, with ``[i]`` for list items.

>>> dotted(("cluster", "node_groups", 1, "label"))
'cluster.node_groups[1].label'
>>> parse("cluster.node_groups[1].label")
('cluster', 'node_groups', 1, 'label')
"""

from __future__ import annotations

import re
from collections.abc import Hashable

KeyPath = tuple[Hashable, ...]

_PART = re.compile(r"\[(-?\d+)\]|([^.\[\]]+)")


def safe_text(value: object) -> str:
    """``str(value)`` that cannot raise (a broken ``__str__`` must not escape)."""
    try:
        return str(value)
    except Exception:  # any: a value from a user's YAML is named by its type instead
        return f"<{type(value).__name__}>"


def dotted(path: KeyPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{safe_text(part)}]"
        else:
            out += ("." if out else "") + safe_text(part)
    return out


def parse(text: str) -> KeyPath:
    """The key path of a dotted key (``a.b[2].c``); the empty text is the root."""
    parts: list[Hashable] = []
    for m in _PART.finditer(text):
        parts.append(int(m.group(1)) if m.group(1) is not None else m.group(2))
    return tuple(parts)
