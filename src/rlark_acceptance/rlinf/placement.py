"""Classify the ``cluster`` section of an RLinf config for a one-node RLark Worker.

Pure: it takes the *effective* ``cluster`` mapping (already merged with its Hydra
defaults and the run command's overrides by the caller) and never does I/O; everything
wrong in the content is reported as a :class:`PlacementProblem` with the key path, which
the caller maps to ``file:line``. An exception is a bug here and keeps its traceback (the
property tests drive arbitrary sections through it).

One module of ~800 lines on purpose: it mirrors one parser of RLinf (rank ranges, process
ranks, node groups, hardware) whose rules refer to each other; split, each part would need
the others' private helpers.

The syntax and the validation follow RLinf's own parser (``rlinf/scheduler/placement/
placement.py`` ``ComponentPlacement._parse_rank_map``, ``rlinf/scheduler/cluster/
config.py`` and ``utils.parse_rank_config``) and its docs (placement.rst, hetero.rst).
What needs the live cluster (how many GPUs a node really has) is left to check 3.3.

Example::

    >>> s = summarize_cluster({"num_nodes": 1,
    ...                        "component_placement": {"actor": "0-7", "env,rollout": "4-7"}})
    >>> s.gpus_required, s.gpus_all, s.real_robot, s.problems
    (8, False, False, ())
    >>> redirect_reasons(summarize_cluster({"num_nodes": 2, "component_placement": {"a": 0}}))
    ['num_nodes=2']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rlark_acceptance.model.keypath import KeyPath, dotted, safe_text

ResourceKind = Literal["accelerator", "hardware", "node"]

ROOT: KeyPath = ("cluster",)
# RLinf's implicit groups: "cluster" is the default group (all nodes, accelerators
# auto-detected); "node" places by node rank only. Both are reserved labels.
DEFAULT_GROUP = "cluster"
NODE_GROUP = "node"
RESERVED_LABELS = frozenset({DEFAULT_GROUP, NODE_GROUP})
# RLinf's default hardware type (rlinf/scheduler/hardware/accelerators): a group whose
# hardware_type is this one holds accelerators, not robots.
ACCELERATOR_HW_TYPE = "Accelerator"
# Ranks above this are refused: no node has that many GPUs or processes per component,
# and materialising a range such as 0-999999999999 would exhaust memory.
MAX_RANK = 65_535

_NODE_GROUP_KEYS = frozenset(
    {"label", "node_ranks", "env_configs", "hardware", "hardware_type", "ignore_hardware"}
)
_ENV_CONFIG_KEYS = frozenset({"node_ranks", "env_vars", "python_interpreter_path"})
_GROUP_FORM_KEYS = frozenset({"node_group", "placement"})
# At most 9 digits: int() of thousands of digits raises, and no rank is that large.
_RANGE_RE = re.compile(r"\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?")
_LONG_NUMBER_RE = re.compile(r"[\s\d-]*\d{10,}[\s\d-]*")
_NEGATIVE_RE = re.compile(r"\s*-\s*\d|.*-\s*-")


@dataclass(frozen=True)
class PlacementProblem:
    """One thing RLinf would refuse (or that the harness cannot classify), and where."""

    message: str  # names the key and the bad text: "cluster.component_placement.actor: ..."
    path: KeyPath


@dataclass(frozen=True)
class EnvConfig:
    """One ``env_configs`` entry of a node group (software environment of some nodes)."""

    node_ranks: tuple[int, ...] | None  # None when unparseable or 'all' with num_nodes unknown
    env_var_keys: tuple[str, ...]  # names only: values may be sensitive (check 5.8 reads them)
    python_interpreter_path: str | None
    path: KeyPath


@dataclass(frozen=True)
class NodeGroup:
    """One entry of ``cluster.node_groups``."""

    label: str
    node_ranks: tuple[int, ...] | None  # None when unparseable or 'all' with num_nodes unknown
    hardware_type: str | None  # hardware.type (or an explicit hardware_type), e.g. "Franka"
    hardware_configs: int  # number of hardware.configs entries (robots declared)
    hardware_node_ranks: tuple[int, ...]  # node_rank of each hardware config
    ignore_hardware: bool
    env_configs: tuple[EnvConfig, ...]
    path: KeyPath

    @property
    def declares_hardware(self) -> bool:
        return self.hardware_type is not None and self.hardware_type != ACCELERATOR_HW_TYPE

    @property
    def resource_kind(self) -> ResourceKind:
        # RLinf: hardware type given -> that hardware; ignore_hardware -> nodes; otherwise
        # the accelerators it detects (a GPU node is what this harness targets).
        if self.declares_hardware:
            return "hardware"
        if self.ignore_hardware:
            return "node"
        return "accelerator"


@dataclass(frozen=True)
class PlacementSegment:
    """One ``resource_ranks[:process_ranks]`` part of a placement string."""

    resources: tuple[int, int] | None  # inclusive (first, last); None = 'all'
    processes: tuple[int, int] | None  # inclusive, explicit or implied; None = unknown
    explicit_processes: bool


@dataclass(frozen=True)
class ComponentPlacement:
    """The placement of one ``component_placement`` key (one or more components)."""

    components: tuple[str, ...]  # from the key "actor,rollout" (whitespace stripped)
    node_group: str | None  # None = default group; several labels are joined with ","
    resource_kind: ResourceKind
    hardware_type: str | None  # e.g. "Franka" when the group has hardware
    resource_ranks: tuple[int, ...] | None  # None when 'all'
    uses_all: bool
    process_count: int | None  # world size of each component; None when unknown
    path: KeyPath
    node_group_labels: tuple[str, ...] = ()  # () = default group
    placement_text: str | None = None
    segments: tuple[PlacementSegment, ...] = ()
    valid: bool = True  # False when a problem was recorded for this key


@dataclass(frozen=True)
class ClusterSummary:
    num_nodes: int | None  # None when missing/not an int (then a problem is recorded)
    node_groups: tuple[NodeGroup, ...]  # the declared groups; "cluster"/"node" are implicit
    placements: tuple[ComponentPlacement, ...]
    gpus_required: int | None  # highest accelerator rank + 1; 0 if no GPU; None if 'all'/unknown
    gpus_all: bool  # some accelerator component uses 'all'
    real_robot: bool  # some node group declares `hardware` (robots: Franka etc.)
    hardware_groups: tuple[str, ...]
    problems: tuple[PlacementProblem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def _key(key: Any) -> str | int:
    # Keep the key as it is in the mapping so the caller can look its line up.
    return key if isinstance(key, str | int) else safe_text(key)


def _short(value: Any, limit: int = 60) -> str:
    text = safe_text(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Collector:
    def __init__(self) -> None:
        self.problems: list[PlacementProblem] = []

    def add(self, path: KeyPath, message: str) -> None:
        self.problems.append(PlacementProblem(f"{dotted(path)}: {message}", path))


# --- rank syntax -------------------------------------------------------------------------


def _scalar_text(value: Any, path: KeyPath, out: _Collector, what: str) -> str | None:
    """The text of a rank field. YAML gives ``placement: 0`` as an int, RLinf str()s it."""
    if isinstance(value, bool):
        out.add(path, f"{what} must be a rank string such as '0-3', not the boolean {value}")
        return None
    if isinstance(value, int):
        if not -MAX_RANK <= value <= MAX_RANK:
            # Also keeps str() away from ints too long to print.
            out.add(path, f"{what} {_short(value)} is out of range")
            return None
        return str(value)
    if isinstance(value, str):
        return value
    if value is None:
        out.add(path, f"{what} is empty")
        return None
    out.add(
        path,
        f"{what} must be a rank string such as '0-3' or '0,2-3', "
        f"not {type(value).__name__} {_short(value)!r}",
    )
    return None


def _parse_range(text: str, path: KeyPath, out: _Collector, what: str) -> tuple[int, int] | None:
    """``"a"`` or ``"a-b"`` (inclusive) as RLinf's parse_rank_config reads one range."""
    match = _RANGE_RE.fullmatch(text)
    if match is None:
        if _LONG_NUMBER_RE.fullmatch(text):
            out.add(path, f"{what} '{_short(text.strip())}' is implausibly large")
        elif _NEGATIVE_RE.match(text):
            out.add(path, f"negative {what} '{_short(text.strip())}'")
        elif text.strip() == "":
            out.add(path, f"empty {what}")
        else:
            out.add(path, f"{what} '{_short(text.strip())}' is not a number or a range a-b")
        return None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        out.add(path, f"reversed range '{first}-{last}' in {what}")
        return None
    if last > MAX_RANK:
        out.add(path, f"{what} {last} is implausibly large (more than {MAX_RANK})")
        return None
    return first, last


