"""``S3Store``: ranged reads, pagination, retries only for transient errors, real error codes.

The first part runs against an in-process fake client (no server, exact call counts).
The ``cluster`` part runs against the repository's S3 test server (versitygw) through
the ``s3_env`` fixture of ``fixtures/testenv.py``.
"""

from __future__ import annotations

import io
import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from tenacity import wait_none

from rlark_acceptance.storage import ObjectNotFound, S3Store, StoreError, verify_checkpoints
from rlark_acceptance.storage import store as store_mod

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLESECRET"


def safetensors_bytes(n: int = 6) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(4 * n)


def client_error(code: str, status: int, op: str = "GetObject", **extra: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} happened", **extra},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        op,
    )


class FakeS3:
    """Just enough of a boto3 S3 client: objects in a dict, scripted failures, a call log."""

    def __init__(self, objects: dict[str, bytes]) -> None:
        self.objects = objects
        self.failures: list[Exception] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

        class Meta:
            endpoint_url = f"http://user:{SECRET}@s3.example.test:9000"

        self.meta = Meta()

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    def list_objects_v2(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("list", kw))
        self._maybe_fail()
        keys = sorted(k for k in self.objects if k.startswith(kw["Prefix"]))
        start = int(kw.get("ContinuationToken", 0))
        size = kw.get("MaxKeys", 1000)
        page = keys[start : start + size]
        more = start + size < len(keys)
        out: dict[str, Any] = {"IsTruncated": more, "KeyCount": len(page)}
        if page:
            out["Contents"] = [{"Key": k, "Size": len(self.objects[k])} for k in page]
        if more:
            out["NextContinuationToken"] = str(start + size)
        return out

    def get_object(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("get", kw))
        self._maybe_fail()
        if kw["Key"] not in self.objects:
            raise client_error("NoSuchKey", 404)
        data = self.objects[kw["Key"]]
        if "Range" in kw:
            a, _, b = kw["Range"].removeprefix("bytes=").partition("-")
            data = data[int(a) : int(b) + 1 if b else None]
        return {"Body": io.BytesIO(data)}


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    for fn in (S3Store._get, S3Store._list_page):
        monkeypatch.setattr(fn.retry, "wait", wait_none())


@pytest.fixture
def fake() -> FakeS3:
    return FakeS3(
        {
            "team/run/a.bin": b"0123456789",
            "team/run/sub/b.bin": b"xy",
            "team/runner/other.bin": b"z",
            "elsewhere/c.bin": b"c",
        }
    )


def test_list_is_relative_recursive_and_paginated(fake: FakeS3) -> None:
    store = S3Store(fake, "bkt", "/team/run/", page_size=1)
    assert [(o.key, o.size) for o in store.list()] == [("a.bin", 10), ("sub/b.bin", 2)]
    assert len([c for c in fake.calls if c[0] == "list"]) == 2  # one page per key
    assert fake.calls[0][1]["Prefix"] == "team/run/"  # never team/runner
    assert [o.key for o in store.list("sub/")] == ["sub/b.bin"]
    assert store.list("nothing/") == []


def test_ranged_reads_send_inclusive_http_ranges(fake: FakeS3) -> None:
    store = S3Store(fake, "bkt", "team/run")
    assert store.read("a.bin", 0, 8) == b"01234567"
    assert store.read("a.bin", 8) == b"89"
    assert store.read("a.bin") == b"0123456789"
    assert store.read("a.bin", 5, 5) == b""
    ranges = [c[1].get("Range") for c in fake.calls]
    assert ranges == ["bytes=0-7", "bytes=8-", None]
    assert fake.calls[0][1]["Key"] == "team/run/a.bin"


def test_transient_errors_are_retried(fake: FakeS3, fast_retries: None) -> None:
    fake.failures = [client_error("SlowDown", 503), EndpointConnectionError(endpoint_url="x")]
    assert S3Store(fake, "bkt", "team/run").read("a.bin", 0, 2) == b"01"
    assert len(fake.calls) == 3


def test_retries_are_bounded(fake: FakeS3, fast_retries: None) -> None:
    fake.failures = [client_error("InternalError", 500, "ListObjectsV2")] * 10
    with pytest.raises(StoreError) as e:
        S3Store(fake, "bkt", "team/run").list()
    assert e.value.code == "InternalError"
    assert len(fake.calls) == store_mod.MAX_ATTEMPTS


