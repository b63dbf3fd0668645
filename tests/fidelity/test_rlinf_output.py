"""The harness's readers on what real RLinf 0.3.0 printed and wrote (``rlinf-0.3.0/``, made by
``regenerate.py`` from a run of profiles/rlinf-embodied.yaml): the Worker log through Step 6's
log reader (Ray's start-up, RLinf's first line, the printed config for 1.1 / 1.2, the first
signal on the embodied metric table), the checkpoint and TensorBoard readers on RLinf's
files, and where the smoke workload, which imitates RLinf's embodied runner, still differs."""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.preflight.entry import preflight_profile
from rlark_acceptance.rlinf.fingerprint import fingerprint
from rlark_acceptance.run.step6 import trained
from rlark_acceptance.run.step6.phase import Failed, Passed
from rlark_acceptance.run.step6.readings import checkpoints_at
from rlark_acceptance.smoke.progress import format_table
from rlark_acceptance.storage import FileStore, verify_checkpoints, verify_event_files
from rlark_acceptance.storage.pickle_scan import scan_pickle
from tests.run.scripted import call, end, line, pod, run, running

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "rlinf-0.3.0"
PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"
STEP = "logs/ci-test/checkpoints/global_step_1/actor"
LOG = (DATA / "worker.log").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def rlinf() -> tuple[tuple[Profile, Any], dict[str, Any]]:
    pre = preflight_profile(PROFILE)
    assert pre.job is not None and pre.validated is not None
    return (load_profile(PROFILE), pre.job), pre.validated.config.resolved()


def replay(tmp_path: Path, validated: dict[str, Any], base: Any) -> Any:
    """RLinf's log as the Pod showed it, its checkpoint appearing after the first step."""
    store = tmp_path / "store"

    def checkpoint_written() -> None:
        # Written now, as RLinf wrote them during its run (not with the corpus' file times,
        # which T.3 would rightly take for an earlier run's).
        shutil.copytree(DATA / "mount", store, dirs_exist_ok=True, copy_function=shutil.copyfile)

    script = [*running(), pod(1.0)]
    script += [line(1.1 + i * 0.001, text) for i, text in enumerate(LOG)]
    script += [
        call(2.0, checkpoint_written),
        end(3.0),
        pod(3.1, "Succeeded", exit_code=0, reason="Completed"),
    ]
    rec, _ = run(base, tmp_path, script, validated=validated)
    return rec


def test_step6_reads_real_rlinf_as_it_printed(tmp_path: Path, rlinf: Any) -> None:
    base, validated = rlinf
    rec = replay(tmp_path, validated, base)
    statuses = {c: p.status for c, p in rec.phases.items()}
    checks = ["6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5", "T.1", "T.2", "T.3"]
    assert statuses == dict.fromkeys(checks, "passed"), {
        c: p.message for c, p in rec.phases.items()
    }
    assert rec.phases["T.1"].message.startswith("step 2 of 2 (the total the run printed)")
    assert rec.phases["T.2"].message.startswith("48 scalars, 96 values at steps 0–1, all finite")
    # The corpus keeps step 1 only: its weights are judged finite, not compared.
    assert rec.phases["T.3"].message.startswith("global_step_1: 41 tensors, 1.7 MB"), rec.phases
    # 1.1 / 1.2 from the JSON train_embodied_agent.py printed: the validated config's.
    assert rec.printed_config["runner"]["logger"]["experiment_name"] == "ci-test"
    assert fingerprint(rec.printed_config) == fingerprint(validated)


def test_the_printed_embodied_config_has_no_world_size_keys(rlinf: Any) -> None:
    """RLinf's embodied configs carry no world sizes: the 1.2 fingerprint does not need them."""
    _, validated = rlinf
    start = LOG.index("{")
    printed = json.loads("\n".join(LOG[start : LOG.index("}", start) + 1]))
    fp = fingerprint(printed)
    assert not any("world_size" in k for k in fp), sorted(fp)
    assert fp == fingerprint(validated) and fp, sorted(fp)


