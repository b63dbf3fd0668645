"""What the local adapter hands to a Worker's init process: one JSON file per Pod.

Shared by the adapter (which writes it) and ``worker`` (which runs inside the Pod's
namespaces and reads it), so it imports only the standard library: the init starts fast.
The spec never holds credentials; the S3 key pair travels in a separate 0600 file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Where the Pod's scripts live inside its root filesystem (in the scratch, lost on delete).
SCRIPT_DIR = "/.rlark"
# The Ray temp dir as the Pod sees it: /tmp is the Pod's own, so socket paths stay short
# (Ray's unix sockets must stay under ~107 bytes) and `ray.init("auto")` finds this head only.
RAY_TEMP_DIR = "/tmp/ray"
# The container's HOME: its own directory in the scratch, empty when the Pod starts.
POD_HOME = "/root"
# Where the GPU stand-in and the sitecustomize that loads it sit, when the node has no GPU.
GPU_STANDIN_DIR = f"{SCRIPT_DIR}/gpu-standin"

# Lines the init writes on its status pipe (never into the Pod log).
STATUS_STARTED = "started"
STATUS_MOUNT_FAILED = "mount-failed"
STATUS_ERROR = "error"


@dataclass
class MountSpec:
    """A Worker mount (``model.worker.WorkerMount``) as the init sets it up."""

    name: str
    kind: str  # bind | s3
    container_path: str
    read_only: bool = False
    source: str | None = None  # bind: the host directory
    bucket: str | None = None  # s3
    prefix: str | None = None  # s3


@dataclass
class S3Endpoint:
    """Where s3fs connects; not secret (the key pair is in ``passwd_file``)."""

    url: str
    region: str
    passwd_file: str


@dataclass
class WorkerSpec:
    pod: str
    scratch: str  # the Pod's private host directory; removed on delete
    mounts: list[MountSpec]
    env: dict[str, str]  # the container's environment (role env included)
    prepare_script: str
    run_script: str
    # The container command's script (model.worker.entry_script): prepare, the Ray head, run.
    entry: str
    status_fd: int
    s3: S3Endpoint | None = None
    workdir: str = "/"
    extra: dict[str, str] = field(default_factory=dict)
    keep: list[str] = field(default_factory=list)  # host folders shown through private dirs
    gpu_standin: bool = False  # load rlark_acceptance.gpu_standin into every interpreter

    @property
    def root(self) -> Path:
        """The Pod's root filesystem, assembled from binds of the host's top-level dirs."""
        return Path(self.scratch) / "root"

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> WorkerSpec:
        raw = json.loads(path.read_text())
        raw["mounts"] = [MountSpec(**m) for m in raw["mounts"]]
        if raw.get("s3"):
            raw["s3"] = S3Endpoint(**raw["s3"])
        return cls(**raw)