@pytest.mark.parametrize(
    ("code", "status"),
    [("NoSuchKey", 404), ("AccessDenied", 403), ("SignatureDoesNotMatch", 403)],
)
def test_permanent_errors_fail_at_once_with_their_code(
    fake: FakeS3, fast_retries: None, code: str, status: int
) -> None:
    # S3 error bodies echo the access key id and the string to sign: keep them out.
    fake.failures = [
        client_error(code, status, AWSAccessKeyId="AKIAEXAMPLEKEYID", StringToSign=SECRET)
    ]
    with pytest.raises(StoreError) as e:
        S3Store(fake, "bkt", "team/run").read("a.bin")
    assert e.value.code == code
    assert len(fake.calls) == 1
    assert isinstance(e.value, ObjectNotFound) == (code == "NoSuchKey")
    text = str(e.value)
    assert "a.bin" in text and code in text and "bkt" in text
    assert SECRET not in text and "AKIAEXAMPLEKEYID" not in text
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_missing_key_is_object_not_found(fake: FakeS3) -> None:
    with pytest.raises(ObjectNotFound) as e:
        S3Store(fake, "bkt", "team/run").read("nope.bin")
    assert e.value.code == "NoSuchKey"


def test_describe_has_no_credentials(fake: FakeS3) -> None:
    store = S3Store(fake, "bkt", "team/run")
    assert store.describe() == "s3://bkt/team/run"
    assert store.endpoint == "http://s3.example.test:9000"
    assert SECRET not in store.endpoint and "user" not in store.endpoint


def test_verify_checkpoints_through_s3store(fake: FakeS3) -> None:
    good = safetensors_bytes()
    weights = "actor/model_state_dict/full_weights.safetensors"
    fake.objects[f"team/run/logs/exp/checkpoints/global_step_3/{weights}"] = good
    fake.objects[f"team/run/logs/exp/checkpoints/global_step_6/{weights}"] = good[:-4]
    # Directory markers as s3fs writes them; a step with nothing else is no step yet.
    fake.objects["team/run/logs/exp/checkpoints/global_step_6/actor/"] = b""
    fake.objects["team/run/logs/exp/checkpoints/global_step_9/actor/"] = b""
    store = S3Store(fake, "bkt", "team/run")
    report = verify_checkpoints(store, "logs/exp/checkpoints")
    assert report.steps == [3, 6]
    assert report.problems == [
        "global_step_6/actor/model_state_dict/full_weights.safetensors: "
        "truncated: header says 24 data bytes, object has 20"
    ]
    # Only the header was read, never the whole object.
    gets = [c[1] for c in fake.calls if c[0] == "get"]
    assert all("Range" in g for g in gets)


# --- against the repository's S3 test server ------------------------------------------------


@pytest.fixture
def s3(s3_env: Any) -> Iterator[tuple[Any, str, str]]:
    """(client, bucket, unique prefix) on the test S3 server; the prefix is emptied afterwards."""
    client = s3_env.client()
    bucket = s3_env.bucket
    prefix = f"rlark-acceptance-tests/{uuid.uuid4().hex}"
    yield client, bucket, prefix
    resp = client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/")
    for obj in resp.get("Contents", []):
        client.delete_object(Bucket=bucket, Key=obj["Key"])


@pytest.mark.cluster
def test_s3_checkpoints_verified_with_ranged_reads(s3: tuple[Any, str, str]) -> None:
    client, bucket, prefix = s3
    good = safetensors_bytes(1024)
    ckpt = f"{prefix}/logs/exp/checkpoints"
    for step in (1, 2, 3, 4, 5):
        key = f"{ckpt}/global_step_{step}/actor/model_state_dict/full_weights.safetensors"
        client.put_object(Bucket=bucket, Key=key, Body=good if step < 5 else good[:1000])
    store = S3Store(client, bucket, prefix, page_size=2)  # five objects: three pages
    assert [o.size for o in store.list("logs/")] == [len(good)] * 4 + [1000]
    assert (
        store.read(
            "logs/exp/checkpoints/global_step_1/actor/model_state_dict/full_weights.safetensors",
            0,
            8,
        )
        == good[:8]
    )
    report = verify_checkpoints(store, "logs/exp/checkpoints")
    assert report.steps == [1, 2, 3, 4, 5]
    header = struct.unpack("<Q", good[:8])[0]
    assert report.problems == [
        "global_step_5/actor/model_state_dict/full_weights.safetensors: truncated: "
        f"header says 4096 data bytes, object has {1000 - 8 - header}"
    ]
    assert verify_checkpoints(store, "logs/exp/checkpoints/", all_steps=True).checked_steps == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert verify_checkpoints(store, "logs/other").problems == [
        "logs/other: no checkpoints (empty or missing)"
    ]


@pytest.mark.cluster
def test_s3_missing_key_has_its_real_code(s3: tuple[Any, str, str]) -> None:
    client, bucket, prefix = s3
    with pytest.raises(ObjectNotFound) as e:
        S3Store(client, bucket, prefix).read("does/not/exist")
    assert e.value.code == "NoSuchKey"


