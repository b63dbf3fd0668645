"""The JUnit XML schema that Jenkins' xUnit/JUnit plugins and GitLab read (``junit-10.xsd``),
as rules: which elements, in which order, with which attributes and value types.

Written from the schema's rules rather than shipped with it; ``problems(path)`` lists every
place a file breaks them (an empty list: valid). ``testsuites`` has no ``skipped`` count in
that schema; ``testcase`` carries no ``properties`` (GitLab would not show them anyway).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

_INT = re.compile(r"^-?\d+$")
_TIME = re.compile(r"^(\d+|\d*\.\d+)$")  # seconds, no unit, no exponent
_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")  # ISO 8601, no zone

# element: (required attributes, optional attributes, child elements in order with counts)
_RULES: dict[str, tuple[set[str], set[str], list[tuple[str, str]]]] = {
    "testsuites": (
        set(),
        {"name", "time", "tests", "failures", "disabled", "errors"},
        [("testsuite", "*")],
    ),
    "testsuite": (
        {"name", "tests"},
        {
            *("failures", "errors", "time", "disabled", "skipped", "timestamp", "hostname"),
            *("id", "package", "file", "log", "url", "version"),
        },
        [("properties", "?"), ("testcase", "*"), ("system-out", "?"), ("system-err", "?")],
    ),
    "properties": (set(), set(), [("property", "+")]),
    "property": ({"name", "value"}, set(), []),
    "testcase": (
        {"name"},
        {"assertions", "time", "classname", "status", "class", "file", "line"},
        [
            ("skipped", "?"),
            ("error", "*"),
            ("failure", "*"),
            ("system-out", "*"),
            ("system-err", "*"),
        ],
    ),
    "skipped": (set(), {"message"}, []),
    "error": (set(), {"message", "type"}, []),
    "failure": (set(), {"message", "type"}, []),
    "system-out": (set(), set(), []),
    "system-err": (set(), set(), []),
}
_TYPES = {
    "tests": _INT,
    "failures": _INT,
    "errors": _INT,
    "skipped": _INT,
    "disabled": _INT,
    "assertions": _INT,
    "time": _TIME,
    "timestamp": _STAMP,
}


def problems(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    out: list[str] = []
    if root.tag not in ("testsuites", "testsuite"):
        out.append(f"root element <{root.tag}> is neither testsuites nor testsuite")
    _check(root, root.tag, out)
    return out


def _check(el: ET.Element, where: str, out: list[str]) -> None:
    rule = _RULES.get(el.tag)
    if rule is None:
        out.append(f"{where}: element <{el.tag}> is not in the schema")
        return
    required, optional, children = rule
    for name in required - set(el.attrib):
        out.append(f"{where}: missing attribute {name}")
    for name, value in el.attrib.items():
        if name not in required | optional:
            out.append(f"{where}: attribute {name} is not in the schema")
        pattern = _TYPES.get(name)
        if pattern is not None and not pattern.match(value):
            out.append(f"{where}: {name}={value!r} is not of the schema's type")
    if not children and len(el) and el.tag not in ("skipped", "error", "failure"):
        out.append(f"{where}: <{el.tag}> has child elements")
    if el.tag in ("skipped", "error", "failure") and len(el):
        out.append(f"{where}: <{el.tag}> holds elements (text only)")
    if children:
        _sequence(el, where, children, out)
    for i, child in enumerate(el):
        _check(child, f"{where}/{child.tag}[{i}]", out)


def _sequence(el: ET.Element, where: str, children: list[tuple[str, str]], out: list[str]) -> None:
    tags = [c.tag for c in el]
    i = 0
    for tag, count in children:
        n = 0
        while i < len(tags) and tags[i] == tag:
            i, n = i + 1, n + 1
        if (count == "?" and n > 1) or (count == "+" and n < 1):
            out.append(f"{where}: {n} <{tag}> (the schema allows {count})")
    if i < len(tags):
        out.append(f"{where}: <{tags[i]}> out of the schema's order {[t for t, _ in children]}")
