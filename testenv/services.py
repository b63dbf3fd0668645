"""The services testenv runs, each one ``Service``, so that ``up``, ``down``, ``status`` and
the leases loop over them instead of naming each one.

A service's holders are not part of it: every service is held the same way, by the leases
of ``lease.py`` under its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testenv import build, cluster, s3
from testenv.state import State


@dataclass(frozen=True)
class Service:
    """One test service: built from its recipes, started, asked and stopped by its state."""

    name: str
    # Started (what already runs healthy is left as it is), and recorded in the state.
    up: Callable[[State], None]
    down: Callable[[State], None]  # stopped, by what the state recorded, and forgotten there
    healthy: Callable[[State], bool]  # up and usable, as a test would use it
    recorded: Callable[[State], bool]  # the state holds it: started, not yet stopped
    status: Callable[[State], dict[str, Any]]  # what runs of it (never a credential)

    @property
    def needs(self) -> tuple[str, ...]:
        """The build recipes it runs from."""
        return build.NEEDS[self.name]


# In the order they are started; stopped in reverse (the cluster, the bigger set, first; the
# S3 server shares nothing with it).
SERVICES: dict[str, Service] = {
    svc.name: svc
    for svc in (
        # The S3 server with the contract's bucket.
        Service(
            "s3",
            up=s3.up,
            down=s3.down,
            healthy=lambda st: s3.ready(st.s3, within=s3.PATIENCE_S),
            recorded=lambda st: st.s3 is not None,
            status=s3.status,
        ),
        # The control plane, its simulated GPU nodes, the real node and the platform's
        # stand-in.
        Service(
            "cluster",
            up=cluster.up,
            down=cluster.down,
            healthy=cluster.whole,
            recorded=lambda st: st.cluster is not None,
            status=cluster.status,
        ),
    )
}
