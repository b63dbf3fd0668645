"""Where run outputs are read back from (6.5): a host path / volume, or object storage.

Keys are ``/``-separated and relative to the store's root (a directory, or a bucket
prefix), so the same checker runs against both. Reads are ranged, so checking a large
checkpoint reads headers and directories, not whole files.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)


@dataclass(frozen=True, order=True)
class ObjectInfo:
    key: str
    size: int
    # When the object was last written (epoch seconds), to tell this run's output from an
    # earlier run's at the same location.
    modified: float | None = field(default=None, compare=False)


class StoreError(Exception):
    """A read or listing failed; ``code`` is the storage's own error code (``NoSuchKey``...)."""

    def __init__(self, code: str, key: str, message: str) -> None:
        super().__init__(f"{key}: {code}: {message}")
        self.code = code
        self.key = key
        self.detail = message


class ObjectNotFound(StoreError):
    """The one error that means "nothing there": every other one keeps its cause."""

    def __init__(self, key: str, message: str = "no such object", code: str = "NoSuchKey") -> None:
        super().__init__(code, key, message)


class StoreUnavailable(StoreError):
    """The store did not answer (connection refused or reset, timeout, 5xx) after the bounded
    retries (``MAX_ATTEMPTS``): the outcome at the location is unknown, not empty."""


@runtime_checkable
class Store(Protocol):
    def list(self, prefix: str = "") -> list[ObjectInfo]:
        """Every object whose key starts with ``prefix`` (recursive), sorted by key."""
        ...

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of one object (``end=None``: to its end)."""
        ...

    def describe(self) -> str:
        """Where this store reads from, for reports; never contains credentials."""
        ...


@runtime_checkable
class Removable(Protocol):
    def delete(self, keys: Sequence[str]) -> None:
        """Remove these objects (a missing one is not an error)."""
        ...


@runtime_checkable
class Creatable(Protocol):
    def create(self, key: str, data: bytes) -> None:
        """Write a new object; one already at ``key`` is never replaced (``AlreadyExists``)."""
        ...


def join_key(*parts: str) -> str:
    """Join key parts with single slashes, ignoring empty parts."""
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


class FileStore:
    """A directory tree: a host path or a mounted volume."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def describe(self) -> str:
        return f"file://{self.root.resolve()}"

    def _path(self, key: str) -> Path:
        rel = Path(key.lstrip("/"))
        if ".." in rel.parts:
            raise StoreError("InvalidKey", key, "key leaves the store root")
        return self.root / rel

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        # A prefix is a string prefix as on S3: "ck" matches "ckpt/a" as well as "ck/b".
        prefix = prefix.lstrip("/")
        whole_dir = not prefix or prefix.endswith("/")
        base = self._path(prefix) if whole_dir else self._path(prefix).parent
        if not base.is_dir():
            return []
        out: list[ObjectInfo] = []

        def unreadable(e: OSError) -> None:
            raise StoreError(
                "AccessDenied" if isinstance(e, PermissionError) else "EIO", prefix, str(e)
            )

        for dirpath, _dirs, files in os.walk(base, onerror=unreadable):
            for name in files:
                path = Path(dirpath) / name
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix) and path.is_file():
                    st = path.stat()
                    out.append(ObjectInfo(key, st.st_size, st.st_mtime))
        return sorted(out)

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        path = self._path(key)
        try:
            with path.open("rb") as f:
                f.seek(start)
                return f.read() if end is None else f.read(max(0, end - start))
        except FileNotFoundError:
            raise ObjectNotFound(key) from None
        except IsADirectoryError:
            raise ObjectNotFound(key, "is a directory") from None
        except PermissionError as e:
            raise StoreError("AccessDenied", key, str(e.strerror)) from None

    def create(self, key: str, data: bytes) -> None:
        """Written beside its key, then linked to it: a reader never sees half an object and
        a second writer of the same key fails instead of replacing the first's."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            try:
                os.link(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
        except FileExistsError:
            raise StoreError("AlreadyExists", key, "an object is already there") from None
        except OSError as e:
            raise StoreError("AccessDenied", key, str(e.strerror)) from None

    def delete(self, keys: Sequence[str]) -> None:
        parents: set[Path] = set()
        for key in keys:
            path = self._path(key)
            try:
                path.unlink(missing_ok=True)
            except OSError as e:
                raise StoreError("AccessDenied", key, str(e.strerror)) from None
            parents.update(p for p in path.parents if self.root in p.parents)
        # Directories left empty go too, deepest first; the store's root stays.
        for d in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()


# Error codes a retry can fix. Everything else (NoSuchKey, AccessDenied,
# SignatureDoesNotMatch, InvalidAccessKeyId, NoSuchBucket...) fails at once.
TRANSIENT_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalError",
        "ServiceUnavailable",
        "PriorRequestNotComplete",
        "500",
        "502",
        "503",
        "504",
    }
)
MAX_ATTEMPTS = 4


def _is_marker(key: str) -> bool:
    """A directory marker: a key ending in "/", or the store root's own (listed as "")."""
    return key.endswith("/") or not key.strip("/")


