"""The acceptance profile (docs/contract.md §2): what to verify, and where.

Relative paths in a profile are relative to the profile file. Secrets never live here:
credentials come from the environment and the standard chains.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rlark_acceptance.model.budgets import Budgets, HistorySpec, parse_budgets, parse_history
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.keypath import dotted
from rlark_acceptance.model.keypath import parse as parse_key
from rlark_acceptance.model.keys import near_misses, refuse_unknown, unknown_key
from rlark_acceptance.model.options import (
    OptionsSource,
    keys_of,
    option_keys,
    parse_dataclass,
    parse_options,
)
from rlark_acceptance.model.paths import user_path
from rlark_acceptance.model.timeouts import Timeouts, parse_timeouts
from rlark_acceptance.model.tracing import TraceSpec, parse_trace
from rlark_acceptance.model.training import TrainingSpec, parse_training
from rlark_acceptance.model.yamlsrc import YamlDoc, load_yaml


@dataclass
class NodeSpec:
    """One node as the cluster checks see it (3.2, 3.3, 5.7)."""

    name: str
    labels: dict[str, str]
    gpus: int
    ready: bool = True
    schedulable: bool = True


KeepOutputs = Literal["onFailure", "always", "never"]
KEEP_OUTPUTS: tuple[KeepOutputs, ...] = typing.get_args(KeepOutputs)


@dataclass
class Target:
    # The adapter that reaches the target: local, kubernetes, or a plugin's (entry-point
    # group rlark_acceptance.adapters).
    adapter: str = "local"
    # kubernetes: the kubeconfig file (None: the standard loading rules).
    kubeconfig: str | None = None
    context: str | None = None  # kubernetes: the kubeconfig's context (None: its current one)
    # Where the Job is submitted and its Worker observed.
    namespace: str = "rlinf-acceptance"
    # The local adapter's one node: this machine has no GPUs, so its capacity is declared.
    node: NodeSpec | None = None
    # The RLark clusters the target runs Workers in (default: the adapter's own); a Job
    # rendered from runInfo names the first.
    cluster: tuple[str, ...] = ()
    job_name: str | None = None  # a rendered Job's name (default: the profile's)
    mounts: tuple[Mapping[str, Any], ...] = ()  # a rendered Job's mounts
    # Whether what a run wrote at the persistent location is kept: onFailure | always | never.
    keep_outputs: KeepOutputs = "onFailure"
    # The adapter's own options, typed by the adapter (``model.options``); a read-only
    # mapping for an adapter that declares no type.
    options: object = field(default_factory=dict)

    def __repr__(self) -> str:  # the adapter options may hold credentials: never shown
        return (
            f"Target({self.adapter!r}, namespace={self.namespace!r}, "
            f"options={type(self.options).__name__})"
        )


@dataclass(frozen=True)
class _TargetKeys:
    """The keys of ``target:`` every adapter has; the rest are the adapter's options."""

    adapter: str = "local"
    kubeconfig: Path | None = None
    context: str | None = None
    namespace: str | None = None
    cluster: tuple[str, ...] = ()
    job_name: str | None = None
    mounts: tuple[Mapping[str, Any], ...] = ()
    keep_outputs: KeepOutputs = "onFailure"


@dataclass
class RunInfo:
    image: Any = None
    gpus: Any = None
    start_command: str | None = None
    prepare_command: str | None = None
    paths: dict[str, Any] = field(default_factory=dict)
    first_signal: Any = None
    expected_output: Any = None
    expected_node: str | None = None

    def __repr__(self) -> str:  # commands and the image (user:pass@) may hold secrets
        return f"RunInfo(gpus={self.gpus!r}, expected_node={self.expected_node!r})"


