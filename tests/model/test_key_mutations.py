"""A mutation test of what a user writes: every key of every shipped profile and release
file, misspelt in the ways hands misspell (a letter dropped, doubled or changed, two
swapped, the case changed, snake case), is refused in one line at the key's line naming
the key as written and the key meant; every key the harness reads of each shipped Job
YAML, so misspelt, is a warning at its line naming the field meant.

The mutants are generated from the files as they are, not listed: a key added to a shipped
file is mutated too. Keys a user names (label names, image references, workspace folders)
are no schema's and are left alone. The share answered right is printed (``-s``) and
recorded as the test's ``share`` property; every mutant must be answered right.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.keypath import KeyPath, dotted
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.model.yamlsrc import load_yaml
from rlark_acceptance.release.release_file import load_release

REPO = Path(__file__).resolve().parents[2]
PROFILES = sorted((REPO / "profiles").glob("*.yaml"))
RELEASES = sorted(REPO.glob("release*.yaml"))
JOBS = sorted((REPO / "profiles").glob("*/job.yaml"))

# Mappings whose keys the user names: not misspellings of anything.
_USER_NAMED = (
    ("target", "node", "labels"),
    ("target", "images"),
    ("target", "images", "*", "workspace"),
    ("spec", "roles", "*", "nodeSelector"),
    ("metadata", "labels"),
)


def _user_named(parent: KeyPath) -> bool:
    return any(
        len(parent) == len(p) and all(q in ("*", k) for q, k in zip(p, parent, strict=True))
        for p in _USER_NAMED
    )


def mutants(key: str) -> list[str]:
    """``key`` misspelt as hands misspell: each a different text, none the key itself."""
    mid = len(key) // 2
    out = [
        key[:mid] + key[mid + 1 :],  # a letter dropped
        key[: mid - 1] + key[mid] + key[mid - 1] + key[mid + 1 :],  # two neighbours swapped
        key[:mid] + key[mid] + key[mid:],  # a letter doubled
        key[:mid] + ("x" if key[mid] != "x" else "q") + key[mid + 1 :],  # one changed
        key[:1].swapcase() + key[1:],  # the case of its first letter
        key[:-1],  # its last letter left off (timeout for timeouts)
        re.sub(r"(?<=[a-z])([A-Z])", lambda m: "_" + m.group(1).lower(), key),  # snake case
    ]
    return sorted({m for m in out if m and m != key}, key=out.index)


@dataclass(frozen=True)
class Mutant:
    path: KeyPath  # the key's path in the file
    line: int
    typed: str  # the key as misspelt


def file_mutants(path: Path) -> Iterator[Mutant]:
    doc = load_yaml(path)
    for keys, line in sorted(doc.lines.items(), key=lambda kv: kv[1]):
        if not keys or not isinstance(keys[-1], str) or _user_named(keys[:-1]):
            continue
        if keys[-1] == "<key>":  # the reader's mark for a key being read, not a key
            continue
        siblings = _mapping_at(doc.data, keys[:-1])
        for typed in mutants(keys[-1]):
            if typed not in siblings:  # a mutant that is a sibling is no misspelling
                yield Mutant(keys, line, typed)


def _mapping_at(data: object, keys: KeyPath) -> dict[object, object]:
    for k in keys:
        data = data[k]  # type: ignore[index]
    assert isinstance(data, dict)
    return data


def write_mutant(src: Path, m: Mutant, out: Path) -> Path:
    """``src`` with the key at ``m.path`` spelt ``m.typed`` on its line, written to ``out``."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    key = str(m.path[-1])
    pattern = rf"(?<![\w./-]){re.escape(key)}(?=\s*:)"
    text, n = re.subn(pattern, m.typed, lines[m.line - 1], count=1)
    assert n == 1, (src, m)
    lines[m.line - 1] = text
    out.write_text("".join(lines), encoding="utf-8")
    return out


def _refused_right(load: Callable[[Path], object], mutant_file: Path, m: Mutant) -> str | None:
    """None when the answer is one line at the key's line naming both keys; else what was."""
    try:
        load(mutant_file)
    except InputError as exc:
        right = (
            exc.where == f"{mutant_file}:{m.line}"
            and f"did you mean `{m.path[-1]}`?" in exc.reason
            and dotted((*m.path[:-1], m.typed)) in exc.reason
            and "\n" not in str(exc)
        )
        return None if right else str(exc)
    return "accepted"


def _warned_right(mutant_file: Path, m: Mutant) -> str | None:
    job = read_job(str(mutant_file))
    meant = f"{dotted((*m.path[:-1], m.typed))} is not a field the harness reads; "
    meant += f"did you mean `{m.path[-1]}`?"
    hits = [p for p in job.problems if p.slip and p.message == meant]
    if any(p.location.line == m.line and p.location.file == str(mutant_file) for p in hits):
        return None
    return "; ".join(p.message for p in job.problems if p.slip) or "no warning"


def _share(
    record_property: Callable[[str, object], None],
    src: Path,
    answers: list[tuple[Mutant, str | None]],
) -> None:
    right = sum(1 for _, wrong in answers if wrong is None)
    share = f"{right}/{len(answers)}"
    record_property("share", share)
    print(f"\n{src.relative_to(REPO)}: {share} mutants answered right")
    wrong = [f"{dotted(m.path)} as {m.typed!r}: {why}" for m, why in answers if why]
    assert answers and not wrong, "\n".join(wrong)


@pytest.mark.parametrize("src", PROFILES + RELEASES, ids=lambda p: p.name)
def test_every_misspelt_key_of_a_shipped_file_is_refused_with_the_key_meant(
    src: Path, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    load = load_release if src in RELEASES else load_profile
    out = tmp_path / src.name
    answers = [(m, _refused_right(load, write_mutant(src, m, out), m)) for m in file_mutants(src)]
    _share(record_property, src, answers)


@pytest.mark.parametrize("src", JOBS, ids=lambda p: p.parent.name)
def test_every_misspelt_field_of_a_shipped_job_yaml_is_a_warning_with_the_field_meant(
    src: Path, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    out = tmp_path / "job.yaml"
    answers = [(m, _warned_right(write_mutant(src, m, out), m)) for m in file_mutants(src)]
    _share(record_property, src, answers)


def test_the_mutations_are_misspellings_of_the_key() -> None:
    assert mutants("expectedNode") == [
        "expectdNode",
        "expecetdNode",
        "expecteedNode",
        "expectxdNode",
        "ExpectedNode",
        "expectedNod",
        "expected_node",
    ]
    assert mutants("job") == ["jb", "ojb", "joob", "jxb", "Job", "jo"]
