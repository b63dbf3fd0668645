"""Step 1 保留原有 RLinf 配置: the config the run command loads is the validated one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, Location, error, warning
from rlark_acceptance.preflight.checks.base import Context, check
from rlark_acceptance.rlinf.fingerprint import differences, fingerprint


@check(CheckId.LOADED_NUM_NODES_IS_ONE, needs=("rlinf",))
def loaded_config_single_node(ctx: Context) -> Iterator[Finding]:
    r = ctx.the_rlinf
    for p in r.problems:
        if p.fatal:
            yield error(
                CheckId.LOADED_NUM_NODES_IS_ONE,
                p.code or "config-unloadable",
                f"RLinf would not start: {p.message}",
                p.location,
            )
        else:
            yield warning(
                CheckId.LOADED_NUM_NODES_IS_ONE, "config-unresolved", p.message, p.location
            )
    if ctx.job is None or ctx.job.worker is None:
        # With a worker role, 3.3 reports these against its GPU request; without one, a
        # placement RLinf cannot parse must still fail the run (docs/contract.md §3).
        for problem in r.cluster.problems:
            yield error(
                CheckId.LOADED_NUM_NODES_IS_ONE,
                "placement-invalid",
                f"RLinf would not start: {problem.message}",
                r.location(problem.path),
            )
    launch = r.launch
    if launch is not None and launch.config_name:
        validated = Path(r.config.path).stem
        if launch.config_name != validated:
            yield error(
                CheckId.LOADED_NUM_NODES_IS_ONE,
                "config-name-differs",
                f"the run command loads config {launch.config_name!r}, "
                f"but the validated config is {validated!r}",
                _launch_loc(ctx),
            )
    if r.num_nodes is not None and r.num_nodes != 1:
        yield error(
            CheckId.LOADED_NUM_NODES_IS_ONE,
            "loaded-num-nodes-not-1",
            f"the config the run command loads has cluster.num_nodes {r.num_nodes}",
            r.location("cluster.num_nodes"),
        )


def _launch_loc(ctx: Context) -> Location | None:
    r = ctx.rlinf
    if r and r.launch and r.launch.overrides and r.launch.overrides[0].origin:
        return r.launch.overrides[0].origin
    if ctx.job is not None:
        return ctx.job.loc("spec", "runScript")
    return ctx.ri_loc("startCommand")


@check(CheckId.VALIDATED_CONFIG_KEPT, needs=("rlinf",))
def validated_settings_kept(ctx: Context) -> Iterator[Finding]:
    r, v = ctx.the_rlinf, ctx.validated
    if v is None or v is r:
        return
    before = fingerprint(v.config.resolved())
    after = fingerprint(r.config.resolved())
    for line in differences(before, after):
        key = line.split(":", 1)[0]
        via = next(
            (o for k, o in r.config.applied.items() if key == k or key.startswith(k + ".")), None
        )
        loc = via.origin if via and via.origin else r.location(key)
        yield error(
            CheckId.VALIDATED_CONFIG_KEPT,
            "validated-setting-overridden",
            f"the run command changes a validated setting: {line}",
            loc,
        )
