"""The one key path (``model/keypath.py``) and its one text form, as the model's readers use it."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.keypath import dotted, parse

JOB = Path(__file__).resolve().parents[2] / "profiles" / "local" / "job.yaml"

keys = st.text(st.characters(exclude_characters=".[]", exclude_categories=["Cs"]), min_size=1)
paths = st.lists(st.one_of(keys, st.integers(0, 99)), max_size=6).filter(
    lambda p: not p or isinstance(p[0], str)
)


@given(paths)
def test_dotted_and_parse_are_inverse(path: list[str | int]) -> None:
    assert parse(dotted(tuple(path))) == tuple(path)


def test_list_items_are_bracketed() -> None:
    assert dotted(("spec", "roles", 0, "env", 3, "value")) == "spec.roles[0].env[3].value"
    assert parse("") == ()


def test_a_job_shape_problem_names_its_field_in_the_one_spelling(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.read_text(encoding="utf-8").replace("    gpus: 2", "    gpus: [2]"))
    [problem] = [p for p in read_job(str(path)).problems if p.check == "3.3"]
    assert problem.message.startswith("spec.roles[0].gpus must be ")
    assert problem.location is not None and problem.location.line is not None
