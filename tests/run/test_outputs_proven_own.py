"""The harness removes only what it can prove a run of its own wrote, and only once that run
is over: never a live run's, never anyone else's (``journal.py``, ``Engine.settle_outputs``).

Every path that deletes runs on the real S3 server under a shared prefix of its own, beside
three neighbours that must all survive it:

- a live run of the same profile: a real process holding its journal's lock, its checkpoint
  at its own location;
- a run that has just deleted its Worker and is reading its checkpoint again, whose journal's
  lock is no longer held (a lock lost is not a run over: its process still runs);
- a foreign object, another team's, written under the same prefix after the dead run's
  listing was taken.

The paths: the sweep of a shared location, the sweep of a dead run's own location, a
handed-on run, a hostPath output, an interrupted run, and a passing run settling its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.adapters.base import LeftoversRemoved
from rlark_acceptance.model.job import Job, Mount
from rlark_acceptance.model.profile import KeepOutputs, Profile
from rlark_acceptance.rlinf.failures import OUTPUTS_REMOVED
from rlark_acceptance.run.report import hint
from rlark_acceptance.run.step6 import Interrupted, build_plan, confirm_running
from rlark_acceptance.run.step6.engine import SHARED_LEFT
from rlark_acceptance.run.step6.journal import open_journal, state_dir, sweep_dead_runs
from rlark_acceptance.run.step6.location import Location
from rlark_acceptance.run.step6.removals import removed_at
from rlark_acceptance.storage import S3Store, Store, snapshot
from tests.run.scripted import (
    CKPT,
    CONFIG,
    GOOD,
    SIGNAL,
    ScriptedTarget,
    call,
    end,
    happy_script,
    line,
    lines,
    pod,
    started,
)

pytestmark = pytest.mark.usefixtures("state")

# A neighbour: journal its own location under the shared prefix, write its checkpoint, then
# wait (with "release": let go of the journal's lock and live on, as a run whose lock was
# lost while it still reads its outputs).
NEIGHBOUR = textwrap.dedent("""
    import os, sys, time
    import boto3
    from rlark_acceptance.run.step6.journal import open_journal
    from rlark_acceptance.run.step6.location import Location
    from rlark_acceptance.storage import S3Store, snapshot

    bucket, shared, run_id, mode = sys.argv[1:]
    client = boto3.client("s3", endpoint_url=os.environ["TEST_S3_ENDPOINT"])
    own = S3Store(client, bucket, f"{shared}/{run_id}")
    root = S3Store(client, bucket, shared)
    journal = open_journal(
        Location(own, "", snapshot(own, "")), run_id=run_id, shared=Location(root, "").identity
    )
    assert journal is not None
    own.client.put_object(
        Bucket=bucket, Key=f"{shared}/{run_id}/CKPT/global_step_1/actor/model.safetensors",
        Body=b"weights",
    )
    if mode == "release":
        journal._fh.close()
    print("READY", flush=True)
    time.sleep(300)
    """).replace("CKPT", CKPT)


@dataclass
class Shared:
    """A shared prefix of the real S3 server and what stands under it."""

    client: Any
    bucket: str
    prefix: str
    endpoint: str
    procs: dict[str, subprocess.Popen[str]]

    def store(self, sub: str = "") -> S3Store:
        return S3Store(self.client, self.bucket, f"{self.prefix}/{sub}".rstrip("/"))

    @property
    def identity(self) -> str:
        return Location(self.store(), "").identity

    def keys(self) -> set[str]:
        return {o.key for o in self.store().list("")}

    def start(self, run_id: str, mode: str = "hold") -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", NEIGHBOUR, self.bucket, self.prefix, run_id, mode],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ | {"TEST_S3_ENDPOINT": self.endpoint},
        )
        self.procs[run_id] = proc
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        return proc

    def kill(self, run_id: str) -> None:
        proc = self.procs[run_id]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def locate_run(self, run_id: str) -> Location:
        own = self.store(run_id)
        return Location(own, "", snapshot(own, ""), owner=run_id)


def checkpoint_of(run_id: str) -> str:
    return f"{run_id}/{CKPT}/global_step_1/actor/model.safetensors"


FOREIGN = "other-team/notes.txt"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLARK_ACCEPTANCE_STATE", str(tmp_path / "state"))
    return state_dir()


@pytest.fixture
def shared(s3_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shared]:
    # The neighbours' processes find the test server's credentials in boto3's standard
    # chain, as the harness's own clients do; nothing of them is written anywhere.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_env.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_env.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", s3_env.region)
    sh = Shared(
        s3_env.client(),
        s3_env.bucket,
        f"rlark-acceptance-tests/{uuid.uuid4().hex}/smoke",
        s3_env.endpoint,
        {},
    )
    try:
        yield sh
    finally:
        for proc in sh.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        sh.store().delete(sorted(sh.keys()))


def start_neighbours(shared: Shared) -> set[str]:
    """The live run, the re-reading run (its lock let go) and the foreign object, started
    after anything a test kills took its listing: every key there now must survive."""
    shared.start("run-live")
    shared.start("run-rereading", mode="release")
    shared.client.put_object(
        Bucket=shared.bucket, Key=f"{shared.prefix}/{FOREIGN}", Body=b"not the harness's"
    )
    keys = shared.keys()
    assert {checkpoint_of("run-live"), checkpoint_of("run-rereading"), FOREIGN} <= keys
    return keys


def dead_run(shared: Shared, run_id: str = "run-dead") -> str:
    """A run of the same profile killed outright after writing its checkpoint."""
    shared.start(run_id)
    shared.kill(run_id)
    return checkpoint_of(run_id)


def test_the_sweep_of_a_dead_runs_own_location_removes_its_objects_and_nothing_else(
    shared: Shared, state: Path
) -> None:
    dead = dead_run(shared)
    survive = start_neighbours(shared) - {dead}
    with pytest.warns(LeftoversRemoved, match=r"removed 1 object"):
        removed = sweep_dead_runs(shared.identity, shared.locate_run, by="run-next")
    assert removed == [f"{CKPT}/global_step_1/actor/model.safetensors"]
    assert shared.keys() == survive, "only the dead run's checkpoint went"
    journals = [json.loads(p.read_text())["runId"] for p in state.glob("*.json")]
    assert sorted(journals) == ["run-live", "run-rereading"], "the dead run's journal went"
    # Written down before it was made: a run whose checkpoint vanished can name it.
    (logged,) = removed_at(Location(shared.store("run-dead"), "").identity, 0.0)
    assert logged.by == "run-next" and "run-dead" in logged.why and logged.count == 1
    assert removed_at(Location(shared.store("run-live"), "").identity, 0.0) == []


def test_a_run_whose_lock_is_free_while_its_process_lives_is_not_swept(shared: Shared) -> None:
    neighbours = start_neighbours(shared)
    assert sweep_dead_runs(shared.identity, shared.locate_run, by="run-next") == []
    assert neighbours <= shared.keys()
    # Once its process is gone too, it is over: its own objects go, nothing else.
    shared.kill("run-rereading")
    with pytest.warns(LeftoversRemoved, match=r"removed 1 object"):
        sweep_dead_runs(shared.identity, shared.locate_run, by="run-next")
    assert shared.keys() == neighbours - {checkpoint_of("run-rereading")}


def test_a_handed_on_run_is_swept_at_its_own_location_only(shared: Shared) -> None:
    """Its process lives on (this one): handed on, the journal says the run is over."""
    own = shared.store("run-handed-on")
    journal = open_journal(
        Location(own, "", snapshot(own, "")), run_id="run-handed-on", shared=shared.identity
    )
    assert journal is not None
    shared.client.put_object(
        Bucket=shared.bucket, Key=f"{shared.prefix}/{checkpoint_of('run-handed-on')}", Body=b"w"
    )
    journal.hand_on()
    neighbours = start_neighbours(shared) - {checkpoint_of("run-handed-on")}
    with pytest.warns(LeftoversRemoved, match=r"removed 1 object"):
        sweep_dead_runs(shared.identity, shared.locate_run, by="run-next")
    assert shared.keys() == neighbours


def test_the_sweep_of_a_shared_location_removes_nothing(shared: Shared, state: Path) -> None:
    """A dead run's journal of the shared location itself, as an older harness left it (no
    run id): what appeared there since its listing is the neighbours', not provably its."""
    state.mkdir(parents=True, exist_ok=True)
    old = state / "old-harness.json"
    old.write_text(json.dumps({"where": shared.identity, "baseline": []}))
    neighbours = start_neighbours(shared)
    assert sweep_dead_runs(shared.identity, shared.locate_run, by="run-next") == []
    assert neighbours <= shared.keys() and old.exists()


