"""RLinf configs as RLinf sees them: Hydra composition, overrides, then effective values.

RLinf starts with ``@hydra.main(version_base="1.1")``, so the values that matter (check 0.1:
the *effective* ``cluster.num_nodes``) are the ones after the defaults list is composed and
the command-line overrides are applied. Composing each config with Hydra's own compose API
costs ~0.1 s; auditing a tree of hundreds of configs wants far less, so the defaults list is
composed here following Hydra 1.1's rules (packages, ``_self_`` last by default, ``override``
entries, ``# @package`` headers), parsed files are cached, overrides are parsed by Hydra's
own grammar and interpolations are resolved by OmegaConf. ``tests/rlinf/test_config.py``
holds this composition equal to Hydra's on every real config.

Example::

    loader = ConfigLoader()
    cfg = loader.load("maniskill.yaml", overrides=[Override.cli("cluster.num_nodes=2")])
    cfg.select("cluster.num_nodes")  # -> 2

Longer than ~400 lines on purpose: Hydra's composition rules (defaults list, packages,
overrides, search path) act on one another and on the composed value, and are kept next to
each other so they can be read against Hydra's; the search path's environment and launch
scripts live in ``searchpath.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.keypath import KeyPath
from rlark_acceptance.model.keypath import dotted as dotted_key
from rlark_acceptance.model.keypath import parse as parse_key
from rlark_acceptance.model.yamlsrc import MAX_DEPTH, YamlDoc, parse_yaml, read_text
from rlark_acceptance.rlinf.searchpath import (
    ENV_REF,
    Checkout,
    JobVariables,
    checkout_root,
    resolve_entry,
)

if TYPE_CHECKING:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Override as HydraOverride

# Hydra itself is imported only when there are overrides to parse: importing the package
# costs more than auditing a few hundred configs.

_MISSING = object()
_SLOW = object()
_NODE_REF = re.compile(r"\$\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\}")


@dataclass(frozen=True)
class Override:
    """One Hydra override and where it was written (profile, run script, launch script)."""

    text: str
    origin: Location | None = None
    source: str = "profile"  # profile | run script | launch script | environment

    def __repr__(self) -> str:  # the value may be a secret (+wandb.api_key=...): key only
        return f"Override({self.text.partition('=')[0]!r}, value withheld, {self.source!r})"

    @classmethod
    def cli(cls, text: str) -> Override:
        return cls(text, None, "command line")


@dataclass(frozen=True)
class ConfigProblem:
    """Something in the config that RLinf would trip over, or that cannot be told offline."""

    message: str
    location: Location | None
    fatal: bool = False  # RLinf (Hydra) would refuse to start with this
    code: str | None = None  # the finding's code, where it is not config-unloadable

    def __repr__(self) -> str:  # the message quotes overrides and values: checks redact it
        return f"ConfigProblem(at {self.location}, fatal={self.fatal})"


@dataclass
class _Layer:
    """A config file merged at ``package`` (dotted, "" = root)."""

    package: str
    doc: YamlDoc


@dataclass
class RLinfConfig:
    """The composed config of one RLinf run, before and after interpolation."""

    path: str
    primary: YamlDoc
    data: dict[str, Any]
    layers: list[_Layer] = field(default_factory=list)
    applied: dict[str, Override] = field(default_factory=dict)  # dotted key -> override
    problems: list[ConfigProblem] = field(default_factory=list)
    search: list[Path] = field(default_factory=list)  # where defaults are looked up
    unset: list[str] = field(default_factory=list)  # search path variables not known
    _cfg: DictConfig | None = None

    def __repr__(self) -> str:  # the config may hold secrets (wandb.api_key): never its values
        return (
            f"RLinfConfig({self.path!r}, layers={len(self.layers)}, "
            f"overrides={sorted(self.applied)}, problems={len(self.problems)})"
        )

    @property
    def cfg(self) -> DictConfig:
        if self._cfg is None:
            # Hydra composes in struct mode; selecting keys must not create them.
            self._cfg = OmegaConf.create(self.data, flags={"allow_objects": False})
        return self._cfg

    def raw(self, key: str | KeyPath, default: Any = None) -> Any:
        """The composed value at ``key`` (a dotted key or a ``KeyPath``) with interpolations
        left as written; the empty key is no value (``resolved()`` is the whole config)."""
        path = parse_key(key) if isinstance(key, str) else tuple(key)
        return _at(self.data, path, default) if path else default

    def has(self, dotted: str) -> bool:
        return self.raw(dotted, _MISSING) is not _MISSING

    def select(self, dotted: str, default: Any = None) -> Any:
        """The effective value at ``dotted``; unresolvable interpolations raise ``Unresolved``."""
        raw = self.raw(dotted, _MISSING)
        if raw is _MISSING:
            return default
        try:
            value = self._value(dotted, raw)
        except _Failed as exc:
            raise Unresolved(dotted, raw, exc.why, cycle=exc.cycle) from None
        if isinstance(value, DictConfig) or OmegaConf.is_config(value):
            return self.resolved(dotted)
        return value

    def resolved(self, dotted: str = "") -> Any:
        """A plain container of the subtree, each leaf resolved where possible.

        A leaf that cannot be resolved offline keeps its text and is reported once in
        ``problems`` rather than failing the whole subtree.
        """
        raw = self.raw(dotted) if dotted else self.data
        return self._resolve_tree(raw, parse_key(dotted))

    def _resolve_tree(self, raw: Any, path: KeyPath) -> Any:
        if isinstance(raw, dict):
            return {k: self._resolve_tree(v, (*path, str(k))) for k, v in raw.items()}
        if isinstance(raw, list):
            out = []
            for i, item in enumerate(raw):
                if isinstance(item, dict | list) or not _is_interp(item):
                    out.append(self._resolve_tree(item, (*path, i)))
                else:
                    out.append(self._resolve_leaf(dotted_key((*path, i)), item))
            return out
        if _is_interp(raw):
            return self._resolve_leaf(dotted_key(path), raw)
        return raw

    def _resolve_leaf(self, dotted: str, raw: Any) -> Any:
        try:
            value = self._value(dotted, raw)
        except _Failed as exc:
            self.note_unresolved(dotted, raw, exc.why, cycle=exc.cycle)
            return raw
        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=False)
        return value

    def _value(self, dotted: str, raw: Any) -> Any:
        """The value at ``dotted`` (written as ``raw``): ours when it is a plain value or node
        references, else OmegaConf's; ``_Failed`` says why not, and whether it is a cycle."""
        try:
            fast = self._fast(raw, (dotted,))
        except _Cycle as exc:
            why = f"interpolation cycle {' → '.join(exc.chain)}"
            raise _Failed(why, cycle=True, chain=exc.chain) from None
        if fast is not _SLOW:
            return fast
        try:
            return OmegaConf.select(self.cfg, dotted, throw_on_resolution_failure=True)
        except (OmegaConfBaseException, ValueError, KeyError) as exc:
            why = _short(exc)
            raise _Failed(why, cycle=any(m in why for m in _CYCLE_MESSAGES)) from None

    def cycles(self) -> None:
        """Notes every interpolation that can never resolve, anywhere in the config.

        RLinf's entry points print the whole config resolved at start-up
        (``OmegaConf.to_container(cfg, resolve=True)``), so a cycle (``a: ${b}``,
        ``b: ${a}``), a reference to an enclosing node or a self-selection fails the run
        whichever key it sits on; values that need the run's environment or RLinf's own
        resolvers are not judged here (they are known only at run time).
        """
        reported: set[frozenset[str]] = set()
        for path, raw in _interpolated_leaves(self.data, ()):
            dotted = dotted_key(path)
            try:
                try:
                    fast = self._fast(raw, (dotted,))
                except _Cycle:
                    fast = _SLOW  # _value names it
                if fast is _SLOW and self._may_loop(path):
                    self._value(dotted, raw)
            except _Failed as exc:
                if not exc.cycle:
                    continue
                if exc.chain is not None:
                    # Each cycle once, at its first key as composed; the keys that only
                    # refer to it fail with it and are named where the pre-flight reads them.
                    members = frozenset(exc.chain)
                    if dotted not in members or members in reported:
                        continue
                    reported.add(members)
                self.note_unresolved(dotted, raw, exc.why, cycle=True)

    def _may_loop(self, start: KeyPath) -> bool:
        """Whether the references reachable from ``start`` lead back to it or to a node
        enclosing it, read from the text alone. Only then is OmegaConf asked: building it
        for every config with a resolver or a relative reference would cost more than the
        whole audit. A key built by an interpolation (``${a.${b}}``) is always asked."""
        todo, seen = [start], {start}
        while todo:
            node = todo.pop()
            raw = _at(self.data, node)
            if not _is_interp(raw):
                continue
            if _DYNAMIC_KEY.search(raw):
                return True
            for m in _REFERENCE.finditer(raw):
                dots, key = (
                    m.group("dots") or m.group("sdots") or "",
                    m.group("key") or m.group("skey"),
                )
                base = node[: len(node) - len(dots)] if dots else ()
                target = (*base, *parse_key(key))
                if start[: len(target)] == target:
                    return True
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return False

    def _fast(self, raw: Any, seen: tuple[str, ...]) -> Any:
        """Resolve plain values and ``${a.b}`` node references without building OmegaConf.

        Composing the whole config into OmegaConf costs more than everything else an audit
        does, and most values hold no interpolation or only references to other keys.
        Anything else (resolvers such as ``oc.env``, relative keys, escapes, missing
        values) returns ``_SLOW`` and goes to OmegaConf, so its semantics stay OmegaConf's.
        """
        if not isinstance(raw, str):
            return raw
        if raw == "???" or "\\" in raw:
            return _SLOW
        if "${" not in raw:
            return raw
        whole = _NODE_REF.fullmatch(raw)
        if whole:
            return self._ref(whole.group(1), seen)
        pieces: list[str] = []
        pos = 0
        for m in _NODE_REF.finditer(raw):
            value = self._ref(m.group(1), seen)
            if value is _SLOW or isinstance(value, dict | list):
                return _SLOW
            pieces += [raw[pos : m.start()], str(value)]
            pos = m.end()
        pieces.append(raw[pos:])
        text = "".join(pieces)
        return _SLOW if "${" in text else text

    def _ref(self, key: str, seen: tuple[str, ...]) -> Any:
        if key in seen:
            raise _Cycle((*seen[seen.index(key) :], key))
        target = self.raw(key, _MISSING)
        if target is _MISSING or isinstance(target, dict | list):
            return _SLOW
        return self._fast(target, (*seen, key))

    def note_unresolved(self, dotted: str, raw: Any, why: str, *, cycle: bool = False) -> None:
        if cycle:
            # Not an offline limit: this value never resolves, and RLinf stops on it.
            message = f"{dotted}: {raw!s} never resolves ({why})"
        else:
            message = f"{dotted}: {raw!s} cannot be resolved offline ({why})"
        if not any(p.message == message for p in self.problems):
            self.problems.append(ConfigProblem(message, self.location(dotted), fatal=cycle))

    def location(self, key: str | KeyPath) -> Location:
        """Where the effective value at ``key`` was written: an override or a file line.

        ``key`` is a dotted key (``cluster.node_groups[1].label``) or a ``KeyPath``; list
        items are followed too, so a finding inside a list points at the item's line.
        """
        path = parse_key(key) if isinstance(key, str) else tuple(key)
        text = dotted_key(path)
        for applied, ov in self.applied.items():
            if (text == applied or text.startswith((applied + ".", applied + "["))) and ov.origin:
                return ov.origin
        for layer in reversed(self.layers):
            pkg = parse_key(layer.package)
            if path[: len(pkg)] != pkg:
                continue
            rel = path[len(pkg) :]
            if _holds(layer.doc.data, rel):
                return layer.doc.loc(*rel)
        return self.primary.loc(*path)


