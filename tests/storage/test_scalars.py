"""``read_scalars``: TensorBoard scalars read back from a ``Store`` by TensorBoard's loader.

On RLinf 0.3.0's own event file, on files tensorboardX writes here (NaN from a step on,
tensor-valued scalars), on damaged copies, on a directory and on the S3 test server.
"""

from __future__ import annotations

import math
import shutil
import statistics
import struct
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter
from tensorboardX.proto import event_pb2

from rlark_acceptance.storage import (
    FileStore,
    NonFinite,
    S3Store,
    aggregate,
    non_finite,
    read_scalars,
)
from tests.storage.uploads import upload

RLINF = Path(__file__).parents[1] / "fidelity" / "rlinf-0.3.0" / "mount"
RLINF_EVENTS = next((RLINF / "logs" / "tensorboard").glob("events.out.tfevents.*"))


def framed_scalars(path: Path) -> tuple[int, dict[str, list[tuple[int, float]]]]:
    """Events and simple_value scalars of a file, by the TFRecord framing and tensorboardX's
    own Event proto: an oracle independent of the tensorboard package."""
    data, pos, events = path.read_bytes(), 0, 0
    out: dict[str, list[tuple[int, float]]] = {}
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + n])
        events += 1
        for v in event.summary.value:
            if v.WhichOneof("value") == "simple_value":
                out.setdefault(v.tag, []).append((event.step, v.simple_value))
        pos += 16 + n
    return events, out


def write_run(logdir: Path, steps: int = 10, nan_from: int = 6, tensors: bool = True) -> None:
    """A run as the smoke workload and RLinf write it: tensorboardX's SummaryWriter."""
    writer = SummaryWriter(str(logdir))
    for step in range(steps):
        writer.add_scalar("train/loss", math.nan if step >= nan_from else 1.0 / (step + 1), step)
        writer.add_scalar("train/grad_norm", math.inf if step == 3 else float(step), step)
        writer.add_scalar("train/reward", 0.5 * step, step)
    writer.close()
    if tensors:
        write_tensor_scalars(logdir, "eval/success", [(step, step / 10) for step in range(steps)])


def write_tensor_scalars(logdir: Path, tag: str, points: list[tuple[int, float]]) -> None:
    """Scalars in ``tf.summary.scalar``'s form (a float tensor under the "scalars" plugin),
    written by TensorBoard's own TensorFlow-free event writer."""
    writer = EventFileWriter(str(logdir), filename_suffix=".tensors")
    meta = scalar_metadata.create_summary_metadata(display_name=tag, description="")
    for step, value in points:
        proto = tensor_util.make_tensor_proto(np.float32(value))
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=proto)]
        )
        writer.add_event(tb_event_pb2.Event(step=step, wall_time=1.0, summary=summary))
    writer.close()


def only_events(logdir: Path) -> Path:
    """The tensorboardX file of ``write_run`` (not the tensor-valued one)."""
    (path,) = (p for p in logdir.glob("events.out.tfevents.*") if not p.name.endswith(".tensors"))
    return path


def test_rlinf_event_file_scalars_as_written() -> None:
    report = read_scalars(FileStore(RLINF), "logs/tensorboard")
    events, expected = framed_scalars(RLINF_EVENTS)
    assert report.problems == []
    assert report.files == {f"{RLINF_EVENTS.name}": events}
    assert report.scalars == expected
    assert len(report.tags) == 48 and report.steps("train/sac/alpha") == [0, 1]
    assert non_finite(report) == []
    assert all(math.isfinite(v) for tag in report.tags for v in report.values(tag))
    assert report.ok


def test_tensorboardx_run_with_nan_from_step_k(tmp_path: Path) -> None:
    write_run(tmp_path / "logs" / "tensorboard", steps=10, nan_from=6)
    report = read_scalars(FileStore(tmp_path), "logs")
    assert report.problems == [] and report.ok
    assert report.tags == ["eval/success", "train/grad_norm", "train/loss", "train/reward"]
    assert report.steps("train/loss") == list(range(10))
    assert report.values("train/reward") == [0.5 * s for s in range(10)]
    # The tensor-valued scalar is read as a float (written as float32).
    assert report.values("eval/success") == pytest.approx([s / 10 for s in range(10)])
    found = non_finite(report)
    assert [(f.tag, f.first_step, f.count) for f in found] == [
        ("train/grad_norm", 3, 1),
        ("train/loss", 6, 4),
    ]
    assert found[0].first_value == math.inf and math.isnan(found[1].first_value)
    assert aggregate(report.values("train/loss"), "min", last_k=None) != 1.0  # NaN: not a pass
    assert aggregate(report.values("train/reward"), "mean", last_k=4) == pytest.approx(3.75)


