"""SIGINT / SIGTERM: everything registered is closed first, then the signal ends the run."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

# A process with one registered "adapter" whose close() is slow and says when it ran; the
# main thread waits as Step 6 does. It prints how it ended.
CHILD = textwrap.dedent("""
    import signal, sys, time
    from rlark_acceptance.adapters import cleanup

    mode = sys.argv[1]
    if mode == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a shell's background job
    if mode == "interrupt":
        cleanup.terminate_as_interrupt()

    class Slow:
        def close(self):
            print("closing", flush=True)
            time.sleep(0.5)
            print("closed", flush=True)
            cleanup.unregister(self)

    cleanup.register(Slow())
    try:
        print("ready", flush=True)
        time.sleep(30)
        print("carried on", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(2)
""")


def run_child(mode: str, *signals: signal.Signals) -> tuple[int, list[str]]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signals[0])
        if len(signals) > 1:
            assert child.stdout.readline().strip() == "closing"
            for sig in signals[1:]:
                child.send_signal(sig)
        out, _ = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    head = ["closing"] if len(signals) > 1 else []
    return child.returncode, head + out.split()


@pytest.mark.parametrize(
    ("mode", "sig", "code", "last"),
    [
        ("default", signal.SIGINT, 2, ["KeyboardInterrupt"]),
        ("ignored", signal.SIGINT, 2, ["KeyboardInterrupt"]),
        ("default", signal.SIGTERM, -signal.SIGTERM, []),
        ("interrupt", signal.SIGTERM, 2, ["KeyboardInterrupt"]),
    ],
    ids=["SIGINT", "SIGINT-in-background-job", "SIGTERM", "SIGTERM-as-interrupt"],
)
def test_the_cleanup_runs_then_the_signal_ends_the_run(
    mode: str, sig: signal.Signals, code: int, last: list[str]
) -> None:
    assert run_child(mode, sig) == (code, ["closing", "closed", *last])


def test_a_second_signal_does_not_cut_the_cleanup_short() -> None:
    code, out = run_child("default", signal.SIGINT, signal.SIGINT, signal.SIGTERM)
    assert (code, out) == (2, ["closing", "closed", "KeyboardInterrupt"])


# A run that a signal ended writes its record as pytest does after a KeyboardInterrupt; the
# second Ctrl-C of a user pressing it twice lands meanwhile.
WRITES_ITS_RECORD = textwrap.dedent("""
    import signal, sys, time
    from rlark_acceptance.adapters import cleanup

    class Adapter:
        def close(self):
            cleanup.unregister(self)

    cleanup.register(Adapter())
    try:
        print("ready", flush=True)
        time.sleep(30)
    except KeyboardInterrupt:
        print("writing the record", flush=True)
        time.sleep(1.0)
        print("record written", flush=True)
        sys.exit(2)
""")


def test_a_second_signal_does_not_cut_the_interrupted_runs_record_short() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITES_ITS_RECORD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        assert child.stdout.readline().strip() == "writing the record"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert (child.returncode, out.split("\n")[0]) == (2, "record written"), err
    assert "SIGINT again: the run interrupted by SIGINT is removing" in err, err
    assert "Traceback" not in err, err


# A part of the program that stops otherwise while it runs (a release, the in-cluster launch)
# takes the signal through ``cleanup.interrupts``: its callback runs instead of the clean-up,
# the innermost scope's only; once the scopes are closed the clean-up owns the signal again.
SCOPED = textwrap.dedent("""
    import os, signal, sys
    from rlark_acceptance.adapters import cleanup

    class Adapter:
        def close(self):
            print("closed", flush=True)
            cleanup.unregister(self)

    cleanup.terminate_as_interrupt()
    cleanup.register(Adapter())
    with cleanup.interrupts(lambda s: print("outer", signal.Signals(s).name, flush=True)):
        with cleanup.interrupts(lambda s: print("inner", signal.Signals(s).name, flush=True)):
            os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    print("scopes closed", flush=True)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        print("carried on", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(2)
""")


def test_a_scope_of_interrupts_takes_the_signal_instead_of_the_cleanup_then_hands_it_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCOPED], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.stdout.splitlines() == [
        "inner SIGTERM",
        "outer SIGINT",
        "scopes closed",
        "closed",
        "KeyboardInterrupt",
    ], done.stderr
    assert done.returncode == 2, done.stderr


# An interrupted run that has done everything, then Ctrl-C again in the last moments of the
# interpreter's exit (a finalizer sends it, after Python has put the default handlers back).
LATE = textwrap.dedent("""
    import os, signal, sys, time
    from rlark_acceptance.adapters import cleanup

    cleanup.install_handlers()
    if sys.argv[1] == "interrupted":
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)

    class Late:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)

    late = Late()
    sys.exit(2)
""")


@pytest.mark.parametrize(("how", "status"), [("interrupted", 2), ("not interrupted", -2)])
def test_a_signal_in_the_last_moments_of_an_interrupted_runs_exit_keeps_its_status(
    how: str, status: int
) -> None:
    """An interrupted run exits 2 however late a second Ctrl-C lands; one that no signal
    reached keeps the default: Ctrl-C then ends it as it ends any program."""
    done = subprocess.run(
        [sys.executable, "-c", LATE, how], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert ("KeyboardInterrupt" in done.stdout) == (how == "interrupted"), done.stdout