def _holds(data: Any, path: KeyPath) -> bool:
    """True when ``path`` leads to a node of ``data`` through mappings and lists."""
    return _at(data, path, _MISSING) is not _MISSING


def _at(data: Any, path: KeyPath, default: Any = None) -> Any:
    """The node of ``data`` at ``path`` through mappings and lists, else ``default``."""
    node = data
    for part in path:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not in_list and not (isinstance(node, dict) and part in node):
            return default
        node = node[part]
    return node


class Unresolved(Exception):
    def __init__(self, key: str, raw: Any, why: str, *, cycle: bool = False) -> None:
        what = "never resolves" if cycle else "cannot be resolved offline"
        super().__init__(f"{key}: {raw} {what} ({why})")
        self.key = key
        self.raw = raw
        self.why = why
        self.cycle = cycle  # a cycle is RLinf's failure too, not a limit of offline reading


class _Cycle(Exception):
    """Raised by the fast path on a node reference back into the chain being resolved."""

    def __init__(self, chain: tuple[str, ...]) -> None:
        super().__init__(" → ".join(chain))
        self.chain = chain


class _Failed(Exception):
    def __init__(self, why: str, *, cycle: bool, chain: tuple[str, ...] | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.cycle = cycle
        self.chain = chain  # the keys of the cycle, when the fast path found it


# OmegaConf's words for an interpolation that can never resolve, whatever the environment.
_CYCLE_MESSAGES = (
    "Recursive interpolation detected",
    "Interpolation to parent node detected",
    "RecursionError raised while resolving",
)


# A node reference inside an interpolation (absolute or relative, also as a resolver's
# argument) and the key oc.select looks up; a key that is itself interpolated.
_REFERENCE = re.compile(
    r"\$\{\s*(?P<dots>\.*)(?P<key>[A-Za-z_][\w.]*(?:\[\d+\][\w.]*)*)\s*\}"
    r"|oc\.select:\s*(?P<sdots>\.*)(?P<skey>[A-Za-z_][\w.]*(?:\[\d+\][\w.]*)*)"
)
_DYNAMIC_KEY = re.compile(r"[\w.\]]\$\{|\$\{\s*\.*\$\{")


def _interpolated_leaves(data: Any, path: KeyPath) -> Iterable[tuple[KeyPath, str]]:
    """Every string leaf holding an interpolation, with its key path."""
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for k, v in items:
        if isinstance(v, dict | list):
            yield from _interpolated_leaves(v, (*path, k))
        elif _is_interp(v):
            yield (*path, k), v


def _env_reads(cfg: RLinfConfig, job_env: JobVariables) -> None:
    """Every value that reads a variable the Job never sets, without a default: RLinf
    resolves its whole config at start-up, and ``oc.env`` fails on it there."""
    for path, raw in _interpolated_leaves(cfg.data, ()):
        for m in ENV_REF.finditer(raw):
            name = m.group(1)
            if m.group(2) is not None or job_env.setting(name) is not None:
                continue
            if job_env.unread_launcher is not None:
                # The launch script that may set it is not here: said, not failed on.
                cfg.problems.append(
                    ConfigProblem(
                        f"{dotted_key(path)}: {raw} reads {name}, which nothing the Job runs "
                        f"before {job_env.unread_launcher} sets, and that launch script is "
                        "not on this machine: not judged",
                        cfg.location(dotted_key(path)),
                    )
                )
                continue
            dotted = dotted_key(path)
            cfg.problems.append(
                ConfigProblem(
                    f"{dotted}: {raw} reads {name}, and {job_env.unset_remedy(name)}",
                    cfg.location(dotted),
                    fatal=True,
                    code="env-unset",
                )
            )


class ConfigLoader:
    """Loads and composes RLinf configs, caching parsed files across loads."""

    def __init__(self) -> None:
        self._docs: dict[Path, YamlDoc] = {}
        self._headers: dict[Path, str | None] = {}
        self._parser: OverridesParser | None = None
        self._checkouts: dict[Path, Checkout] = {}

    def _header(self, path: Path) -> str | None:
        return self._headers.get(_real(path))

    def doc(self, path: Path) -> YamlDoc:
        key = _real(path)
        if key not in self._docs:
            text = read_text(path)
            self._docs[key] = parse_yaml(text, str(path))
            self._headers[key] = _package_header(text)
        return self._docs[key]

    def load(
        self,
        path: str | os.PathLike[str],
        *,
        config_dir: str | os.PathLike[str] | None = None,
        overrides: Iterable[Override] = (),
        shown: str | None = None,
        set_by: Mapping[str, str] | None = None,
        job_env: JobVariables | None = None,
    ) -> RLinfConfig:
        """Compose ``path`` with its defaults (searched in ``config_dir``) and overrides.

        ``job_env``: the environment the Job gives RLinf (``rlinf.environment``), the only
        one ``${oc.env:...}`` is read from when given. Raises ``InputError`` only when the
        primary file cannot be read; everything else (a missing default, a bad override)
        is a ``ConfigProblem``.
        """
        p = Path(path)
        primary = self.doc(p)
        if shown is not None and shown != primary.path:
            primary = dataclasses.replace(primary, path=shown)
        cfg = RLinfConfig(path=primary.path, primary=primary, data={})
        parsed = self._parse_overrides(list(overrides), cfg)
        main = Path(config_dir) if config_dir else p.parent
        search = self._search_path(cfg, p, main, parsed, set_by or {}, job_env)
        cfg.search = search
        # Hydra stops on a search path variable nothing sets: what it would compose after
        # (defaults not found, overrides of keys they hold) is not said in its place.
        before = len(cfg.problems)
        stopped = any(q.code == "env-unset" for q in cfg.problems)
        group_choices = {
            (o.key_or_group, o.package): (o, src)
            for o, src in parsed
            if self._is_group_override(o, primary, search)
        }
        for group_key, (_o, src) in group_choices.items():
            cfg.applied[f"<group>{group_key[0]}"] = src
        used: set[tuple[str, str | None]] = set()
        self._compose(cfg, primary, search, "", "", group_choices, used)
        for key, (_o, src) in group_choices.items():
            if key not in used:
                name = key[0] + (f"@{key[1]}" if key[1] else "")
                cfg.problems.append(
                    ConfigProblem(
                        f"override {src.text!r}: {name} matches no group in the defaults list; "
                        "Hydra refuses it",
                        src.origin,
                        fatal=True,
                    )
                )
        cfg.data.pop("hydra", None)
        for o, src in parsed:
            if (o.key_or_group, o.package) in group_choices:
                continue
            if o.key_or_group == "hydra" or o.key_or_group.startswith("hydra."):
                self._check_hydra_override(cfg, o, src)
                continue
            self._apply(cfg, o, src)
        if stopped:
            cfg.problems[before:] = [q for q in cfg.problems[before:] if not q.fatal]
        elif job_env is not None:
            _env_reads(cfg, job_env)
        return cfg

    # -- search path ------------------------------------------------------------------

    def _search_path(
        self,
        cfg: RLinfConfig,
        path: Path,
        main: Path,
        parsed: list[tuple[HydraOverride, Override]],
        set_by: Mapping[str, str],
        job_env: JobVariables | None,
    ) -> list[Path]:
        """The folders defaults are looked up in: the config's own, then ``hydra.searchpath``.

        Hydra appends the primary config's ``hydra.searchpath`` (or a command-line
        ``hydra.searchpath=[...]``, which replaces it) after the config's folder.
        """
        entries: Any = None
        where = cfg.primary.loc("hydra", "searchpath")
        for o, src in parsed:
            if o.key_or_group == "hydra.searchpath" and not o.is_delete():
                entries, where = o.value(), src.origin or where
        if entries is None:
            hydra = cfg.primary.data.get("hydra") if isinstance(cfg.primary.data, dict) else None
            entries = hydra.get("searchpath") if isinstance(hydra, dict) else None
        dirs = [main]
        if entries is None:
            return dirs
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            cfg.problems.append(
                ConfigProblem("hydra.searchpath must be a list of strings", where, fatal=True)
            )
            return dirs
        checkout = self._checkout(path)
        for i, text in enumerate(entries):
            entry = resolve_entry(text, path, os.environ, checkout, set_by, job_env)
            if entry.problem:
                # Hydra stops here, but RLinf's launch scripts always set the variable: what
                # matters is whether a default then goes missing (fatal, below).
                loc = cfg.primary.loc("hydra", "searchpath", i) if where.line else where
                fatal = entry.never_set or (entry.unset is None and not entry.outside)
                code = "env-unset" if entry.never_set else None
                cfg.problems.append(ConfigProblem(entry.problem, loc, fatal=fatal, code=code))
                if entry.unset:
                    cfg.unset.append(entry.unset)
            elif entry.path is not None:
                dirs.append(entry.path)
        return dirs

    def _checkout(self, config: Path) -> Checkout | None:
        root = checkout_root(config)
        if root is None:
            return None
        if root not in self._checkouts:
            self._checkouts[root] = Checkout(root)
        return self._checkouts[root]

    def _check_hydra_override(self, cfg: RLinfConfig, o: HydraOverride, src: Override) -> None:
        """``hydra.run.dir=...`` and friends go to Hydra's own config, checked against it."""
        key = o.key_or_group
        if key == "hydra.searchpath":
            return
        exists = key == "hydra" or _has_key(_hydra_schema(), parse_key(key)[1:])
        if _kind(o) == "CHANGE" and not exists:
            cfg.problems.append(
                ConfigProblem(
                    f"override {src.text!r}: Hydra's own config has no {key}; Hydra refuses it",
                    src.origin,
                    fatal=True,
                )
            )

    # -- overrides --------------------------------------------------------------------

    def _parse_overrides(
        self, overrides: list[Override], cfg: RLinfConfig
    ) -> list[tuple[HydraOverride, Override]]:
        out: list[tuple[HydraOverride, Override]] = []
        if not overrides:
            return out
        from hydra.core.override_parser.overrides_parser import OverridesParser
        from hydra.errors import HydraException

        if self._parser is None:
            self._parser = OverridesParser.create()
        for ov in overrides:
            if _nesting(ov.text) > MAX_DEPTH:
                # Hydra's grammar recurses per bracket: refuse before it hits the limit.
                cfg.problems.append(
                    ConfigProblem(
                        f"override {ov.text[:60]!r}... is nested deeper than {MAX_DEPTH} levels",
                        ov.origin,
                        fatal=True,
                    )
                )
                continue
            try:
                (parsed,) = self._parser.parse_overrides([ov.text])
            except (HydraException, ValueError, RecursionError) as exc:
                cfg.problems.append(
                    ConfigProblem(
                        f"override {ov.text!r} is not valid Hydra syntax: {_short(exc)}",
                        ov.origin,
                        fatal=True,
                    )
                )
                continue
            if parsed.is_sweep_override():
                cfg.problems.append(
                    ConfigProblem(
                        f"override {ov.text!r} is a sweep; a single run cannot take it",
                        ov.origin,
                        fatal=True,
                    )
                )
                continue
            out.append((parsed, ov))
        return out

    def _is_group_override(self, o: HydraOverride, primary: YamlDoc, search: list[Path]) -> bool:
        """``env@env.train=x`` or ``model=x`` selects a config group, not a value."""
        if o.is_delete() or not isinstance(o.value(), str):
            return False
        if o.package is not None:
            return True
        return "." not in o.key_or_group and any((d / o.key_or_group).is_dir() for d in search)

    def _apply(self, cfg: RLinfConfig, o: HydraOverride, src: Override) -> None:
        key = o.key_or_group
        exists = cfg.has(key)
        if o.is_delete():
            # Hydra selects the key first and takes a null value for a missing one.
            if not exists or cfg.raw(key) is None:
                cfg.problems.append(
                    ConfigProblem(
                        f"override {src.text!r} deletes {key}, which the config lacks",
                        src.origin,
                        fatal=True,
                    )
                )
                return
            _delete(cfg.data, parse_key(key))
            cfg.applied[key] = src
            return
        if _kind(o) == "CHANGE" and not exists:
            # Hydra composes in struct mode: a plain override of a missing key is refused.
            cfg.problems.append(
                ConfigProblem(
                    f"override {src.text!r}: the config has no {key}; Hydra refuses it "
                    f"(append with +{key}=...)",
                    src.origin,
                    fatal=True,
                )
            )
            return
        if _kind(o) == "ADD" and exists:
            cfg.problems.append(
                ConfigProblem(
                    f"override {src.text!r}: {key} exists already; Hydra refuses "
                    f"to append it (use ++{key}=...)",
                    src.origin,
                    fatal=True,
                )
            )
            return
        value = o.value()
        current = cfg.raw(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge(current, copy.deepcopy(value))
        else:
            _set(cfg.data, parse_key(key), value)
        cfg.applied[key] = src
        cfg._cfg = None

    # -- defaults list ----------------------------------------------------------------

    def _compose(
        self,
        cfg: RLinfConfig,
        doc: YamlDoc,
        search: list[Path],
        group_dir: str,
        package: str,
        choices: Mapping[tuple[str, str | None], tuple[HydraOverride, Override]],
        used: set[tuple[str, str | None]],
        *,
        depth: int = 0,
    ) -> None:
        if depth > 20:
            cfg.problems.append(ConfigProblem("defaults nest deeper than 20", doc.loc(), True))
            return
        data = doc.data if isinstance(doc.data, dict) else {}
        defaults = data.get("defaults", [])
        body = {k: v for k, v in data.items() if k != "defaults"}
        if not isinstance(defaults, list):
            cfg.problems.append(ConfigProblem("defaults must be a list", doc.loc("defaults"), True))
            defaults = []
        entries, overrides_in_list = self._entries(cfg, doc, defaults)
        self_seen = False
        for index, entry in entries:
            if entry == "_self_":
                self_seen = True
                self._merge_layer(cfg, doc, body, package)
                continue
            group, option, pkg, optional, selectable = entry
            if group.startswith("hydra/") or group == "hydra":
                continue
            # Only 'group: option' entries are choices; 'group/option' names one config.
            if selectable:
                key = (group, pkg)
                if key in choices:
                    option = str(choices[key][0].value())
                    used.add(key)
                elif (group, None) in choices and pkg is None:
                    option = str(choices[(group, None)][0].value())
                    used.add((group, None))
                elif group in overrides_in_list:
                    option = overrides_in_list[group]
            if option is None:
                continue
            rel_group = _join_path(group_dir, group)
            file = _find(search, posixpath.join(rel_group.strip("/"), f"{option}.yaml"))
            where = doc.loc("defaults", index)
            if file is None:
                if not optional:
                    shown = ", ".join(str(d) for d in search)
                    why = f" ({', '.join(cfg.unset)} not set)" if cfg.unset else ""
                    cfg.problems.append(
                        ConfigProblem(
                            f"default {rel_group}/{option} not found in {shown}{why}", where, True
                        )
                    )
                continue
            try:
                child = self.doc(file)
            except InputError as exc:
                cfg.problems.append(ConfigProblem(str(exc), where, True))
                continue
            child_pkg = _child_package(self._header(file), group, pkg, package)
            child_dir = rel_group
            self._compose(
                cfg,
                child,
                search,
                child_dir,
                child_pkg,
                {},
                used,
                depth=depth + 1,
            )
        if not self_seen:
            # Hydra 1.1: a config's own content overrides what its defaults list brought in.
            self._merge_layer(cfg, doc, body, package)

    def _entries(
        self, cfg: RLinfConfig, doc: YamlDoc, defaults: list[Any]
    ) -> tuple[list[tuple[int, Any]], dict[str, str | None]]:
        entries: list[tuple[int, Any]] = []
        overrides: dict[str, str | None] = {}
        for i, raw in enumerate(defaults):
            if raw == "_self_":
                entries.append((i, "_self_"))
                continue
            optional = False
            if isinstance(raw, str):
                spec, option = raw, None
                if "/" in spec.rstrip("/") or "@" in spec:
                    # 'env/maniskill@env.train': group 'env', option 'maniskill'
                    head, _, pkg_part = spec.partition("@")
                    group, _, option = head.rpartition("/")
                    entries.append((i, (group, option, pkg_part or None, False, False)))
                else:
                    # A config in the same folder, merged at this package.
                    entries.append((i, ("", spec, None, False, False)))
                continue
            if isinstance(raw, dict) and len(raw) == 1:
                ((k, v),) = raw.items()
                k = str(k).strip()
                if k.startswith("override "):
                    group = k.removeprefix("override ").strip().partition("@")[0]
                    overrides[group] = None if v is None else str(v)
                    continue
                if k.startswith("optional "):
                    optional = True
                    k = k.removeprefix("optional ").strip()
                group, _, pkg_part = k.partition("@")
                option = None if v is None else str(v)
                entries.append((i, (group, option, pkg_part or None, optional, True)))
                continue
            cfg.problems.append(
                ConfigProblem(f"defaults entry {raw!r} is not understood", doc.loc("defaults", i))
            )
        return entries, overrides

    def _merge_layer(self, cfg: RLinfConfig, doc: YamlDoc, body: dict[str, Any], pkg: str) -> None:
        cfg.layers.append(_Layer(pkg, doc))
        if not body:
            return
        target = cfg.data
        for part in map(str, parse_key(pkg)):  # a package names mapping keys only
            nxt = target.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                target[part] = nxt
            target = nxt
        _merge(target, copy.deepcopy(body))


def _child_package(header: str | None, group: str, pkg: str | None, parent_pkg: str) -> str:
    """The package a default lands in (Hydra 1.1: relative to the including config's)."""
    if pkg is not None:
        if pkg == "_global_":
            return ""
        if pkg == "_here_":
            return parent_pkg
        return _join(parent_pkg, pkg)
    if header is not None:
        if header == "_global_":
            return ""
        if header != "_group_":
            return header
    if group.startswith("/"):
        return group.strip("/").replace("/", ".")
    return _join(parent_pkg, group.strip("/").replace("/", "."))


def _package_header(text: str) -> str | None:
    # Hydra reads '# @package X' from the comment lines at the top of the file.
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            return None
        body = s.lstrip("#").strip()
        if body.startswith("@package"):
            return body.removeprefix("@package").strip()
    return None


def _nesting(text: str) -> int:
    depth = deepest = 0
    for c in text:
        if c in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]})":
            depth -= 1
    return deepest


