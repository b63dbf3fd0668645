"""Checks 1.1 and 1.2 at run time: the config RLinf printed at start-up is the validated one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlark_acceptance.rlinf.fingerprint import differences, fingerprint

if TYPE_CHECKING:
    from rlark_acceptance.run.step6.run import Step6Run


def printed_config_checks(run: Step6Run, validated: dict[str, Any] | None) -> None:
    """1.1: RLinf loaded one node; 1.2: the settings it runs with are the validated ones."""
    cfg = run.rec.printed_config
    if cfg is None:
        run.done("1.1", "failed", "the config RLinf printed at start-up is not valid JSON")
        return
    n = (cfg.get("cluster") or {}).get("num_nodes")
    run.done(
        "1.1",
        "passed" if n == 1 else "failed",
        f"the config RLinf loaded has cluster.num_nodes {n!r}",
    )
    if validated is not None:
        diffs = differences(fingerprint(validated), fingerprint(cfg))
        run.done(
            "1.2",
            "passed" if not diffs else "failed",
            "the settings RLinf ran with equal the validated ones"
            if not diffs
            else "the run differs from the validated config: " + "; ".join(diffs[:5]),
        )
