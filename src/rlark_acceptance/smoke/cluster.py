"""Attach to the Ray head the Worker started (``ray start --head``), never start a new one.

RLinf's ``Cluster`` joins the running head the same way. Probing the head's GCS port first
turns "no head" into a clear message within seconds instead of Ray's long connect retries.
"""

from __future__ import annotations

import os
import socket

PROBE_TIMEOUT_S = 5.0


class NoRayHeadError(RuntimeError):
    """No running Ray head could be found or reached."""


def resolve_head_address() -> str:
    """The head's ``host:port`` the way ``ray.init(address="auto")`` finds it.

    ``RAY_ADDRESS`` first; otherwise the address the last ``ray start`` recorded, or a
    running GCS process on this machine.
    """
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env != "auto":
        return env
    # Ray's own resolution, so the smoke finds exactly what ray.init("auto") would.
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # a private API: if it moves, let ray.init resolve "auto" itself
        return "auto"
    try:
        return canonicalize_bootstrap_address_or_die("auto")
    except ConnectionError as e:
        raise NoRayHeadError(
            "no running Ray head found (RAY_ADDRESS is unset and no `ray start --head` "
            f"is recorded on this machine): {e}"
        ) from e


def probe(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise ``NoRayHeadError`` unless a TCP connection to the head's GCS port succeeds."""
    if address == "auto" or "://" in address:  # ray:// client addresses: leave it to Ray
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise NoRayHeadError(f"RAY_ADDRESS {address!r} is not host:port")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise NoRayHeadError(
            f"no Ray head is reachable at {address}: {e.strerror or e}. "
            "Start it with `ray start --head` before the run script."
        ) from e


def attach(namespace: str | None = None) -> str:
    """Connect this driver to the running head; return its address.

    No namespace by default: Ray then gives each run its own, so two runs on one head
    cannot collide on the named worker groups.
    """
    import ray

    address = resolve_head_address()
    probe(address)
    ray.init(address=address, namespace=namespace, log_to_driver=True)
    return address