def _kind(o: HydraOverride) -> str:
    """``CHANGE``, ``ADD``, ``FORCE_ADD`` or ``DEL``: Hydra's ``OverrideType`` by name."""
    return o.type.name


@functools.lru_cache(maxsize=4096)
def _real(path: Path) -> Path:
    """The real path of a config file; files of one audit are looked up many times."""
    return Path(os.path.realpath(path))


def _find(search: list[Path], rel: str) -> Path | None:
    """The first folder of the search path that holds ``rel``, as Hydra looks it up."""
    for d in search:
        file = d / rel
        if file.is_file():
            return _real(file)
    return None


_SCHEMA: list[DictConfig] = []


def _hydra_schema() -> DictConfig:
    if not _SCHEMA:
        from hydra.conf import HydraConf

        _SCHEMA.append(OmegaConf.structured(HydraConf))
    return _SCHEMA[0]


def _has_key(cfg: Any, path: KeyPath) -> bool:
    node = cfg
    for part in path:
        if not OmegaConf.is_dict(node):
            return False
        try:
            child = node._get_node(part, throw_on_missing_key=False)
        except OmegaConfBaseException:
            return False
        if child is None:
            return False
        node = child
    return True


def _join(a: str, b: str) -> str:
    return f"{a}.{b}" if a and b else a or b


def _join_path(group_dir: str, group: str) -> str:
    if group.startswith("/"):
        return group.lstrip("/")
    return os.path.normpath(os.path.join(group_dir, group)) if group_dir else group


def _merge(dst: dict[Any, Any], src: dict[Any, Any]) -> None:
    """OmegaConf merge on plain data: mappings merge key by key, anything else replaces."""
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v


def _set(data: dict[Any, Any], parts: KeyPath, value: Any) -> None:
    node = data
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[parts[-1]] = value


def _delete(data: dict[Any, Any], parts: KeyPath) -> None:
    node: Any = data
    for part in parts[:-1]:
        node = node[part]
    del node[parts[-1]]


def _is_interp(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