def parse_rank_list(
    value: Any, path: KeyPath, out: _Collector, what: str, available: int | None
) -> tuple[int, ...] | None:
    """A rank list ``"0-3,5"`` or ``"all"`` (node_ranks of a node group / env config).

    ``available`` is how many ranks exist (num_nodes), or None when unknown.
    """
    text = _scalar_text(value, path, out, what)
    if text is None:
        return None
    if text.strip().lower() == "all":
        return tuple(range(available)) if available is not None else None
    ranks: set[int] = set()
    ok = True
    for part in text.split(","):
        if part.strip() == "":
            continue  # RLinf skips empty parts ("0,1,")
        rng = _parse_range(part, path, out, what)
        if rng is None:
            ok = False
            continue
        if available is not None and rng[1] >= available:
            out.add(path, f"{what} '{part.strip()}' is outside 0-{available - 1}")
            ok = False
            continue
        ranks.update(range(rng[0], rng[1] + 1))
    if not ok:
        return None
    if not ranks:
        out.add(path, f"{what} is empty")
        return None
    return tuple(sorted(ranks))


def _parse_placement(
    text: str, path: KeyPath, out: _Collector, kind: ResourceKind
) -> tuple[list[PlacementSegment], bool]:
    """Parse ``resource_ranks[:process_ranks],...`` with RLinf's checks. Returns (segments, ok)."""
    before = len(out.problems)
    segments: list[PlacementSegment] = []
    parts = [p.strip() for p in text.strip().split(",")]
    parts = [p for p in parts if p]  # RLinf skips empty parts
    if not parts:
        out.add(path, "placement is empty")
        return segments, False
    resource_spans: list[tuple[int, int]] = []  # resource ranges seen so far
    next_process: int | None = 0  # the process rank the next segment must start at
    for part in parts:
        sides = part.split(":")
        if len(sides) > 2:
            out.add(path, f"'{_short(part)}' has more than one ':' (resource_ranks:process_ranks)")
            next_process = None
            continue
        res_text = sides[0].strip()
        resources: tuple[int, int] | None
        if res_text.lower() == "all":
            resources = None
            if len(parts) > 1 and not any(seg.resources is None for seg in segments):
                # 'all' already takes every resource: any other segment repeats some.
                out.add(path, f"'all' cannot be combined with other segments in '{_short(text)}'")
        else:
            resources = _parse_range(res_text, path, out, "resource rank")
            if resources is None:
                next_process = None
                continue
            first, last = resources
            if any(a <= last and first <= b for a, b in resource_spans):
                out.add(path, f"resource ranks '{res_text}' repeat ranks of an earlier segment")
            elif resource_spans and first < max(b for _, b in resource_spans):
                out.add(
                    path,
                    f"resource ranks '{res_text}' come after higher ones: "
                    "segments must be in ascending order",
                )
            resource_spans.append(resources)
        n_res = None if resources is None else resources[1] - resources[0] + 1

        processes: tuple[int, int] | None
        explicit = len(sides) == 2
        if explicit:
            proc_text = sides[1].strip()
            if proc_text.lower() == "all":
                out.add(path, f"'all' is not allowed for process ranks in '{_short(part)}'")
                next_process = None
                segments.append(PlacementSegment(resources, None, True))
                continue
            processes = _parse_range(proc_text, path, out, "process rank")
            if processes is None:
                next_process = None
                segments.append(PlacementSegment(resources, None, True))
                continue
        elif n_res is None or next_process is None:
            processes = None  # implied by 'all' (unknown count) or after an unreadable segment
        else:
            processes = (next_process, next_process + n_res - 1)

        if processes is not None and next_process is not None and explicit:
            if processes[0] < next_process:
                out.add(
                    path,
                    f"process ranks '{proc_text}' repeat earlier ones: each process rank "
                    "must appear exactly once",
                )
            elif processes[0] != next_process:
                out.add(
                    path,
                    f"process ranks '{proc_text}' are not continuous: expected them to "
                    f"start at {next_process} (process ranks run 0..N-1)",
                )
        n_proc = None if processes is None else processes[1] - processes[0] + 1
        if n_res is not None and n_proc is not None:
            if n_proc % n_res and n_res % n_proc:
                out.add(
                    path,
                    f"'{_short(part)}' maps {n_proc} processes to {n_res} resources: "
                    "one count must be a multiple of the other",
                )
            elif kind == "node" and n_res > n_proc:
                out.add(
                    path,
                    f"'{_short(part)}' gives one process {n_res // n_proc} nodes: "
                    "a process cannot span several nodes",
                )
        next_process = None if processes is None else processes[1] + 1
        segments.append(PlacementSegment(resources, processes, explicit))
    return segments, len(out.problems) == before


