"""Each profile of a release accepted in a pytest session of its own on this machine.

The session is ``python -m pytest <the run's test paths> --profile P --reports-dir
reports/<name>``, exactly a single-profile run, so its record has the layout of one. It
runs in a process group of its own: a Ctrl-C at the terminal reaches the release only,
which passes one SIGINT to every session (a second one would cut a session's clean-up
short). What a session prints goes to ``session.log`` in its record and, line by line, to
the release's terminal prefixed with the profile's name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rlark_acceptance.release.runner import ProfileAcceptance, ProfileOutcome, Say

SESSION_LOG = "session.log"
# After SIGINT a session removes what it submitted and writes its record: a Kubernetes Job's
# Pods are waited for by watch. Past this, SIGTERM, then SIGKILL: a hung session must not
# hang the release.
INTERRUPT_GRACE_S = 120.0
TERMINATE_GRACE_S = 20.0


class LocalSessions:
    """The release's default runner: a pytest subprocess per profile."""

    name = "local session"

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = env

    def command(self, acceptance: ProfileAcceptance) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            *acceptance.pytest_args,
            "-p",
            "no:cacheprovider",
            "--profile",
            str(acceptance.profile),
            "--reports-dir",
            str(acceptance.record_dir),
        ]

    def run(self, acceptance: ProfileAcceptance, stop: threading.Event, say: Say) -> ProfileOutcome:
        record = acceptance.record_dir
        record.mkdir(parents=True, exist_ok=True)
        started, t0 = time.time(), time.monotonic()
        env = dict(self.env if self.env is not None else os.environ)
        env["PYTHONUNBUFFERED"] = "1"  # its progress reaches the release as it happens
        env.pop("PYTEST_ADDOPTS", None)  # the release's own options are given explicitly
        try:
            proc = subprocess.Popen(
                self.command(acceptance),
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return ProfileOutcome(record, None, started, 0.0, f"the session did not start: {exc}")
        reader = threading.Thread(
            target=_copy_lines, args=(proc, record / SESSION_LOG, acceptance.name, say), daemon=True
        )
        reader.start()
        problem = _wait(proc, stop)
        reader.join(timeout=10)
        return ProfileOutcome(record, proc.returncode, started, time.monotonic() - t0, problem)


def _wait(proc: subprocess.Popen[bytes], stop: threading.Event) -> str | None:
    """Until the session ends; on ``stop``, one SIGINT, then bounded escalation."""
    while proc.poll() is None:
        if stop.wait(0.2):
            break
    if proc.poll() is not None:
        return None
    for sig, grace in (
        (signal.SIGINT, INTERRUPT_GRACE_S),
        (signal.SIGTERM, TERMINATE_GRACE_S),
        (signal.SIGKILL, TERMINATE_GRACE_S),
    ):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGINT:
            return None
        return f"the session did not end within {INTERRUPT_GRACE_S:g} s of SIGINT: {sig.name} sent"
    return "the session could not be stopped"


def _copy_lines(proc: subprocess.Popen[bytes], log: Path, name: str, say: Say) -> None:
    assert proc.stdout is not None
    with log.open("wb") as out:
        for raw in proc.stdout:
            out.write(raw)
            out.flush()
            line = raw.decode(errors="replace").rstrip("\r\n")
            # A live progress line rewritten in place shows its latest state only.
            line = line.rsplit("\r", 1)[-1]
            if line.strip():
                say(f"[{name}] {line}")
