"""Read what a pickle *would* build, without building it: never ``pickle.load``.

Checkpoints are pickles, and unpickling runs code. This walks the opcode stream with
``pickletools.genops`` and tracks the stack symbolically (strings, ints, globals as
names, tuples), enough to list torch's persistent ids ``('storage', <type>, key,
location, numel)`` that point at the archive's ``data/<key>`` entries. Nothing is
imported or called: the few torch rebuild functions of a state dict
(``_rebuild_tensor_v2`` and its wrappers) are recognised by name and modelled as a
``TensorRef`` (which storage, offset, shape, stride), so tensors can be named and read
from the raw storages.
"""

from __future__ import annotations

import pickletools
from dataclasses import dataclass, field
from typing import Any

MARK = object()


@dataclass(frozen=True)
class Global:
    module: str
    name: str


class Opaque:
    """A value this scan does not model (reduced objects, lists...)."""


@dataclass(frozen=True)
class PersistentRef:
    """What a persistent load would return: for torch, a storage named by ``pid``."""

    pid: Any


@dataclass(frozen=True)
class TensorRef:
    """A tensor ``torch._utils._rebuild_tensor_v2`` would build over storage ``data/<key>``."""

    key: str
    storage_type: str  # torch's legacy storage class name: FloatStorage, BFloat16Storage...
    offset: int  # in elements
    shape: tuple[int, ...]
    stride: tuple[int, ...]


# Rebuild functions torch.save emits for tensors and parameters (torch/_utils.py,
# torch/_tensor.py); anything else is left opaque.
_REBUILD_TENSOR = {"torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2"}
_REBUILD_WRAPPERS = {
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
}
_REBUILD_FROM_TYPE = "torch._tensor._rebuild_from_type_v2"
_DICT_TYPES = {"collections.OrderedDict", "builtins.dict", "__builtin__.dict"}


@dataclass
class Built:
    """An object ``NEWOBJ`` would create, and the state ``BUILD`` would give it."""

    cls: Global | None
    state: Any = None


@dataclass
class PickleSummary:
    persistent_ids: list[Any] = field(default_factory=list)
    globals: set[str] = field(default_factory=set)
    objects: list[Built] = field(default_factory=list)  # every NEWOBJ, its state once built
    # Dict entries whose key is an object (DCP's ``MetadataIndex`` -> ``_StorageInfo``).
    object_items: list[tuple[Built, Any]] = field(default_factory=list)
    root: Any = None  # what the pickle returns, as modelled here

    def tensors(self) -> list[tuple[str, TensorRef]]:
        """``(dotted name, tensor)`` of every tensor reachable from the root, as a state
        dict names them (``""`` for a pickle that is one tensor)."""
        out: list[tuple[str, TensorRef]] = []

        def walk(name: str, value: Any, depth: int) -> None:
            if isinstance(value, TensorRef):
                out.append((name, value))
            elif depth < 32 and isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{name}.{k}" if name else str(k), v, depth + 1)
            elif depth < 32 and isinstance(value, tuple | list):
                for i, v in enumerate(value):
                    walk(f"{name}.{i}" if name else str(i), v, depth + 1)

        walk("", self.root, 0)
        return out

    def dcp_items(self) -> list[tuple[str, str, int, int]]:
        """``(fqn, shard file, offset, length)`` of every entry of a DCP .metadata's
        ``storage_data`` (``MetadataIndex`` -> ``_StorageInfo``)."""
        out = []
        for index, info in self.object_items:
            if not (
                index.cls is not None
                and index.cls.name == "MetadataIndex"
                and isinstance(index.state, dict)
                and isinstance(info, Built)
                and isinstance(info.state, dict)
            ):
                continue
            fqn = index.state.get("fqn")
            path, offset, length = (
                info.state.get(k) for k in ("relative_path", "offset", "length")
            )
            if (
                isinstance(fqn, str)
                and isinstance(path, str)
                and isinstance(offset, int)
                and isinstance(length, int)
            ):
                out.append((fqn, path, offset, length))
        return out

    def dcp_extents(self) -> list[tuple[str, int]]:
        """``(shard file, bytes it must hold)`` of every ``_StorageInfo`` of a DCP .metadata
        (torch.distributed.checkpoint.filesystem: ``relative_path``, ``offset``, ``length``)."""
        out = []
        for obj in self.objects:
            st = obj.state
            if obj.cls is not None and obj.cls.name == "_StorageInfo" and isinstance(st, dict):
                path, offset, length = st.get("relative_path"), st.get("offset"), st.get("length")
                if isinstance(path, str) and isinstance(offset, int) and isinstance(length, int):
                    out.append((path, offset + length))
        return out

    def storages(self) -> list[tuple[str, str, int]]:
        """``(key, storage type name, numel)`` of every torch storage reference."""
        out = []
        for pid in self.persistent_ids:
            if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
                typ = pid[1].name if isinstance(pid[1], Global) else str(pid[1])
                if isinstance(pid[2], str) and isinstance(pid[4], int):
                    out.append((pid[2], typ, pid[4]))
        return out


class PickleScanError(ValueError):
    pass


_STRINGS = {"BINUNICODE", "SHORT_BINUNICODE", "UNICODE", "BINUNICODE8", "STRING", "BINSTRING"}
_STRINGS |= {"SHORT_BINSTRING"}
_INTS = {"BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG"}
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}
_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


