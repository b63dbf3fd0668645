"""Reading YAML inputs safely, keeping the line of every node for ``file:line`` findings.

Every input of the harness (RLinf configs, Job YAML, profiles) is read here, so the
guards live in one place: size, binary content, encoding, malformed YAML, documents
that are not mappings, and alias bombs (a few lines of anchors that expand to billions
of nodes once a consumer such as OmegaConf walks them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location

MAX_BYTES = 8 * 1024 * 1024
# Expanded nodes allowed once aliases are followed: real configs have a few thousand.
MAX_EXPANDED_NODES = 200_000

KeyPath = tuple[Hashable, ...]


# libyaml's parser when PyYAML was built with it: several times faster on large configs.
_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):
    """PyYAML's safe loader with OmegaConf's float rule.

    YAML 1.1 (PyYAML) reads ``1e-05`` as a string; OmegaConf, and so RLinf, read it as a
    float. Configs must mean here what they mean to RLinf.
    """


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:float"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@dataclass
class YamlDoc:
    """A parsed YAML mapping and the line of each of its nodes."""

    path: str
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    blocks: set[KeyPath] = field(default_factory=set)  # literal / folded block scalars

    def __repr__(self) -> str:  # never the content: it may hold secrets
        return f"YamlDoc({self.path!r})"

    def line_of(self, *keys: Hashable) -> int | None:
        """Line of the node at ``keys``, or of its nearest ancestor that has one."""
        path: KeyPath = tuple(keys)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def loc(self, *keys: Hashable) -> Location:
        return Location(self.path, self.line_of(*keys))

    def text_loc(self, *keys: Hashable, offset: int = 0) -> Location:
        """Line ``offset`` (0-based) of the string at ``keys``: a block scalar's text starts
        on the line after its key, a plain or quoted one on the key's own line."""
        line = self.line_of(*keys)
        if line is None:
            return Location(self.path)
        start = line + 1 if tuple(keys) in self.blocks else line
        return Location(self.path, start + offset)


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """Read a small UTF-8 text file or raise ``InputError`` naming it."""
    p = Path(path)
    shown = str(path)
    if not p.exists():
        raise InputError(shown, f"no such {what}")
    if p.is_dir():
        raise InputError(shown, f"is a directory, expected a {what}")
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise InputError(shown, f"{size} bytes is larger than the {MAX_BYTES} bytes accepted")
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(shown, f"cannot be read: {exc.strerror or exc}") from None
    if b"\x00" in raw:
        raise InputError(shown, "is a binary file, expected YAML text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(shown, f"is not UTF-8 text (byte {exc.start})") from None


def parse_yaml(text: str, shown: str, *, require_mapping: bool = True) -> YamlDoc:
    """Parse one YAML document; malformed YAML becomes ``InputError`` with its line."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{shown}:{mark.line + 1}" if mark else shown
        reason = exc.problem or exc.context or "malformed YAML"
        raise InputError(where, f"malformed YAML: {reason}") from None
    except yaml.YAMLError as exc:
        raise InputError(shown, f"malformed YAML: {exc}") from None
    except RecursionError:
        raise InputError(shown, "YAML nested too deeply") from None
    doc = YamlDoc(shown, None)
    if root is None:
        if require_mapping:
            raise InputError(shown, "is empty, expected a YAML mapping")
        return doc
    if require_mapping and not isinstance(root, yaml.MappingNode):
        raise InputError(
            f"{shown}:{root.start_mark.line + 1}", "expected a YAML mapping at the top"
        )
    doc.data = _Builder(doc).build(root)
    return doc


def load_yaml(path: str | os.PathLike[str], *, require_mapping: bool = True) -> YamlDoc:
    return parse_yaml(read_text(path), str(path), require_mapping=require_mapping)


class _Builder:
    """Turns composed nodes into plain Python data, recording lines, bounding alias expansion."""

    def __init__(self, doc: YamlDoc) -> None:
        self.doc = doc
        self.constructor = yaml.constructor.SafeConstructor()
        self.sizes: dict[int, int] = {}
        self.built: dict[int, Any] = {}

    def build(self, root: yaml.Node) -> Any:
        try:
            total = self._size(root, set())
        except RecursionError:
            raise InputError(self.doc.path, "YAML nested too deeply") from None
        if total > MAX_EXPANDED_NODES:
            raise InputError(
                self.doc.path,
                f"aliases expand to more than {MAX_EXPANDED_NODES} nodes (an alias bomb?)",
            )
        try:
            return self._node(root, ())
        except yaml.constructor.ConstructorError as exc:
            mark = exc.problem_mark
            where = f"{self.doc.path}:{mark.line + 1}" if mark else self.doc.path
            raise InputError(where, f"invalid YAML: {exc.problem}") from None

    def _size(self, node: yaml.Node, active: set[int]) -> int:
        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in active:
            line = node.start_mark.line + 1
            raise InputError(f"{self.doc.path}:{line}", "recursive alias")
        active.add(key)
        size = 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                size += self._size(k, active) + self._size(v, active)
                if size > MAX_EXPANDED_NODES:
                    break
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                size += self._size(item, active)
                if size > MAX_EXPANDED_NODES:
                    break
        active.discard(key)
        self.sizes[key] = size
        return size

    def _node(self, node: yaml.Node, path: KeyPath) -> Any:
        self.doc.lines.setdefault(path, node.start_mark.line + 1)
        if id(node) in self.built:
            return self.built[id(node)]
        if isinstance(node, yaml.MappingNode):
            self.constructor.flatten_mapping(node)
            out: dict[Any, Any] = {}
            self.built[id(node)] = out
            for knode, vnode in node.value:
                key = self._node(knode, (*path, "<key>"))
                if not isinstance(key, Hashable):
                    line = knode.start_mark.line + 1
                    raise InputError(f"{self.doc.path}:{line}", "a mapping key must be a scalar")
                self.doc.lines[(*path, key)] = knode.start_mark.line + 1
                out[key] = self._node(vnode, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            items: list[Any] = []
            self.built[id(node)] = items
            items.extend(self._node(item, (*path, i)) for i, item in enumerate(node.value))
            return items
        if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
            self.doc.blocks.add(path)
        value = self.constructor.construct_object(node, deep=True)
        if not isinstance(value, str | int | float | bool | type(None)):
            value = str(node.value)  # timestamps, binary: keep the text the user wrote
        return value
