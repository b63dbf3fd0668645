"""The runner Pod's entry point: the acceptance suite on the profile of its ConfigMap, then
its record to the object store.

    python -m rlark_acceptance.incluster.runner --record s3://B/P --reports-dir DIR -- ARGS

The record goes to ``s3://B/P/<its Pod's name>`` (the Job's manifest gives the Pod its name
in its environment), or to ``s3://B/P`` where no Pod name is given.

The suite runs as a child (``python -m pytest ARGS --reports-dir DIR``) so the record is
uploaded on every path: a verdict, a usage error, a crash, and the SIGTERM the kubelet sends
when the runner Job is deleted, which is passed on to the suite (its own interrupt handling
removes what it submitted and writes the record ``interrupted``) before the upload. The
exit status is the suite's.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from rlark_acceptance.adapters.kubernetes import owner
from rlark_acceptance.incluster import record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlark-acceptance-runner")
    parser.add_argument("--record", required=True, metavar="S3_URL")
    parser.add_argument("--reports-dir", required=True, type=Path)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    argv_suite = [
        sys.executable,
        "-m",
        "pytest",
        *pytest_args,
        "--reports-dir",
        str(args.reports_dir),
    ]
    print(f"runner: {' '.join(argv_suite[1:])}", flush=True)
    child = subprocess.Popen(argv_suite)

    def forward(signum: int, _frame: FrameType | None) -> None:
        # The suite's own handler cleans up; a second signal reaches it too.
        if child.poll() is None:
            child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    code = child.wait()
    started = time.monotonic()
    # The Pod's own folder (the Job's may hold another Pod's record: record.py says why).
    url = record.for_pod(args.record, os.environ.get(owner.RUNNER_POD_ENV))
    try:
        sent = record.upload(args.reports_dir, url)
    except Exception as e:  # the upload's failure must not hide the verdict in the log
        print(f"runner: the record was not uploaded to {url}: {type(e).__name__}: {e}")
        return code or 3
    print(
        f"runner: record uploaded to {url} ({sent} files, "
        f"{time.monotonic() - started:.1f}s); suite exit status {code}",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
