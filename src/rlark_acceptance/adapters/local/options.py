"""The ``local`` target's options (keys of the profile's ``target:``; docs/contract.md §2).

Parsed once when the profile is loaded (``model.options``); a wrong type or an unknown
key is refused there with the profile's line. Light on purpose: loading a profile imports
this module, never the adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlark_acceptance.model.keys import ANY, Schema

# The keys of ``images:`` entries: a misspelt one is refused when the profile is loaded,
# with the key meant (its values are still read when a Pod starts).
IMAGE_KEYS: Schema = {ANY: {"environment": {"lock": None}, "workspace": None}}


@dataclass(frozen=True)
class LocalOptions:
    # What each image reference is on this machine ({REF: {environment, workspace}}): read
    # by ``images.resolve`` when a Pod starts, so a wrong entry fails that Pod, as a pull.
    #
    # Not in the repr: an image reference may carry a registry credential, and reprs reach
    # tracebacks and reports.
    images: Mapping[str, Any] = field(
        default_factory=dict, repr=False, metadata={"keys": IMAGE_KEYS}
    )
    # The node has no GPU: every interpreter of the Worker loads the GPU stand-in.
    without_gpu: bool = False
    # The Ray head with its dashboard (Ray's state API, which RLinf lists its actors through).
    ray_dashboard: bool = False
    # The Ray head with the autoscaler's monitor. Off by default: the one node is the whole
    # cluster, so the monitor has nothing to scale, and it takes each head 0.3-0.6 s of CPU.
    ray_monitor: bool = False
    # The Ray head's CPUs.
    ray_num_cpus: int = 1
    # /workspace folders the image ships besides those the scripts cd into.
    image_dirs: tuple[str, ...] = ()
    # Where the Pods' scratch lives (default: the system temp dir's rlark-local).
    scratch_root: Path | None = None
