"""The GPU stand-in: RLinf 0.3 sees this machine's CPU where it asks for an accelerator.

The one thing the embedded target cannot have is a GPU. RLinf 0.3.0 assumes one in four
places; this module meets each of them with the CPU, and nothing else of RLinf changes:

1. ``scheduler/hardware/accelerators/accelerator.py:445,455`` — on a node with no
   accelerator ``AcceleratorUtil.get_torch_platform`` / ``get_device_type`` return ``None``,
   which the workers then call (``.current_device()``): here they return the CPU platform
   (:class:`CpuPlatform`, ``torch.cpu`` plus the no-op cache calls a CPU has no use for)
   and ``"cpu"``.
2. ``hybrid_engines/fsdp/strategy/fsdp.py:177,180`` — FSDP is built with the CUDA device
   ``int(LOCAL_RANK)`` and ``sync_module_states=True`` (a broadcast only a GPU does): here
   the device is the CPU and the (one-rank) sync off.
3. ``hybrid_engines/weight_syncer/patch_syncer.py:886`` (``pin_memory()``) is not patched:
   the profile's configuration avoids it (``weight_syncer.type=bucket``).
4. ``workers/actor/fsdp_sac_policy_worker.py:744`` — ``torch.cuda.synchronize()`` after
   SAC's training: a no-op while that method runs (a CPU has no stream to wait for).

RLinf's files are not modified: each module is patched in memory right after it is imported
(an import hook on ``sys.meta_path``). Loaded into every interpreter of the Worker by the
``sitecustomize`` the local adapter puts on ``PYTHONPATH`` when the profile says the node has
no GPU (``target.withoutGpu``), so Ray's workers load it too. Only the standard library is
imported here; torch and RLinf only when RLinf itself is imported.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

ACCELERATOR = "rlinf.scheduler.hardware.accelerators.accelerator"
FSDP_STRATEGY = "rlinf.hybrid_engines.fsdp.strategy.fsdp"
SAC_WORKER = "rlinf.workers.actor.fsdp_sac_policy_worker"


class CpuPlatform:
    """``torch.cpu`` as the torch platform of a node without an accelerator.

    RLinf calls a few things on its platform that ``torch.cpu`` lacks; on a CPU they have
    nothing to do (no cache to empty, no IPC handles to collect, no device memory).
    """

    def __getattr__(self, name: str) -> Any:
        import torch

        return getattr(torch.cpu, name)

    @staticmethod
    def current_stream(device: Any = None) -> Any:
        """torch.cpu's stream, which RLinf also synchronizes: work on a CPU is already done."""
        import torch

        class CpuStream(torch.cpu.Stream):
            def synchronize(self) -> None:
                return None

        return CpuStream()

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def ipc_collect() -> None:
        return None

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return 0

    @staticmethod
    def memory_reserved(device: Any = None) -> int:
        return 0

    @staticmethod
    def get_rng_state(device: Any = None) -> Any:
        import torch

        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: Any, device: Any = None) -> None:
        import torch

        torch.set_rng_state(state)


CPU = CpuPlatform()


def patch_accelerator(module: ModuleType) -> None:
    util = module.AcceleratorUtil
    no_accel = module.AcceleratorType.NO_ACCEL
    platform, device_type = util.get_torch_platform, util.get_device_type

    def get_torch_platform(accelerator_type: Any) -> Any:
        return CPU if accelerator_type == no_accel else platform(accelerator_type)

    def get_device_type(accelerator_type: Any) -> Any:
        return "cpu" if accelerator_type == no_accel else device_type(accelerator_type)

    util.get_torch_platform = staticmethod(get_torch_platform)
    util.get_device_type = staticmethod(get_device_type)


def patch_fsdp_strategy(module: ModuleType) -> None:
    import torch

    fsdp = module.FSDP

    class CpuFSDP(fsdp):  # type: ignore[misc,valid-type]
        """FSDP on the CPU: RLinf's arguments, with the CPU device and no GPU broadcast."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if not torch.cuda.is_available():
                kwargs["device_id"] = torch.device("cpu")
                kwargs["sync_module_states"] = False
            super().__init__(*args, **kwargs)

    CpuFSDP.__name__ = CpuFSDP.__qualname__ = fsdp.__name__
    setattr(module, "FSDP", CpuFSDP)  # noqa: B010  the name wrap_model looks up; FSDP's static methods stay its own


@contextlib.contextmanager
def _no_cuda_sync() -> Iterator[None]:
    import torch

    if torch.cuda.is_available():
        yield
        return
    sync = torch.cuda.synchronize
    torch.cuda.synchronize = lambda device=None: None
    try:
        yield
    finally:
        torch.cuda.synchronize = sync


def patch_sac_worker(module: ModuleType) -> None:
    cls = module.EmbodiedSACFSDPPolicy
    run_training = cls.run_training

    @functools.wraps(run_training)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _no_cuda_sync():
            return run_training(self, *args, **kwargs)

    cls.run_training = wrapped


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    ACCELERATOR: patch_accelerator,
    FSDP_STRATEGY: patch_fsdp_strategy,
    SAC_WORKER: patch_sac_worker,
}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, patch: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)
        applied.append(module.__name__)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the modules in ``PATCHES``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


applied: list[str] = []  # the modules patched in this interpreter, in order


def install() -> None:
    """Patch the modules of ``PATCHES`` when they are imported (those already are: now)."""
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
    for name, patch in PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
            applied.append(name)
