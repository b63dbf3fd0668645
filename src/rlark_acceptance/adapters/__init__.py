"""Adapters: ``local`` (embedded default) and plugins by entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from rlark_acceptance.adapters.base import (
    FATAL_REASONS,
    Adapter,
    Event,
    EventSeen,
    Happening,
    JobRef,
    LogEnded,
    LogLines,
    Observation,
    PodChanged,
    PodStatus,
    SubmitRejected,
    TargetLost,
)
from rlark_acceptance.model.errors import InputError

if TYPE_CHECKING:
    from rlark_acceptance.model.profile import Profile

GROUP = "rlark_acceptance.adapters"


def open_adapter(profile: Profile, **runtime: Any) -> Adapter:
    """The adapter the profile's ``target.adapter`` names, from the entry-point group.

    ``runtime``: keyword arguments of this process's making, not the profile's (the local
    adapter's ``scratch_root``, ``install_signal_handlers``)."""
    name = profile.target.adapter
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            factory = ep.load()
            adapter: Adapter = factory(profile, **runtime)
            return adapter
    known = sorted(ep.name for ep in entry_points(group=GROUP))
    raise InputError(
        str(profile.loc("target", "adapter")),
        f"no adapter {name!r} is installed (known: {', '.join(known)})",
    )


__all__ = [
    "FATAL_REASONS",
    "Adapter",
    "Event",
    "EventSeen",
    "Happening",
    "JobRef",
    "LogEnded",
    "LogLines",
    "Observation",
    "PodChanged",
    "PodStatus",
    "SubmitRejected",
    "TargetLost",
    "open_adapter",
]