def scan_pickle(data: bytes) -> PickleSummary:
    """Walk every opcode of ``data``; raise ``PickleScanError`` if the stream is malformed."""
    summary = PickleSummary()
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    try:
        ops: list[tuple[Any, Any, Any]] = list(pickletools.genops(data))
    except Exception as e:  # genops raises ValueError and friends on bad streams
        raise PickleScanError(f"malformed pickle: {e}") from None
    if not ops or ops[-1][0].name != "STOP":
        raise PickleScanError("pickle has no STOP opcode")
    for op, arg, pos in ops:
        name = op.name
        try:
            if name in _STRINGS:
                stack.append(arg.decode("latin-1") if isinstance(arg, bytes) else arg)
            elif name in _INTS:
                stack.append(arg)
            elif name == "GLOBAL":
                module, _, qual = str(arg).partition(" ")
                stack.append(Global(module, qual))
                summary.globals.add(f"{module}.{qual}")
            elif name == "STACK_GLOBAL":
                qual, module = stack.pop(), stack.pop()
                stack.append(Global(str(module), str(qual)))
                summary.globals.add(f"{module}.{qual}")
            elif name == "MARK":
                stack.append(MARK)
            elif name == "TUPLE":
                stack.append(tuple(_pop_to_mark(stack)))
            elif name in _TUPLES:
                n = _TUPLES[name]
                items = stack[-n:]
                if len(items) != n or any(i is MARK for i in items):
                    raise PickleScanError(f"{name} at byte {pos}: stack underflow")
                del stack[-n:]
                stack.append(tuple(items))
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name in _PUTS:
                memo[int(arg)] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in _GETS:
                stack.append(memo[int(arg)])
            elif name == "BINPERSID":
                pid = stack.pop()
                summary.persistent_ids.append(pid)
                stack.append(PersistentRef(pid))
            elif name == "PERSID":
                summary.persistent_ids.append(arg)
                stack.append(PersistentRef(arg))
            elif name == "REDUCE":
                args, func = stack.pop(), stack.pop()
                if func is MARK or args is MARK:
                    raise IndexError("MARK consumed as a value")
                stack.append(_reduce(func, args))
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name in ("SETITEM", "SETITEMS"):
                items = (
                    [stack.pop(), stack.pop()][::-1] if name == "SETITEM" else _pop_to_mark(stack)
                )
                target = stack[-1]
                if isinstance(target, dict):
                    for k, v in zip(items[::2], items[1::2], strict=True):
                        if isinstance(k, str | int):
                            target[k] = v
                        elif isinstance(k, Built):
                            summary.object_items.append((k, v))
            elif name == "NEWOBJ":
                stack.pop()  # the arguments
                cls = stack.pop()
                obj = Built(cls if isinstance(cls, Global) else None)
                summary.objects.append(obj)
                stack.append(obj)
            elif name == "BUILD":
                state = stack.pop()
                if isinstance(stack[-1], Built):
                    stack[-1].state = state
            elif name == "STOP":
                summary.root = stack[-1] if stack else None
            elif name in ("PROTO", "FRAME"):
                continue
            else:
                _generic(op, stack)
        except (IndexError, KeyError) as e:
            raise PickleScanError(
                f"{name} at byte {pos}: inconsistent stack or memo ({e})"
            ) from None
    return summary


def _reduce(func: Any, args: Any) -> Any:
    """The modelled result of ``func(*args)``: a ``TensorRef`` for torch's tensor rebuilds,
    an empty dict for ``OrderedDict()``, else opaque. Nothing is called."""
    if not isinstance(func, Global) or not isinstance(args, tuple):
        return Opaque()
    qual = f"{func.module}.{func.name}"
    if qual in _REBUILD_TENSOR and len(args) >= 4:
        storage, offset, shape, stride = args[:4]
        pid = storage.pid if isinstance(storage, PersistentRef) else None
        if (
            isinstance(pid, tuple)
            and len(pid) >= 3
            and pid[0] == "storage"
            and isinstance(pid[2], str)
            and isinstance(offset, int)
            and isinstance(shape, tuple)
            and isinstance(stride, tuple)
            and all(isinstance(d, int) for d in (*shape, *stride))
        ):
            typ = pid[1].name if isinstance(pid[1], Global) else str(pid[1])
            return TensorRef(pid[2], typ, offset, shape, stride)
        return Opaque()
    if qual in _REBUILD_WRAPPERS and args:
        return args[0] if isinstance(args[0], TensorRef) else Opaque()
    if qual == _REBUILD_FROM_TYPE and len(args) >= 3:
        # (func, type, func_args, state): the tensor func(*func_args) builds, retyped.
        return _reduce(args[0], args[2])
    if qual in _DICT_TYPES and args == ():
        return {}
    return Opaque()


def _pop_to_mark(stack: list[Any]) -> list[Any]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is MARK:
            items = stack[i + 1 :]
            del stack[i:]
            return items
    raise IndexError("no MARK on the stack")


def _generic(op: pickletools.OpcodeInfo, stack: list[Any]) -> None:
    """Apply an opcode's documented stack effect with opaque results."""
    before = list(op.stack_before)
    if pickletools.markobject in before:
        _pop_to_mark(stack)
        before = before[: before.index(pickletools.markobject)]
    for _ in before:
        if stack.pop() is MARK:
            raise IndexError("MARK consumed as a value")
    for item in op.stack_after:
        stack.append(MARK if item is pickletools.markobject else Opaque())
