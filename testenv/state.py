"""The running set's record: state.json (pids, ports, credentials) and the env file.

Both files hold credentials, so they are written owner-only and never printed by
`status`. The record is typed: a file that is not one (cut short, edited by hand, from
another version) is ``StateCorrupt``, never an empty record, so that `down` never takes
a running set for no set at all: it stops what it finds by pid files and by the
processes' own arguments (``recover``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from testenv.paths import dir_lock, state_root

T = TypeVar("T")


class StateCorrupt(RuntimeError):
    """state.json cannot be read as testenv's record; the message names the file."""


@dataclass
class S3State:
    endpoint: str = ""
    port: int = 0
    bucket: str = ""
    region: str = ""
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    data: str = ""
    log: str = ""
    pid: int = 0


@dataclass
class ClusterState:
    kubeconfig: str = ""
    namespace: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    harness_kubeconfig: str = ""
    node: bool = False  # whether the real node came up with it


@dataclass
class NodeState:
    netns: str = ""
    host_ip: str = ""
    node_ip: str = ""
    cgroup_root: str = ""
    sysctls: dict[str, str] = field(default_factory=dict)  # the machine's, before any node
    var_log_containers_existed: bool = True
    run_containerd_existed: bool = True
    pids: dict[str, int] = field(default_factory=dict)
    worker_key: str | None = None
    kubelet_argv: list[str] = field(default_factory=list)
    kubelet_env: dict[str, str] = field(default_factory=dict, repr=False)
    # The cluster Services a Pod of the node reaches by ClusterIP: name -> "ip:port".
    services: dict[str, str] = field(default_factory=dict)
    # The routes of its two relays (testenv.forward's arguments), to start one again alone.
    forward_routes: list[str] = field(default_factory=list)
    services_routes: list[str] = field(default_factory=list)


@dataclass
class PlatformState:
    pid: int = 0


@dataclass
class State:
    s3: S3State | None = None
    cluster: ClusterState | None = None
    node: NodeState | None = None
    platform: PlatformState | None = None


def state_file() -> Path:
    return state_root() / "state.json"


def env_file() -> Path:
    return state_root() / "env"


def load() -> State:
    """The record; an empty one if there is none; ``StateCorrupt`` if it is not one."""
    path = state_file()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return State()
    except OSError as e:
        raise StateCorrupt(f"{path}: cannot be read: {e.strerror or e}") from None
    try:
        return from_json(json.loads(text))
    except ValueError as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise StateCorrupt(
            f"{path}: not testenv's record ({why}); `testenv down` stops what it finds "
            "by pid files and process arguments"
        ) from None


def from_json(raw: Any) -> State:
    """``State`` from state.json's content; ``ValueError`` naming the first wrong field."""
    return _typed(State, raw, "")


def _typed(cls: type[T], raw: Any, where: str) -> T:
    if not isinstance(raw, dict):
        raise ValueError(f"{where or 'the record'} is not an object")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - names)
    if unknown:
        raise ValueError(f"unknown field {where}{unknown[0]}")
    return cls(**{k: _value(hints[k], v, f"{where}{k}") for k, v in raw.items()})


def _value(tp: Any, v: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if args and type(None) in args:
        if v is None:
            return None
        (tp,) = (a for a in args if a is not type(None))
        origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        return _typed(tp, v, f"{where}.")  # type: ignore[arg-type]
    kind = origin or tp
    ok = isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    if ok and kind is dict:
        ok = all(isinstance(x, args[1]) and not isinstance(x, bool) for x in v.values())
    if ok and kind is list:
        ok = all(isinstance(x, args[0]) for x in v)
    if not ok:
        raise ValueError(f"{where} is not {getattr(tp, '__name__', tp)}")
    return v


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def to_json(state: State) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(state).items() if v is not None}


def save(state: State) -> None:
    _write_private(state_file(), json.dumps(to_json(state), indent=2, sort_keys=True) + "\n")
    write_env(state)


def env_vars(state: State) -> dict[str, str]:
    """What `testenv env` exports: enough for kubectl, boto3 and the fixtures."""
    out: dict[str, str] = {"RLARK_TESTENV_STATE": str(state_root())}
    s3 = state.s3
    if s3:
        out.update(
            {
                "RLARK_TESTENV_S3_ENDPOINT": s3.endpoint,
                "RLARK_TESTENV_S3_BUCKET": s3.bucket,
                "RLARK_TESTENV_S3_REGION": s3.region,
                # The standard names, so boto3 and the AWS CLI work after `eval`.
                "AWS_ACCESS_KEY_ID": s3.access_key,
                "AWS_SECRET_ACCESS_KEY": s3.secret_key,
                "AWS_REGION": s3.region,
                "AWS_DEFAULT_REGION": s3.region,
                "AWS_ENDPOINT_URL_S3": s3.endpoint,
            }
        )
    cluster = state.cluster
    if cluster:
        out.update(
            {
                "KUBECONFIG": cluster.kubeconfig,
                "RLARK_TESTENV_NAMESPACE": cluster.namespace,
            }
        )
    return out


def write_env(state: State) -> None:
    lines = [f"export {k}={shlex.quote(v)}" for k, v in sorted(env_vars(state).items())]
    _write_private(env_file(), "\n".join(lines) + "\n")


def locked() -> contextlib.AbstractContextManager[None]:
    """One `up`/`down` at a time per state dir (parallel pytest sessions, CI retries)."""
    return dir_lock(state_root())