# --- node groups -------------------------------------------------------------------------


def _parse_node_groups(raw: Any, num_nodes: int | None, out: _Collector) -> tuple[NodeGroup, ...]:
    path: KeyPath = (*ROOT, "node_groups")
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        out.add(path, f"must be a list of node groups ('- label: ...'), not {type(raw).__name__}")
        return ()
    groups: list[NodeGroup] = []
    seen: set[str] = set()
    hw_owner: dict[tuple[int, str], str] = {}
    for index, entry in enumerate(raw):
        gpath: KeyPath = (*path, index)
        if not isinstance(entry, Mapping):
            out.add(gpath, f"each node group must be a mapping, not {type(entry).__name__}")
            continue
        for key in entry:
            if key not in _NODE_GROUP_KEYS:
                out.add(
                    (*gpath, _key(key)),
                    f"unknown node group field '{_short(key)}' "
                    f"(RLinf accepts {', '.join(sorted(_NODE_GROUP_KEYS))})",
                )
        label = _label(entry.get("label"), (*gpath, "label"), out, "label")
        if label is not None:
            if label in RESERVED_LABELS:
                out.add((*gpath, "label"), f"label '{label}' is reserved by RLinf")
            elif label in seen:
                out.add((*gpath, "label"), f"label '{label}' is declared twice")
        if "node_ranks" not in entry:
            out.add(gpath, "node_ranks is missing")
            node_ranks = None
        else:
            node_ranks = parse_rank_list(
                entry["node_ranks"], (*gpath, "node_ranks"), out, "node rank", num_nodes
            )
        ignore_hw = entry.get("ignore_hardware", False)
        if not isinstance(ignore_hw, bool):
            out.add((*gpath, "ignore_hardware"), "ignore_hardware must be true or false")
            ignore_hw = False
        hw_type, hw_count, hw_nodes = _parse_hardware(entry, gpath, node_ranks, ignore_hw, out)
        env_configs = _parse_env_configs(entry.get("env_configs"), gpath, node_ranks, out)
        if hw_type is not None and label is not None:
            for rank in hw_nodes:
                owner = hw_owner.setdefault((rank, hw_type), label)
                if owner != label:
                    out.add(
                        (*gpath, "hardware"),
                        f"{hw_type} hardware of node {rank} is already declared by "
                        f"node group '{owner}'",
                    )
        if label is None or label in RESERVED_LABELS or label in seen:
            continue  # unusable as a reference; the problem is recorded
        seen.add(label)
        groups.append(
            NodeGroup(
                label=label,
                node_ranks=node_ranks,
                hardware_type=hw_type,
                hardware_configs=hw_count,
                hardware_node_ranks=hw_nodes,
                ignore_hardware=ignore_hw,
                env_configs=env_configs,
                path=gpath,
            )
        )
    return tuple(groups)


