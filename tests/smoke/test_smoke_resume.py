"""The smoke workload's ``runner.resume_dir``, as RLinf's embodied runner does it (the step
from the folder's name, the actor from its ``actor/``), and the digest of the weights it
holds at start, which T.4 compares with the record's digest of the checkpoint: two
implementations of one digest, held equal here on the same files. No Ray: the actor's
remote calls are made in process.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rlark_acceptance.rlinf.failures import RESUME_PATH, classify
from rlark_acceptance.run.step6.log import RESUMING, WEIGHTS_AT_START
from rlark_acceptance.run.step6.readings import weights_of
from rlark_acceptance.smoke import progress, runner
from rlark_acceptance.smoke.spec import SmokeSpec
from rlark_acceptance.smoke.workers import WEIGHTS_FILE, ActorWorker
from rlark_acceptance.storage import FileStore

KEY = f"actor/{WEIGHTS_FILE.as_posix()}"


def spec(**smoke: Any) -> SmokeSpec:
    return SmokeSpec.from_cfg({"smoke": smoke})


def trained_actor(steps: int = 3) -> ActorWorker:
    """An actor a few Adam steps away from its initial weights."""
    actor = ActorWorker(spec())
    rng = np.random.default_rng(0)
    for _ in range(steps):
        grads = {k: rng.normal(size=v.shape).astype(np.float32) for k, v in actor.params.items()}
        actor.optim.step(actor.params, grads)
    return actor


def saved(root: Path, step: int = 5) -> tuple[ActorWorker, Path]:
    actor = trained_actor()
    folder = root / "checkpoints" / f"global_step_{step}"
    actor.save_checkpoint(str(folder / "actor"), step)
    return actor, folder


def test_an_actor_loads_what_another_saved_weights_and_optimizer_alike(tmp_path: Path) -> None:
    first, folder = saved(tmp_path)
    second = ActorWorker(spec())
    assert second.load_checkpoint(str(folder / "actor")) == len(first.params)
    for name, value in first.params.items():
        assert np.array_equal(second.params[name], value), name
    assert second.optim.t == first.optim.t == 3
    for name in first.optim.m:
        assert np.array_equal(second.optim.m[name], first.optim.m[name])
        assert np.array_equal(second.optim.v[name], first.optim.v[name])


def test_the_digest_of_the_loaded_weights_is_the_records_digest_of_the_checkpoint(
    tmp_path: Path,
) -> None:
    _, folder = saved(tmp_path)
    actor = ActorWorker(spec())
    before = actor.weights_digest(KEY)
    actor.load_checkpoint(str(folder / "actor"))
    read = weights_of(FileStore(tmp_path), 5, "checkpoints/global_step_5")
    assert read.tensors == 6 and read.digest == actor.weights_digest(KEY)
    assert before != read.digest  # initial weights are not the checkpoint's


def test_a_checkpoint_of_another_model_is_refused(tmp_path: Path) -> None:
    _, folder = saved(tmp_path)
    other = ActorWorker(SmokeSpec.from_cfg({"actor": {"model": {"hidden_dim": 8}}}))
    with pytest.raises(ValueError, match="not its checkpoint"):
        other.load_checkpoint(str(folder / "actor"))


class _InProcess:
    """An actor handle whose ``.remote`` calls run here (``ray.get`` made the identity)."""

    def __init__(self, actor: ActorWorker) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> Any:
        return SimpleNamespace(remote=getattr(self.actor, name))


@pytest.fixture()
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    monkeypatch.setattr(ray, "get", lambda value: value)


def test_resume_dir_goes_on_at_the_next_step_with_the_checkpoints_weights(
    tmp_path: Path, in_process: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = saved(tmp_path)
    actor = ActorWorker(spec())
    assert runner.resume(_InProcess(actor), str(folder), spec()) == 5
    out = capsys.readouterr().out.splitlines()
    said = RESUMING.search(out[0])
    assert said is not None and said.group(1) == str(folder)  # what T.4 quotes
    printed = WEIGHTS_AT_START.search(out[-1])
    read = weights_of(FileStore(tmp_path), 5, "checkpoints/global_step_5")
    assert printed is not None and printed.group(1) == read.digest


def test_the_fault_knobs_start_at_step_1_or_keep_the_initial_weights(
    tmp_path: Path, in_process: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = saved(tmp_path)
    ignored = spec(ignore_resume=True)
    assert runner.resume(_InProcess(ActorWorker(spec())), str(folder), ignored) == 0
    assert capsys.readouterr().out == ""  # as a runner that never reads the key
    fresh = ActorWorker(spec())
    knob = spec(skip_resume_weights=True)
    assert runner.resume(_InProcess(fresh), str(folder), knob) == 5
    printed = WEIGHTS_AT_START.search(capsys.readouterr().out)
    read = weights_of(FileStore(tmp_path), 5, "checkpoints/global_step_5")
    assert printed is not None and printed.group(1) == fresh.weights_digest(KEY) != read.digest
    assert runner.resume(_InProcess(fresh), None, spec()) == 0


def test_a_resume_dir_with_no_actor_fails_as_rlinfs_runner_does(
    tmp_path: Path, in_process: None
) -> None:
    missing = tmp_path / "checkpoints" / "global_step_9"
    with pytest.raises(AssertionError) as e:
        runner.resume(_InProcess(ActorWorker(spec())), str(missing), spec())
    assert str(e.value) == f"resume_dir {missing}/actor does not exist."
    assert classify(f"AssertionError: {e.value}") is RESUME_PATH


def test_a_resumed_runs_table_counts_its_time_from_where_it_resumed() -> None:
    rows = progress.format_table(7, 9, 2.0, {}, start=5).splitlines()
    assert rows[3].startswith("│ Global Step:    7/9 │")
    assert "ETA: 00:02 │ Step Time: 1.000s" in rows[4], rows[4]