def _is_transient(exc: BaseException) -> bool:
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return err.get("Code") in TRANSIENT_CODES or (status or 0) >= 500
    # Connection refused / reset / timed out: botocore.exceptions.ConnectionError and
    # HTTPClientError cover EndpointConnectionError, ReadTimeoutError, ConnectionClosedError.
    return isinstance(exc, ConnectionError | HTTPClientError)


_retry = retry(
    retry=retry_if_exception(_is_transient),
    stop=stop_after_attempt(MAX_ATTEMPTS),
    wait=wait_exponential(multiplier=0.2, max=2.0),
    reraise=True,
)


def _strip_userinfo(url: str | None) -> str:
    """The endpoint without ``user:password@`` (even unencoded, where urlsplit gets lost)."""
    if not url:
        return ""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = rest.rpartition("@")[2]
    return f"{scheme}{sep}{rest}".rstrip("/")


class S3Store:
    """Objects under ``s3://bucket/prefix``; the boto3 client (and credentials) is the caller's."""

    def __init__(
        self, client: Any, bucket: str, prefix: str = "", page_size: int | None = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.page_size = page_size  # None: the server's default page (1000 keys on S3)

    def describe(self) -> str:
        return f"s3://{join_key(self.bucket, self.prefix)}"

    @property
    def endpoint(self) -> str:
        """The S3 endpoint this client talks to, without any userinfo (for reports)."""
        return _strip_userinfo(getattr(getattr(self.client, "meta", None), "endpoint_url", ""))

    def _full(self, key: str) -> str:
        return join_key(self.prefix, key) if self.prefix else key.lstrip("/")

    def _error(self, exc: Exception, key: str) -> StoreError:
        from botocore.exceptions import ClientError

        if isinstance(exc, ClientError):
            err = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = str(err.get("Code") or status or "ClientError")
            # Only Code and Message: S3 error bodies can echo the access key id and the
            # string to sign, which do not belong in reports.
            msg = f"{err.get('Message') or 'request failed'} (HTTP {status}, bucket {self.bucket})"
            if code in ("NoSuchKey", "404", "NotFound"):
                return ObjectNotFound(key, msg, code="NoSuchKey")
            if _is_transient(exc):
                return StoreUnavailable(code, key, f"{msg}, after {MAX_ATTEMPTS} attempts")
            return StoreError(code, key, msg)
        if _is_transient(exc):
            return StoreUnavailable(
                type(exc).__name__, key, f"{exc} (after {MAX_ATTEMPTS} attempts)"
            )
        return StoreError(type(exc).__name__, key, str(exc))

    @_retry
    def _list_page(self, prefix: str, token: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if self.page_size:
            kwargs["MaxKeys"] = self.page_size
        if token:
            kwargs["ContinuationToken"] = token
        return self.client.list_objects_v2(**kwargs)

    def list(self, prefix: str = "") -> list[ObjectInfo]:
        full = self._full(prefix)
        # A directory-like prefix, or the store's own root: never match "root-other/...".
        if full and (not prefix.strip("/") or prefix.endswith("/")):
            full += "/"
        strip = len(self.prefix) + 1 if self.prefix else 0
        out: list[ObjectInfo] = []
        token: str | None = None
        while True:
            try:
                page = self._list_page(full, token)
            except Exception as e:
                raise self._error(e, prefix or "/") from None
            for obj in page.get("Contents", []):
                modified = obj.get("LastModified")
                out.append(
                    ObjectInfo(
                        obj["Key"][strip:],
                        int(obj["Size"]),
                        modified.timestamp() if modified is not None else None,
                    )
                )
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return sorted(out)

    @_retry
    def _get(self, key: str, byte_range: str | None) -> bytes:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if byte_range:
            kwargs["Range"] = byte_range
        body = self.client.get_object(**kwargs)["Body"]
        try:
            return body.read()
        finally:
            body.close()

    @_retry
    def _delete_batch(self, keys: Sequence[str]) -> None:
        answer = self.client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True}
        )
        errors = answer.get("Errors") or []
        if errors:
            first = errors[0]
            raise StoreError(
                str(first.get("Code")), str(first.get("Key")), str(first.get("Message"))
            )

    def delete(self, keys: Sequence[str]) -> None:
        """Delete ``keys``; directory markers (``…/``, as s3fs creates them) after every
        other key and the deepest first: a server keeping directories (versitygw's posix
        backend) skips a marker whose directory still holds something, without an error."""
        markers = sorted((k for k in keys if _is_marker(k)), key=lambda k: -k.count("/"))
        others = [k for k in keys if not _is_marker(k)]
        for group in (others, markers):
            full = [self._full_key(k) for k in group]
            for i in range(0, len(full), 1000):  # S3's limit per DeleteObjects request
                try:
                    self._delete_batch(full[i : i + 1000])
                except StoreError:
                    raise
                except Exception as e:
                    raise self._error(e, group[i]) from None

    @_retry
    def _put_new(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")

    def create(self, key: str, data: bytes) -> None:
        """A conditional PUT (``If-None-Match: *``): a second writer of the key gets
        PreconditionFailed instead of replacing the first's object."""
        try:
            self._put_new(self._full(key), data)
        except Exception as e:
            err = self._error(e, key)
            if err.code in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                raise StoreError("AlreadyExists", key, "an object is already there") from None
            raise err from None

    def _full_key(self, key: str) -> str:
        # A directory marker keeps its trailing slash (join_key drops it), the store's own
        # root's marker too (listed as the key "").
        full = self._full(key)
        return full + "/" if full and _is_marker(key) else full

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        if end is not None and end <= start:
            return b""
        # HTTP ranges are inclusive at both ends.
        byte_range = None
        if start > 0 or end is not None:
            byte_range = f"bytes={start}-{'' if end is None else end - 1}"
        try:
            return self._get(self._full(key), byte_range)
        except Exception as e:
            raise self._error(e, key) from None


def list_for_report(store: Store, prefix: str, problems: list[str]) -> list[ObjectInfo] | None:
    """``store.list`` under ``prefix`` for a reader that reports rather than raises: a store
    that stops answering still raises (nothing is known then), any other failure is one
    problem of the report and None."""
    try:
        return store.list(prefix + "/" if prefix else "")
    except StoreUnavailable:
        raise
    except StoreError as e:
        problems.append(f"cannot list {prefix or '/'}: {e.code}: {e.detail}")
        return None


# A key no run writes: listing it costs one request and returns nothing, whatever the store holds.
_PROBE_PREFIX = ".rlark-acceptance-probe/"


def unanswered(store: Store) -> StoreUnavailable | None:
    """Why ``store`` does not answer now (after its bounded retries); None when it does.

    Only a store that cannot be reached counts: one that answers with a refusal (access
    denied to this harness, no such bucket) still answers, and its Worker may well be fine.
    """
    try:
        store.list(_PROBE_PREFIX)
    except StoreUnavailable as exc:
        return exc
    except StoreError:
        return None
    return None
