"""Every profile of a release accepted through one runner, up to ``jobs`` at once.

Each profile's runner call gets a thread of its own; the main thread only waits, so that
SIGINT / SIGTERM reach it at once: they set ``stop``, every runner interrupts its profile,
and the release goes on to read every record. A profile not yet started when the release
is stopped is not started.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time

from rlark_acceptance.release.runner import ProfileAcceptance, ProfileOutcome, ProfileRunner, Say


def accept_all(
    profiles: list[ProfileAcceptance],
    runner: ProfileRunner,
    jobs: int,
    stop: threading.Event,
    say: Say,
) -> list[ProfileOutcome]:
    """The outcome of each profile, in the order given."""

    def one(acceptance: ProfileAcceptance) -> ProfileOutcome:
        if stop.is_set():
            return ProfileOutcome(
                acceptance.record_dir,
                None,
                time.time(),
                0.0,
                "not started: the release was interrupted first",
            )
        say(f"[{acceptance.name}] accepting {acceptance.profile} ({runner.name})")
        try:
            return runner.run(acceptance, stop, say)
        except Exception as exc:  # a runner's own crash is that profile's, not the release's
            return ProfileOutcome(
                acceptance.record_dir, None, time.time(), 0.0, f"the runner failed: {exc!r}"
            )

    with cf.ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="profile") as pool:
        futures = [pool.submit(one, a) for a in profiles]
        pending = set(futures)
        while pending:  # short waits: the main thread stays free for signal handlers
            _, pending = cf.wait(pending, timeout=0.2)
        return [f.result() for f in futures]