def _label(value: Any, path: KeyPath, out: _Collector, what: str) -> str | None:
    # RLinf str()s labels, so `label: 4090` (a YAML int) is the group "4090".
    if isinstance(value, bool) or not isinstance(value, str | int):
        if value is None:
            out.add(path, f"{what} is missing")
        else:
            out.add(path, f"{what} must be a string, not {type(value).__name__}")
        return None
    text = safe_text(value).strip()
    if not text:
        out.add(path, f"{what} is empty")
        return None
    return text


def _parse_hardware(
    entry: Mapping[Any, Any],
    gpath: KeyPath,
    node_ranks: tuple[int, ...] | None,
    ignore_hw: bool,
    out: _Collector,
) -> tuple[str | None, int, tuple[int, ...]]:
    hw = entry.get("hardware")
    explicit_type = entry.get("hardware_type")
    hpath: KeyPath = (*gpath, "hardware")
    if hw is None:
        if explicit_type is None:
            return None, 0, ()
        # RLinf accepts a bare hardware_type; robots are then configured from env vars.
        label = _label(explicit_type, (*gpath, "hardware_type"), out, "hardware_type")
        if label is not None and ignore_hw:
            out.add((*gpath, "hardware_type"), "hardware_type conflicts with ignore_hardware")
        return label, 0, ()
    if explicit_type is not None:
        out.add((*gpath, "hardware_type"), "hardware_type must not be given with hardware")
    if ignore_hw:
        out.add(hpath, "hardware cannot be declared when ignore_hardware is true")
    if not isinstance(hw, Mapping):
        out.add(hpath, f"hardware must be a mapping with type and configs, not {type(hw).__name__}")
        # Still a declared device: the group is treated as a robot group (safety first).
        return "unknown", 0, ()
    hw_type = _label(hw.get("type"), (*hpath, "type"), out, "hardware type")
    for key in hw:
        if key not in ("type", "configs"):
            out.add((*hpath, _key(key)), f"unknown hardware field '{_short(key)}'")
    configs = hw.get("configs")
    nodes: list[int] = []
    count = 0
    if configs is None:
        out.add(hpath, "hardware.configs is missing")
    elif not isinstance(configs, list | tuple):
        out.add((*hpath, "configs"), "hardware.configs must be a list")
    else:
        for i, cfg in enumerate(configs):
            cpath: KeyPath = (*hpath, "configs", i)
            if not isinstance(cfg, Mapping):
                out.add(cpath, "each hardware config must be a mapping")
                continue
            count += 1
            rank = cfg.get("node_rank")
            if isinstance(rank, bool) or not isinstance(rank, int):
                out.add((*cpath, "node_rank"), "node_rank must be an integer")
                continue
            if node_ranks is not None and rank not in node_ranks:
                out.add(
                    (*cpath, "node_rank"),
                    f"node_rank {rank} is not one of the group's node_ranks",
                )
            nodes.append(rank)
    return (hw_type or "unknown"), count, tuple(nodes)


