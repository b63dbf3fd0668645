"""The GPU stand-in, in RLinf 0.3.0's own environment (the one profiles/rlinf-embodied.yaml
runs): RLinf sees the CPU at the places it assumes an accelerator, and only there, with its
files unchanged on disk. Each probe runs in a fresh interpreter of that environment, with
the stand-in loaded the way the local Worker loads it (a sitecustomize on PYTHONPATH)."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from rlark_acceptance.adapters.local import images
from rlark_acceptance.adapters.local.worker import GPU_STANDIN_SOURCE, SITECUSTOMIZE

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "profiles" / "rlinf-embodied" / "rlinf-0.3.0.lock"

PROBE = r"""
import json, os, torch
import torch.distributed as dist
from rlinf.scheduler.hardware.accelerators.accelerator import AcceleratorType, AcceleratorUtil
out = {}
platform = AcceleratorUtil.get_torch_platform(AcceleratorType.NO_ACCEL)
out["platform"] = None if platform is None else str(platform.current_device())
out["device_type"] = AcceleratorUtil.get_device_type(AcceleratorType.NO_ACCEL)
if platform is not None:
    platform.current_stream().synchronize()
    platform.empty_cache(); platform.ipc_collect()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ["PORT"], LOCAL_RANK="0")
dist.init_process_group("gloo", rank=0, world_size=1)
from rlinf.hybrid_engines.fsdp.strategy import fsdp as strategy
try:  # what RLinf's wrap_model passes: the CUDA device of LOCAL_RANK, a GPU broadcast
    m = strategy.FSDP(torch.nn.Linear(2, 2), device_id=0, sync_module_states=True)
    out["fsdp"] = str(next(m.parameters()).device)
except Exception as e:
    out["fsdp"] = type(e).__name__
from rlinf.workers.actor.fsdp_sac_policy_worker import EmbodiedSACFSDPPolicy
out["sac_wrapped"] = hasattr(EmbodiedSACFSDPPolicy.run_training, "__wrapped__")
try:
    torch.cuda.synchronize()
    out["cuda_sync_outside"] = "ran"
except Exception as e:
    out["cuda_sync_outside"] = type(e).__name__
try:
    import gpu_standin
    out["applied"] = gpu_standin.applied
except ImportError:
    out["applied"] = None
print("PROBE " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def python() -> Path:
    prefix = images.locked_env_dir(LOCK)
    assert (prefix / images.BUILT_STAMP).is_file(), (
        f"RLinf's environment is not built: python -m rlark_acceptance.adapters.local.images "
        f"build {LOCK.relative_to(ROOT)} (./run tests builds it)"
    )
    return prefix / "bin" / "python"


def probe(python: Path, site: Path | None, port: int) -> dict[str, object]:
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "PORT": str(port), "HOME": str(site or "/")}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    proc = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, proc.stderr[-3000:]
    return dict(json.loads(line[len("PROBE ") :]))


def standin_site(tmp: Path) -> Path:
    """The folder the local Worker puts on PYTHONPATH when the node has no GPU."""
    site = tmp / "gpu-standin"
    site.mkdir()
    (site / "gpu_standin.py").write_bytes(GPU_STANDIN_SOURCE.read_bytes())
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


def test_rlinf_sees_the_cpu_where_it_asks_for_an_accelerator(python: Path, tmp_path: Path) -> None:
    out = probe(python, standin_site(tmp_path), 29411)
    assert out["platform"] == "cpu" and out["device_type"] == "cpu", out
    assert out["fsdp"] == "cpu", out  # RLinf's own FSDP arguments, built on the CPU
    assert out["sac_wrapped"] is True, out
    # Outside SAC's training step, torch.cuda is as it is: no GPU, and it says so.
    assert out["cuda_sync_outside"] not in ("ran", None), out
    assert out["applied"] == [
        "rlinf.scheduler.hardware.accelerators.accelerator",
        "rlinf.hybrid_engines.fsdp.strategy.fsdp",
        "rlinf.workers.actor.fsdp_sac_policy_worker",
    ], out


def test_without_the_standin_rlinf_finds_no_accelerator_and_fsdp_fails(python: Path) -> None:
    """What the stand-in is for: RLinf 0.3.0 as it is, on this machine."""
    out = probe(python, None, 29412)
    assert out["platform"] is None and out["device_type"] is None, out
    assert out["fsdp"] != "cpu" and out["applied"] is None, out


def test_rlinf_is_unchanged_on_disk(python: Path, tmp_path: Path) -> None:
    probe(python, standin_site(tmp_path), 29413)  # loaded and used: still nothing written
    site_packages = next(python.parent.parent.glob("lib/python3*/site-packages"))
    record = next(site_packages.glob("rlinf-0.3.0.dist-info")) / "RECORD"
    checked = 0
    with record.open() as f:
        for path, digest, _size in csv.reader(f):
            if not path.endswith(".py") or not digest.startswith("sha256="):
                continue
            data = (site_packages / path).read_bytes()
            want = digest.removeprefix("sha256=")
            got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert got == want, path
            checked += 1
    assert checked > 100
