"""Reading YAML inputs safely, keeping the line of every node for ``file:line`` findings.

Every input of the harness (RLinf configs, Job YAML, profiles, node lists, launch scripts)
is read here, so the guards live in one place: regular files only (a FIFO or a device would
block or never end), size, binary content, encoding, malformed YAML, documents that are not
mappings, explicit tags and duplicate keys (OmegaConf refuses both, so RLinf would), depth,
node count and alias bombs (a few lines of anchors that expand to billions of nodes once a
consumer such as OmegaConf walks them).

The document is built from libyaml's event stream with an explicit stack, never by
recursion: depth is bounded by ``MAX_DEPTH`` rather than by Python's recursion limit, and
the node budget stops a huge file long before it is all parsed. (Just over 400 lines: the
guards and the builder they constrain are one piece.)
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.keypath import KeyPath
from rlark_acceptance.model.yamlhints import hint

# RLinf's largest config is ~14 KB and a Job YAML a few KB: 2 MiB leaves room for anything
# real while a file far beyond it is refused before it is read.
MAX_BYTES = 2 * 1024 * 1024
# Nodes allowed, counting each alias as the nodes it expands to: real configs have a few
# hundred to a few thousand.
MAX_EXPANDED_NODES = 100_000
# Nesting allowed: real configs nest about ten levels; consumers (OmegaConf's merge, Hydra's
# override grammar) recurse, so depth is bounded here, far below Python's recursion limit.
MAX_DEPTH = 64

# The tags OmegaConf's loader (a SafeLoader) turns into values OmegaConf can hold.
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")
)


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


def read_bytes(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or ``InputError`` naming it.

    Checked before reading: a FIFO would block, a device (``/dev/zero``) would never end,
    a symlink loop has no target. The file is opened non-blocking and checked again on
    the open descriptor, so a file swapped for a FIFO in between cannot hang the read.
    """
    shown = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(shown, f"no such {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(shown, "is a symlink loop") from None
        raise InputError(shown, f"cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(shown, f"is a directory, expected a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(shown, f"is not a regular file ({_kind(st.st_mode)}), expected a {what}")
    if st.st_size > limit:
        raise InputError(shown, f"{st.st_size} bytes is larger than the {limit} bytes accepted")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(shown, f"cannot be read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(shown, f"is not a regular file, expected a {what}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(shown, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise InputError(shown, f"is larger than the {limit} bytes accepted")
    return b"".join(chunks)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """Read a small UTF-8 text file or raise ``InputError`` naming it."""
    shown = str(path)
    raw = read_bytes(path, what)
    if b"\x00" in raw:
        raise InputError(shown, "is a binary file, expected YAML text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(shown, f"is not UTF-8 text (byte {exc.start})") from None


def parse_yaml(text: str, shown: str, *, require_mapping: bool = True) -> YamlDoc:
    """Parse one YAML document; malformed YAML becomes ``InputError`` with its line."""
    doc = YamlDoc(shown, None)
    try:
        root, line = _Builder(doc, text).build()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark and "quoted scalar" in (exc.context or ""):
            mark = exc.context_mark  # an unclosed quote: the line that opens it
        where = f"{shown}:{mark.line + 1}" if mark else shown
        reason = exc.problem or exc.context or "malformed YAML"
        what = hint(reason, text, mark.line, mark.column) if mark else None
        said = f"malformed YAML: {reason}" + (f"; {what}" if what else "")
        raise InputError(where, said) from None
    except yaml.YAMLError as exc:
        raise InputError(shown, f"malformed YAML: {exc}") from None
    if line is None:
        if require_mapping:
            raise InputError(shown, "is empty, expected a YAML mapping")
        return doc
    if require_mapping and not isinstance(root, dict):
        raise InputError(f"{shown}:{line}", "expected a YAML mapping at the top")
    doc.data = root
    return doc


def load_yaml(path: str | os.PathLike[str], *, require_mapping: bool = True) -> YamlDoc:
    return parse_yaml(read_text(path), str(path), require_mapping=require_mapping)


_MERGE = "tag:yaml.org,2002:merge"
_NO_KEY = object()


@dataclass
class _Frame:
    """A mapping or sequence being built."""

    value: dict[Any, Any] | list[Any]
    path: KeyPath
    anchor: str | None
    nodes: int = 1
    key: Any = _NO_KEY  # a mapping's pending key
    key_line: int = 0
    merges: list[dict[Any, Any]] = field(default_factory=list)
    explicit: set[Any] = field(default_factory=set)


class _Builder:
    """Plain Python data from libyaml's events, with lines, under the guards above."""

    def __init__(self, doc: YamlDoc, text: str) -> None:
        self.doc = doc
        self.loader = _Loader(text)
        self.constructor = yaml.constructor.SafeConstructor()
        self.anchors: dict[str, tuple[Any, int]] = {}  # value, expanded node count
        self.open_anchors: set[str] = set()
        self.total = 0
        self.stack: list[_Frame] = []

    def fail(self, line: int | None, message: str) -> InputError:
        return InputError(f"{self.doc.path}:{line}" if line else self.doc.path, message)

    def build(self) -> tuple[Any, int | None]:
        """The document's value and the line it starts on (None for an empty stream)."""
        try:
            return self._events()
        finally:
            self.loader.dispose()

    def _events(self) -> tuple[Any, int | None]:
        loader = self.loader
        root: Any = None
        root_line: int | None = None
        documents = 0
        while loader.check_event():
            ev = loader.get_event()
            line = ev.start_mark.line + 1 if ev.start_mark else None
            if isinstance(ev, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise self.fail(line, "expected a single YAML document, found several")
                continue
            if isinstance(ev, yaml.ScalarEvent | yaml.AliasEvent):
                value, nodes = self._leaf(ev, line)
            elif isinstance(ev, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                self._open(ev, line)
                continue
            elif isinstance(ev, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frame = self.stack.pop()
                value, nodes = self._close(frame), frame.nodes
            else:
                continue  # stream and document boundaries
            if not self.stack:
                root, root_line = value, root_line or line
                continue
            self._add(value, nodes, line, ev)
        return root, root_line if documents else None

    def _count(self, nodes: int, line: int | None) -> None:
        self.total += nodes
        if self.total > MAX_EXPANDED_NODES:
            raise self.fail(
                line,
                f"more than {MAX_EXPANDED_NODES} YAML nodes (counting what aliases expand to); "
                "an RLinf input has a few thousand",
            )

    def _tag(self, tag: str | None, line: int | None) -> None:
        if tag is not None and tag not in ("!", *_CORE_TAGS):
            raise self.fail(line, f"YAML tag {tag!r} is not accepted (OmegaConf refuses it)")

    def _child_path(self) -> KeyPath:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            return (*top.path, len(top.value))
        if top.key is _NO_KEY:
            return (*top.path, "<key>")
        return (*top.path, top.key)

    def _open(self, ev: yaml.CollectionStartEvent, line: int | None) -> None:
        self._tag(ev.tag, line)
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(line, f"YAML nested deeper than {MAX_DEPTH} levels")
        if self.stack and isinstance(self.stack[-1].value, dict) and self.stack[-1].key is _NO_KEY:
            raise self.fail(line, "a mapping key must be a scalar")
        path = self._child_path()
        if line is not None:
            self.doc.lines.setdefault(path, line)
        value: dict[Any, Any] | list[Any] = {} if isinstance(ev, yaml.MappingStartEvent) else []
        self._count(1, line)
        if ev.anchor:
            self.anchors[ev.anchor] = (value, 1)
            self.open_anchors.add(ev.anchor)
        self.stack.append(_Frame(value, path, ev.anchor))

    def _close(self, frame: _Frame) -> Any:
        if isinstance(frame.value, dict):
            for merged in frame.merges:
                for k, v in merged.items():
                    if k not in frame.explicit and k not in frame.value:
                        frame.value[k] = v
        if frame.anchor:
            self.anchors[frame.anchor] = (frame.value, frame.nodes)
            self.open_anchors.discard(frame.anchor)
        return frame.value

    def _leaf(self, ev: yaml.NodeEvent, line: int | None) -> tuple[Any, int]:
        if isinstance(ev, yaml.AliasEvent):
            if ev.anchor in self.open_anchors:
                raise self.fail(line, "recursive alias")
            if ev.anchor not in self.anchors:
                raise self.fail(line, f"found undefined alias {ev.anchor!r}")
            target, nodes = self.anchors[ev.anchor]
            self._count(nodes, line)
            if line is not None:
                self.doc.lines.setdefault(self._child_path(), line)
            return target, nodes
        assert isinstance(ev, yaml.ScalarEvent)
        self._tag(ev.tag, line)
        path = self._child_path()
        if line is not None:
            self.doc.lines.setdefault(path, line)
        if ev.style in ("|", ">"):
            self.doc.blocks.add(path)
        self._count(1, line)
        tag = ev.tag if ev.tag not in (None, "!") else _resolve(ev.value, ev.implicit[0])
        value: Any
        if tag == _MERGE:
            value = _MERGE_KEY
        elif tag in _FAST and (fast := _FAST[tag](ev.value)) is not _SLOW_SCALAR:
            value = fast
        else:
            start: Any = ev.start_mark  # libyaml's Mark type, with the same fields
            end: Any = ev.end_mark
            node = yaml.ScalarNode(tag, ev.value, start, end, ev.style)
            try:
                value = self.constructor.construct_object(node)
            except yaml.constructor.ConstructorError as exc:
                raise self.fail(line, f"invalid YAML: {exc.problem}") from None
            if not isinstance(value, str | int | float | bool | type(None)):
                value = str(ev.value)  # timestamps: keep the text the user wrote
        if ev.anchor:
            self.anchors[ev.anchor] = (value, 1)
        return value, 1

    def _add(self, value: Any, nodes: int, line: int | None, ev: yaml.Event) -> None:
        top = self.stack[-1]
        top.nodes += nodes
        if value is _MERGE_KEY and (isinstance(top.value, list) or top.key is not _NO_KEY):
            raise self.fail(line, "'<<' is a merge key; it cannot stand as a value")
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if top.key is _NO_KEY:
            if isinstance(value, dict | list) and not isinstance(ev, yaml.AliasEvent):
                raise self.fail(line, "a mapping key must be a scalar")
            if not isinstance(value, Hashable) or isinstance(value, dict | list):
                raise self.fail(line, "a mapping key must be a scalar")
            if value is not _MERGE_KEY and (value in top.value or value in top.explicit):
                raise self.fail(line, f"duplicate key {value!r} (OmegaConf refuses it)")
            top.key, top.key_line = value, line or 0
            if line is not None and value is not _MERGE_KEY:
                self.doc.lines[(*top.path, value)] = line
            return
        key, top.key = top.key, _NO_KEY
        if key is _MERGE_KEY:
            merged = value if isinstance(value, list) else [value]
            if not all(isinstance(m, dict) for m in merged):
                raise self.fail(top.key_line, "a merge key ('<<') takes mappings only")
            top.merges.extend(merged)
            return
        top.explicit.add(key)
        top.value[key] = value


_STR = "tag:yaml.org,2002:str"


def _resolve(value: str, plain: bool) -> str:
    """The implicit tag of a scalar: PyYAML's ``Resolver.resolve`` for scalars, inlined
    (it is called once per scalar of every input)."""
    if not plain:
        return _STR
    table = _Loader.yaml_implicit_resolvers
    for tag, regexp in table.get(value[:1], ()):
        if regexp.match(value):
            return str(tag)
    for tag, regexp in table.get(None, ()):
        if regexp.match(value):
            return str(tag)
    return _STR


_SLOW_SCALAR = object()
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_PLAIN_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _fast_int(text: str) -> Any:
    return int(text) if _DECIMAL.fullmatch(text) else _SLOW_SCALAR


def _fast_float(text: str) -> Any:
    return float(text) if _PLAIN_FLOAT.fullmatch(text) else _SLOW_SCALAR


# The common plain scalars, converted without PyYAML's per-node constructor machinery
# (hex, octal, sexagesimal, inf and nan still go through it).
_FAST: dict[str, Any] = {
    "tag:yaml.org,2002:str": lambda text: text,
    "tag:yaml.org,2002:null": lambda text: None,
    "tag:yaml.org,2002:bool": lambda text: _BOOLS.get(text.lower(), _SLOW_SCALAR),
    "tag:yaml.org,2002:int": _fast_int,
    "tag:yaml.org,2002:float": _fast_float,
}


class _MergeKey:
    def __repr__(self) -> str:
        return "'<<'"


_MERGE_KEY = _MergeKey()
