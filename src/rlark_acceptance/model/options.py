"""Typed target options: the keys of a profile's ``target:`` beyond those every target has,
parsed once, when the profile is loaded, into the adapter's own type.

An adapter declares its options under the entry-point group
``rlark_acceptance.adapter_options``, with the adapter's name, as either

- a frozen dataclass: each field is one key of ``target:``, its name in camelCase
  (``without_gpu`` → ``withoutGpu``), its annotation what the key accepts (``bool``,
  ``int``, ``float``, ``str``, ``Path`` (relative to the profile), ``Literal[...]``,
  ``tuple[X, ...]`` (a list, or one value), ``Mapping[str, Any]``, ``X | None``), its
  default what an absent key means; a mapping's own keys, when it has a schema
  (``field(metadata={"keys": model.keys.Schema})``), are refused unless known; or
- a function ``(OptionsSource) -> options`` for anything else (raising ``InputError``
  through ``OptionsSource.error``).

A key the declared type does not know, or a value of the wrong type, is refused with the
profile's ``file:line`` (exit status 2). An adapter that declares nothing gets its keys as
they are written, as a read-only mapping.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.keys import check_keys, closest
from rlark_acceptance.model.paths import user_path
from rlark_acceptance.model.yamlsrc import YamlDoc

GROUP = "rlark_acceptance.adapter_options"
T = TypeVar("T")


@dataclass(frozen=True)
class OptionsSource:
    """The keys of ``target:`` an adapter's options are parsed from, and where they are."""

    adapter: str
    values: Mapping[str, Any]
    doc: YamlDoc | None = None  # None: options given in code, not read from a profile
    base: Path = Path(".")  # the profile's folder

    def where(self, *keys: Hashable) -> str:
        return str(self.doc.loc("target", *keys)) if self.doc is not None else "target"

    def error(self, key: str, message: str, *more: Hashable) -> InputError:
        return InputError(self.where(key, *more), f"target.{key} {message}")


def camel(name: str) -> str:
    """``without_gpu`` → ``withoutGpu``: the profile's spelling of a field."""
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def keys_of(cls: type) -> list[str]:
    """The ``target:`` keys a dataclass of options reads."""
    return [camel(f.name) for f in dataclasses.fields(cls) if f.init]


def parse_dataclass(cls: type[T], src: OptionsSource) -> T:
    """``cls`` (a dataclass) from ``src``, each value checked against its field's type."""
    hints = typing.get_type_hints(cls)
    by_key = {camel(f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in src.values.items():
        f = by_key.get(key)
        if f is None or not f.init:
            meant = closest(key, by_key)
            hint = f"; did you mean `{meant}`?" if meant else f" (known: {_listed(by_key)})"
            raise src.error(key, f"is not an option of the {src.adapter} adapter{hint}")
        kwargs[f.name] = convert(hints[f.name], value, src, key)
        if src.doc is not None:  # a mapping's own keys, where the field declares them
            check_keys(src.doc, ("target", key), value, f.metadata.get("keys"))
    return cls(**kwargs)


def _listed(keys: Iterable[str]) -> str:
    return ", ".join(sorted(keys)) or "none"


def convert(tp: Any, value: Any, src: OptionsSource, key: str, *at: Hashable) -> Any:
    """``value`` as type ``tp``; ``InputError`` at its line otherwise."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (tp,) = (a for a in args if a is not type(None))
        origin, args = typing.get_origin(tp), typing.get_args(tp)

    def bad(what: str) -> InputError:
        path = key + "".join(f"[{i}]" for i in at)
        return InputError(src.where(key, *at), f"target.{path} must be {what}")

    scalar = isinstance(value, int | float | str) and not isinstance(value, bool)
    if tp is bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise bad("a whole number")
        return value
    if tp is float:
        if not (scalar and isinstance(value, int | float) and math.isfinite(value)):
            raise bad("a number")
        return float(value)
    if tp is str:
        if not scalar:  # numbers are taken as written
            raise bad("text")
        return str(value)
    if tp is Path:
        if not isinstance(value, str) or not value:
            raise bad("a path")
        return user_path(value, src.base, lambda why: bad(f"a path: {why}"))
    if origin is Literal:
        if value not in args:
            choices = ", ".join(str(a) for a in args)
            raise bad(f"one of {choices}, not {value!r}")
        return value
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        items = value if isinstance(value, list) else [value]
        return tuple(convert(args[0], v, src, key, *at, i) for i, v in enumerate(items))
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, dict):
            raise bad("a mapping")
        return types.MappingProxyType(dict(value))
    raise TypeError(f"target.{key}: options of type {tp!r} cannot be declared")


def _declaration(adapter: str) -> Any:
    """What ``adapter`` registered under ``GROUP`` (None: nothing)."""
    for ep in entry_points(group=GROUP):
        if ep.name == adapter:
            return ep.load()
    return None


def declared(adapter: str) -> Callable[[OptionsSource], Any] | None:
    """How ``adapter`` parses its options (a dataclass or a function), if it declares it."""
    found = _declaration(adapter)
    if found is None:
        return None
    if dataclasses.is_dataclass(found) and isinstance(found, type):
        cls = found
        return lambda src: parse_dataclass(cls, src)
    if callable(found):
        return typing.cast(Callable[[OptionsSource], Any], found)
    raise TypeError(f"{GROUP}:{adapter} names neither a dataclass nor a function")


def option_keys(adapter: str) -> tuple[str, ...] | None:
    """The keys of ``target:`` the adapter's options take, when it declares them as a
    dataclass; None when it declares a function or nothing, which say nothing of their keys."""
    found = _declaration(adapter)
    if dataclasses.is_dataclass(found) and isinstance(found, type):
        return tuple(keys_of(found))
    return None


def parse_options(src: OptionsSource) -> object:
    """The adapter's typed options; its keys as written if it declares no type."""
    parse = declared(src.adapter)
    return parse(src) if parse is not None else types.MappingProxyType(dict(src.values))


def options_of(cls: type[T], adapter: str, options: object) -> T:
    """``options`` as ``cls``: as they are if the profile parsed them already; else (a
    Target built in code, or a mapping) parsed now, the same way."""
    if isinstance(options, cls):
        return options
    if isinstance(options, Mapping):
        return parse_dataclass(cls, OptionsSource(adapter, options))
    raise TypeError(f"the {adapter} adapter's options are {type(options).__name__}, not {cls}")
