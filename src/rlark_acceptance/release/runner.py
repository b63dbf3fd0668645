"""Where one profile's acceptance runs: the seam between the release and its runners.

A release accepts each of its profiles somewhere (a pytest session on this machine, a Job
in the profile's own cluster) and reads back what that acceptance left: the profile's full
run record (``run-summary.json``, ``junit.xml``, ``allure-results/``) in the directory the
release gave it. A runner is anything that can do that:

    class InCluster:
        name = "in-cluster"

        def run(self, acceptance, stop, say):
            ...  # start the runner Job, stream its lines through say(), fetch the record
            return ProfileOutcome(acceptance.record_dir, exit_status, started, elapsed)

The release never looks inside a runner: it runs up to ``--jobs`` of them at once, each in
its own thread, sets ``stop`` on SIGINT / SIGTERM, and then reads every record directory
(a runner that left no ``run-summary.json`` is reported as such, with ``problem``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ProfileAcceptance:
    """One profile of the release, as a runner is asked to accept it."""

    name: str  # the profile's own name: its record's directory is named after it
    profile: Path  # the profile file, absolute
    record_dir: Path  # where its run record must be when ``run`` returns
    # The release's shared options for the profile's session, as pytest arguments
    # (``-m EXPR``, ``--fault-injection``, ``--doc-url URL``, the run's own test paths).
    pytest_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileOutcome:
    """What a runner gives back: where the record is and how the session ended."""

    record_dir: Path
    exit_status: int | None  # the profile's session's exit status; None: it never ran
    started: float  # wall-clock time (epoch seconds) the runner started the profile
    elapsed: float  # seconds from the start until the record was in ``record_dir``
    problem: str | None = None  # why the session could not run or left no record


Say = Callable[[str], None]  # one line of a profile's progress, for the release's terminal


class ProfileRunner(Protocol):
    """Runs one profile's acceptance somewhere and gives back its record directory."""

    name: str  # how the release names where its profiles ran ("local session", ...)

    def run(self, acceptance: ProfileAcceptance, stop: threading.Event, say: Say) -> ProfileOutcome:
        """Block until the profile's acceptance has ended and its record is in
        ``acceptance.record_dir``. Once ``stop`` is set, interrupt it as SIGINT interrupts a
        run (what it submitted is removed, its record marks it ``interrupted``) and return
        when that record is written. Never raises for the profile's own failure: that is
        its record's verdict."""
        ...
