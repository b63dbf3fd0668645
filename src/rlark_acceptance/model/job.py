"""The RLark Job YAML (docs/contract.md §1) as the harness models it, read through one normaliser.

RLark's real schema is internal to the platform, so every consumer reads ``Job`` and never
the raw YAML; a site whose console exports a different shape registers its own normaliser
under the entry-point group ``rlark_acceptance.normalisers``.

Example::

    job = read_job("job.yaml")
    job.roles[0].gpus  # -> 8
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import yaml

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Location
from rlark_acceptance.model.keypath import KeyPath, dotted
from rlark_acceptance.model.keys import near_misses, shown_key
from rlark_acceptance.model.yamlsrc import YamlDoc, load_yaml, parse_yaml

JOB_NAME_LABEL = "rlark.io/job-name"
ROLE_LABEL = "rlark.io/role"
# Set by the acceptance run on the Job it submits, and on its Pods where the target can.
RUN_ID_LABEL = "rlark-acceptance.io/run-id"


@dataclass
class Mount:
    name: str
    type: str  # hostPath | objectStorage | pvc | ...
    container_path: str | None
    read_only: bool
    location: Location
    host_path: str | None = None
    bucket: str | None = None
    prefix: str | None = None
    claim_name: str | None = None


@dataclass
class EnvVar:
    name: str
    value: str | None
    location: Location

    def __repr__(self) -> str:  # the value may be a secret: reprs end up in test reports
        return f"EnvVar({self.name!r}, value withheld, {self.location})"


@dataclass
class Role:
    name: str | None
    header: bool
    replicas: Any
    cluster: str | None
    node_selector: Any
    gpus: Any
    image: str | None
    prepare_script: str | None
    env: list[EnvVar]
    mounts: list[Mount]
    resources: Any
    index: int
    doc: YamlDoc

    def loc(self, *keys: Any) -> Location:
        return self.doc.loc("spec", "roles", self.index, *keys)

    def __repr__(self) -> str:  # scripts, env and the image (user:pass@) may hold secrets
        return f"Role({self.name!r}, gpus={self.gpus!r}, {self.loc()})"


@dataclass
class ShapeProblem:
    """A field of the wrong type or form; named with the check it would break. A warning
    (``slip``): a key the harness does not read, near one it does."""

    check: str
    message: str
    location: Location
    slip: bool = False


@dataclass
class Job:
    name: Any
    namespace: str | None
    task_type: Any
    head_role: Any
    cross_cluster_network: Any
    ssh_public_key: Any
    run_script: str | None
    tensorboard_log_dir: str | None
    roles: list[Role]
    doc: YamlDoc
    problems: list[ShapeProblem] = field(default_factory=list)

    def __repr__(self) -> str:  # scripts and env may hold secrets: reprs reach reports
        return f"Job({self.name!r}, roles={[r.name for r in self.roles]}, doc={self.doc.path!r})"

    def loc(self, *keys: Any) -> Location:
        return self.doc.loc(*keys)

    @property
    def worker(self) -> Role | None:
        """The role the single-node page is about: the one named worker, else the only one."""
        for role in self.roles:
            if role.name == "worker":
                return role
        return self.roles[0] if len(self.roles) == 1 else None


Normaliser = Callable[[YamlDoc], Job]


def under(path: str, root: str) -> bool:
    """True when container ``path`` lies inside ``root`` (both absolute POSIX paths)."""
    p = posixpath.normpath(path)
    r = posixpath.normpath(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def mount_for(path: str, mounts: list[Mount]) -> Mount | None:
    """The most specific mount whose container path holds ``path``."""
    holding = [
        m
        for m in mounts
        if m.container_path and posixpath.isabs(m.container_path) and under(path, m.container_path)
    ]
    return max(holding, key=lambda m: len(m.container_path or ""), default=None)


def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def normalise_contract_v1alpha1(doc: YamlDoc) -> Job:
    """The shape of docs/contract.md §1: ``apiVersion: rlark.io/v1alpha1``, ``kind: Job``."""
    data = doc.data if isinstance(doc.data, dict) else {}
    problems: list[ShapeProblem] = []
    raw_meta = data.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    spec = data.get("spec")
    if not isinstance(spec, dict):
        problems.append(
            ShapeProblem(
                CheckId.ONE_ROLE_NAMED_WORKER, "the Job has no spec mapping", doc.loc("spec")
            )
        )
        spec = {}
    tb = spec.get("tensorboard")
    tb_dir = tb.get("logDir") if isinstance(tb, dict) else None
    raw_roles = spec.get("roles")
    if raw_roles is not None and not isinstance(raw_roles, list):
        problems.append(
            ShapeProblem(
                CheckId.ONE_ROLE_NAMED_WORKER, "spec.roles must be a list", doc.loc("spec", "roles")
            )
        )
        raw_roles = []
    roles = [
        _role(doc, i, r, problems) for i, r in enumerate(raw_roles or []) if isinstance(r, dict)
    ]
    _slips(doc, data, problems)
    _shape(doc, data, (), _TOP_SHAPE, problems)
    if isinstance(raw_meta, dict):
        _shape(doc, raw_meta, ("metadata",), _META_SHAPE, problems)
    _shape(doc, spec, ("spec",), _SPEC_SHAPE, problems)
    for i, r in enumerate(raw_roles or []):
        if isinstance(r, dict):
            _shape(doc, r, ("spec", "roles", i), _ROLE_SHAPE, problems)
        else:
            problems.append(
                ShapeProblem(
                    CheckId.ONE_ROLE_NAMED_WORKER,
                    "a role must be a mapping",
                    doc.loc("spec", "roles", i),
                )
            )
    run_script = spec.get("runScript")
    if run_script is not None and not isinstance(run_script, str):
        problems.append(
            ShapeProblem(
                CheckId.START_COMMAND_KEPT, "runScript must be text", doc.loc("spec", "runScript")
            )
        )
        run_script = str(run_script)
    return Job(
        name=meta.get("name"),
        namespace=_str_or_none(meta.get("namespace")),
        task_type=spec.get("taskType"),
        head_role=spec.get("headRole"),
        cross_cluster_network=spec.get("crossClusterNetwork"),
        ssh_public_key=spec.get("sshPublicKey"),
        run_script=run_script,
        tensorboard_log_dir=_str_or_none(tb_dir),
        roles=roles,
        doc=doc,
        problems=problems,
    )


# The most GPUs one Worker can request: far above any node, far below an overflow.
MAX_GPUS = 1024
_TEXT = (str,)
_OPT_TEXT = (str, type(None))
_COUNT = (int,)

# field -> (check, accepted types, what it must be); a field that is absent is not judged
# here (the checks say what a missing field means).
_Shape = dict[str, tuple[str, tuple[type, ...], str]]
_TOP_SHAPE: _Shape = {
    "apiVersion": (CheckId.ROLES_ONE_WORKER, _TEXT, "text"),
    "kind": (CheckId.ROLES_ONE_WORKER, _TEXT, "text"),
    "metadata": (CheckId.TASK_NAME, (dict,), "a mapping"),
}
_META_SHAPE: _Shape = {
    "name": (CheckId.TASK_NAME, _TEXT, "text"),
    "namespace": (CheckId.TASK_NAME, _TEXT, "text"),
    "labels": (CheckId.TASK_NAME, (dict, type(None)), "a mapping"),
}
_SPEC_SHAPE: _Shape = {
    "taskType": (CheckId.TASK_TYPE_CUSTOM, _TEXT, "text"),
    "headRole": (CheckId.HEAD_ROLE_IS_WORKER, _TEXT, "text"),
    "crossClusterNetwork": (CheckId.NO_CROSS_CLUSTER_NETWORK, _OPT_TEXT, "text"),
    "sshPublicKey": (CheckId.SSH_KEY_ONLY_IF_NEEDED, _OPT_TEXT, "text"),
    "tensorboard": (CheckId.TENSORBOARD_PATH, (dict, type(None)), "a mapping"),
}
_ROLE_SHAPE: _Shape = {
    "name": (CheckId.ONE_ROLE_NAMED_WORKER, _TEXT, "text"),
    "header": (CheckId.WORKER_IS_HEADER, (bool,), "true or false"),
    "replicas": (CheckId.WORKERS_ONE, _COUNT, "a count"),
    "cluster": (CheckId.TARGET_CLUSTER, _TEXT, "text"),
    "nodeSelector": (CheckId.ONE_NODE_SELECTED, (dict, type(None)), "a mapping of label: value"),
    "gpus": (CheckId.GPUS_FIT, _COUNT, "a count"),
    "image": (CheckId.IMAGE_PULLABLE, _TEXT, "text"),
    "prepareScript": (CheckId.PREPARE_SCRIPT, _OPT_TEXT, "text"),
    "resources": (CheckId.MULTI_NODE_REDIRECT, (dict, type(None)), "a mapping"),
}


# The fields the harness reads beyond the shapes above, with the check each serves.
_MOUNT_FIELDS = (
    "name",
    "type",
    "containerPath",
    "readOnly",
    "hostPath",
    "bucket",
    "prefix",
    "claimName",
)
_READ: dict[tuple[str, ...], dict[str, str]] = {
    (): {**{k: c for k, (c, _, _) in _TOP_SHAPE.items()}, "spec": CheckId.ONE_ROLE_NAMED_WORKER},
    ("metadata",): {k: c for k, (c, _, _) in _META_SHAPE.items()},
    ("spec",): {
        **{k: c for k, (c, _, _) in _SPEC_SHAPE.items()},
        "runScript": CheckId.START_COMMAND_KEPT,
        "roles": CheckId.ONE_ROLE_NAMED_WORKER,
    },
    ("spec", "tensorboard"): {"logDir": CheckId.TENSORBOARD_PATH},
    ("spec", "roles", "*"): {
        **{k: c for k, (c, _, _) in _ROLE_SHAPE.items()},
        "env": CheckId.ENV_NOT_SENSITIVE,
        "mounts": CheckId.PATHS_UNDER_MOUNTS,
    },
    ("spec", "roles", "*", "mounts", "*"): dict.fromkeys(_MOUNT_FIELDS, CheckId.PATHS_UNDER_MOUNTS),
    ("spec", "roles", "*", "env", "*"): dict.fromkeys(("name", "value"), CheckId.ENV_NOT_SENSITIVE),
}


def _slips(doc: YamlDoc, data: dict[str, Any], problems: list[ShapeProblem]) -> None:
    """A warning for each key near a field the harness reads, at its line, with the field
    meant: the console may export fields the harness does not read, so an unknown key is
    no mistake, but ``nodeSelecter`` would leave the Worker's node unchosen in silence."""
    for pattern, fields in _READ.items():
        for path, mapping in _mappings(data, pattern):
            for key, meant in near_misses(mapping, fields):
                problems.append(
                    ShapeProblem(
                        fields[meant],
                        f"{shown_key(path, key)} is not a field the harness reads; "
                        f"did you mean `{meant}`?",
                        doc.loc(*path, key),
                        slip=True,
                    )
                )


