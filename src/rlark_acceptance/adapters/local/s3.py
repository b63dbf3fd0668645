"""Object storage for the local target, from boto3's standard chain only.

Endpoint (``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` / config file), region and the
key pair are resolved exactly as boto3 resolves them; nothing is read from the profile or
the Job YAML. The key pair reaches s3fs through a 0600 passwd file in a 0700 directory of
the Pod's scratch, which the init removes as soon as the mount is up.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from rlark_acceptance.adapters.local.spec import S3Endpoint

# A store that does not answer is told within seconds: retries are the Store's own (bounded,
# tenacity, transient errors only), not botocore's on top of them, and a request that hangs
# ends at these timeouts.
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 20.0


class S3ConfigError(RuntimeError):
    """The standard chain yields no usable S3 settings; the message names what is missing."""


class StoreUnreachable(S3ConfigError):
    """The bucket of an objectStorage mount does not answer; the message names it."""


# A new botocore session parses the S3 service model (megabytes of JSON) again: about 60 ms
# of CPU, and a run makes dozens of clients (every store read, probe and mount), which on the
# embedded default was a fifth of the suite's CPU. The parsed model does not depend on the
# environment, only on the data path it is read from, so sessions share one loader per
# data path; settings and credentials are still resolved afresh by each session.
_LOADERS: dict[Any, Any] = {}
_LOADERS_LOCK = threading.Lock()


def session() -> Any:
    """A boto3 session from the standard chain as it is now (not as boto3's default session
    cached it when first used: the environment may have changed since)."""
    import boto3
    import botocore.session
    from botocore.loaders import create_loader

    core = botocore.session.Session()
    data_path = core.get_config_variable("data_path")
    with _LOADERS_LOCK:
        loader = _LOADERS.get(data_path)
        if loader is None:
            loader = _LOADERS[data_path] = create_loader(data_path)
    core.register_component("data_loader", loader)
    return boto3.session.Session(botocore_session=core)


def client() -> Any:
    """An S3 client of ``session()``."""
    from botocore.config import Config

    return session().client(
        "s3",
        config=Config(
            # Path-style requests work with every S3 server (AWS, MinIO, versitygw...).
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "max_attempts": 1},
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
        ),
    )


def probe(bucket: str, prefix: str | None) -> None:
    """Raise ``StoreUnreachable`` unless ``s3://bucket/prefix`` answers a listing.

    What kubelet's volume set-up would find out: s3fs itself mounts an endpoint that refuses
    connections and only fails the Worker's first write, much later.
    """
    from rlark_acceptance.storage.store import S3Store, StoreError, StoreUnavailable

    store = S3Store(client(), bucket, prefix or "", page_size=1)
    try:
        store.list("")
    except StoreError as exc:
        how = "does not answer" if isinstance(exc, StoreUnavailable) else "refuses the listing"
        raise StoreUnreachable(
            f"{store.describe()} at {store.endpoint} {how}: {exc.code}: {exc.detail}"
        ) from None


def endpoint_for_s3fs(private_dir: Path) -> S3Endpoint:
    """Where s3fs connects, and its passwd file written into ``private_dir`` (mode 0700)."""
    c = client()
    creds = session().get_credentials()
    if creds is None:
        raise S3ConfigError(
            "no S3 credentials: set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or another "
            "source of boto3's standard chain"
        )
    frozen = creds.get_frozen_credentials()
    if frozen.token:
        # s3fs's passwd file has no field for a session token.
        raise S3ConfigError("temporary (session-token) credentials are not supported by s3fs here")
    private_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_dir.chmod(0o700)
    passwd = private_dir / "s3fs.passwd"
    fd = os.open(passwd, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{frozen.access_key}:{frozen.secret_key}\n")
    return S3Endpoint(
        url=str(c.meta.endpoint_url),
        region=str(c.meta.region_name or "us-east-1"),
        passwd_file=str(passwd),
    )