def test_the_first_signal_is_the_embodied_metric_table(rlinf: Any) -> None:
    (profile, _), _ = rlinf
    signal = re.compile(str(profile.run_info.first_signal))
    hits = [text for text in LOG if signal.search(text)]
    assert hits[0].startswith("│ Global Step:    1/2 │ Progress: "), hits
    banner = next(i for i, t in enumerate(LOG) if "RLinf is running on a cluster" in t)
    assert banner < LOG.index(hits[0])


def test_rlinfs_checkpoint_passes_the_readers(tmp_path: Path) -> None:
    report = verify_checkpoints(FileStore(DATA / "mount"), "logs/ci-test/checkpoints")
    assert report.ok, report.summary()
    assert report.latest_step == 1 and set(report.formats) >= {"dcp", "torch-zip"}, report
    keys = {o.key for o in FileStore(DATA / "mount").list()}
    assert f"{STEP}/model_state_dict/full_weights.pt" in keys
    assert f"{STEP}/sac_components/alpha/dcp_checkpoint/.metadata" in keys


def test_a_truncated_rlinf_dcp_shard_is_refused(tmp_path: Path) -> None:
    """RLinf's .metadata says how many bytes of each shard hold tensors: a shard cut short
    (an upload that never completed) is not a checkpoint."""
    shutil.copytree(DATA / "mount", tmp_path / "m")
    shard = tmp_path / "m" / STEP / "sac_components/alpha/dcp_checkpoint/__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[:100])
    report = verify_checkpoints(FileStore(tmp_path / "m"), "logs/ci-test/checkpoints")
    assert not report.ok
    assert any("__0_0.distcp: 100 bytes, .metadata places" in p for p in report.problems), report


def test_rlinfs_tensorboard_events_pass_the_reader() -> None:
    report = verify_event_files(FileStore(DATA / "mount"), "logs/tensorboard")
    assert report.ok, report


def test_the_smoke_table_matches_rlinfs_rows_but_not_its_sections() -> None:
    """The smoke workload imitates RLinf's embodied runner: same step and time rows, same
    width; its metric sections are its own toy policy's (what still differs)."""
    smoke = format_table(1, 2, 3.0, {"rollout/reward": 0.5, "train/pg_loss": 0.1}).splitlines()
    real = LOG[LOG.index(next(t for t in LOG if t.startswith("│ Global Step:    1/2"))) - 3 :]
    assert smoke[1:4] == [r.rstrip("\n") for r in real[1:4]]  # border, title, step row

    def shape(row: str) -> str:
        return re.sub(r"\d+", "0", row).rstrip(" │")

    assert shape(smoke[4]) == shape(real[4])  # the time row

    def sections(rows: list[str]) -> list[str]:
        out: list[str] = []
        for r in rows[3:]:
            if r.startswith("╰"):
                return out
            if r.startswith("├"):
                out.append(r.strip("├┤─ "))
        return out

    assert sections(smoke) == ["Rollout", "Training/Other"]
    assert sections(real) != sections(smoke) and "Training/Actor" in sections(real), sections(real)


def test_the_last_progress_like_line_of_real_rlinf_is_its_step_counter() -> None:
    """6.4's message quotes what the pattern should have matched: RLinf's "Global Step" row,
    not a metric of its table that happens to be named ``step`` (``step=52.221``)."""
    from rlark_acceptance.run.step6.first_signal import last_progress_like

    found = last_progress_like(LOG)
    assert found is not None and found.startswith("│ Global Step:"), found