def _mappings(data: Any, pattern: tuple[str, ...]) -> Iterator[tuple[KeyPath, dict[str, Any]]]:
    """The mappings at ``pattern`` (``*``: each item of a list), with their paths."""
    found: list[tuple[KeyPath, Any]] = [((), data)]
    for part in pattern:
        step: list[tuple[KeyPath, Any]] = []
        for path, value in found:
            if part == "*" and isinstance(value, list):
                step += [((*path, i), v) for i, v in enumerate(value)]
            elif isinstance(value, dict) and part in value:
                step.append(((*path, part), value[part]))
        found = step
    return ((path, value) for path, value in found if isinstance(value, dict))


def _shape(
    doc: YamlDoc,
    data: dict[str, Any],
    path: tuple[Any, ...],
    shape: _Shape,
    problems: list[ShapeProblem],
) -> None:
    """A problem for each field whose value is not of the form docs/contract.md §1 gives it."""
    for key, (check, types, what) in shape.items():
        if key not in data:
            continue
        value = data[key]
        where = dotted((*path, key))  # spec.roles[0].gpus, as every finding names a key
        # YAML's true is an int to Python; only a field that takes booleans accepts it.
        ok = isinstance(value, types) and (bool in types or not isinstance(value, bool))
        if not ok:
            problems.append(ShapeProblem(check, f"{where} must be {what}", doc.loc(*path, key)))
        elif types is _COUNT and not 0 <= value <= MAX_GPUS:
            problems.append(
                ShapeProblem(
                    check, f"{where} {value} is not a plausible count", doc.loc(*path, key)
                )
            )
    if shape is _TOP_SHAPE:
        for key, want in (("apiVersion", "rlark.io/v1alpha1"), ("kind", "Job")):
            if isinstance(data.get(key), str) and data[key] != want:
                problems.append(
                    ShapeProblem(
                        CheckId.ROLES_ONE_WORKER,
                        f"{key} {data[key]!r}: the console exports {key}: {want}",
                        doc.loc(key),
                    )
                )
    if shape is _ROLE_SHAPE and isinstance(data.get("nodeSelector"), dict):
        for k, v in data["nodeSelector"].items():
            if not isinstance(v, str | int | float) or isinstance(v, bool):
                problems.append(
                    ShapeProblem(
                        CheckId.ONE_NODE_SELECTED,
                        f"nodeSelector {k}: a label value must be text",
                        doc.loc(*path, "nodeSelector", k),
                    )
                )


