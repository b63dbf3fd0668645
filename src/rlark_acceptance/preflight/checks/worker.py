"""Step 3 配置一个 Worker: cluster, node selection, GPUs, image, prepare script, env, mounts."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, Location, error, info, warning
from rlark_acceptance.model.job import mount_for
from rlark_acceptance.preflight.checks.base import (
    Context,
    check,
    is_count,
    nodes_matching,
)
from rlark_acceptance.preflight.checks.run_info import image_findings

_LABEL_NAME = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$")
_ACTIVATION = re.compile(
    r"\b(?:source|\.)\s+\S*activate\b|\bconda\s+activate\b|\bmamba\s+activate\b"
)


def label_key_ok(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_NAME.match(name)) and (not prefix or bool(_DNS_SUBDOMAIN.match(prefix)))


def label_value_ok(value: str) -> bool:
    return value == "" or bool(_LABEL_NAME.match(value))


@check(CheckId.TARGET_CLUSTER, needs=("worker",))
def target_cluster(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    if not role.cluster:
        yield error(
            CheckId.TARGET_CLUSTER,
            "cluster-missing",
            "the worker role names no target cluster",
            role.loc("cluster"),
        )
    elif ctx.clusters is not None and role.cluster not in ctx.clusters:
        yield error(
            CheckId.TARGET_CLUSTER,
            "cluster-unknown",
            f"cluster {role.cluster!r} is not one this environment provides "
            f"({', '.join(ctx.clusters) or 'none'})",
            role.loc("cluster"),
        )


@check(CheckId.ONE_NODE_SELECTED, needs=("worker",))
def node_selection(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    sel = role.node_selector
    loc = role.loc("nodeSelector")
    if sel is not None and not isinstance(sel, dict):
        yield error(
            CheckId.ONE_NODE_SELECTED,
            "selector-shape",
            "nodeSelector must be a map of label: value",
            loc,
        )
        return
    for k, v in (sel or {}).items():
        if not label_key_ok(str(k)):
            yield error(
                CheckId.ONE_NODE_SELECTED,
                "selector-key",
                f"nodeSelector key {k!r} is not a label key",
                role.loc("nodeSelector", k),
            )
        if not isinstance(v, str) or not label_value_ok(v):
            yield error(
                CheckId.ONE_NODE_SELECTED,
                "selector-value",
                f"nodeSelector {k}: {v!r} is not a label value",
                role.loc("nodeSelector", k),
            )
    if ctx.nodes is None:
        if not sel:
            yield warning(
                CheckId.ONE_NODE_SELECTED,
                "selector-empty",
                "no node selection: nothing keeps the Worker to one expected node; select it "
                "(nodeSelector kubernetes.io/hostname: <the node>)",
                loc,
            )
        return
    matched = nodes_matching(ctx.nodes, sel)
    if len(matched) != 1:
        names = ", ".join(n.name for n in matched) or "none"
        why = (
            "several Workers would each start a Ray head"
            if len(matched) > 1
            else "the Worker cannot be scheduled"
        )
        yield error(
            CheckId.ONE_NODE_SELECTED,
            "selector-not-one-node",
            f"the node selection hits {len(matched)} ready, schedulable nodes ({names}); {why}",
            loc,
        )


def gpu_findings(
    check_id: str, ctx: Context, gpus: object, loc: Location | None
) -> Iterator[Finding]:
    """GPUs requested against the placement and the node (3.3, and 5.5 on the YAML)."""
    r = ctx.the_rlinf
    for p in r.cluster.problems:
        yield error(check_id, "placement-invalid", p.message, r.location(p.path))
    if not is_count(gpus) or gpus <= 0:  # type: ignore[operator]
        yield error(check_id, "gpus-invalid", f"GPU count {gpus!r} is not a positive count", loc)
        return
    assert isinstance(gpus, int)
    need = r.cluster.gpus_required
    cap = ctx.capacity
    if r.cluster.gpus_all:
        msg = f"the placement uses 'all': RLinf uses every GPU the Worker gets ({gpus})"
        if cap is not None and gpus != cap:
            msg += f", while the node has {cap}"
        yield info(check_id, "gpus-all", msg, r.location("cluster.component_placement"))
    elif need is not None and gpus < need:
        yield error(
            check_id,
            "gpus-too-few",
            f"requests {gpus} GPUs but the placement uses resource ranks up to "
            f"{need - 1}, which needs {need}",
            loc,
        )
    elif need is not None and gpus > need:
        yield warning(
            check_id,
            "gpus-unused",
            f"requests {gpus} GPUs; the placement uses {need}: request {need}, or place "
            f"the components on all {gpus}",
            loc,
        )
    if cap is not None and gpus > cap:
        yield error(
            check_id,
            "gpus-over-capacity",
            f"requests {gpus} GPUs; the selected node can allocate {cap}",
            loc,
        )


@check(CheckId.GPUS_FIT, needs=("worker", "rlinf"))
def worker_gpus(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    yield from gpu_findings(CheckId.GPUS_FIT, ctx, role.gpus, role.loc("gpus"))


@check(CheckId.IMAGE_PULLABLE, needs=("worker",))
def worker_image(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    yield from image_findings(CheckId.IMAGE_PULLABLE, role.image, role.loc("image"), ctx.redactor)


@check(CheckId.PREPARE_SCRIPT, needs=("worker",))
def prepare_script(ctx: Context) -> Iterator[Finding]:
    job, role = ctx.the_job, ctx.worker
    prepared = ctx.run_info.prepare_command if ctx.run_info else None
    script = role.prepare_script or ""
    if prepared and prepared.strip() and _squash(prepared) not in _squash(script):
        yield error(
            CheckId.PREPARE_SCRIPT,
            "prepare-missing",
            "the preparation command is not in the prepare script; RLark replaces the "
            "image ENTRYPOINT, so nothing else runs it",
            role.loc("prepareScript"),
        )
    run = job.run_script or ""
    if _ACTIVATION.search(run) and not _ACTIVATION.search(script):
        yield info(
            CheckId.PREPARE_SCRIPT,
            "activation-in-run-script",
            "the run script activates an environment; the page puts that in the prepare script",
            job.loc("spec", "runScript"),
        )
    if re.search(r"\bENTRYPOINT\b|docker-entrypoint", script + run):
        yield warning(
            CheckId.PREPARE_SCRIPT,
            "entrypoint-reliance",
            "the scripts refer to the image ENTRYPOINT, which RLark does not run: start "
            "what it starts in the prepare script",
            role.loc("prepareScript"),
        )


def _squash(text: str) -> str:
    return " ".join(text.split())


@check(CheckId.ENV_NOT_SENSITIVE, needs=("worker",))
def env_not_sensitive(ctx: Context) -> Iterator[Finding]:
    for var in ctx.worker.env:
        for hit in ctx.redactor.scan_value(var.name, var.value or ""):
            yield error(
                CheckId.ENV_NOT_SENSITIVE,
                f"secret-{hit.kind}",
                f"environment variable {var.name}: {hit.description}",
                var.location,
            )


@check(CheckId.PATHS_UNDER_MOUNTS, needs=("worker", "rlinf"))
def outputs_under_mounts(ctx: Context) -> Iterator[Finding]:
    r = ctx.the_rlinf
    mounts = ctx.worker.mounts
    key = r.checkpoint_key or "runner.logger.log_path"
    loc = r.location(key)
    via = r.config.applied.get("runner.logger.log_path")
    if via is not None and via.source == "launch script" and r.launch and r.launch.launcher:
        origin = (
            f"{r.launch.launcher.suffix.rsplit('/', 1)[-1]} sets "
            f"runner.logger.log_path to {r.log_path}"
        )
    else:
        origin = f"{key} = {r.config.raw(key)!r}"
    targets = [("log path", r.log_path, r.log_path_raw)]
    if r.checkpoint_key is not None:
        targets.append(("checkpoint directory", r.checkpoint_dir, r.config.raw(r.checkpoint_key)))
    for what, path, raw in targets:
        if path is None:
            if isinstance(raw, str) and raw and "${" not in raw and not raw.startswith("/"):
                yield error(
                    CheckId.PATHS_UNDER_MOUNTS,
                    "output-relative",
                    f"the {what} comes from relative {raw!r} and the run command sets "
                    "no working directory (cd), so where it lands is unknown",
                    loc,
                )
            else:
                yield error(
                    CheckId.PATHS_UNDER_MOUNTS,
                    "output-unknown",
                    f"where RLinf writes its {what} cannot be determined ({origin})",
                    loc,
                )
            continue
        m = mount_for(path, mounts)
        if m is None:
            yield error(
                CheckId.PATHS_UNDER_MOUNTS,
                "output-outside-mounts",
                f"RLinf writes its {what} to {path} ({origin}), outside every mount: "
                "it is lost when the Pod is rebuilt",
                loc,
            )
        elif m.read_only:
            yield error(
                CheckId.PATHS_UNDER_MOUNTS,
                "output-read-only",
                f"the {what} {path} lies in read-only mount {m.name}",
                m.location,
            )
    if ctx.run_info is not None:
        for kind in ("data", "model"):
            p = ctx.run_info.paths.get(kind)
            if isinstance(p, str) and p.startswith("/") and mount_for(p, mounts) is None:
                yield error(
                    CheckId.PATHS_UNDER_MOUNTS,
                    "input-outside-mounts",
                    f"the {kind} path {p} is under no mount's container path",
                    ctx.ri_loc("paths", kind),
                )