def test_a_journal_whose_location_is_not_where_its_run_is_found_removes_nothing(
    shared: Shared,
) -> None:
    dead_run(shared)
    neighbours = start_neighbours(shared)

    def elsewhere(run_id: str) -> Location:
        return shared.locate_run("run-live")  # not the dead run's: nothing is proven there

    assert sweep_dead_runs(shared.identity, elsewhere, by="run-next") == []
    assert neighbours <= shared.keys()


# --- the runs' own clean-up, through Step 6 ---------------------------------------------


@dataclass
class S3Target(ScriptedTarget):
    """The scripted target whose stores are the real S3 server at each mount's prefix, as
    the real targets map an objectStorage mount (the run id the harness appended included)."""

    s3: Shared | None = None

    def store_for(self, job: Job, mount: Mount) -> Store:
        assert self.s3 is not None
        if mount.type == "objectStorage":
            return S3Store(self.s3.client, self.s3.bucket, str(mount.prefix))
        return super().store_for(job, mount)


def on_shared(base: tuple[Profile, Any], shared: Shared, keep: KeepOutputs) -> tuple[Profile, Job]:
    """The embedded default whose ckpt mount's prefix is the test's shared prefix."""
    prof, job = base
    role = job.roles[0]
    mounts = [replace(m, prefix=shared.prefix) if m.name == "ckpt" else m for m in role.mounts]
    job = replace(job, roles=[replace(role, mounts=mounts)])
    return replace(prof, target=replace(prof.target, keep_outputs=keep)), job


