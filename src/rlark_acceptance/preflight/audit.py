"""``configs``: classify many RLinf configs at once (single node or redirect, GPUs, robots)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.rlinf.config import ConfigLoader
from rlark_acceptance.rlinf.effective import evaluate
from rlark_acceptance.secrets import Redactor


def walk(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files named directly, and every ``*.yaml`` / ``*.yml`` below named directories, sorted."""
    for p in map(Path, paths):
        if p.is_dir():
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [Path(root) / f for f in files if f.endswith((".yaml", ".yml"))]
            yield from sorted(found)
        else:
            yield p


def audit(
    paths: Iterable[str | Path],
    loader: ConfigLoader | None = None,
    redactor: Redactor | None = None,
) -> list[dict[str, Any]]:
    """One row per config found; the audit is one run: one redaction for all its rows."""
    loader = loader or ConfigLoader()
    redactor = redactor or Redactor()
    rows: list[dict[str, Any]] = []
    for path in walk(paths):
        row = audit_one(loader, path, redactor)
        if row is not None:
            rows.append(row)
    return rows


def _row(path: Path, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "path": str(path),
        "numNodes": None,
        "gpusRequired": None,
        "gpusAll": False,
        "singleNode": False,
        "realRobot": False,
        "redirectReasons": [],
        "error": None,
    }
    row.update(values)
    return row


def audit_one(loader: ConfigLoader, path: Path, redactor: Redactor) -> dict[str, Any] | None:
    """One row, or None for a file with no cluster section (a sub-config such as env/x.yaml)."""
    try:
        raw = loader.doc(path)
    except InputError as exc:
        return _row(path, error=str(exc))
    if not isinstance(raw.data, dict) or ("cluster" not in raw.data and "defaults" not in raw.data):
        return None
    try:
        eff = evaluate(loader, path)
    except InputError as exc:
        return _row(path, error=str(exc))
    except RecursionError:
        # The parse bounds depth; kept so one file can never stop the audit of the others.
        return _row(path, error=f"{path}: nested too deeply to compose")
    if not eff.config.has("cluster"):
        return None
    errors = [p.message for p in eff.config.problems if p.fatal]
    errors += [p.message for p in eff.cluster.problems]
    reasons = eff.redirect_reasons
    return _row(
        path,
        numNodes=eff.num_nodes,
        gpusRequired=eff.cluster.gpus_required,
        gpusAll=eff.cluster.gpus_all,
        singleNode=eff.num_nodes == 1 and not reasons,
        realRobot=eff.cluster.real_robot,
        redirectReasons=reasons,
        # Messages quote overrides and values: the audit's redaction.
        error=redactor.redact("; ".join(dict.fromkeys(errors))) or None,
    )
