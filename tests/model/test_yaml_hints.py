"""Malformed YAML is one line at the line to fix with what to change there
(``model.yamlhints``), and doing what it says makes the file parse: each case is a slip, the
line named, the words of the remedy, and the file as the remedy has it."""

from __future__ import annotations

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.yamlhints import hint
from rlark_acceptance.model.yamlsrc import parse_yaml

CASES = {
    "an unquoted ': ' in a value": (
        "name: a\ncommand: echo a: b\n",
        2,
        "needs quotes",
        "name: a\ncommand: 'echo a: b'\n",
    ),
    "a tab for indentation": (
        "runInfo:\n\tgpus: 2\n",
        2,
        "replace the tab",
        "runInfo:\n  gpus: 2\n",
    ),
    "an unclosed flow list": (
        "paths: [a, b\nname: x\n",
        2,
        "close the [ list",
        "paths: [a, b]\nname: x\n",
    ),
    "an unclosed flow mapping": (
        "paths: {a: 1\nname: x\n",
        2,
        "close the { mapping",
        "paths: {a: 1}\nname: x\n",
    ),
    "a list item out of line": (
        "profiles:\n  - a\n  b: 1\n",
        3,
        "start with '- '",
        "profiles:\n  - a\n  - b: 1\n",
    ),
    "a key out of line": (
        "target:\n  node: a\n cluster: b\n",
        3,
        "same indentation",
        "target:\n  node: a\n  cluster: b\n",
    ),
    "an unclosed quote": (
        'name: "smoke\ntimeouts: {}\n',
        1,
        "close the quoted value",
        'name: "smoke"\ntimeouts: {}\n',
    ),
    "an @ at a value's start": ("image: @latest\n", 1, "@ needs quotes", "image: '@latest'\n"),
    "a backslash in double quotes": (
        'path: "C:\\q"\n',
        1,
        "use single quotes",
        "path: 'C:\\q'\n",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_yaml_says_what_to_change_and_the_change_parses(case: str) -> None:
    bad, line, says, fixed = CASES[case]
    with pytest.raises(InputError) as e:
        parse_yaml(bad, "p.yaml")
    assert e.value.where == f"p.yaml:{line}", str(e.value)
    assert e.value.reason.startswith("malformed YAML: ") and says in e.value.reason, e.value.reason
    assert "\n" not in str(e.value)
    assert isinstance(parse_yaml(fixed, "p.yaml").data, dict)


def test_a_problem_without_a_known_slip_gets_no_remedy() -> None:
    """A remedy is given only where it is the right one: a problem the table does not
    know keeps PyYAML's words alone."""
    assert hint("found undefined tag handle", "a: !x 1\n", 0, 3) is None
    assert hint("found character that cannot start any token", "a:\n\tb: 1\n", 1, 0) == (
        "YAML indents with spaces: replace the tab"
    )