def _two_steps(tmp_path: Path, changed: str) -> FileStore:
    """RLinf's real step 1 as global_step_1 and global_step_2, the second with the stored
    bytes of one DCP item (``changed``, an fqn of its .metadata) flipped: the rest of the
    two checkpoints byte for byte the same."""
    root = tmp_path / "m" / "logs/ci-test/checkpoints"
    src = DATA / "mount" / STEP
    for step in (1, 2):
        shutil.copytree(src, root / f"global_step_{step}/actor")
    dcp = root / "global_step_2/actor/sac_components/alpha/dcp_checkpoint"
    shard = bytearray((dcp / "__0_0.distcp").read_bytes())
    items = scan_pickle((dcp / ".metadata").read_bytes()).dcp_items()
    (start, length) = next((o, n) for fqn, _, o, n in items if fqn == changed)
    with zipfile.ZipFile(io.BytesIO(bytes(shard[start : start + length]))) as z:
        data = next(z.read(n) for n in z.namelist() if "/data/" in n)
    at = shard.index(data, start, start + length)
    shard[at : at + len(data)] = bytes(b ^ 0x01 for b in data)  # finite floats stay finite
    (dcp / "__0_0.distcp").write_bytes(bytes(shard))
    return FileStore(tmp_path / "m")


@pytest.mark.parametrize(
    "changed",
    [
        "fsdp_checkpoint.optimizers.state.base_alpha.exp_avg",
        "fsdp_checkpoint.optimizers.state.base_alpha.step",
        "fsdp_checkpoint.rng.cpu",
    ],
)
def test_t_3_compares_the_model_not_the_optimizer_or_rng_state_of_a_dcp(
    tmp_path: Path, changed: str
) -> None:
    """RLinf's FSDP DCP holds the optimizer's state, the schedulers' and the RNG's next to the
    model's: those change every step whatever the weights do, so T.3 leaves them out."""
    ck = checkpoints_at(
        _two_steps(tmp_path, changed),
        "logs/ci-test/checkpoints",
        "m",
        0.0,
        baseline=None,
        submitted=None,
    )
    assert ck.steps == (1, 2) and ck.first is not None and ck.last is not None, ck
    # The 40 tensors of full_weights.pt and the DCP's one model item (SAC's alpha).
    assert ck.first.tensors == ck.last.tensors == 41, ck
    verdict = trained.judge(ck)
    assert isinstance(verdict, Failed), verdict
    assert "hold identical weights" in verdict.message and "training changed nothing" in (
        verdict.message
    ), verdict


def test_t_3_leaves_out_the_replay_buffer_saved_with_the_checkpoint(tmp_path: Path) -> None:
    """RLinf's SAC saves its replay buffer's trajectories (torch.save archives of tensors)
    under sac_components/replay_buffer/, one more each step: data, not the model."""
    store = _two_steps(tmp_path, "fsdp_checkpoint.rng.cpu")
    buffer = tmp_path / "m/logs/ci-test/checkpoints/global_step_2/actor/sac_components"
    (buffer / "replay_buffer/rank_0").mkdir(parents=True)
    shutil.copy(
        DATA / "mount" / STEP / "model_state_dict/full_weights.pt",
        buffer / "replay_buffer/rank_0/trajectory_1_0b7d.pt",
    )
    ck = checkpoints_at(store, "logs/ci-test/checkpoints", "m", 0.0, baseline=None, submitted=None)
    assert ck.first is not None and ck.last is not None
    assert (ck.first.tensors, ck.last.tensors) == (41, 41), ck
    assert ck.first.digest == ck.last.digest, ck


def test_t_3_sees_a_dcp_model_item_change(tmp_path: Path) -> None:
    ck = checkpoints_at(
        _two_steps(tmp_path, "fsdp_checkpoint.model.base_alpha"),
        "logs/ci-test/checkpoints",
        "m",
        0.0,
        baseline=None,
        submitted=None,
    )
    verdict = trained.judge(ck)
    assert isinstance(verdict, Passed), verdict
    assert verdict.message.startswith("global_step_1: 41 tensors, 1.7 MB"), verdict
    assert verdict.message.endswith("all finite, changed by training"), verdict
