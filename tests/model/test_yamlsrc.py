"""The YAML reader means what OmegaConf's loader means, and refuses what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf._utils import get_yaml_loader

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.yamlsrc import MAX_DEPTH, parse_yaml

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(DATA.rglob("*.yaml")) + sorted((ROOT / "profiles").rglob("*.yaml"))


def omegaconf_load(text: str) -> Any:
    return yaml.load(text, Loader=get_yaml_loader())  # OmegaConf's own (safe) loader


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_real_file_reads_as_omegaconf_reads_it(path: Path) -> None:
    text = path.read_text()
    assert parse_yaml(text, str(path), require_mapping=False).data == omegaconf_load(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",  # duplicate key
        "a: !!python/object/apply:os.system [ls]\n",  # a Python tag
        "a: !custom 1\n",
    ],
)
def test_what_omegaconf_refuses_is_refused(text: str) -> None:
    with pytest.raises(yaml.YAMLError):
        omegaconf_load(text)
    with pytest.raises(InputError) as err:
        parse_yaml(text, "f.yaml")
    assert str(err.value).startswith("f.yaml:1:") or str(err.value).startswith("f.yaml:2:")


def test_merge_keys_mean_what_they_mean_to_yaml() -> None:
    text = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\nboth:\n  <<: [*b, {z: 4}]\n"
    assert parse_yaml(text, "f").data == omegaconf_load(text)


def test_lines_of_keys_and_list_items() -> None:
    doc = parse_yaml("a:\n  b:\n    - x\n    - {c: 1}\nd: |\n  text\n", "f")
    assert doc.line_of("a", "b") == 2
    assert doc.line_of("a", "b", 0) == 3
    assert doc.line_of("a", "b", 1, "c") == 4
    assert doc.text_loc("d", offset=0).line == 6  # a block scalar's text starts below its key


@pytest.mark.parametrize("form", ["flow", "block"])
def test_depth_is_bounded_without_recursion(form: str) -> None:
    depth = MAX_DEPTH + 5
    if form == "flow":
        text = "a: " + "[" * depth + "]" * depth + "\n"
    else:
        text = "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "v: 1\n"
    with pytest.raises(InputError, match="nested deeper than"):
        parse_yaml(text, "f")


def test_several_documents_are_refused() -> None:
    with pytest.raises(InputError, match="single YAML document"):
        parse_yaml("a: 1\n---\nb: 2\n", "f")