def _role(doc: YamlDoc, i: int, r: dict[str, Any], problems: list[ShapeProblem]) -> Role:
    def loc(*keys: Any) -> Location:
        return doc.loc("spec", "roles", i, *keys)

    env = _env(r.get("env"), loc, problems)
    mounts: list[Mount] = []
    raw_mounts = r.get("mounts") or []
    if not isinstance(raw_mounts, list):
        problems.append(
            ShapeProblem(CheckId.PATHS_UNDER_MOUNTS, "mounts must be a list", loc("mounts"))
        )
        raw_mounts = []
    for j, m in enumerate(raw_mounts):
        if not isinstance(m, dict):
            problems.append(
                ShapeProblem(
                    CheckId.PATHS_UNDER_MOUNTS, "a mount must be a mapping", loc("mounts", j)
                )
            )
            continue
        mounts.append(
            Mount(
                name=str(m.get("name", f"mount-{j}")),
                type=str(m.get("type", "")),
                container_path=_str_or_none(m.get("containerPath")),
                read_only=m.get("readOnly") is True,
                location=loc("mounts", j),
                host_path=_str_or_none(m.get("hostPath")),
                bucket=_str_or_none(m.get("bucket")),
                prefix=_str_or_none(m.get("prefix")),
                claim_name=_str_or_none(m.get("claimName")),
            )
        )
    prepare = r.get("prepareScript")
    return Role(
        name=_str_or_none(r.get("name")),
        header=r.get("header") is True,
        replicas=r.get("replicas", 1),
        cluster=_str_or_none(r.get("cluster")),
        node_selector=r.get("nodeSelector"),
        gpus=r.get("gpus"),
        image=_str_or_none(r.get("image")),
        prepare_script=None if prepare is None else str(prepare),
        env=env,
        mounts=mounts,
        resources=r.get("resources"),
        index=i,
        doc=doc,
    )


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float)


