"""The S3 server of testenv is a real one: boto3 round-trips and real S3 errors."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from fixtures.testenv import S3Env

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]


def test_put_list_get_range_delete_round_trip(s3_env: S3Env) -> None:
    s3 = s3_env.client()
    prefix = f"testenv/{secrets.token_hex(4)}/"
    body = bytes(range(256)) * 40  # 10 KiB, every byte value
    s3.put_object(Bucket=s3_env.bucket, Key=prefix + "ckpt.bin", Body=body)
    s3.put_object(Bucket=s3_env.bucket, Key=prefix + "logs/run.txt", Body=b"Global Step 1\n")

    listed = s3.list_objects_v2(Bucket=s3_env.bucket, Prefix=prefix)
    assert sorted(o["Key"] for o in listed["Contents"]) == [
        prefix + "ckpt.bin",
        prefix + "logs/run.txt",
    ]
    assert {o["Key"]: o["Size"] for o in listed["Contents"]}[prefix + "ckpt.bin"] == len(body)

    delimited = s3.list_objects_v2(Bucket=s3_env.bucket, Prefix=prefix, Delimiter="/")
    assert [p["Prefix"] for p in delimited["CommonPrefixes"]] == [prefix + "logs/"]

    whole = s3.get_object(Bucket=s3_env.bucket, Key=prefix + "ckpt.bin")
    assert whole["Body"].read() == body

    ranged = s3.get_object(Bucket=s3_env.bucket, Key=prefix + "ckpt.bin", Range="bytes=1000-1999")
    assert ranged["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert ranged["ContentRange"] == f"bytes 1000-1999/{len(body)}"
    assert ranged["Body"].read() == body[1000:2000]

    s3.delete_object(Bucket=s3_env.bucket, Key=prefix + "ckpt.bin")
    with pytest.raises(ClientError) as missing:
        s3.get_object(Bucket=s3_env.bucket, Key=prefix + "ckpt.bin")
    assert missing.value.response["Error"]["Code"] == "NoSuchKey"
    s3.delete_object(Bucket=s3_env.bucket, Key=prefix + "logs/run.txt")
    assert "Contents" not in s3.list_objects_v2(Bucket=s3_env.bucket, Prefix=prefix)


def test_wrong_secret_key_gets_a_signature_error(s3_env: S3Env) -> None:
    bad = s3_env.client(aws_secret_access_key=s3_env.secret_key + "x")
    with pytest.raises(ClientError) as err:
        bad.list_objects_v2(Bucket=s3_env.bucket)
    assert err.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_unknown_access_key_and_missing_bucket_are_real_errors(s3_env: S3Env) -> None:
    stranger = s3_env.client(aws_access_key_id="AKIANOBODY0000000000")
    with pytest.raises(ClientError) as err:
        stranger.list_objects_v2(Bucket=s3_env.bucket)
    assert err.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403

    with pytest.raises(ClientError) as nobucket:
        s3_env.client().list_objects_v2(Bucket="no-such-bucket-" + secrets.token_hex(3))
    assert nobucket.value.response["Error"]["Code"] == "NoSuchBucket"


def test_status_and_repr_never_show_credentials(s3_env: S3Env) -> None:
    assert s3_env.secret_key not in repr(s3_env)
    assert s3_env.access_key not in repr(s3_env)
    out = subprocess.run(
        [sys.executable, "-m", "testenv", "status", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,  # exits 1 when a recorded service is down; the JSON is still printed
    ).stdout
    assert s3_env.secret_key not in out
    assert s3_env.access_key not in out
    assert json.loads(out)["s3"]["running"] is True


def test_a_killed_server_revived_serves_its_data_on_its_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``s3.revive``: a store that dies and comes back (the soak's S3 fault) keeps its
    endpoint, its keys and what it held; ``up`` after a crash would make a new one. A
    private server of this test's own state: the shared one is never touched."""
    import os
    import signal
    import time

    from testenv import s3, state

    monkeypatch.setenv("RLARK_TESTENV_STATE", str(tmp_path / "state"))
    st = state.State()
    s3.up(st)
    try:
        assert st.s3 is not None
        before = (st.s3.endpoint, st.s3.pid)
        client = s3._client(st.s3)
        client.put_object(Bucket=st.s3.bucket, Key="kept/ckpt.bin", Body=b"weights")
        os.kill(st.s3.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while s3.healthy(st.s3):
            assert time.monotonic() < deadline, "versitygw outlived its SIGKILL"
            time.sleep(0.05)
        s3.revive(st)
        assert st.s3.endpoint == before[0] and st.s3.pid != before[1]
        body = s3._client(st.s3).get_object(Bucket=st.s3.bucket, Key="kept/ckpt.bin")["Body"]
        assert body.read() == b"weights"
    finally:
        s3.down(st)
