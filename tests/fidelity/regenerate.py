"""Regenerate the real RLinf output the fidelity tests read (``tests/fidelity/rlinf-0.3.0/``).

Runs the Job of ``profiles/rlinf-embodied.yaml`` once on the local target (RLinf's
environment built, the S3 server of ``testenv up s3`` running and ``eval "$(testenv/testenv
env)"`` done), then keeps what a harness reads: the Worker log as the Pod log shows it, and
the checkpoint and TensorBoard files RLinf wrote to the objectStorage mount. For the next
RLinf release: point the profile at it, run this, and the fidelity tests say what changed.

    .venv/bin/python -m tests.fidelity.regenerate
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from rlark_acceptance.adapters import open_adapter
from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"
OUT = Path(__file__).resolve().parent / "rlinf-0.3.0"
# Kept small: the first step only (the second has the same shape), its full weights (torch
# zip) and the smaller of its two DCPs (SAC's alpha; the actor's own is ~5 MB), and the
# TensorBoard files.
STEP = "logs/ci-test/checkpoints/global_step_1/actor/"
KEEP = (
    STEP + "model_state_dict/full_weights.pt",
    STEP + "sac_components/alpha/dcp_checkpoint/",
    "logs/tensorboard/",
)
TIMEOUT_S = 900.0


def main() -> int:
    profile = load_profile(PROFILE)
    assert profile.job is not None
    job = read_job(str(profile.job))
    ckpt = next(m for m in job.roles[0].mounts if m.name == "ckpt")
    adapter = open_adapter(profile)
    try:
        store = adapter.store_for(job, ckpt)
        before = {o.key for o in store.list()}
        ref = adapter.submit(job, profile.job.read_text(encoding="utf-8"))
        deadline = time.monotonic() + TIMEOUT_S
        while not any(p.terminal for p in adapter.pods(ref)):
            assert time.monotonic() < deadline, "RLinf did not finish"
            time.sleep(2)
        pod = adapter.pods(ref)[0]
        log = adapter.logs(ref, pod.name)
        adapter.delete(ref)
        if pod.phase != "Succeeded":
            print(log[-4000:], file=sys.stderr)
            return 1
        written = [o for o in store.list() if o.key not in before]
        shutil.rmtree(OUT, ignore_errors=True)
        (OUT / "mount").mkdir(parents=True)
        # The harness user's home is this machine's business: written as ~.
        (OUT / "worker.log").write_text(log.replace(str(Path.home()), "~"), encoding="utf-8")
        for o in written:
            if o.key.startswith(KEEP) and not o.key.endswith("/"):
                dest = OUT / "mount" / o.key
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(store.read(o.key))
        store.delete([o.key for o in written])  # type: ignore[attr-defined]
        print(f"{OUT}: {sum(1 for _ in OUT.rglob('*'))} entries")
        return 0
    finally:
        adapter.close()


if __name__ == "__main__":
    sys.exit(main())