def _env(raw: Any, loc: Callable[..., Location], problems: list[ShapeProblem]) -> list[EnvVar]:
    """``env`` as a list of ``{name, value}`` or as a plain map (a common hand-written form).

    Names and values are text (a number is taken as written); a mapping or a list in their
    place would reach the Worker as Python's repr of it, so it is a 3.6 finding at its line.
    """
    env: list[EnvVar] = []
    if raw is None:
        return env
    if isinstance(raw, dict):
        for k, v in raw.items():
            if _scalar(v):
                env.append(EnvVar(str(k), _str_or_none(v), loc("env", k)))
            else:
                problems.append(
                    ShapeProblem(
                        CheckId.ENV_NOT_SENSITIVE, f"env {k}: the value must be text", loc("env", k)
                    )
                )
        return env
    if not isinstance(raw, list):
        problems.append(
            ShapeProblem(
                CheckId.ENV_NOT_SENSITIVE, "env must be a list of {name, value}", loc("env")
            )
        )
        return env
    for j, e in enumerate(raw):
        if not isinstance(e, dict) or e.get("name") in (None, ""):
            problems.append(
                ShapeProblem(CheckId.ENV_NOT_SENSITIVE, "an env entry needs a name", loc("env", j))
            )
        elif not isinstance(e["name"], str):
            problems.append(
                ShapeProblem(
                    CheckId.ENV_NOT_SENSITIVE, f"env[{j}].name must be text", loc("env", j, "name")
                )
            )
        elif not _scalar(e.get("value")):
            problems.append(
                ShapeProblem(
                    CheckId.ENV_NOT_SENSITIVE,
                    f"env {e['name']}: the value must be text",
                    loc("env", j, "value"),
                )
            )
        else:
            env.append(EnvVar(str(e["name"]), _str_or_none(e.get("value")), loc("env", j)))
    return env