def _parse_env_configs(
    raw: Any, gpath: KeyPath, node_ranks: tuple[int, ...] | None, out: _Collector
) -> tuple[EnvConfig, ...]:
    path: KeyPath = (*gpath, "env_configs")
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        out.add(path, "env_configs must be a list ('- node_ranks: ...')")
        return ()
    result: list[EnvConfig] = []
    taken: set[int] = set()
    env_keys: set[str] = set()
    for i, entry in enumerate(raw):
        epath: KeyPath = (*path, i)
        if not isinstance(entry, Mapping):
            out.add(epath, "each env_configs entry must be a mapping")
            continue
        for key in entry:
            if key not in _ENV_CONFIG_KEYS:
                out.add((*epath, _key(key)), f"unknown env_configs field '{_short(key)}'")
        ranks: tuple[int, ...] | None = None
        if "node_ranks" not in entry:
            out.add(epath, "node_ranks is missing")
        else:
            raw_ranks = entry["node_ranks"]
            if isinstance(raw_ranks, str) and raw_ranks.strip().lower() == "all":
                ranks = node_ranks  # 'all' = every node of the group
            else:
                ranks = parse_rank_list(raw_ranks, (*epath, "node_ranks"), out, "node rank", None)
            if ranks is not None and node_ranks is not None and not set(ranks) <= set(node_ranks):
                out.add(
                    (*epath, "node_ranks"),
                    "env_configs node_ranks must be a subset of the group's node_ranks",
                )
            if ranks is not None:
                if taken & set(ranks):
                    out.add((*epath, "node_ranks"), "env_configs entries overlap in node_ranks")
                taken |= set(ranks)
        keys: list[str] = []
        env_vars = entry.get("env_vars")
        if env_vars is not None:
            if not isinstance(env_vars, list | tuple):
                out.add((*epath, "env_vars"), "env_vars must be a list of one-key mappings")
            else:
                for j, item in enumerate(env_vars):
                    if not isinstance(item, Mapping) or len(item) != 1:
                        out.add(
                            (*epath, "env_vars", j),
                            "each env_vars item must be a mapping with exactly one key",
                        )
                        continue
                    name = safe_text(next(iter(item)))
                    if name in env_keys:
                        out.add((*epath, "env_vars", j), f"env var '{name}' is set twice")
                    env_keys.add(name)
                    keys.append(name)
        interp = entry.get("python_interpreter_path")
        result.append(
            EnvConfig(
                node_ranks=ranks,
                env_var_keys=tuple(keys),
                python_interpreter_path=None if interp is None else safe_text(interp),
                path=epath,
            )
        )
    return tuple(result)


