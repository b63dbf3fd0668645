"""Live progress while Step 6 waits, as pytest's terminal shows it (``fixtures/progress.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fixtures.progress import render as _render
from rlark_acceptance.model.timeouts import Bound
from rlark_acceptance.run.step6 import Progress
from rlark_acceptance.secrets import Redactor

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape


def tick(
    check: str = "6.4", elapsed: float = 12.4, line: str | None = "Global Step: 3%|"
) -> Progress:
    return Progress(check, Bound.FIRST_SIGNAL, elapsed, 120.0, "pod w-0 Running", line)


def render(t: Progress, width: int | None = None) -> str:
    return _render(t, Redactor(), width)


def test_a_tick_names_the_phase_its_time_the_pod_and_the_latest_line() -> None:
    assert render(tick()) == (
        "Step 6 waits for 6.4 (firstSignal) 12/120 s · pod w-0 Running · Global Step: 3%|"
    )
    assert render(tick(line=None)).endswith("· (no log line yet)")
    assert render(tick(line="2026-12-01 04:28:50,893\tINFO  x")).endswith(
        "· 2026-12-01 04:28:50,893 INFO x"
    )
    assert len(render(tick(line="x" * 500), width=80)) == 80
    # Ray's coloured prefixes: the Worker's escape sequences never reach our terminal.
    coloured = "\x1b[36m(pid=gcs_server)\x1b[0m started\x07"
    assert render(tick(line=coloured)).endswith("· (pid=gcs_server) started")


def test_the_latest_line_is_redacted() -> None:
    text = render(tick(line=f"export GITHUB_TOKEN={TOKEN}"))
    assert TOKEN not in text and "GITHUB_TOKEN=" in text


# A session whose one test plays a Step 6 wait through the run's progress channel.
SESSION = textwrap.dedent(f"""
    from rlark_acceptance.model.timeouts import Bound
    from rlark_acceptance.run import progress
    from rlark_acceptance.run.step6 import Progress

    def test_waits():
        for check, secs in (("6.3", 0), ("6.3", 1), ("6.3", 2), ("6.4", 0), ("6.4", 11)):
            progress.emit(
                Progress(check, Bound.RAY_HEAD, secs, 60.0, "pod w-0 Running", "token {TOKEN}")
            )
        progress.emit(None)
""")


def run_session(tmp_path: Path, *args: str, tty: bool = False) -> list[str]:
    """The progress lines of the session's output (on a pseudo-terminal with ``tty``)."""
    import pty

    (tmp_path / "test_wait.py").write_text(SESSION)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    env.pop("CI", None)
    argv = [sys.executable, "-m", "pytest", str(tmp_path), "-p", "fixtures.progress"]
    argv += ["-p", "no:cacheprovider", *args]
    if not tty:
        out = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        return [line for line in out.stdout.splitlines() if line.startswith("Step 6 waits")]
    main, sub = pty.openpty()
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=sub, stderr=sub)
    os.close(sub)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the session ended: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode(errors="replace")
    return [part.rstrip() for part in text.split("\r") if "Step 6 waits" in part]


def test_on_a_terminal_one_line_is_rewritten_in_place(tmp_path: Path) -> None:
    rewrites = run_session(tmp_path, tty=True)
    assert [r.split(" · ")[0] for r in rewrites] == [
        "Step 6 waits for 6.3 (rayHead) 0/60 s",
        "Step 6 waits for 6.3 (rayHead) 1/60 s",
        "Step 6 waits for 6.3 (rayHead) 2/60 s",
        "Step 6 waits for 6.4 (rayHead) 0/60 s",
        "Step 6 waits for 6.4 (rayHead) 11/60 s",
    ]
    assert all(r.endswith("token ***") for r in rewrites)


def test_in_a_ci_log_a_line_when_each_phase_starts_waiting(tmp_path: Path) -> None:
    # The ticks come faster than PLAIN_EVERY_S: only each phase's first one is printed.
    lines = run_session(tmp_path)
    assert lines == [
        "Step 6 waits for 6.3 (rayHead) 0/60 s · pod w-0 Running · token ***",
        "Step 6 waits for 6.4 (rayHead) 0/60 s · pod w-0 Running · token ***",
    ]


def test_quiet_keeps_one_line_per_phase(tmp_path: Path) -> None:
    assert len(run_session(tmp_path, "-q")) == 2
