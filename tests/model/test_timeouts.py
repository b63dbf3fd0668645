"""The profile's ``timeouts:`` as one typed value: defaults of the contract, a key per bound."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.timeouts import Bound, Timeouts, parse_timeouts
from rlark_acceptance.model.yamlsrc import YamlDoc, load_yaml

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def doc(tmp_path: Path, text: str) -> tuple[Path, YamlDoc]:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return path, load_yaml(path)


def test_every_bound_has_its_field_and_the_contracts_default() -> None:
    assert {f.name for f in fields(Timeouts)} == {b.name.lower() for b in Bound}
    block = CONTRACT.read_text(encoding="utf-8").split("\ntimeouts:", 1)[1]
    documented = dict(re.findall(r"^  (\w+): (\d+)", block.split("```", 1)[0], re.M))
    assert {k: float(v) for k, v in documented.items()} == {b.value: Timeouts()[b] for b in Bound}


def test_the_profile_changes_only_the_bounds_it_names(tmp_path: Path) -> None:
    _, d = doc(tmp_path, "timeouts:\n  rayHead: 90\n  apiServer: 5.5\n")
    t = parse_timeouts(d, d.data["timeouts"])
    assert (t[Bound.RAY_HEAD], t.api_server, t.scheduled) == (90.0, 5.5, Timeouts().scheduled)
    assert Timeouts.every(3.0)[Bound.OUTPUT] == 3.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "timeouts:\n  scheduled: 30\n  firstsignal: 60\n",
            "timeouts.firstsignal is not a timeout",
        ),
        ("timeouts:\n  scheduled: 30\n  output: -1\n", "timeouts.output must be positive seconds"),
        (
            "timeouts:\n  scheduled: 30\n  output: true\n",
            "timeouts.output must be positive seconds",
        ),
    ],
)
def test_a_wrong_timeout_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    path, d = doc(tmp_path, text)
    with pytest.raises(InputError) as e:
        parse_timeouts(d, d.data["timeouts"])
    assert e.value.where == f"{path}:3" and message in str(e.value)