# The keys of each part of a profile, declared once (the rest beside their own models:
# ``_TargetKeys`` and the adapter's options, ``Timeouts``, ``training``, ``budgets``): any
# other key is refused at its line with the key meant (``model.keys``), as it would
# otherwise run with its default.
PROFILE_KEYS = (
    "name",
    "target",
    "rlinf",
    "job",
    "jobNormaliser",
    "runInfo",
    "safety",
    "timeouts",
    "training",
    "budgets",
    "history",
    "trace",
)
RLINF_KEYS = ("config", "configDir", "overrides")
RUN_INFO_KEYS = tuple(keys_of(RunInfo))
# The container paths the team wrote down (准备 RLinf 运行信息), each checked at P.3.
RUN_INFO_PATHS = ("data", "model", "checkpoint", "output")
SAFETY_KEYS = ("realRobotConfirmed",)
NODE_KEYS = tuple(keys_of(NodeSpec))


@dataclass
class Profile:
    path: Path
    doc: YamlDoc
    name: str
    target: Target
    rlinf_config: Path | None
    rlinf_config_dir: Path | None
    overrides: list[tuple[str, Location]]
    job: Path | None
    run_info: RunInfo
    real_robot_confirmed: bool
    timeouts: Timeouts
    job_normaliser: str | None = None  # a site's own reader of its console's Job YAML
    training: TrainingSpec = field(default_factory=TrainingSpec)  # T.1-T.4
    budgets: Budgets = field(default_factory=Budgets)  # B.1: seconds per Step 6 stage
    history: HistorySpec = field(default_factory=HistorySpec)  # B.1: the earlier runs
    trace: TraceSpec = field(default_factory=TraceSpec)  # the collector of the run's trace

    def loc(self, *keys: Any) -> Location:
        return self.doc.loc(*keys)

    @contextmanager
    def reading(self, key: str, path: Path) -> Iterator[None]:
        """Reads a file the profile names: one that cannot be read at all (missing, a FIFO, a
        device) is reported with the profile line that names it, which is what to fix."""
        try:
            yield
        except InputError as exc:
            if exc.where != str(path):
                raise  # a problem inside the file: its own file:line says where
            raise InputError(str(self.loc(*parse_key(key))), f"{key} {exc}") from None

    def __repr__(self) -> str:  # compact, and never the commands (they may hold secrets)
        return f"Profile({self.name!r}, {str(self.path)!r}, adapter={self.target.adapter!r})"


# The most GPUs one node can have: far above any real node, far below an overflow.
MAX_NODE_GPUS = 1024


def parse_node(doc: YamlDoc, raw: Any, *keys: Any, default_name: str = "local-node") -> NodeSpec:
    """One ``{name, gpus, labels, ready, schedulable}`` entry, each field checked at its line."""
    where = dotted(keys) or "node"
    if not isinstance(raw, dict):
        raise InputError(str(doc.loc(*keys)), f"{where} must be a mapping of name, gpus, labels")
    name = raw.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise InputError(str(doc.loc(*keys, "name")), f"{where}.name must be text")
    gpus = raw.get("gpus", 0)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or not 0 <= gpus <= MAX_NODE_GPUS:
        raise InputError(str(doc.loc(*keys, "gpus")), f"{where}.gpus must be a count")
    labels = raw.get("labels") or {}
    if not isinstance(labels, dict) or any(
        isinstance(v, dict | list) or v is None for v in labels.values()
    ):
        raise InputError(
            str(doc.loc(*keys, "labels")), f"{where}.labels must be a mapping of label: value"
        )
    flags = {}
    for flag in ("ready", "schedulable"):
        value = raw.get(flag, True)
        if not isinstance(value, bool):
            raise InputError(str(doc.loc(*keys, flag)), f"{where}.{flag} must be true or false")
        flags[flag] = value
    # After the values: a key beside a value that is wrong is no reason to miss the value.
    refuse_unknown(doc, keys, raw, NODE_KEYS, what="a node setting")
    return NodeSpec(
        name=name,
        labels={str(k): str(v) for k, v in labels.items()} or {"kubernetes.io/hostname": name},
        gpus=gpus,
        ready=flags["ready"],
        schedulable=flags["schedulable"],
    )