@pytest.mark.cluster
def test_s3_wrong_secret_surfaces_signature_error_without_secrets(
    s3: tuple[Any, str, str], s3_env: Any
) -> None:
    client, bucket, prefix = s3
    client.put_object(Bucket=bucket, Key=f"{prefix}/x.bin", Body=b"x")
    wrong = s3_env.client(aws_secret_access_key=SECRET)
    for call in (lambda st: st.read("x.bin"), lambda st: st.list()):
        with pytest.raises(StoreError) as e:
            call(S3Store(wrong, bucket, prefix))
        assert e.value.code == "SignatureDoesNotMatch"
        text = str(e.value)
        assert (
            SECRET not in text and s3_env.secret_key not in text and s3_env.access_key not in text
        )
    assert s3_env.secret_key not in S3Store(client, bucket, prefix).endpoint


@pytest.mark.cluster
def test_s3_unknown_bucket_has_its_real_code(s3: tuple[Any, str, str]) -> None:
    client, _, prefix = s3
    with pytest.raises(StoreError) as e:
        S3Store(client, f"no-such-bucket-{uuid.uuid4().hex[:8]}", prefix).list()
    assert e.value.code == "NoSuchBucket"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.cluster
def test_a_store_that_does_not_answer_is_unavailable_not_empty(s3_env: Any) -> None:
    from botocore.config import Config

    from rlark_acceptance.storage import StoreUnavailable, snapshot

    down = s3_env.client(
        endpoint_url=f"http://127.0.0.1:{_closed_port()}",
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )
    store = S3Store(down, s3_env.bucket, "logs")
    for call in (
        lambda: store.list(),
        lambda: snapshot(store, "exp/checkpoints"),
        lambda: verify_checkpoints(store, "exp/checkpoints"),
    ):
        with pytest.raises(StoreUnavailable) as e:
            call()
        assert e.value.code == "EndpointConnectionError"
        assert "after 4 attempts" in str(e.value)


@pytest.mark.cluster
def test_only_not_found_means_nothing_there(s3: tuple[Any, str, str]) -> None:
    from rlark_acceptance.storage import snapshot

    client, bucket, prefix = s3
    assert snapshot(S3Store(client, bucket, prefix), "never/written") == {}
    with pytest.raises(StoreError) as e:
        snapshot(S3Store(client, f"no-such-bucket-{uuid.uuid4().hex[:8]}", prefix), "x")
    assert e.value.code == "NoSuchBucket"


@pytest.mark.cluster
def test_delete_removes_exactly_the_keys_given(s3: tuple[Any, str, str]) -> None:
    client, bucket, prefix = s3
    for key in ("a/1", "a/2", "b/1"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=b"x")
    store = S3Store(client, bucket, prefix)
    store.delete(["a/1", "b/1", "never/there"])
    assert [o.key for o in store.list()] == ["a/2"]


@pytest.mark.cluster
def test_deleting_what_s3fs_wrote_leaves_no_directory_marker(s3: tuple[Any, str, str]) -> None:
    """s3fs writes a zero-byte "dir/" object for every folder (the mount's root too); all
    of them go with the files, whatever order they are listed in."""
    client, bucket, prefix = s3
    keys = ["", "logs/", "logs/ckpt/", "logs/ckpt/global_step_1/", "logs/tensorboard/"]
    for marker in keys:
        client.put_object(Bucket=bucket, Key=f"{prefix}/{marker}", Body=b"")
    for key in ("logs/ckpt/global_step_1/model.safetensors", "logs/tensorboard/events.out"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=b"x")
    store = S3Store(client, bucket, prefix)
    listed = [o.key for o in store.list()]
    assert "logs/" in listed and "" in listed, listed  # markers are listed as keys
    store.delete(listed)
    assert store.list() == []
    left = client.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/")
    assert not left.get("Contents") and not left.get("CommonPrefixes"), left


@pytest.mark.cluster
def test_a_store_that_refuses_still_answers_one_that_is_gone_does_not(s3_env: Any) -> None:
    """``unanswered``, the Step 6 store watch's question: a refusal (a bucket this harness
    may not read) is an answer; only an endpoint that cannot be reached is not."""
    from botocore.config import Config

    from rlark_acceptance.storage import StoreUnavailable, unanswered

    assert unanswered(S3Store(s3_env.client(), s3_env.bucket, "p")) is None
    assert unanswered(S3Store(s3_env.client(), "no-such-bucket-here", "p")) is None
    down = s3_env.client(
        endpoint_url=f"http://127.0.0.1:{_closed_port()}",
        config=Config(retries={"mode": "standard", "max_attempts": 1}),
    )
    assert isinstance(unanswered(S3Store(down, s3_env.bucket, "p")), StoreUnavailable)
