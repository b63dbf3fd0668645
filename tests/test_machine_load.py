"""The machine-load section of a failed test's report (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SHOWN, Sample, describe, ray_heads, sample


def test_ray_heads_counts_the_gcs_servers_of_a_proc_listing(tmp_path: Path) -> None:
    for pid, comm in (
        ("1", "systemd"),
        ("20", "gcs_server"),
        ("31", "raylet"),
        ("44", "gcs_server"),
    ):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "comm").write_text(comm + "\n")
    (tmp_path / "self").mkdir()  # not a process's number: not read
    (tmp_path / "self" / "comm").write_text("gcs_server\n")
    assert ray_heads(tmp_path) == 2


def test_a_sample_of_this_machine_is_plausible() -> None:
    s = sample()
    assert s.load1 >= 0 and s.runnable >= 1 and s.ray_heads >= 0


def test_the_section_names_the_peak_then_every_sample_in_the_span() -> None:
    start = 100.0
    samples = [Sample(101.0, 3.5, 2, 1), Sample(106.0, 17.9, 21, 6), Sample(111.0, 12.0, 9, 5)]
    text = describe(samples, start, cores=2).splitlines()
    assert (
        text[0]
        == "peak 1-min load 17.9 on 2 cores at +6s (21 runnable, 6 Ray heads on the machine)"
    )
    assert len(text) == 4 and "load  17.9" in text[2] and "Ray heads 6" in text[2]
    assert describe([], start, cores=2).startswith("no sample")


def test_a_long_test_s_section_is_thinned_and_keeps_its_peak() -> None:
    samples = [Sample(float(i), 1.0, 1, 0) for i in range(720)]
    samples[333] = Sample(333.0, 30.0, 40, 3)
    lines = describe(samples, 0.0, cores=2).splitlines()[1:]
    assert len(lines) <= SHOWN + 1 and any("load  30.0" in line for line in lines)
    offsets = [int(line.split("s")[0].lstrip("+ ")) for line in lines]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
