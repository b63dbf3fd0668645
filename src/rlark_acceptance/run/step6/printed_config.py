"""Checks 1.1 and 1.2 at run time: the config RLinf printed at start-up is the validated one.

Read along: decided whenever the log reader has read the printed config, while the awaited
phases wait (RLinf prints it between the run script's start, 6.3, and the first signal,
6.4). A ``{`` ... ``}`` block that is not JSON fails 1.1 until a later block parses; 1.2 is
judged only on a config that parsed. A Worker that never prints its config leaves both
undecided (the record says why when its log lines were rotated away unread).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.rlinf.fingerprint import differences, fingerprint
from rlark_acceptance.run.step6.observed import Observed
from rlark_acceptance.run.step6.phase import Decision, Failed, Passed, Phase


class OneNode(Phase):
    """1.1: RLinf loaded one node."""

    check: ClassVar[str] = CheckId.LOADED_NUM_NODES_IS_ONE

    def verdict(self, seen: Observed) -> Decision:
        cfg = seen.log.config
        if cfg is None:
            if seen.log.unparsed_configs:
                return Failed(
                    "the config RLinf printed at start-up is not valid JSON "
                    f"({seen.log.unparsed_why})"
                )
            return None
        cluster = cfg.get("cluster")
        n = cluster.get("num_nodes") if isinstance(cluster, dict) else None
        message = f"the config RLinf loaded has cluster.num_nodes {n!r}"
        return Passed(message) if n == 1 else Failed(message)


class AsValidated(Phase):
    """1.2: the settings RLinf runs with are the validated ones."""

    check: ClassVar[str] = CheckId.VALIDATED_CONFIG_KEPT

    def __init__(self, validated: dict[str, Any]) -> None:
        self.validated = fingerprint(validated)

    def verdict(self, seen: Observed) -> Decision:
        cfg = seen.log.config
        if cfg is None:
            return None
        diffs = differences(self.validated, fingerprint(cfg))
        if diffs:
            return Failed("the run differs from the validated config: " + "; ".join(diffs[:5]))
        return Passed("the settings RLinf ran with equal the validated ones")
