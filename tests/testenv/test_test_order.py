"""The order tests/ is handed out in on several workers (``fixtures/test_order.py``)."""

from __future__ import annotations

import json

from fixtures.test_order import DURATIONS, spaced


def test_the_longest_first_and_the_cluster_chain_spaced_out() -> None:
    seconds = {"a": 600.0, "b": 580.0, "c": 570.0, "d": 540.0, "e": 380.0, "f": 50.0}
    alone = {"c", "d"}  # two files of cluster_alone tests: one at a time at the cluster
    order = spaced(["f", "e", "d", "c", "b", "a"], seconds, alone, workers=3)
    # c first, then others worth about two workers' time while it runs (a, b), then d.
    assert order == ["c", "a", "b", "d", "e", "f"]


def test_files_with_no_figure_go_last_as_collected() -> None:
    order = spaced(["new2", "x", "new1", "y"], {"x": 5.0, "y": 9.0}, set(), workers=3)
    assert order == ["y", "x", "new2", "new1"]


def test_one_worker_still_alternates_the_chain() -> None:
    order = spaced(["a", "b", "c"], {"a": 10.0, "b": 10.0, "c": 1.0}, {"a", "b"}, workers=1)
    assert order == ["a", "c", "b"]


def test_the_committed_figures_name_files_that_exist() -> None:
    root = DURATIONS.parent.parent
    figures = json.loads(DURATIONS.read_text(encoding="utf-8"))
    missing = [name for name in figures if not (root / name).is_file()]
    assert figures and missing == [], f"tests/durations.py --write again: {missing}"


def test_an_xdist_worker_reads_the_mode_from_the_main_command_line() -> None:
    """xdist sets a worker's own ``dist`` option to ``no``: the items are collected there."""
    from types import SimpleNamespace

    from fixtures.test_order import _dist

    argv = ["pytest", "tests/", "-n", "3", "--dist", "loadfile", "--no-loadscope-reorder"]
    worker = SimpleNamespace(
        workerinput={"mainargv": argv, "workercount": 3},
        option=SimpleNamespace(dist="no", numprocesses=None),
    )
    assert _dist(worker) == ("loadfile", 3)  # type: ignore[arg-type]
    main = SimpleNamespace(option=SimpleNamespace(dist="no", numprocesses=None))
    assert _dist(main) == ("no", 1)  # type: ignore[arg-type]
