"""The ``kubernetes`` target's options (keys of the profile's ``target:``).

Parsed once when the profile is loaded (``model.options``); light on purpose: loading a
profile imports this module, never the Kubernetes client.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KubernetesOptions:
    # How long deleting a Job may take until its Pods are gone, in seconds.
    delete_timeout: float = 120.0
