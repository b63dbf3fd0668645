"""The running set's record: state.json (pids, ports, credentials) and the env file.

Both files hold credentials, so they are written owner-only and never printed by
`status`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from pathlib import Path
from typing import Any

from testenv.paths import dir_lock, state_root

State = dict[str, Any]


def state_file() -> Path:
    return state_root() / "state.json"


def env_file() -> Path:
    return state_root() / "env"


def load() -> State:
    try:
        data: State = json.loads(state_file().read_text())
        return data
    except (OSError, ValueError):
        return {}


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def save(state: State) -> None:
    _write_private(state_file(), json.dumps(state, indent=2, sort_keys=True) + "\n")
    write_env(state)


def env_vars(state: State) -> dict[str, str]:
    """What `testenv env` exports: enough for kubectl, boto3 and the fixtures."""
    out: dict[str, str] = {"RLARK_TESTENV_STATE": str(state_root())}
    s3 = state.get("s3")
    if s3:
        out.update(
            {
                "RLARK_TESTENV_S3_ENDPOINT": s3["endpoint"],
                "RLARK_TESTENV_S3_BUCKET": s3["bucket"],
                "RLARK_TESTENV_S3_REGION": s3["region"],
                # The standard names, so boto3 and the AWS CLI work after `eval`.
                "AWS_ACCESS_KEY_ID": s3["access_key"],
                "AWS_SECRET_ACCESS_KEY": s3["secret_key"],
                "AWS_REGION": s3["region"],
                "AWS_DEFAULT_REGION": s3["region"],
                "AWS_ENDPOINT_URL_S3": s3["endpoint"],
            }
        )
    cluster = state.get("cluster")
    if cluster:
        out.update(
            {
                "KUBECONFIG": cluster["kubeconfig"],
                "RLARK_TESTENV_NAMESPACE": cluster["namespace"],
            }
        )
    return out


def write_env(state: State) -> None:
    lines = [f"export {k}={shlex.quote(v)}" for k, v in sorted(env_vars(state).items())]
    _write_private(env_file(), "\n".join(lines) + "\n")


def locked() -> contextlib.AbstractContextManager[None]:
    """One `up`/`down` at a time per state dir (parallel pytest sessions, CI retries)."""
    return dir_lock(state_root())
