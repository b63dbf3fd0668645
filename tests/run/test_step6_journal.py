"""What a run killed outright wrote is removed by the next run on that location (journal.py).

The runs are real processes holding real locks; "killed outright" is a real SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rlark_acceptance.adapters.base import LeftoversRemoved, LeftoversUnchecked
from rlark_acceptance.run.step6.journal import (
    FORGET_AFTER_S,
    identity,
    open_journal,
    state_dir,
    sweep_dead_runs,
)
from rlark_acceptance.run.step6.location import Location
from rlark_acceptance.storage import FileStore, snapshot

# A run: journal the location, write a checkpoint, then wait to be killed (or told to end).
RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rlark_acceptance.run.step6.journal import open_journal
    from rlark_acceptance.run.step6.location import Location
    from rlark_acceptance.storage import FileStore, snapshot

    root, name = sys.argv[1:]
    store = FileStore(root)
    journal = open_journal(Location(store, "", snapshot(store, "")))
    assert journal is not None
    (Path(root) / name).write_bytes(b"checkpoint")
    print("READY", flush=True)
    time.sleep(300)
    """)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLARK_ACCEPTANCE_STATE", str(tmp_path / "state"))
    return state_dir()


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    root = tmp_path / "bucket"
    root.mkdir()
    (root / "earlier-run.bin").write_bytes(b"there before")
    return FileStore(root)


Run = Callable[[str], "subprocess.Popen[str]"]


def location(store: FileStore) -> Location:
    return Location(store, "", snapshot(store, ""))


@pytest.fixture
def start_run(store: FileStore) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(name: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", RUN, str(store.root), name],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def killed(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_the_next_run_removes_what_a_killed_run_wrote(
    state: Path, store: FileStore, start_run: Run
) -> None:
    killed(start_run("global_step_2.bin"))
    assert (store.root / "global_step_2.bin").exists() and list(state.glob("*.json"))
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        removed = sweep_dead_runs(location(store))
    assert removed == ["global_step_2.bin"]
    assert sorted(p.name for p in store.root.iterdir()) == ["earlier-run.bin"]
    assert not list(state.glob("*.json")), "the dead run's journal is gone with its objects"


def test_a_store_that_refuses_the_removal_is_a_warning_and_the_next_run_tries_again(
    state: Path, store: FileStore, start_run: Run
) -> None:
    killed(start_run("stuck.bin"))
    stuck = store.root / "stuck.bin"
    # Immutable: not even root may remove it, as a store whose policy denies deletes.
    subprocess.run(["chattr", "+i", str(stuck)], check=True)
    try:
        with pytest.warns(LeftoversUnchecked, match=r"could not be removed: .*stuck\.bin"):
            assert sweep_dead_runs(location(store)) == []
        assert stuck.exists() and list(state.glob("*.json")), "its journal stays for later"
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep_dead_runs(location(store)) == ["stuck.bin"]


def test_nothing_is_removed_while_a_live_run_writes_there(
    state: Path, store: FileStore, start_run: Run
) -> None:
    killed(start_run("dead.bin"))
    live = start_run("live.bin")
    assert sweep_dead_runs(location(store)) == []
    assert {"dead.bin", "live.bin"} <= {p.name for p in store.root.iterdir()}
    killed(live)
    with pytest.warns(LeftoversRemoved, match="removed 2 object"):
        assert sorted(sweep_dead_runs(location(store))) == ["dead.bin", "live.bin"]


def test_another_locations_journal_is_left_alone(
    state: Path, store: FileStore, start_run: Run, tmp_path: Path
) -> None:
    killed(start_run("elsewhere.bin"))
    other = tmp_path / "other-bucket"
    other.mkdir()
    assert sweep_dead_runs(location(FileStore(other))) == []
    assert (store.root / "elsewhere.bin").exists() and list(state.glob("*.json"))


def test_a_run_that_settles_its_outputs_leaves_no_journal(state: Path, store: FileStore) -> None:
    journal = open_journal(location(store))
    assert journal is not None and journal.path.exists()
    journal.close()
    assert not list(state.glob("*.json"))
    assert sweep_dead_runs(location(store)) == []