# --- component placement -----------------------------------------------------------------


def _resolve_kind(
    labels: Iterable[str], groups: Mapping[str, NodeGroup]
) -> tuple[ResourceKind, str | None]:
    kinds: list[ResourceKind] = []
    hw_types: list[str] = []
    for label in labels:
        if label == NODE_GROUP:
            kinds.append("node")
        elif label in groups:
            group = groups[label]
            kinds.append(group.resource_kind)
            if group.declares_hardware and group.hardware_type not in hw_types:
                hw_types.append(group.hardware_type or "unknown")
        else:
            kinds.append("accelerator")  # the default group, or unknown (already a problem)
    hw_type = ",".join(hw_types) or None
    # RLinf places by node as soon as one selected group has no hardware type at all.
    if "node" in kinds:
        return "node", hw_type
    if kinds and all(k == "hardware" for k in kinds):
        return "hardware", hw_type
    # Accelerators only, or accelerators mixed with robots: the ranks span both and which
    # ones are GPUs depends on each node's GPU count; counting all as GPUs errs on the safe
    # side (such a config is redirected for its several node groups anyway).
    return "accelerator", hw_type


def _parse_component(
    key: Any,
    value: Any,
    groups: Mapping[str, NodeGroup],
    out: _Collector,
) -> ComponentPlacement:
    path: KeyPath = (*ROOT, "component_placement", _key(key))
    before = len(out.problems)
    names = tuple(n.strip() for n in safe_text(key).split(","))
    if any(not n for n in names):
        out.add(path, f"empty component name in '{_short(key)}'")
        names = tuple(n for n in names if n)

    labels: tuple[str, ...] = ()
    label_text: str | None = None
    text_path = path
    raw_placement: Any
    if isinstance(value, Mapping):
        for k in value:
            if k not in _GROUP_FORM_KEYS:
                # RLinf ignores it, but a typo such as 'node_grop' silently moves the
                # component to the default (GPU) group.
                out.add(
                    (*path, _key(k)), f"unknown key '{_short(k)}' (expected node_group, placement)"
                )
        if "node_group" in value:
            labels = _group_labels(value["node_group"], (*path, "node_group"), groups, out)
            label_text = ",".join(labels) if labels else None
        text_path = (*path, "placement")
        if "placement" not in value:
            out.add(path, "placement is missing")
            raw_placement = None
            text = None
        else:
            raw_placement = value["placement"]
            text = _scalar_text(raw_placement, text_path, out, "placement")
    else:
        text = _scalar_text(value, path, out, "placement")

    kind, hw_type = _resolve_kind(labels or (DEFAULT_GROUP,), groups)
    segments: list[PlacementSegment] = []
    if text is not None:
        segments, _ = _parse_placement(text, text_path, out, kind)
    uses_all = any(s.resources is None for s in segments)
    ranks: set[int] = set()
    for seg in segments:
        if seg.resources is not None:
            ranks.update(range(seg.resources[0], seg.resources[1] + 1))
    process_count: int | None = 0
    for seg in segments:
        if seg.processes is None or process_count is None:
            process_count = None
        else:
            process_count += seg.processes[1] - seg.processes[0] + 1
    if not segments:
        process_count = None
    valid = len(out.problems) == before
    return ComponentPlacement(
        components=names,
        node_group=label_text,
        resource_kind=kind,
        hardware_type=hw_type,
        resource_ranks=None if uses_all else tuple(sorted(ranks)),
        uses_all=uses_all,
        process_count=process_count if valid else None,
        path=path,
        node_group_labels=labels,
        placement_text=text,
        segments=tuple(segments),
        valid=valid,
    )


