"""The keys a user may write in each section of a file, and the answer to one that is not.

Every section of the profile and the release file declares its keys once, beside the typed
model that reads them, and is checked here: a key none of them is would otherwise be
dropped in silence and its setting run with its default (``timeout:`` for ``timeouts:``).
The answer is one line at the key's ``file:line`` naming the key as written and, when one
is near, the key meant (``did you mean `expectedNode`?``), as Kubernetes' strict field
validation and pydantic name the path.

In a console's Job YAML, where the console may add fields the harness does not read,
``near_misses`` finds only the keys close to one it does read.

>>> closest("expectedNdoe", ("expectedNode", "expectedOutput"))
'expectedNode'
>>> closest("queue", ("expectedNode",)) is None
True
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Final

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keypath import KeyPath, dotted
from rlark_acceptance.model.yamlsrc import YamlDoc


def _norm(key: str) -> str:
    """What two spellings of one key share: ``expected_node``, ``ExpectedNode`` and
    ``expectedNode`` are one key to a reader, so they are one here."""
    return key.replace("_", "").replace("-", "").lower()


def _distance(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: a letter added, dropped or changed, or two neighbours
    swapped (the optimal string alignment distance: the typos hands make)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, prev2[j - 2] + 1)
            row.append(best)
        prev2, prev = prev, row
    return prev[-1]


def _allowed(key: str) -> int:
    """Edits still read as a typo of a key this long: one in a short key (``jb`` for
    ``job``), two beyond (a longer key leaves room for two slips and stays unlike the others)."""
    return 1 if len(key) <= 4 else 2


def closest(key: Hashable, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely misspells, or None if none is near; on a tie the
    first declared (the declaration's order is the file's)."""
    if not isinstance(key, str):
        return None
    typed = _norm(key)
    best: tuple[int, str] | None = None
    for candidate in known:
        d = _distance(typed, _norm(candidate))
        if d <= _allowed(candidate) and (best is None or d < best[0]):
            best = (d, candidate)
    return best[1] if best else None


def unknown_key(
    doc: YamlDoc, path: KeyPath, key: Hashable, known: Iterable[str], what: str
) -> InputError:
    """The one line for ``key`` under ``path``: the key meant when one is near, else the
    keys the section takes."""
    names = tuple(known)
    meant = closest(key, names)
    shown = shown_key(path, key)
    hint = f"; did you mean `{meant}`?" if meant else f": one of {', '.join(names)}"
    return InputError(str(doc.loc(*path, key)), f"{shown} is not {what}{hint}")


def shown_key(path: KeyPath, key: Hashable) -> str:
    """``path.key`` as a message names it; a key a line cannot show (``"\\r"``) as Python
    writes it, so the answer stays one line."""
    printable = isinstance(key, str) and key.isprintable()
    return dotted((*path, key if printable else repr(key)))


def refuse_unknown(
    doc: YamlDoc,
    section: str | KeyPath,
    raw: Mapping[Any, Any],
    known: Iterable[str],
    *,
    what: str | None = None,
) -> None:
    """Refuse, at its line, the first key of the mapping at ``section`` (a key, or a path;
    ``()`` the document) that none of ``known`` is."""
    path: KeyPath = (section,) if isinstance(section, str) else tuple(section)
    names = tuple(known)
    for key in raw:
        if key not in names:
            raise unknown_key(doc, path, key, names, what or _what(path))


def _what(path: KeyPath) -> str:
    if not path:
        return "a key of this file"
    return f"a setting of {dotted(path)}"


# A section's keys and, for each, the schema of its value when that is a mapping (None:
# a value of any other kind, or a mapping of the user's own keys); ``ANY`` stands for each
# key a user names (an image reference), its value checked by the schema it maps to.
Schema = Mapping[str, "Schema | None"]
ANY: Final = "*"


def check_keys(doc: YamlDoc, path: KeyPath, value: object, schema: Schema | None) -> None:
    """Every key in ``value`` (at ``path``) and below it known to ``schema``, or refused."""
    if schema is None or not isinstance(value, Mapping):
        return
    if ANY in schema:
        for key, item in value.items():
            check_keys(doc, (*path, key), item, schema[ANY])
        return
    refuse_unknown(doc, path, value, schema)
    for key, item in value.items():
        check_keys(doc, (*path, key), item, schema[key])


def near_misses(raw: Mapping[Any, Any], known: Iterable[str]) -> Iterator[tuple[Hashable, str]]:
    """Each key of ``raw`` that is not known but near one that is, with the key meant: in a
    file others add fields to, only these are likely to be a user's slip."""
    names = tuple(known)
    for key in raw:
        if key not in names and (meant := closest(key, names)) is not None:
            yield key, meant
