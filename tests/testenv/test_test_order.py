"""The order tests/ is handed out in on several workers (``fixtures/test_order.py``)."""

from __future__ import annotations

import json
import re

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


def test_the_real_rlinf_files_are_one_unit_of_the_hand_out() -> None:
    """xdist's scheduler, as ``./run tests`` makes it, gives both real-RLinf files one scope
    (one worker runs them one after another) and every other file its own."""
    from types import SimpleNamespace

    from fixtures.test_order import REAL_RLINF, pytest_xdist_make_scheduler

    options = {"dist": "loadfile", "tx": ["3*popen"]}
    config = SimpleNamespace(getvalue=options.__getitem__, getoption=options.__getitem__)
    sched = pytest_xdist_make_scheduler(config, None)  # type: ignore[arg-type]
    scopes = {
        sched._split_scope("tests/run/test_real_rlinf.py::test_real_rlinf_passes[x]"),
        sched._split_scope("tests/run/test_real_rlinf_trained_badly.py::test_diverges"),
    }
    assert scopes == {REAL_RLINF}
    other = "tests/run/test_red_runs.py::test_a_red_run"
    assert sched._split_scope(other) == "tests/run/test_red_runs.py"
    options["dist"] = "load"
    assert pytest_xdist_make_scheduler(config, None) is None  # type: ignore[arg-type]


def test_every_file_of_real_rlinf_runs_is_in_their_unit() -> None:
    """A file that runs real RLinf (``tests.run.real_rlinf``) beside the others would put two
    RLinf runs on the 2 cores again: each must be listed in ``SCOPES``."""
    from fixtures.test_order import REAL_RLINF, SCOPES

    root = DURATIONS.parent.parent
    running = {
        str(path.relative_to(root))
        for path in (root / "tests").rglob("test_*.py")
        if re.search(r"^from tests\.run\.real_rlinf import", path.read_text("utf-8"), re.M)
    }
    listed = {f for f, scope in SCOPES.items() if scope == REAL_RLINF}
    assert running and running == listed, (running, listed)


def test_every_file_of_cluster_alone_tests_is_in_their_unit() -> None:
    """A file holding a ``cluster_alone`` test handed out on its own would have its worker
    wait for the unit's current test, and the unit's next test wait for it: each such file
    is listed in ``SCOPES``, and only those."""
    from fixtures.test_order import CLUSTER_ALONE, SCOPES
    from tests.testenv.test_cluster_alone_marks import marked

    root = DURATIONS.parent.parent
    holding = {
        str(path.relative_to(root))
        for path in (root / "tests").rglob("test_*.py")
        if marked(path) and path.name != "test_cluster_alone_marks.py"
    }
    listed = {f for f, scope in SCOPES.items() if scope == CLUSTER_ALONE}
    assert holding and holding == listed, (holding, listed)


def test_the_files_beside_the_cluster_alone_unit_go_after_the_others() -> None:
    seconds = {"chain": 900.0, "a": 500.0, "b": 400.0, "k": 300.0, "f": 10.0}
    order = spaced(["f", "k", "b", "a", "chain"], seconds, {"chain"}, workers=3, beside={"k"})
    assert order == ["chain", "a", "b", "f", "k"]