def put_own_checkpoint(shared: Shared, target: S3Target) -> None:
    """What the Worker writes: its checkpoint under the prefix it was submitted with."""
    (ckpt,) = (m for m in target.jobs[0].roles[0].mounts if m.name == "ckpt")
    key = f"{ckpt.prefix}/{CKPT}/global_step_1/actor/model.safetensors"
    shared.client.put_object(Bucket=shared.bucket, Key=key, Body=GOOD)


def test_a_passing_run_removes_its_own_outputs_and_nothing_else(
    base: tuple[Profile, Any], shared: Shared, tmp_path: Path
) -> None:
    neighbours = start_neighbours(shared)
    prof, job = on_shared(base, shared, "onFailure")
    t = S3Target([], tmp_path / "unused", s3=shared)
    t.script = [
        *started(),
        *lines(2.1, *json.dumps(CONFIG, indent=2).splitlines()),
        line(3.0, SIGNAL),
        call(4.0, lambda: put_own_checkpoint(shared, t)),
        end(5.0),
        pod(5.1, "Succeeded", exit_code=0, reason="Completed"),
    ]
    rec = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    assert rec.passed and rec.outputs_removed == 1, (rec.phases, rec.outputs_kept)
    assert shared.keys() == neighbours


def test_an_interrupted_run_removes_its_own_outputs_and_nothing_else(
    base: tuple[Profile, Any], shared: Shared, tmp_path: Path
) -> None:
    neighbours = start_neighbours(shared)
    prof, job = on_shared(base, shared, "never")

    def interrupt() -> None:
        raise KeyboardInterrupt

    t = S3Target([], tmp_path / "unused", s3=shared)
    t.script = [
        *started(),
        line(3.0, SIGNAL),
        call(3.5, lambda: put_own_checkpoint(shared, t)),
        call(3.8, interrupt),
    ]
    with pytest.raises(Interrupted) as e:
        confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    assert e.value.record.interrupted and e.value.record.outputs_removed == 1
    assert shared.keys() == neighbours


def hostpath(base: tuple[Profile, Any], folder: Path) -> tuple[Profile, Job]:
    """The embedded default writing its outputs to a writable hostPath mount: a node folder
    that other jobs may write to as well."""
    prof, job = base
    role = job.roles[0]
    mounts = [
        replace(m, type="hostPath", host_path=str(folder), bucket=None, prefix=None)
        if m.name == "ckpt"
        else m
        for m in role.mounts
    ]
    return prof, replace(job, roles=[replace(role, mounts=mounts)])


