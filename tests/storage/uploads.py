"""Copy a directory tree to an ``S3Store`` (the tests' way of putting real files on S3)."""

from __future__ import annotations

from pathlib import Path

from rlark_acceptance.storage import S3Store
from rlark_acceptance.storage.store import join_key


def upload(store: S3Store, root: Path, under: str = "") -> None:
    """Every file under ``root`` to ``store`` at ``under/<path relative to root>``."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        key = join_key(store.prefix, under, path.relative_to(root).as_posix())
        store.client.put_object(Bucket=store.bucket, Key=key, Body=path.read_bytes())
