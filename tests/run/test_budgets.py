"""B.1's figures: each stage against its budget and the median of the last runs, and how the
record words a slow stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlark_acceptance.model.budgets import Budgets, HistorySpec, parse_budgets, parse_history
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.yamlsrc import load_yaml
from rlark_acceptance.run.budgets import evaluate


def test_a_stage_six_times_slower_than_the_median_is_worded_with_its_figures() -> None:
    earlier = [{"rayHead": s} for s in (6.0, 5.9, 6.1, 6.4, 6.2, 30.0, 6.1)]
    report = evaluate({"submit": 0.2, "rayHead": 41.2}, Budgets({"rayHead": 20}), earlier)
    [slow] = report.failing()
    # The median of the last 5 (6.1, 6.4, 6.2, 30.0, 6.1): the outlier does not move it.
    assert slow.median == 6.2 and slow.runs == 5
    assert slow.text() == "rayHead 41.2 s: 6.6× the median of the last 5 runs (6.2 s), budget 20 s"
    assert report.warnings() == [f"{slow.text()} (over budget and regressed)"]
    assert not report.failed()  # warn is the default policy
    assert evaluate({"rayHead": 41.2}, Budgets({"rayHead": 20}, strict=True), earlier).failed()


def test_over_budget_and_regressed_are_told_apart() -> None:
    earlier = [{"scheduled": 1.0, "rayHead": 10.0}] * 3
    report = evaluate(
        {"scheduled": 2.5, "rayHead": 12.0},
        Budgets({"rayHead": 11}),
        earlier,
        ratio=2.0,
        strict=True,
    )
    by = {s.stage: s for s in report.stages}
    assert by["scheduled"].regressed and not by["scheduled"].over_budget
    assert by["rayHead"].over_budget and not by["rayHead"].regressed
    assert report.warnings() == [
        "scheduled 2.5 s: 2.5× the median of the last 3 runs (1.0 s) (regressed)",
        "rayHead 12.0 s: 1.2× the median of the last 3 runs (10.0 s), budget 11 s (over budget)",
    ]
    assert report.failed() and "scheduled 2.5 s" in report.message()


def test_exactly_the_ratio_or_the_budget_holds() -> None:
    report = evaluate({"rayHead": 20.0}, Budgets({"rayHead": 20}), [{"rayHead": 10.0}], ratio=2.0)
    assert report.failing() == []


def test_a_sub_second_stage_that_doubles_by_less_than_a_second_holds() -> None:
    report = evaluate(
        {"submit": 1.1, "scheduled": 2.6}, Budgets(), [{"submit": 0.5, "scheduled": 0.5}]
    )
    assert [s.stage for s in report.failing()] == ["scheduled"]


def test_a_first_run_says_so_and_does_not_fail() -> None:
    report = evaluate({"rayHead": 41.2}, Budgets(strict=True), [], history="file:///h")
    assert report.first_run and not report.failed()
    assert "first run" in report.as_dict()["note"]
    assert report.as_dict()["stages"]["rayHead"] == {
        "seconds": 41.2,
        "budget": None,
        "median": None,
        "runs": 0,
        "ratio": None,
        "overBudget": False,
        "regressed": False,
    }
    # No history at all: budgets only, and that is no first run either.
    assert not evaluate({"rayHead": 1.0}, Budgets(), [], history=None).first_run


def test_earlier_runs_that_never_reached_a_stage_do_not_count_for_it() -> None:
    earlier = [{"rayHead": 5.0}, {"submit": 0.1}, {"rayHead": 7.0}]
    [stage] = evaluate({"rayHead": 6.0}, Budgets(), earlier).stages
    assert (stage.median, stage.runs) == (6.0, 2)


def _profile(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + text, encoding="utf-8")
    return path


def test_the_profile_sets_budgets_and_its_history(tmp_path: Path) -> None:
    doc = load_yaml(
        _profile(
            tmp_path,
            "budgets: {rayHead: 20, firstSignal: 60.5, strict: true}\n"
            "history: {path: s3://b/h, last: 3, ratio: 1.5}\n",
        )
    )
    assert parse_budgets(doc) == Budgets({"rayHead": 20.0, "firstSignal": 60.5}, strict=True)
    assert parse_history(doc) == HistorySpec("s3://b/h", 3, 1.5)
    plain = load_yaml(_profile(tmp_path, "history: ../runs\n"))
    assert parse_history(plain) == HistorySpec("../runs")
    bounded = load_yaml(_profile(tmp_path, "history: {keep: 20, keepDays: 14}\n"))
    assert parse_history(bounded) == HistorySpec(keep=20, keep_days=14.0)
    off = load_yaml(_profile(tmp_path, "history: false\n"))
    assert parse_history(off) == HistorySpec(off=True)


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("budgets: {rayHed: 20}", 2, "budgets.rayHed is not a stage"),
        ("budgets:\n  rayHead: -1", 3, "budgets.rayHead must be positive seconds"),
        ("budgets: {strict: yes please}", 2, "budgets.strict must be true or false"),
        ("history: {path: h, last: 0}", 2, "history.last must be a positive whole number"),
        ("history:\n  path: h\n  ratio: 0.5", 4, "history.ratio must be a number above 1"),
        ("history: {where: h}", 2, "history.where is not a setting of history"),
        ("history: [h]", 2, "history must be a path"),
        ("history: true", 2, "history must be a path, false"),
        ("history: {keep: 0}", 2, "history.keep must be a positive whole number"),
        ("history:\n  keepDays: -3", 3, "history.keepDays must be a positive number"),
        ("history: {keepdays: 3}", 2, "history.keepdays is not a setting of history"),
    ],
)
def test_each_mistake_is_one_line_at_its_place(
    tmp_path: Path, text: str, line: int, says: str
) -> None:
    path = _profile(tmp_path, text + "\n")
    doc = load_yaml(path)
    with pytest.raises(InputError) as caught:
        parse_budgets(doc)
        parse_history(doc)
    assert caught.value.where == f"{path}:{line}", str(caught.value)
    assert says in str(caught.value)
