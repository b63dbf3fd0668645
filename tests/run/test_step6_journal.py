"""What a run killed outright wrote at its own location is removed by the next run of the
profile's location (journal.py), and nothing else is.

The runs are real processes holding real locks; "killed outright" is a real SIGKILL. The
same paths beside live neighbours on the real S3 server: ``test_outputs_proven_own.py``.
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


def location(store: FileStore) -> Location:
    return Location(store, "", snapshot(store, ""))


def killed(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


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


def start_own(store: FileStore, run_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", OWN_RUN, str(store.root), run_id], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    return proc


def sweep(store: FileStore) -> list[str]:
    """The sweep of a run of the profile's location ``store``: each run's own is a folder."""

    def locate_run(run_id: str) -> Location:
        return location(FileStore(store.root / run_id))

    return sweep_dead_runs(identity(Location(store, "")), locate_run, by="run-new")


@pytest.fixture
def runs(store: FileStore) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(run_id: str) -> subprocess.Popen[str]:
        started.append(start_own(store, run_id))
        return started[-1]

    yield start
    for proc in started:
        killed(proc)


def test_a_dead_run_of_its_own_location_is_removed_there_and_a_live_one_is_not(
    state: Path, store: FileStore, runs: Callable[[str], subprocess.Popen[str]]
) -> None:
    killed(runs("run-dead"))
    runs("run-live")
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        removed = sweep(store)
    assert removed == ["global_step_1.bin"]
    assert not (store.root / "run-dead" / "global_step_1.bin").exists()
    assert (store.root / "run-live" / "global_step_1.bin").exists(), "a live run's is its own"
    assert (store.root / "earlier-run.bin").exists()
    assert len(list(state.glob("*.json"))) == 1, "only the live run's journal is left"


def test_a_store_that_refuses_the_removal_is_a_warning_and_the_next_run_tries_again(
    state: Path, store: FileStore, runs: Callable[[str], subprocess.Popen[str]]
) -> None:
    killed(runs("run-stuck"))
    stuck = store.root / "run-stuck" / "global_step_1.bin"
    # Immutable: not even root may remove it, as a store whose policy denies deletes.
    subprocess.run(["chattr", "+i", str(stuck)], check=True)
    try:
        with pytest.warns(LeftoversUnchecked, match=r"could not be removed: .*global_step_1"):
            assert sweep(store) == []
        assert stuck.exists() and list(state.glob("*.json")), "its journal stays for later"
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep(store) == ["global_step_1.bin"]


def test_a_run_that_settles_its_outputs_leaves_no_journal(state: Path, store: FileStore) -> None:
    journal = open_journal(location(store), run_id="run-1", shared="elsewhere")
    assert journal is not None and journal.path.exists()
    journal.close()
    assert not list(state.glob("*.json"))


def test_another_locations_dead_run_is_left_alone_and_forgotten_in_time(
    state: Path, store: FileStore, runs: Callable[[str], subprocess.Popen[str]], tmp_path: Path
) -> None:
    killed(runs("run-abandoned"))
    (journal,) = state.glob("*.json")
    other = tmp_path / "other-bucket"
    other.mkdir()
    assert sweep(FileStore(other)) == []
    assert journal.exists(), "a recent journal is kept for its location's next run"
    old = journal.stat().st_mtime - FORGET_AFTER_S - 60
    os.utime(journal, (old, old))
    sweep(FileStore(other))
    assert not journal.exists()
    assert (store.root / "run-abandoned" / "global_step_1.bin").exists(), (
        "forgetting a journal removes no object"
    )


def test_a_run_whose_lock_was_lost_while_its_process_runs_is_not_over(
    state: Path, store: FileStore
) -> None:
    """Liveness is never the lock alone: a journal whose lock is free (an fd closed by
    mistake, say) belongs to a live run while its process runs."""
    own = FileStore(store.root / "run-lost-lock")
    own.root.mkdir()
    journal = open_journal(location(own), run_id="run-lost-lock", shared=identity(location(store)))
    assert journal is not None
    (own.root / "global_step_1.bin").write_bytes(b"checkpoint")
    journal._fh.close()  # the lock is gone; this process, its run's, is not
    assert sweep(store) == []
    assert (own.root / "global_step_1.bin").exists()


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
        location(own), run_id="run-undeleted", shared=identity(Location(store, ""))
    )
    assert journal is not None
    (own.root / "global_step_1.bin").write_bytes(b"checkpoint")
    journal.hand_on()
    (store.root / "run-next").mkdir()
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep(store) == ["global_step_1.bin"]
    assert len(list(state.glob("*.json"))) == 1, "it found some: the journal stays"
    (own.root / "events.out.tfevents.1").write_bytes(b"written on by the undeleted Worker")
    with pytest.warns(LeftoversRemoved, match="removed 1 object"):
        assert sweep(store) == ["events.out.tfevents.1"]
    assert sweep(store) == [] and not list(state.glob("*.json")), "nothing more: it goes"
    assert (store.root / "earlier-run.bin").exists()


# A run of the same profile started with the user's HOME seen through an overlay (as
# test_users_machine.py runs the suite): the journals of this machine's live runs reach it
# through the overlay's lower layer, but a flock taken on the real file is not one on the
# overlay's, so their locks look free from there.
OVERLAID_SWEEP = """
state=$1 layer=$2; shift 2
mkdir -p "$layer/upper" "$layer/work"
mount -t overlay overlay -o "lowerdir=$state,upperdir=$layer/upper,workdir=$layer/work" "$state"
exec "$@"
"""
SWEEP = textwrap.dedent("""
    import sys
    from rlark_acceptance.run.step6.journal import identity, sweep_dead_runs
    from rlark_acceptance.run.step6.location import Location
    from rlark_acceptance.storage import FileStore, snapshot

    root = sys.argv[1]
    def locate_run(run_id):
        own = FileStore(f"{root}/{run_id}")
        return Location(own, "", snapshot(own, ""))
    print(sweep_dead_runs(identity(Location(FileStore(root), "")), locate_run, by="overlaid"))
    """)


def test_a_live_run_seen_through_an_overlay_of_the_state_directory_is_not_swept(
    state: Path, store: FileStore, runs: Callable[[str], subprocess.Popen[str]], tmp_path: Path
) -> None:
    """Its lock looks free from inside the overlay (the kernel locks the overlay's file, not
    the real one); its process is alive, so it is not over, and its checkpoint stays. Before
    liveness asked the process, this sweep removed a live run's checkpoint."""
    runs("run-live")
    layer = tmp_path / "layer"
    layer.mkdir()
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", OVERLAID_SWEEP,
         "sh", str(state), str(layer), sys.executable, "-c", SWEEP, str(store.root)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert (store.root / "run-live" / "global_step_1.bin").exists()
