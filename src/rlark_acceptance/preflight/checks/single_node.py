"""§0 确认任务适合单节点运行: is this job right for one node?"""

from __future__ import annotations

from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, Location, error, info
from rlark_acceptance.model.job import Job, Role
from rlark_acceptance.preflight.checks.base import Context, check, is_count

RESOURCE_FIELDS = ("cpu", "memory", "shm")


@check(CheckId.NUM_NODES_IS_ONE, needs=("rlinf",))
def effective_num_nodes(ctx: Context) -> Iterator[Finding]:
    r = ctx.the_rlinf
    loc = r.location("cluster.num_nodes")
    if not r.config.has("cluster.num_nodes"):
        yield error(
            CheckId.NUM_NODES_IS_ONE, "num-nodes-missing", "cluster.num_nodes is not set", loc
        )
        return
    n = r.num_nodes
    if n is None:
        raw = r.config.raw("cluster.num_nodes")
        yield error(
            CheckId.NUM_NODES_IS_ONE,
            "num-nodes-invalid",
            f"effective cluster.num_nodes {raw!r} is not a node count",
            loc,
        )
    elif n != 1:
        via = r.config.applied.get("cluster.num_nodes")
        origin = f" (set by {via.text!r} in the {via.source})" if via else ""
        yield error(
            CheckId.NUM_NODES_IS_ONE,
            "num-nodes-not-1",
            f"effective cluster.num_nodes is {n}{origin}",
            loc,
        )


@check(CheckId.ONE_NODE_PROVIDES_ALL, needs=("job",))
def one_node_provides_all(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    clusters = {r.cluster for r in job.roles if r.cluster}
    if len(clusters) > 1:
        yield error(
            CheckId.ONE_NODE_PROVIDES_ALL,
            "several-clusters",
            f"roles target {len(clusters)} clusters: {', '.join(sorted(clusters))}",
            job.loc("spec", "roles"),
        )
    workers = _workers(job)
    if workers > 1:
        yield error(
            CheckId.ONE_NODE_PROVIDES_ALL,
            "several-workers",
            f"the job creates {workers} Workers; one node means one Worker",
            job.loc("spec", "roles"),
        )
    for role in job.roles:
        for m in role.mounts:
            need = {"hostPath": m.host_path, "objectStorage": m.bucket, "pvc": m.claim_name}
            if m.type not in need:
                yield error(
                    CheckId.ONE_NODE_PROVIDES_ALL,
                    "mount-type-unknown",
                    f"mount {m.name}: type {m.type!r} is not hostPath, objectStorage or pvc",
                    m.location,
                )
            elif not need[m.type]:
                what = {"hostPath": "hostPath", "objectStorage": "bucket", "pvc": "claimName"}
                yield error(
                    CheckId.ONE_NODE_PROVIDES_ALL,
                    "mount-incomplete",
                    f"mount {m.name}: a {m.type} mount needs {what[m.type]}",
                    m.location,
                )


@check(CheckId.ONE_IMAGE_MOUNTS_ENV, needs=("job",))
def one_image_one_env(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    if len(job.roles) > 1:
        images = {r.image for r in job.roles}
        what = f"{len(images)} images" if len(images) > 1 else "one image"
        yield error(
            CheckId.ONE_IMAGE_MOUNTS_ENV,
            "several-roles",
            f"{len(job.roles)} roles with {what}; all components must share one Worker",
            job.loc("spec", "roles"),
        )


@check(CheckId.MULTI_NODE_REDIRECT, needs=("rlinf",))
def redirect_to_multi_node(ctx: Context) -> Iterator[Finding]:
    reasons = redirect_reasons(ctx)
    if reasons:
        yield error(
            CheckId.MULTI_NODE_REDIRECT,
            "redirect-multi-node",
            "use 规划多节点和异构 Worker, not this page: " + ", ".join(reasons),
            _redirect_location(ctx),
        )


def _redirect_location(ctx: Context) -> Location:
    """Where the first reason is written, which is what to change: the line that sets
    cluster.num_nodes (an override's own, in the run script or the profile, when one set
    it) or declares the node groups; else the Job's roles, or the role's resources."""
    r = ctx.the_rlinf
    if r.num_nodes is not None and r.num_nodes > 1:
        return r.location("cluster.num_nodes")
    if len(r.cluster.node_groups) > 1:
        return r.location("cluster.node_groups")
    job = ctx.job
    if job is not None and job.roles:
        workers = _workers(job)
        if len(job.roles) > 1 or workers > 1:
            return job.loc("spec", "roles")
        for role in job.roles:
            if _resource_reasons(role):
                return role.loc("resources")
    return r.location("cluster")


def redirect_reasons(ctx: Context) -> list[str]:
    """Every reason this job belongs to the multi-node guide (never just the first)."""
    reasons: list[str] = []
    if ctx.rlinf is not None:
        reasons += ctx.rlinf.redirect_reasons
    job = ctx.job
    if job is not None:
        if len(job.roles) > 1:
            reasons.append(f"roles={len(job.roles)}")
            images = {r.image for r in job.roles}
            if len(images) > 1:
                reasons.append(f"images={len(images)}")
        workers = _workers(job)
        if workers > 1:
            reasons.append(f"workers={workers}")
        for role in job.roles:
            reasons += _resource_reasons(role)
    return reasons


def _workers(job: Job) -> int:
    """The Workers the Job creates: one per replica of each role."""
    return sum(r.replicas for r in job.roles if is_count(r.replicas))


def _resource_reasons(role: Role) -> list[str]:
    """CPU, memory and /dev/shm requests: the multi-node guide's, not this page's."""
    if not isinstance(role.resources, dict):
        return []
    fields = [str(k) for k in role.resources]
    return [f"resources.{k}" for k in fields if any(f in k.lower() for f in RESOURCE_FIELDS)]


@check(CheckId.REAL_ROBOT_SAFETY, needs=("rlinf",))
def real_robot_safety(ctx: Context) -> Iterator[Finding]:
    r = ctx.the_rlinf
    if not r.cluster.real_robot:
        return
    groups = ", ".join(r.cluster.hardware_groups) or "a node group"
    loc = r.location("cluster.node_groups")
    if ctx.real_robot_confirmed:
        yield info(
            CheckId.REAL_ROBOT_SAFETY,
            "real-robot-confirmed",
            f"real-robot job ({groups} declares hardware); safety confirmed in the profile",
            loc,
        )
    else:
        yield error(
            CheckId.REAL_ROBOT_SAFETY,
            "real-robot-unconfirmed",
            f"real-robot job ({groups} declares hardware): blocked until the devices "
            "and on-site safety are confirmed (profile safety.realRobotConfirmed)",
            loc,
        )
