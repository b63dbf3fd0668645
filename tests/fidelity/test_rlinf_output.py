"""The harness's readers on what real RLinf 0.3.0 printed and wrote (``rlinf-0.3.0/``, made by
``regenerate.py`` from a run of profiles/rlinf-embodied.yaml): the Worker log through Step 6's
log reader (Ray's start-up, RLinf's first line, the printed config for 1.1 / 1.2, the first
signal on the embodied metric table), the checkpoint and TensorBoard readers on RLinf's
files, and where the smoke workload, which imitates RLinf's embodied runner, still differs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from rlark_acceptance.model.profile import Profile, load_profile
from rlark_acceptance.preflight.entry import preflight_profile
from rlark_acceptance.rlinf.fingerprint import fingerprint
from rlark_acceptance.smoke.progress import format_table
from rlark_acceptance.storage import FileStore, verify_checkpoints, verify_event_files
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
        shutil.copytree(DATA / "mount", store, dirs_exist_ok=True)

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
    assert statuses == dict.fromkeys(["6.1", "6.2", "6.3", "1.1", "1.2", "6.4", "6.5"], "passed"), {
        c: p.message for c, p in rec.phases.items()
    }
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