def test_a_hostpath_output_is_left_with_a_warning_and_its_neighbours_untouched(
    base: tuple[Profile, Any], tmp_path: Path
) -> None:
    """A green run (default onFailure) on a node folder where, during the run, another run
    writes its checkpoint and another team a file: nothing there is removed, the run's own
    checkpoint included (it cannot be told apart), and the record says what was left."""
    node = tmp_path / "store"
    node.mkdir()
    prof, job = hostpath(base, node)

    # Another job with the same log_path and its own experiment, and another team's file.
    theirs = node / "logs" / "other_experiment" / "checkpoints" / "global_step_3" / "model.pt"
    notes = node / "logs" / "other-team" / "notes.txt"

    def neighbours_write() -> None:
        for path in (theirs, notes):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("not the harness's")

    script = [*happy_script(node), call(3.5, neighbours_write)]  # its checkpoint at 4.0
    t = ScriptedTarget(script, node)
    rec = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    assert rec.passed, rec.phases
    assert rec.outputs_removed == 0 and rec.outputs_kept is not None
    assert "shared with other writers" in rec.outputs_kept, rec.outputs_kept
    assert theirs.read_text() == notes.read_text() == "not the harness's"
    assert (node / CKPT / "global_step_1" / "actor" / "model.safetensors").exists()
    (warning,) = [w for w in rec.warnings if w.startswith(SHARED_LEFT)]
    assert "Remove them by hand, or put runInfo.paths.output on a writable objectStorage" in (
        warning
    )
    assert not list(state_dir().glob("*.json")), "no journal at a shared location"
    # The next run there removes nothing either, though the first could not clean up.
    t = ScriptedTarget(script, node)
    again = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    assert again.passed and theirs.exists() and notes.exists()


def test_6_5_names_the_harness_when_its_own_removal_took_the_checkpoint(
    base: tuple[Profile, Any], tmp_path: Path
) -> None:
    """A checkpoint intact while the Worker ran and gone after its deletion was not put
    elsewhere by the RLinf config: 6.5 says who removed it, and the harness first."""
    store = tmp_path / "store"
    store.mkdir()
    prof, job = base

    class Removing(ScriptedTarget):
        def delete(self, ref: Any) -> None:
            super().delete(ref)
            # What a faulty clean-up of a neighbour's would do, written down as the
            # harness writes down each removal it makes.
            from rlark_acceptance.run.step6 import removals
            from rlark_acceptance.storage import FileStore

            loc = Location(FileStore(store), CKPT)
            removals.log(loc.identity, ["x"], by="run-neighbour", why="a test's stand-in")
            for p in sorted((store / CKPT).rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()

    t = Removing(happy_script(store), store)
    rec = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    failed = rec.earliest_failure
    assert failed is not None and failed.check == "6.5", rec.phases
    assert "it was intact before: removed by the harness itself [harness-removed]" in (
        failed.message
    )
    assert "the harness's run run-neighbour removed 1 object(s)" in failed.message


def test_6_5_names_another_remover_when_the_harness_removed_nothing(
    base: tuple[Profile, Any], tmp_path: Path
) -> None:
    """Gone after the Worker's deletion with no removal of the harness's there: the Worker on
    its way out or another writer, with that remedy first, not the RLinf config's."""
    store = tmp_path / "store"
    store.mkdir()

    class Vanishing(ScriptedTarget):
        def delete(self, ref: Any) -> None:
            super().delete(ref)
            for p in sorted((store / CKPT).rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()

    t = Vanishing(happy_script(store), store)
    prof, job = base
    rec = confirm_running(t, build_plan(prof, job, validated=CONFIG), clock=t.clock)  # type: ignore[arg-type]
    failed = rec.earliest_failure
    assert failed is not None and failed.check == "6.5", rec.phases
    assert failed.message.endswith("not by this harness [outputs-removed]"), failed.message
    assert hint("6.5", failed.message).startswith(OUTPUTS_REMOVED.remedy)