def test_files_of_a_resumed_run_are_merged_in_step_order(tmp_path: Path) -> None:
    logdir = tmp_path / "tb"
    writer = SummaryWriter(str(logdir), filename_suffix=".a")
    for step in (0, 1, 2):
        writer.add_scalar("loss", float(step), step)
    writer.close()
    writer = SummaryWriter(str(logdir), filename_suffix=".b")
    for step in (3, 4):
        writer.add_scalar("loss", float(step), step)
    writer.close()
    report = read_scalars(FileStore(tmp_path), "tb")
    assert len(report.files) == 2 and sum(report.files.values()) == 2 + 5
    assert report.scalars == {"loss": [(s, float(s)) for s in range(5)]}


def test_truncated_file_keeps_the_scalars_before_the_cut(tmp_path: Path) -> None:
    write_run(tmp_path / "tb", steps=10)
    path = only_events(tmp_path / "tb")
    full = read_scalars(FileStore(tmp_path), "tb")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 7])
    report = read_scalars(FileStore(tmp_path), "tb")
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"{path.name}: truncated: record at byte ")
    assert 0 < sum(map(len, report.scalars.values())) < sum(map(len, full.scalars.values()))
    assert not report.ok


def test_corrupt_record_is_a_problem(tmp_path: Path) -> None:
    write_run(tmp_path / "tb", steps=10)
    path = only_events(tmp_path / "tb")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    report = read_scalars(FileStore(tmp_path), "tb")
    assert len(report.problems) == 1 and ": corrupt: record at byte " in report.problems[0]
    assert report.files[path.name] > 0


def test_not_an_event_file_and_nothing_found(tmp_path: Path) -> None:
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"not a record at all" * 10)
    report = read_scalars(FileStore(tmp_path), "tb")
    assert report.problems[0].startswith("events.out.tfevents.1.host: ")
    assert report.problems[-1] == "tb: no scalars in 1 event files"
    empty = read_scalars(FileStore(tmp_path), "nothing-here")
    assert empty.problems == ["nothing-here: no TensorBoard event files"] and not empty.ok
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"")
    assert read_scalars(FileStore(tmp_path), "tb").problems == [
        "events.out.tfevents.1.host: no events",
        "tb: no scalars in 1 event files",
    ]


def test_files_over_the_limit_are_read_in_part(tmp_path: Path) -> None:
    write_run(tmp_path / "tb", steps=50, tensors=False)
    path = only_events(tmp_path / "tb")
    limit = path.stat().st_size // 2
    report = read_scalars(FileStore(tmp_path), "tb", max_bytes=limit)
    assert report.problems == [
        f"{path.name}: {path.stat().st_size} bytes, over the limit of {limit}: "
        "scalars of the first bytes only"
    ]
    assert 0 < len(report.values("train/reward")) < 50


@pytest.mark.parametrize(
    ("how", "last_k", "expected"),
    [("min", None, -2.0), ("max", None, 7.0), ("mean", 2, 2.5), ("max", 3, 5.0), ("min", 99, -2)],
)
def test_aggregate(how: str, last_k: int | None, expected: float) -> None:
    values = [3.0, -2.0, 7.0, 5.0, 0.0, 5.0]
    assert aggregate(values, how, last_k) == expected  # type: ignore[arg-type]
    assert aggregate(values, "mean") == pytest.approx(statistics.fmean(values))


def test_aggregate_nan_and_misuse() -> None:
    assert math.isnan(aggregate([1.0, math.nan, 3.0], "max"))
    assert math.isnan(aggregate([math.nan, 1.0], "min"))
    assert aggregate([math.nan, 1.0, 2.0], "min", last_k=2) == 1.0
    assert aggregate([1.0, math.inf], "max") == math.inf
    for bad in ([], [1.0]):
        with pytest.raises(ValueError):
            aggregate(bad, "mean", last_k=0 if bad else None)
    with pytest.raises(ValueError, match="how must be"):
        aggregate([1.0], "median")  # type: ignore[arg-type]


@pytest.mark.cluster
def test_scalars_from_s3(s3_store: S3Store, tmp_path: Path) -> None:
    write_run(tmp_path / "run" / "tensorboard", steps=10, nan_from=6)
    bad = tmp_path / "bad" / "events.out.tfevents.9.host"
    bad.parent.mkdir()
    bad.write_bytes(only_events(tmp_path / "run" / "tensorboard").read_bytes()[:-5])
    shutil.copy(RLINF_EVENTS, tmp_path / "run" / "tensorboard")
    upload(s3_store, tmp_path)
    report = read_scalars(s3_store, "run/tensorboard")
    local = read_scalars(FileStore(tmp_path), "run/tensorboard")
    assert report.problems == [] and report.files == local.files and len(report.files) == 3
    assert str(report.scalars) == str(local.scalars)  # NaN != NaN: compare as written
    assert str(non_finite(report)) == str(non_finite(local)) != "[]"
    assert report.location == f"{s3_store.describe()}/run/tensorboard"
    broken = read_scalars(s3_store, "bad")
    assert len(broken.problems) == 1 and "truncated" in broken.problems[0]
    assert isinstance(non_finite(report)[0], NonFinite)