def normaliser(name: str | None = None, where: str | None = None) -> Normaliser:
    """The built-in normaliser, or one a site registered under ``rlark_acceptance.normalisers``.

    ``where`` is the place that named it (``profile.yaml:12``, ``--job-normaliser``), which
    an unknown name is reported at.
    """
    if not name or name == "contract-v1alpha1":
        return normalise_contract_v1alpha1
    for ep in entry_points(group="rlark_acceptance.normalisers"):
        if ep.name == name:
            fn: Normaliser = ep.load()
            return fn
    raise InputError(where or name, f"no Job YAML normaliser {name!r} is installed (jobNormaliser)")


def read_job(path: str, *, normaliser_name: str | None = None, shown: str | None = None) -> Job:
    doc = load_yaml(path)
    if shown:
        doc.path = shown
    return normaliser(normaliser_name, "--job-normaliser")(doc)


def render_job(
    *,
    name: str,
    namespace: str,
    run_info: Any,
    cluster: str,
    node_selector: dict[str, str],
    mounts: list[dict[str, Any]],
    env: list[dict[str, str]] | None = None,
    tensorboard_dir: str | None = None,
) -> str:
    """The Job YAML the console would produce from the run info, as text (docs/contract.md §1)."""
    role: dict[str, Any] = {
        "name": "worker",
        "header": True,
        "replicas": 1,
        "cluster": cluster,
        "nodeSelector": dict(node_selector),
        "gpus": run_info.gpus,
        "image": run_info.image,
    }
    if run_info.prepare_command:
        role["prepareScript"] = run_info.prepare_command.rstrip("\n") + "\n"
    role["env"] = list(env or [])
    role["mounts"] = mounts
    role["resources"] = {}
    spec: dict[str, Any] = {
        "taskType": "custom",
        "headRole": "worker",
        "crossClusterNetwork": "none",
        "sshPublicKey": None,
        "runScript": (run_info.start_command or "").rstrip("\n") + "\n",
    }
    if tensorboard_dir:
        spec["tensorboard"] = {"logDir": tensorboard_dir}
    spec["roles"] = [role]
    body = {
        "apiVersion": "rlark.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def job_of(body: Mapping[str, Any], shown: str) -> Job:
    """A Job object as an API server returns it (a mapping), read as a Job YAML would be."""
    text = yaml.safe_dump(dict(body), sort_keys=False, allow_unicode=True)
    return normalise_contract_v1alpha1(parse_yaml(text, shown))


def parse_rendered(text: str, shown: str) -> Job:
    return normalise_contract_v1alpha1(parse_yaml(text, shown))