def test_a_dead_journal_of_a_location_nobody_returns_to_is_forgotten_in_time(
    state: Path, store: FileStore, start_run: Run, tmp_path: Path
) -> None:
    killed(start_run("abandoned.bin"))
    (journal,) = state.glob("*.json")
    other = tmp_path / "other-bucket"
    other.mkdir()
    sweep_dead_runs(location(FileStore(other)))
    assert journal.exists(), "a recent journal is kept for its location's next run"
    old = journal.stat().st_mtime - FORGET_AFTER_S - 60
    os.utime(journal, (old, old))
    sweep_dead_runs(location(FileStore(other)))
    assert not journal.exists()
    assert (store.root / "abandoned.bin").exists(), "forgetting a journal removes no object"


# A run of its own location: journal <root>/<run id> under the shared <root>, write there.
OWN_RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rlark_acceptance.run.step6.journal import identity, open_journal
    from rlark_acceptance.run.step6.location import Location
    from rlark_acceptance.storage import FileStore, snapshot

    root, run_id = sys.argv[1:]
    own = Path(root) / run_id
    own.mkdir()
    store = FileStore(own)
    shared = identity(Location(FileStore(root), ""))
    journal = open_journal(Location(store, "", snapshot(store, "")), run_id=run_id, shared=shared)
    assert journal is not None
    (own / "global_step_1.bin").write_bytes(b"checkpoint")
    print("READY", flush=True)
    time.sleep(300)
    """)


def test_a_dead_run_of_its_own_location_is_removed_there_and_a_live_one_is_not(
    state: Path, store: FileStore
) -> None:
    procs = {
        rid: subprocess.Popen(
            [sys.executable, "-c", OWN_RUN, str(store.root), rid], stdout=subprocess.PIPE, text=True
        )
        for rid in ("run-dead", "run-live")
    }
    try:
        for proc in procs.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        killed(procs["run-dead"])
        shared = identity(Location(store, ""))
        mine = store.root / "run-new"
        mine.mkdir()

        def locate_run(run_id: str) -> Location:
            own = FileStore(store.root / run_id)
            return Location(own, "", snapshot(own, ""))

        with pytest.warns(LeftoversRemoved, match="removed 1 object"):
            removed = sweep_dead_runs(
                location(FileStore(mine)), shared=shared, locate_run=locate_run
            )
        assert removed == ["global_step_1.bin"]
        assert not (store.root / "run-dead" / "global_step_1.bin").exists()
        assert (store.root / "run-live" / "global_step_1.bin").exists(), "a live run's is its own"
        assert (store.root / "earlier-run.bin").exists()
        assert len(list(state.glob("*.json"))) == 1, "only the live run's journal is left"
    finally:
        for proc in procs.values():
            killed(proc)


def test_a_handed_on_run_of_its_own_location_is_looked_at_until_nothing_is_left(
    state: Path, store: FileStore
) -> None:
    """A run whose Worker could not be deleted hands its journal on; the Worker may write on
    after the next run's removal (the soak met its TensorBoard events file so, left for
    good). The journal stays while a run finds something there, and goes with the first
    run that finds nothing."""
    own = FileStore(store.root / "run-undeleted")
    own.root.mkdir()
    journal = open_journal(
        Location(own, "", snapshot(own, "")),
        run_id="run-undeleted",
        shared=identity(Location(store, "")),
    )
    assert journal is not None
    (own.root / "global_step_1.bin").write_bytes(b"checkpoint")
    journal.hand_on()
    mine = FileStore(store.root / "run-next")
    mine.root.mkdir()

    def sweep() -> list[str]:
        def locate_run(run_id: str) -> Location:
            there = FileStore(store.root / run_id)
            return Location(there, "", snapshot(there, ""))

        return sweep_dead_runs(
            location(mine), shared=identity(Location(store, "")), locate_run=locate_run
        )

    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep() == ["global_step_1.bin"]
    assert len(list(state.glob("*.json"))) == 1, "it found some: the journal stays"
    (own.root / "events.out.tfevents.1").write_bytes(b"written on by the undeleted Worker")
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep() == ["events.out.tfevents.1"]
    assert sweep() == [] and not list(state.glob("*.json")), "nothing more: it goes"
    assert (store.root / "earlier-run.bin").exists()
