"""What to do about malformed YAML: PyYAML's words name the parser's state ("mapping values
are not allowed in this context"), not the slip a hand made; each is paired here with the
slips that cause it, so the one line a user reads also says what to change.

>>> hint("mapping values are not allowed in this context", "a: b: c", 0, 4)
"a value holding ': ' needs quotes ('b: c'), or a key is indented under a plain value"
"""

from __future__ import annotations

# (the start of libyaml's or PyYAML's problem text, what to do), first match wins.
_HINTS: tuple[tuple[str, str], ...] = (
    (
        "mapping values are not allowed",
        "a value holding ': ' needs quotes ('b: c'), or a key is indented under a plain value",
    ),
    (
        "did not find expected ',' or ']'",
        "close the [ list on its line, and quote an item holding ',' or ':'",
    ),
    (
        "did not find expected ',' or '}'",
        "close the { mapping on its line, and quote a value holding ',' or ':'",
    ),
    (
        "did not find expected '-' indicator",
        "the items of one list start with '- ' at the same indentation",
    ),
    ("did not find expected key", "the keys of one mapping start at the same indentation"),
    (
        "could not find expected ':'",
        "a key needs ': ' after it; a value over several lines needs | or quotes",
    ),
    ("found unexpected end of stream", "close the quoted value this line opens"),
    (
        "found unknown escape character",
        "in double quotes a backslash is \\\\; or use single quotes",
    ),
    (
        "expected <block end>, but found",
        "the line is indented less than the block it continues, or more than its key",
    ),
)


def hint(problem: str, text: str, line: int, column: int) -> str | None:
    """What to do about ``problem`` found at ``line``, ``column`` (0-based) of ``text``."""
    if problem.startswith("found character") and "cannot start any token" in problem:
        return _bad_start(text, line, column)
    for start, what in _HINTS:
        if problem.startswith(start):
            return what
    return None


def _bad_start(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    char = lines[line][column : column + 1] if line < len(lines) else ""
    if char == "\t":
        return "YAML indents with spaces: replace the tab"
    if char in ("@", "`", "%"):
        return f"a value starting with {char} needs quotes"
    return "a value starting with a YAML indicator needs quotes"
