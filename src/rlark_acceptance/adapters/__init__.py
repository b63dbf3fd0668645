"""Adapters: ``local`` (embedded default) and plugins by entry point."""

from __future__ import annotations

import os
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
            try:
                adapter: Adapter = factory(profile, **runtime)
            except InputError as exc:
                raise _at_profile_line(profile, exc) from None
            return adapter
    known = sorted(ep.name for ep in entry_points(group=GROUP))
    raise InputError(
        str(profile.loc("target", "adapter")),
        f"no adapter {name!r} is installed (known: {', '.join(known)})",
    )


def _at_profile_line(profile: Profile, exc: InputError) -> InputError:
    """A kubeconfig the profile names that cannot be opened at all (missing, unreadable) is
    said at the profile line that names it, which is what to fix; any other problem keeps
    its own place (a line of the kubeconfig, its server)."""
    named = profile.target.kubeconfig
    if named is None or exc.where != named or os.access(named, os.R_OK):
        return exc
    return InputError(str(profile.loc("target", "kubeconfig")), f"target.kubeconfig {exc}")


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
