"""Benchmark: ``read_tensors`` and ``read_scalars`` speed and peak memory against file size.

    python bench/tensors_read.py [MB ...]        # default: 200
    python bench/tensors_read.py --s3 [MB ...]   # also from the testenv S3 server

For each size, a safetensors file of that many MB (float32, written by the safetensors
library, one NaN at the end) is read in a fresh process, which reports its peak RSS
before and after the read (``VmHWM``) and the speed in MB/s; the baseline is Python's
``hashlib.sha256`` over the same file in 8 MiB reads, the hash alone. Then a tensorboardX
event file of 10 000 steps × 10 tags is read by ``read_scalars``. With ``--s3`` (``testenv up s3``
first) the same files are read from an S3 prefix, removed afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, sys, time
from rlark_acceptance.storage import FileStore, S3Store, read_scalars, read_tensors
where, root, what = sys.argv[1], sys.argv[2], sys.argv[3]
if where == "s3":
    sys.path.insert(0, sys.argv[4])
    from testenv import state
    from fixtures.testenv import S3Env
    info = state.load().s3
    env = S3Env(info.endpoint, info.bucket, info.region, info.access_key, info.secret_key)
    store = S3Store(env.client(), env.bucket, root)
else:
    store = FileStore(root)
def hwm():
    # VmHWM, not ru_maxrss: Linux carries the parent's peak into ru_maxrss across exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = hwm()
t0 = time.monotonic()
if what == "tensors":
    report = read_tensors(store, "")
    n, problems = report.nbytes, report.problems
    extra = {"non_finite": report.non_finite}
else:
    report = read_scalars(store, "")
    n = sum(o.size for o in store.list(""))
    problems = report.problems
    extra = {"points": sum(len(v) for v in report.scalars.values())}
took = time.monotonic() - t0
after = hwm()
print(json.dumps({"bytes": n, "s": took, "rss_before": before, "rss_after": after,
                  "problems": problems, **extra}))
"""


def _child(where: str, root: str, what: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, where, root, what, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


def _show(label: str, r: dict[str, object]) -> None:
    mb = int(r["bytes"]) / 1e6  # type: ignore[call-overload]
    s = float(r["s"])  # type: ignore[arg-type]
    grew = (int(r["rss_after"]) - int(r["rss_before"])) / 1e6  # type: ignore[call-overload]
    rest = {k: v for k, v in r.items() if k not in ("bytes", "s", "rss_before", "rss_after")}
    print(
        f"{label}: {mb:.0f} MB in {s:.2f} s = {mb / s:.0f} MB/s; "
        f"peak RSS {int(r['rss_before']) / 1e6:.0f} -> {int(r['rss_after']) / 1e6:.0f} MB "  # type: ignore[call-overload]
        f"(+{grew:.0f} MB); {rest}",
        flush=True,
    )


def _write_events(logdir: Path) -> None:
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(logdir))
    for step in range(10_000):
        for tag in range(10):
            writer.add_scalar(f"train/t{tag}", step * 0.001 + tag, step)
    writer.close()


def _upload(client: object, bucket: str, prefix: str, path: Path) -> None:
    client.upload_file(str(path), bucket, f"{prefix}/{path.name}")  # type: ignore[attr-defined]


def main() -> int:
    import numpy as np
    from safetensors.numpy import save_file

    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="*", type=int, default=[200])
    parser.add_argument("--s3", action="store_true")
    args = parser.parse_args()
    s3 = None
    if args.s3:
        from fixtures.testenv import S3Env
        from testenv import state

        info = state.load().s3
        if info is None:
            raise SystemExit("no S3 server in this checkout: run `testenv/testenv up s3` first")
        s3 = S3Env(info.endpoint, info.bucket, info.region, info.access_key, info.secret_key)
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes:
            d = Path(tmp, f"w{mb}")
            d.mkdir()
            weights = np.ones(mb * 1024 * 1024 // 4, dtype=np.float32)
            weights[-1] = np.nan
            save_file({"w": weights}, d / "model.safetensors")
            del weights
            t0 = time.monotonic()
            h = hashlib.sha256()
            with (d / "model.safetensors").open("rb") as f:
                while chunk := f.read(8 * 1024 * 1024):
                    h.update(chunk)
            base = time.monotonic() - t0
            print(f"baseline hashlib.sha256 of {mb} MiB: {mb * 1.048576 / base:.0f} MB/s")
            _show(f"read_tensors, directory, {mb} MiB", _child("file", str(d), "tensors"))
            if s3 is not None:
                prefix = f"rlark-acceptance-bench/{uuid.uuid4().hex}"
                client = s3.client()
                _upload(client, s3.bucket, prefix, d / "model.safetensors")
                try:
                    _show(f"read_tensors, S3, {mb} MiB", _child("s3", prefix, "tensors"))
                finally:
                    client.delete_object(Bucket=s3.bucket, Key=f"{prefix}/model.safetensors")
            (d / "model.safetensors").unlink()
        events = Path(tmp, "tb")
        _write_events(events)
        _show("read_scalars, directory, 100 000 points", _child("file", str(events), "scalars"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