def _group_labels(
    value: Any, path: KeyPath, groups: Mapping[str, NodeGroup], out: _Collector
) -> tuple[str, ...]:
    # RLinf: a label, "a,b" or a list of labels (ranks then span the groups in order).
    raw: list[Any]
    if isinstance(value, str):
        raw = value.split(",")
    elif isinstance(value, list | tuple):
        raw = list(value)
    else:
        raw = [value]
    labels: list[str] = []
    for item in raw:
        label = _label(item.strip() if isinstance(item, str) else item, path, out, "node_group")
        if label is None:
            continue
        if label not in groups and label not in RESERVED_LABELS:
            declared = ", ".join(sorted(groups)) or "none"
            out.add(path, f"unknown node_group '{label}' (declared: {declared})")
        labels.append(label)
    return tuple(labels)


# --- the summary -------------------------------------------------------------------------


def summarize_cluster(cluster: Mapping[str, Any] | None) -> ClusterSummary:
    """Classify an effective ``cluster`` section; content problems are returned, not raised.

    An exception escaping from here is a bug in this module and keeps its traceback: the
    property tests drive arbitrary sections through it so that none can.
    """
    out = _Collector()
    # One problem for a missing or malformed section, not one per missing field too.
    report_missing = True
    if cluster is None:
        out.add(ROOT, "the cluster section is missing")
        cluster, report_missing = {}, False
    elif not isinstance(cluster, Mapping):
        out.add(ROOT, f"must be a mapping, not {type(cluster).__name__}")
        cluster, report_missing = {}, False

    num_nodes: int | None = None
    raw_nodes = cluster.get("num_nodes")
    if "num_nodes" not in cluster:
        if report_missing:
            out.add(ROOT, "num_nodes is missing")
    elif isinstance(raw_nodes, bool) or not isinstance(raw_nodes, int):
        # RLinf: `type(num_nodes) is int` -- "2", 2.0 and true are refused.
        out.add((*ROOT, "num_nodes"), f"must be a positive integer, not {_short(raw_nodes)!r}")
    elif raw_nodes < 1:
        out.add((*ROOT, "num_nodes"), f"must be a positive integer, not {_short(raw_nodes)}")
    elif raw_nodes > MAX_RANK:
        out.add((*ROOT, "num_nodes"), f"{_short(raw_nodes)} is implausibly large")
    else:
        num_nodes = raw_nodes

    groups = _parse_node_groups(cluster.get("node_groups"), num_nodes, out)
    by_label = {g.label: g for g in groups}

    placements: list[ComponentPlacement] = []
    raw_cp = cluster.get("component_placement")
    cp_path: KeyPath = (*ROOT, "component_placement")
    if raw_cp is None:
        if report_missing:
            where = cp_path if "component_placement" in cluster else ROOT
            out.add(where, "component_placement is missing")
    elif not isinstance(raw_cp, Mapping):
        out.add(cp_path, f"must be a mapping of component: placement, not {type(raw_cp).__name__}")
    elif not raw_cp:
        out.add(cp_path, "no component is placed")
    else:
        seen: dict[str, KeyPath] = {}
        for key, value in raw_cp.items():
            placement = _parse_component(key, value, by_label, out)
            for name in placement.components:
                if name in seen:
                    out.add(placement.path, f"component '{name}' is placed twice")
                seen.setdefault(name, placement.path)
            placements.append(placement)

    accel = [p for p in placements if p.resource_kind == "accelerator"]
    gpus_all = any(p.uses_all for p in accel)
    top = max((max(p.resource_ranks) for p in accel if p.resource_ranks), default=None)
    # docs/contract.md §3: no component on a GPU (only robots or the `node` group) needs 0 GPUs;
    # unknown (None) only when 'all' is used or a placement could not be read.
    gpus_required: int | None
    if gpus_all:
        gpus_required = None
    elif top is not None:
        gpus_required = top + 1
    elif placements and all(p.valid for p in placements):
        gpus_required = 0
    else:
        gpus_required = None
    hw_groups = tuple(g.label for g in groups if g.declares_hardware)
    # A `hardware:` entry too broken to become a group still means a device is attached.
    real_robot = bool(hw_groups) or _raw_declares_hardware(cluster.get("node_groups"))
    return ClusterSummary(
        num_nodes=num_nodes,
        node_groups=groups,
        placements=tuple(placements),
        gpus_required=gpus_required,
        gpus_all=gpus_all,
        real_robot=real_robot,
        hardware_groups=hw_groups,
        problems=tuple(out.problems),
    )


def _raw_declares_hardware(raw: Any) -> bool:
    if not isinstance(raw, list | tuple):
        return False
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("hardware") is not None:
            return True
        hw_type = entry.get("hardware_type")
        if hw_type is not None and safe_text(hw_type) != ACCELERATOR_HW_TYPE:
            return True
    return False


def redirect_reasons(summary: ClusterSummary) -> list[str]:
    """Check 0.4 reasons that come from the cluster section; the caller adds the others.

    Only *declared* node groups count: the default group ``cluster`` and the reserved
    ``node`` group are implicit and cover the same single node.
    """
    reasons: list[str] = []
    if summary.num_nodes is not None and summary.num_nodes > 1:
        reasons.append(f"num_nodes={summary.num_nodes}")
    if len(summary.node_groups) > 1:
        reasons.append(f"node_groups={len(summary.node_groups)}")
    return reasons
