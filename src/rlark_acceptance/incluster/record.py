"""A run's record directory (run-summary.json, junit.xml, allure-results/) to and from the
object store, as ``s3://bucket/prefix/<runner>/…``: the runner Pod writes it, the command
reads it back. Credentials from boto3's standard chain on each side (in the Pod: the Secrets
the Job references); an object's key is the file's path in the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.local.s3 import client as s3_client
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.storage.store import S3Store, join_key

# Written last by the runner: a record is complete once this object exists.
DONE = ".record-complete"


def parse(url: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` -> (bucket, prefix); anything else is a usage error."""
    scheme, _, rest = url.partition("://")
    bucket, _, prefix = rest.partition("/")
    if scheme != "s3" or not bucket:
        raise InputError("--record-store", f"{url!r} is not an s3://bucket/prefix location")
    return bucket, prefix.strip("/")


def upload(directory: Path, url: str, client: Any = None) -> int:
    """Every file of ``directory`` under ``url``, then the completion marker; files sent."""
    bucket, prefix = parse(url)
    c = client or s3_client()
    sent = 0
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        key = join_key(prefix, str(path.relative_to(directory)))
        c.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        sent += 1
    c.put_object(Bucket=bucket, Key=join_key(prefix, DONE), Body=str(sent).encode())
    return sent


def download(url: str, directory: Path, client: Any = None) -> bool:
    """The record at ``url`` into ``directory`` (emptied first); whether it was complete."""
    bucket, prefix = parse(url)
    store = S3Store(client or s3_client(), bucket, prefix)
    objects = store.list("")
    complete = False
    for obj in objects:
        rel = obj.key
        if rel == DONE:
            complete = True
            continue
        dest = directory / rel
        if directory.resolve() not in dest.resolve().parents:
            continue  # a key that would climb out of the record is not part of it
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(store.read(rel))
    return complete


def remove(url: str, client: Any = None) -> None:
    bucket, prefix = parse(url)
    store = S3Store(client or s3_client(), bucket, prefix)
    store.delete([o.key for o in store.list("")])
