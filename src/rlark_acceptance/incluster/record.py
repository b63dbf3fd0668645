"""A run's record directory (run-summary.json, junit.xml, allure-results/) to and from the
object store, as ``s3://bucket/prefix/<runner job>/<runner pod>/…``: each runner Pod writes
its own, the command reads back the one of the Pod it followed. Credentials from boto3's
standard chain on each side (in the Pod: the Secrets the Job references); an object's key
is the file's path in the record.

One folder per Pod, not per Job: the Job controller may start a second runner Pod through
an outage of the API server (its first Pod's creation answered late), and each Pod runs the
whole suite. Written to one folder, the second Pod's files would mix with the first's, and
the record read back would not be the run whose exit status the command followed."""

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


def for_pod(url: str, pod: str | None) -> str:
    """Where the runner Pod ``pod`` of the Job whose record folder is ``url`` writes its
    record (``url`` itself when the Pod's name is not known: a runner started by hand)."""
    return f"{url.rstrip('/')}/{pod}" if pod else url


def pods(url: str, client: Any = None) -> list[str]:
    """The runner Pods with a complete record under the Job's folder ``url``, sorted."""
    bucket, prefix = parse(url)
    store = S3Store(client or s3_client(), bucket, prefix)
    keys = (o.key.split("/") for o in store.list(""))
    return sorted(k[0] for k in keys if len(k) == 2 and k[1] == DONE)


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
    """Every object under ``url``: a Job's folder holds each of its Pods' records."""
    bucket, prefix = parse(url)
    store = S3Store(client or s3_client(), bucket, prefix)
    store.delete([o.key for o in store.list("")])
