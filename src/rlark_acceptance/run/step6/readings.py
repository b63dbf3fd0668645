"""What the training checks read back from the store (T.2 the run's TensorBoard scalars, T.3
the tensors of its checkpoints), as the values the phases judge: the engine performs these
reads when a phase asks for them (``ReadScalars``, ``ReadTensors``); the phases only judge.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rlark_acceptance.rlinf.failures import MOUNT_IO_ERROR
from rlark_acceptance.run.step6.location import Listing
from rlark_acceptance.storage import Store, StoreError, StoreUnavailable, written_since
from rlark_acceptance.storage.scalars import read_scalars
from rlark_acceptance.storage.tensors import read_tensors

# Objects up to this much older than the submission still count as the run's: the store's
# clock and this machine's may differ a little; an earlier run's are minutes older at least.
CLOCK_SKEW = timedelta(seconds=5)
_STEP_DIR = re.compile(r"(?:^|/)global_step_(\d+)(?:/|$)")
# The model's weights, not the rest of the training state: the optimizer's (Adam's moments
# change even when the learning rate is 0 and the weights do not), the learning-rate
# schedulers', the RNG's (drawn from every step) and the data of a replay or demo buffer
# (RLinf's SAC saves its trajectories in the checkpoint: one more each step). Whole files
# are named for it (``optim_state_dict/``, ``sac_components/replay_buffer/``); inside RLinf's
# DCP shards it is the items next to the model's (``fsdp_checkpoint.optimizers.…``,
# ``fsdp_checkpoint.lr_schedulers.…``, ``fsdp_checkpoint.rng.cpu``).
_NOT_WEIGHTS = re.compile(r"(?i)optim|(?:^|[./])(?:lr_sched\w*|rng|\w*_buffer)(?:[./]|$)")


def store_error(exc: StoreError) -> str:
    """A failed read of the store as a check's failure quotes it. A store that cannot be
    reached (refused, reset, timed out after the retries) is tagged with the failure class
    of a mounted store that stopped answering, so the remedy shown is the store's: the
    doc's remedy for the check (where RLinf writes, its config) is not where to start."""
    if isinstance(exc, StoreUnavailable):
        return f"the store does not answer [{MOUNT_IO_ERROR.id}]: {exc}"
    return str(exc)


@dataclass(frozen=True)
class Scalars:
    """The scalars of the run's event files: tag → (step, value) in the order written."""

    at: float
    where: str
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    files: int = 0
    problems: tuple[str, ...] = ()
    error: str | None = None  # the store did not answer
    took: float = 0.0  # seconds the reading took (it paces the next one)

    def non_finite(self) -> dict[str, int]:
        """Tag → the first step whose value is NaN or infinite."""
        out: dict[str, int] = {}
        for tag, values in self.series.items():
            bad = next((step for step, v in values if not math.isfinite(v)), None)
            if bad is not None:
                out[tag] = bad
        return out


@dataclass(frozen=True)
class Weights:
    """One checkpoint's model tensors: how many, how big, their digest, and which hold
    non-finite values (name → count)."""

    step: int
    path: str
    tensors: int
    elements: int
    bytes: int
    digest: str
    non_finite: dict[str, int] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checkpoints:
    """The first and the last checkpoint of the run under the expected location, and the
    objects there written before the submission (an earlier run's)."""

    at: float
    where: str
    steps: tuple[int, ...] = ()
    first: Weights | None = None
    last: Weights | None = None
    stale: tuple[str, ...] = ()
    error: str | None = None


def scalars_at(
    store: Store, prefix: str, where: str, at: float, *, baseline: Listing | None
) -> Scalars:
    """The scalars of the event files the run wrote under ``prefix`` (not those in
    ``baseline``, the listing taken before submission: an earlier run's)."""
    try:
        report = read_scalars(store, prefix, since=baseline)
    except StoreError as exc:
        return Scalars(at, where, error=store_error(exc))
    return Scalars(
        at,
        where,
        series={tag: list(values) for tag, values in report.scalars.items()},
        files=len(report.files),
        problems=tuple(report.problems),
    )


def checkpoints_at(
    store: Store,
    prefix: str,
    where: str,
    at: float,
    *,
    baseline: Listing | None,
    submitted: datetime | None,
) -> Checkpoints:
    """List ``prefix``; of what is new since ``baseline``, the objects older than
    ``submitted`` and the weights of the first and the last ``global_step_N``."""
    try:
        objects = store.list(prefix + "/" if prefix else "")
    except StoreError as exc:
        return Checkpoints(at, where, error=store_error(exc))
    new = written_since(objects, baseline)
    stale: list[str] = []
    if submitted is not None:
        since = (submitted - CLOCK_SKEW).timestamp()
        stale = [o.key for o in new if o.modified is not None and o.modified < since]
    by_step = step_dirs(o.key for o in new)
    steps = tuple(sorted(by_step))
    if not steps:
        return Checkpoints(at, where, stale=tuple(stale))
    try:
        first = weights_of(store, steps[0], by_step[steps[0]])
        last = first if len(steps) == 1 else weights_of(store, steps[-1], by_step[steps[-1]])
    except StoreError as exc:
        return Checkpoints(at, where, steps=steps, stale=tuple(stale), error=store_error(exc))
    return Checkpoints(at, where, steps=steps, first=first, last=last, stale=tuple(stale))


def step_dirs(keys: Iterable[str]) -> dict[int, str]:
    """``N`` → the key of the ``global_step_N`` folder that holds some of ``keys``."""
    by_step: dict[int, str] = {}
    for key in keys:
        m = _STEP_DIR.search(key)
        if m is not None:
            by_step[int(m.group(1))] = key[: m.end()].rstrip("/")
    return by_step


def weights_of(store: Store, step: int, path: str) -> Weights:
    """The model tensors of the checkpoint ``global_step_<step>`` at key ``path``, and their
    digest: SHA-256 over ``<file key>\\0<tensor>\\0<dtype>\\0<shape>\\0<tensor's SHA-256>\\n``
    for each tensor in (file, tensor) order, the file's key relative to ``path``
    (``actor/model_state_dict/full_weights.safetensors``), the dtype as safetensors names it
    (``F32``), the shape as a list (``[16, 6]``), the SHA-256 of the tensor's bytes in C
    order; a workload that prints the same digest of what it loaded proves it resumed from
    these weights (T.4)."""
    # Not read at all: a replay buffer grows each step, and may be most of the bytes.
    report = read_tensors(store, path, exclude=lambda key: bool(_NOT_WEIGHTS.search(key)))
    named = sorted(
        ((f.key, t) for f in report.files for t in f.tensors if not _NOT_WEIGHTS.search(t.name)),
        key=lambda kt: (kt[0], kt[1].name),
    )
    tensors = [t for _, t in named]
    digest = hashlib.sha256()
    for key, t in named:
        digest.update(f"{key}\0{t.name}\0{t.dtype}\0{list(t.shape)}\0{t.sha256}\n".encode())
    return Weights(
        step=step,
        path=path,
        tensors=len(tensors),
        elements=sum(t.elements for t in tensors),
        bytes=sum(t.nbytes for t in tensors),
        digest=digest.hexdigest(),
        non_finite={t.name: t.non_finite for t in tensors if t.non_finite},
        problems=tuple(report.problems),
    )
