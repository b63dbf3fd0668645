"""The in-cluster runner as a release's profile runner (``release/runner.py``'s seam): one
profile's acceptance as a runner Job, its record fetched into the directory the release
gave it, its progress as lines through ``say``, stopped when ``stop`` is set."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlark_acceptance.incluster import launch, manifests


class _Lines:
    """A text stream that hands each complete line to ``say`` (the runner's log pieces)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.buf = ""

    def write(self, text: str) -> int:
        self.buf += text
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            self.say(line)
        return len(text)

    def flush(self) -> None:
        pass


class InCluster:
    """Runs each profile it is given by ``--in-cluster``, with the command line's runner
    settings (``fixtures.incluster.runner_spec``)."""

    name = "in-cluster"

    def __init__(self, spec: manifests.RunnerSpec) -> None:
        self.spec = spec

    def run(self, acceptance: Any, stop: threading.Event, say: Callable[[str], None]) -> Any:
        from rlark_acceptance.release.runner import ProfileOutcome

        # The release's options for the session; its test paths are the image's own.
        args = [a for a in acceptance.pytest_args if not Path(a).exists()]
        spec = replace(self.spec, pytest_args=[*self.spec.pytest_args, *args])
        started, t0 = time.time(), time.monotonic()
        lines = _Lines(say)
        outcome = launch.run(
            acceptance.profile,
            spec,
            acceptance.record_dir,
            out=lines,
            stop=stop,
        )
        if lines.buf:
            say(lines.buf)
        return ProfileOutcome(
            acceptance.record_dir,
            outcome.status if outcome.name else None,
            started,
            time.monotonic() - t0,
            None if outcome.fetched else "the runner's record could not be fetched",
        )
