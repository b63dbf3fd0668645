"""The diagnostics bundle of red runs on testenv's real node (a kubelet, containerd, runc),
run as a release engineer runs the suite (``k8s_suite``), read back from its reports folder.

The Worker prints a token it reads from its data mount, and the harness's environment holds
the same token under a secret name: no file of the bundle holds it. At 6.4 the Worker still
runs when its verdict comes, so Ray's session logs are read from its container; at 6.3 its
container has ended, and the bundle says they could not be.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.testenv import KubeEnv, S3Env
from testenv.cluster import HARNESS_RBAC, kubectl
from tests.adapters.k8s_suite import Site, SuiteRun, earliest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SECRET = "Wn4hRt8Kq2Lz6Xv9Bc3Md7Pf"
TOKEN_KEY = "datasets/smoke/hub-token"  # /mnt/data/hub-token in the Worker
LOGIN = 'echo "hub login $(cat /mnt/data/hub-token)"'
COMMAND = Path(sys.executable).parent / "rlark-acceptance"


@pytest.fixture
def token(kube_env: KubeEnv, s3_env: S3Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The token on the Worker's data mount and in the harness's environment; the harness's
    Role as this checkout declares it (it reads Ray's logs by exec)."""
    kubectl("apply", "-f", str(HARNESS_RBAC))
    s3 = s3_env.client()
    s3.put_object(Bucket=s3_env.bucket, Key=TOKEN_KEY, Body=(SECRET + "\n").encode())
    monkeypatch.setenv("HF_TOKEN", SECRET)
    yield
    s3.delete_object(Bucket=s3_env.bucket, Key=TOKEN_KEY)


def _read(reports: Path) -> tuple[dict[str, Any], Path]:
    folder = reports / "diagnostics"
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    print(f"\n{folder}:")
    for name, size in index["files"].items():
        print(f"  {name} {size} B")
    print("  unread:", *index["unread"], sep="\n    ")
    return index, folder


def _common(run: SuiteRun, index: dict[str, Any], folder: Path, check: str) -> None:
    assert earliest(run)["check"] == check, run.tail()
    assert index["why"] == f"{check} failed" and index["runId"] == run.summary["runId"], index
    assert {"pod.json", "events.json", "node.json", "worker-log.txt"} <= set(index["files"])
    pod = json.loads((folder / "pod.json").read_text(encoding="utf-8"))
    assert pod["spec"]["nodeName"] == "gpu-node-09" and "managedFields" not in pod["metadata"]
    node = json.loads((folder / "node.json").read_text(encoding="utf-8"))
    ready = next(c for c in node["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", node
    assert {"MemoryPressure", "DiskPressure"} <= {c["type"] for c in node["conditions"]}
    assert "nvidia.com/gpu" in node["allocatable"], node
    events = json.loads((folder / "events.json").read_text(encoding="utf-8"))
    assert any(e["reason"] == "Scheduled" for e in events), events
    assert "hub login ***" in (folder / "worker-log.txt").read_text(encoding="utf-8")
    done = subprocess.run(
        [str(COMMAND), "diagnose", str(run.summary["runId"]), "--reports-dir", str(run.reports)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(f"$ rlark-acceptance diagnose {run.summary['runId']} --reports-dir …\n{done.stdout}")
    assert done.returncode == 1 and done.stderr == "", done
    assert f"failed at {check}" in done.stdout and SECRET not in done.stdout
    assert "node gpu-node-09: Ready, no memory, disk or PID pressure" in done.stdout


def test_a_worker_still_running_at_6_4_leaves_ray_s_logs_in_its_bundle(
    kube_env: KubeEnv, token: None, tmp_path: Path
) -> None:
    site = Site.make(tmp_path / "site", before=f"{LOGIN}; sleep 300", timeouts={"firstSignal": 20})
    run = SuiteRun.start(tmp_path, site).finish()
    index, folder = _read(run.reports)
    _common(run, index, folder, "6.4")
    assert {"ray/raylet.err", "ray/gcs_server.err"} <= set(index["files"]), index


def test_a_worker_whose_prepare_failed_at_6_3_says_ray_s_logs_were_not_readable(
    kube_env: KubeEnv, token: None, tmp_path: Path
) -> None:
    site = Site.make(tmp_path / "site")
    old, new = "export PYTHONUNBUFFERED=1", f"export PYTHONUNBUFFERED=1 && {LOGIN} && exit 3"
    for path in (site.job, site.profile):
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, path
        path.write_text(text.replace(old, new), encoding="utf-8")
    run = SuiteRun.start(tmp_path, site).finish()
    index, folder = _read(run.reports)
    _common(run, index, folder, "6.3")
    unread = index["unread"]
    assert any("the Worker's container is not running" in u for u in unread), unread