def _section(doc: YamlDoc, key: str, known: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The mapping at ``key`` (empty when absent); with ``known``, its keys are checked."""
    value = doc.data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(str(doc.loc(key)), f"{key} must be a mapping")
    if known is not None:
        refuse_unknown(doc, key, value, known)
    return value


def _path(base: Path, value: Any, doc: YamlDoc, *keys: str) -> Path | None:
    if value in (None, ""):
        return None
    where, name = str(doc.loc(*keys)), ".".join(keys)
    if not isinstance(value, str):
        raise InputError(where, f"{name} must be a path")
    return user_path(value, base, lambda why: InputError(where, f"{name} {value}: {why}"))


def load_profile(path: str | Path) -> Profile:
    p = Path(path)
    doc = load_yaml(p)
    base = p.parent
    # In the order a user reads the file's problems: one at a time, the first one first.
    refuse_unknown(doc, (), doc.data, PROFILE_KEYS, what="a key of a profile")
    target = _target(doc, base)
    rlinf = _section(doc, "rlinf", RLINF_KEYS)
    overrides = _overrides(doc, rlinf)
    run_info = _run_info(doc)
    timeouts = _timeouts(doc)
    training = parse_training(doc)
    budgets, history = parse_budgets(doc), parse_history(doc)
    trace = parse_trace(doc)
    confirmed = _real_robot_confirmed(doc)
    config, config_dir = _config(doc, rlinf, base)
    return Profile(
        path=p,
        doc=doc,
        name=_name(doc) or p.stem,
        target=target,
        rlinf_config=config,
        rlinf_config_dir=config_dir,
        overrides=overrides,
        job=_path(base, doc.data.get("job"), doc, "job"),
        run_info=run_info,
        real_robot_confirmed=confirmed,
        timeouts=timeouts,
        job_normaliser=_job_normaliser(doc),
        training=training,
        budgets=budgets,
        history=history,
        trace=trace,
    )


def _target(doc: YamlDoc, base: Path) -> Target:
    """``target:``: the keys every adapter has, then the adapter's own, parsed by its type."""
    raw = _section(doc, "target")
    common = set(keys_of(_TargetKeys))
    values = {str(k): v for k, v in raw.items() if k in common and v is not None}
    keys = parse_dataclass(_TargetKeys, OptionsSource("", values, doc, base))
    adapter = keys.adapter or "local"
    _known_adapter(adapter, doc)
    own = {str(k): v for k, v in raw.items() if k not in common | {"node"}}
    node_raw = raw.get("node")
    node = None if node_raw is None else parse_node(doc, node_raw, "target", "node")
    _target_keys(doc, raw, adapter)
    return Target(
        adapter=adapter,
        kubeconfig=_str(keys.kubeconfig),
        context=keys.context,
        namespace=keys.namespace or "rlinf-acceptance",
        node=node,
        cluster=keys.cluster,
        job_name=keys.job_name,
        mounts=keys.mounts,
        keep_outputs=keys.keep_outputs,
        options=parse_options(OptionsSource(adapter, own, doc, base)),
    )


def _target_keys(doc: YamlDoc, raw: dict[str, Any], adapter: str) -> None:
    """Every key of ``target:`` is one every adapter has, ``node``, or one of the adapter's
    options. An adapter that does not declare its options as a dataclass may take any key,
    so there only a near miss of a common key is refused: it is a slip, not an option."""
    common = (*keys_of(_TargetKeys), "node")
    options = option_keys(adapter)
    what = f"a target setting of the {adapter} adapter"
    if options is not None:
        refuse_unknown(doc, "target", raw, (*common, *options), what=what)
        return
    slip = next(near_misses({k: v for k, v in raw.items() if k not in common}, common), None)
    if slip is not None:
        raise unknown_key(doc, ("target",), slip[0], common, what)


def _overrides(doc: YamlDoc, rlinf: dict[str, Any]) -> list[tuple[str, Location]]:
    raw = rlinf.get("overrides") or []
    if not isinstance(raw, list):
        raise InputError(str(doc.loc("rlinf", "overrides")), "rlinf.overrides must be a list")
    return [(str(o), doc.loc("rlinf", "overrides", i)) for i, o in enumerate(raw)]


def _config(doc: YamlDoc, rlinf: dict[str, Any], base: Path) -> tuple[Path, Path | None]:
    """The validated RLinf config and its optional search path."""
    config = _path(base, rlinf.get("config"), doc, "rlinf", "config")
    if config is None:
        raise InputError(
            str(doc.loc("rlinf", "config")),
            "rlinf.config is missing: the profile names the validated RLinf YAML",
        )
    config_dir = _path(base, rlinf.get("configDir"), doc, "rlinf", "configDir")
    if config_dir is not None and not config_dir.is_dir():
        what = "is not a directory" if config_dir.exists() else "no such directory"
        raise InputError(
            str(doc.loc("rlinf", "configDir")), f"rlinf.configDir {config_dir}: {what}"
        )
    return config, config_dir


def _run_info(doc: YamlDoc) -> RunInfo:
    ri = _section(doc, "runInfo", RUN_INFO_KEYS)
    paths = ri.get("paths") or {}
    if not isinstance(paths, dict):
        raise InputError(str(doc.loc("runInfo", "paths")), "runInfo.paths must be a mapping")
    refuse_unknown(doc, ("runInfo", "paths"), paths, RUN_INFO_PATHS)
    for key in ("image", "startCommand", "prepareCommand", "expectedOutput", "expectedNode"):
        _text(doc, ri.get(key), "runInfo", key)
    return RunInfo(
        image=ri.get("image"),
        gpus=ri.get("gpus"),
        start_command=_str(ri.get("startCommand")),
        prepare_command=_str(ri.get("prepareCommand")),
        paths=paths,
        first_signal=ri.get("firstSignal"),
        expected_output=ri.get("expectedOutput"),
        expected_node=_str(ri.get("expectedNode")),
    )


def _timeouts(doc: YamlDoc) -> Timeouts:
    return parse_timeouts(doc, _section(doc, "timeouts"))


def _real_robot_confirmed(doc: YamlDoc) -> bool:
    confirmed = _section(doc, "safety", SAFETY_KEYS).get("realRobotConfirmed", False)
    if not isinstance(confirmed, bool):
        raise InputError(
            str(doc.loc("safety", "realRobotConfirmed")),
            "safety.realRobotConfirmed must be true or false",
        )
    return confirmed


def _job_normaliser(doc: YamlDoc) -> str | None:
    name = _str(doc.data.get("jobNormaliser"))
    if name is not None:
        from rlark_acceptance.model.job import normaliser

        normaliser(name, str(doc.loc("jobNormaliser")))  # unknown: at its line
    return name


def _text(doc: YamlDoc, value: Any, *keys: str) -> str | None:
    """A text field (numbers are taken as written); a mapping or list is refused at its line."""
    if value is None:
        return None
    if isinstance(value, dict | list | bool):
        raise InputError(str(doc.loc(*keys)), f"{'.'.join(keys)} must be text")
    return str(value)


def _name(doc: YamlDoc) -> str | None:
    """The profile's name: absent means the file's stem; written but empty is a mistake."""
    if "name" not in doc.data:
        return None
    name = _text(doc, doc.data["name"], "name")
    if not name or not name.strip():
        raise InputError(str(doc.loc("name")), "name must be text (the profile's name)")
    return name


def _known_adapter(name: str, doc: YamlDoc) -> None:
    if name in ("local", "kubernetes"):
        return
    from importlib.metadata import entry_points

    if any(ep.name == name for ep in entry_points(group="rlark_acceptance.adapters")):
        return
    raise InputError(
        str(doc.loc("target", "adapter")),
        f"target.adapter {name!r}: not local, kubernetes or an installed adapter plugin",
    )


def _str(v: Any) -> str | None:
    return None if v is None else str(v)
