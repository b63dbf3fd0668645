"""The S3 server: versitygw with its posix backend, on a loopback port.

Why versitygw: it is a maintained, real S3 implementation (SigV4 auth, S3 error codes,
ranged reads, multipart) that builds with plain `go install`; MinIO's repository is
source-only and unmaintained now. The posix backend stores objects as plain files under
the state dir, so nothing outlives `down`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from testenv import build, proc
from testenv.paths import state_root
from testenv.state import S3State, State

BUCKET = "rlinf-ckpt"  # the bucket the Job YAML of the contract mounts
REGION = "us-east-1"


def _endpoint_answers(endpoint: str) -> bool:
    # Any HTTP answer (an anonymous request gets 403 AccessDenied) means it serves S3.
    try:
        urllib.request.urlopen(endpoint + "/", timeout=2).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


# How long a live server may take to answer before it counts as dead. On a machine whose
# cores are all busy (tests on several workers, a real RLinf run) a live server has missed
# a 2 s answer; `up` then stopped it under the runs that held it and started another.
PATIENCE_S = 30.0


def healthy(s3: S3State | None, *, within: float = 0.0) -> bool:
    """The recorded server is alive and answers; a live process is asked again for up to
    ``within`` seconds (its process gone: no answer is waited for)."""
    if not s3:
        return False
    exe = build.RECIPES["versitygw"].bin("versitygw")
    deadline = time.monotonic() + within
    while proc.alive(s3.pid, exe):
        if _endpoint_answers(s3.endpoint):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)
    return False


def _client(s3: S3State) -> Any:
    import boto3  # a project dependency; imported late so `status` stays quick
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=s3.endpoint,
        aws_access_key_id=s3.access_key,
        aws_secret_access_key=s3.secret_key,
        region_name=s3.region,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
    )


def has_bucket(s3: S3State) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        _client(s3).head_bucket(Bucket=s3.bucket)
        return True
    except (BotoCoreError, ClientError):
        return False


def ready(s3: S3State | None, *, within: float = 0.0) -> bool:
    """Serving, with its bucket: what the tests need, not only a live process."""
    return s3 is not None and healthy(s3, within=within) and has_bucket(s3)


def _make_bucket(s3: S3State) -> None:
    client = _client(s3)
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=s3.bucket)


def up(state: State) -> None:
    if healthy(state.s3, within=PATIENCE_S):
        # A server without its bucket (an `up` that failed creating it, a bucket removed by
        # hand) gets it now: the next `up` mends what a failed one left.
        assert state.s3 is not None
        _make_bucket(state.s3)
        return
    down(state)  # a stale record (process gone): clear it first
    build.ensure(build.NEEDS["s3"])
    root = state_root() / "s3"
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    port = proc.free_port()
    endpoint = f"http://127.0.0.1:{port}"
    s3 = S3State(
        endpoint=endpoint,
        port=port,
        bucket=BUCKET,
        region=REGION,
        # Fresh per `up`: never committed, only in the owner-only state and env files.
        access_key="rlark" + secrets.token_hex(8),
        secret_key=secrets.token_urlsafe(30),
        data=str(data),
        log=str(root / "versitygw.log"),
    )
    state.s3 = s3  # recorded before it answers: an interrupted start is stopped by its pid
    _start(s3, root)
    _make_bucket(s3)


def _start(s3: S3State, root: Path) -> None:
    """versitygw serving ``s3`` (its port, keys and data), answering; records its pid."""
    exe = build.RECIPES["versitygw"].bin("versitygw")
    env = dict(os.environ)
    # Credentials go by environment, not argv, so `ps` does not show them.
    env.update(
        {
            "ROOT_ACCESS_KEY_ID": s3.access_key,
            "ROOT_SECRET_ACCESS_KEY": s3.secret_key,
            "VGW_REGION": REGION,
        }
    )
    iam = root / "iam"
    iam.mkdir(exist_ok=True)
    argv = [
        str(exe),
        "--port",
        f"127.0.0.1:{s3.port}",
        # With an IAM store (empty: only the root account exists) an unknown access key
        # gets S3's InvalidAccessKeyId; without one versitygw answers XAdminUserNotFound.
        "--iam-dir",
        str(iam),
        "posix",
        s3.data,
    ]
    s3.pid = proc.spawn(argv, root / "versitygw.log", env, root)
    deadline = time.monotonic() + 30
    while not _endpoint_answers(s3.endpoint):
        if not proc.alive(s3.pid, exe) or time.monotonic() > deadline:
            tail = (root / "versitygw.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"versitygw did not start; log tail:\n{tail}")
        time.sleep(0.1)


def revive(state: State) -> None:
    """The recorded server, killed, started again as a store restarts: on its port, with
    its keys and its data (``up`` after a crash makes a new one instead). What the fault
    tests and the soak use for an S3 server that dies and comes back."""
    s3 = state.s3
    assert s3 is not None, "no S3 server recorded: testenv up s3 first"
    if healthy(s3):
        return
    _start(s3, Path(s3.data).parent)


def down(state: State) -> None:
    s3, state.s3 = state.s3, None
    if s3:
        proc.stop(s3.pid, build.RECIPES["versitygw"].bin("versitygw"))
    shutil.rmtree(state_root() / "s3", ignore_errors=True)


def status(state: State) -> dict[str, Any]:
    s3 = state.s3
    if not s3:
        return {"running": False}
    return {
        "running": healthy(s3),
        "pid": s3.pid,
        "endpoint": s3.endpoint,
        "bucket": s3.bucket,
        "rss_mib": round(proc.rss_kib(s3.pid) / 1024, 1),
    }
