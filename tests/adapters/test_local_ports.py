"""The Ray ports the local target gives a Worker's head (``container.free_ports``): free on
loopback, inside the range no other head's defaults nor the kernel's outgoing connections
use, and never one port twice (Ray refuses such a head at 6.3)."""

from __future__ import annotations

import socket

import pytest

from rlark_acceptance.adapters.local import container
from rlark_acceptance.adapters.local.container import ContainerError, free_ports


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_run(length: int) -> int:
    """The first port of ``length`` consecutive free ones at the top of the range."""
    low, high = container._PORT_RANGE
    for base in range(high - length, low, -length):
        if all(bindable(p) for p in range(base, base + length)):
            return base
    raise AssertionError("no free ports to test with")


def test_a_head_s_ports_are_distinct_and_free_in_the_range() -> None:
    ports = free_ports(6)
    low, high = container._PORT_RANGE
    assert len(set(ports)) == 6 and all(low <= p < high for p in ports), ports


def test_as_many_ports_as_the_range_holds_are_each_picked_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six ports from a range of six: picked one by one and independently, two of them
    would be one port in almost every draw."""
    base = free_run(6)
    monkeypatch.setattr(container, "_PORT_RANGE", (base, base + 6))
    for _ in range(20):
        assert sorted(free_ports(6)) == list(range(base, base + 6))


def test_a_port_in_use_is_not_picked_and_too_few_free_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = free_run(3)
    monkeypatch.setattr(container, "_PORT_RANGE", (base, base + 3))
    with socket.socket() as held:
        held.bind(("127.0.0.1", base + 1))
        assert sorted(free_ports(2)) == [base, base + 2]
        with pytest.raises(ContainerError, match=f"no 3 free ports .* between {base} and"):
            free_ports(3)
