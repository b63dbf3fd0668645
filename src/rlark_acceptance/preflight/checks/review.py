"""Step 5 核对 YAML 并提交: the preview table, the prepared values, node selection, secrets."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, error
from rlark_acceptance.model.job import mount_for
from rlark_acceptance.model.keypath import dotted
from rlark_acceptance.preflight.checks.base import (
    Context,
    check,
    is_count,
    nodes_matching,
)
from rlark_acceptance.preflight.checks.worker import gpu_findings


@check(CheckId.ROLES_ONE_WORKER, needs=("job",))
def roles_in_preview(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    names = [r.name for r in job.roles]
    if names != ["worker"]:
        yield error(
            CheckId.ROLES_ONE_WORKER,
            "preview-roles",
            f"RLark roles: {len(names)} {names}; expected 1, worker",
            job.loc("spec", "roles"),
        )


@check(CheckId.WORKERS_ONE, needs=("worker",))
def workers_in_preview(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    if role.replicas != 1:
        yield error(
            CheckId.WORKERS_ONE,
            "preview-workers",
            f"Workers: {role.replicas!r}; expected 1",
            role.loc("replicas"),
        )


@check(CheckId.RAY_NODES_ONE, needs=("job", "rlinf"))
def ray_nodes_in_preview(ctx: Context) -> Iterator[Finding]:
    job, r = ctx.the_job, ctx.the_rlinf
    workers = sum(x.replicas for x in job.roles if is_count(x.replicas))
    if not (workers == 1 and r.num_nodes == 1):
        yield error(
            CheckId.RAY_NODES_ONE,
            "preview-ray-nodes",
            f"Ray nodes: {workers} Workers, effective cluster.num_nodes {r.num_nodes}; "
            "both must be 1",
            job.loc("spec", "roles"),
        )


@check(CheckId.HEADER_WORKER_ONE_REPLICA, needs=("job",))
def header_in_preview(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    headers = [r for r in job.roles if r.header]
    ok = len(headers) == 1 and headers[0].name == "worker" and headers[0].replicas == 1
    if not ok:
        desc = ", ".join(f"{h.name} x{h.replicas}" for h in headers) or "none"
        yield error(
            CheckId.HEADER_WORKER_ONE_REPLICA,
            "preview-header",
            f"Header: {desc}; expected worker with 1 replica",
            job.loc("spec", "roles"),
        )


@check(CheckId.GPUS_CONSISTENT, needs=("worker", "rlinf"))
def gpus_in_preview(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    ri = ctx.run_info
    if ri is not None and is_count(ri.gpus) and role.gpus != ri.gpus:
        yield error(
            CheckId.GPUS_CONSISTENT,
            "gpus-differ-from-prepared",
            f"the YAML requests {role.gpus!r} GPUs; {ri.gpus} were prepared",
            role.loc("gpus"),
        )
    yield from (
        f
        for f in gpu_findings(CheckId.GPUS_CONSISTENT, ctx, role.gpus, role.loc("gpus"))
        if f.code != "placement-invalid"
    )  # reported once, under 3.3


@check(CheckId.PREPARED_VALUES_EQUAL, needs=("worker", "run_info"))
def prepared_values_in_preview(ctx: Context) -> Iterator[Finding]:
    job, role, ri = ctx.the_job, ctx.worker, ctx.the_run_info
    if ri.image and role.image != ri.image:
        yield error(
            CheckId.PREPARED_VALUES_EQUAL,
            "image-differs",
            f"image {ctx.redactor.redact(str(role.image))} differs from prepared "
            f"{ctx.redactor.redact(str(ri.image))}",
            role.loc("image"),
        )
    if ri.start_command and " ".join((job.run_script or "").split()) != " ".join(
        ri.start_command.split()
    ):
        yield error(
            CheckId.PREPARED_VALUES_EQUAL,
            "command-differs",
            "the run script differs from the prepared start command",
            job.loc("spec", "runScript"),
        )
    if ri.prepare_command and " ".join(ri.prepare_command.split()) not in " ".join(
        (role.prepare_script or "").split()
    ):
        yield error(
            CheckId.PREPARED_VALUES_EQUAL,
            "prepare-differs",
            "the prepare script lacks the prepared command",
            role.loc("prepareScript"),
        )
    for kind, p in ri.paths.items():
        if isinstance(p, str) and posixpath.isabs(p) and mount_for(p, role.mounts) is None:
            yield error(
                CheckId.PREPARED_VALUES_EQUAL,
                "mount-missing",
                f"no mount holds the prepared {kind} path {p}",
                role.loc("mounts"),
            )


@check(CheckId.EXPECTED_NODE_ONLY, needs=("worker",))
def expected_node(ctx: Context) -> Iterator[Finding]:
    role = ctx.worker
    expected = ctx.run_info.expected_node if ctx.run_info else None
    sel = role.node_selector if isinstance(role.node_selector, dict) else {}
    loc = role.loc("nodeSelector")
    host = sel.get("kubernetes.io/hostname")
    if expected and host is not None and host != expected:
        yield error(
            CheckId.EXPECTED_NODE_ONLY,
            "selector-other-node",
            f"node selection names {host}, expected node is {expected}",
            loc,
        )
    if ctx.nodes is not None and expected:
        matched = [n.name for n in nodes_matching(ctx.nodes, sel)]
        if matched != [expected]:
            yield error(
                CheckId.EXPECTED_NODE_ONLY,
                "selector-misses-expected",
                f"node selection hits {matched or 'no node'}; expected only {expected}",
                loc,
            )


@check(CheckId.NO_SECRETS, needs=("job",))
def no_secrets(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    for path, hit in ctx.redactor.scan_tree(job.doc.data):
        yield error(
            CheckId.NO_SECRETS,
            f"secret-{hit.kind}",
            f"{dotted(path)}: {hit.description}",
            job.doc.text_loc(*path, offset=hit.line),
        )
    if ctx.profile is not None:
        # The prepared commands go into the YAML as its scripts: a secret there is one too.
        ri = ctx.profile.run_info
        for key, text in (
            ("startCommand", ri.start_command),
            ("prepareCommand", ri.prepare_command),
        ):
            for hit in ctx.redactor.scan_script(text or ""):
                yield error(
                    CheckId.NO_SECRETS,
                    f"secret-{hit.kind}",
                    f"runInfo.{key}: {hit.description}",
                    ctx.profile.doc.text_loc("runInfo", key, offset=hit.line),
                )
        if isinstance(ri.image, str):
            # The prepared image goes into the YAML too: user:pass@registry/... is a secret.
            for hit in ctx.redactor.scan_value("image", ri.image):
                yield error(
                    CheckId.NO_SECRETS,
                    f"secret-{hit.kind}",
                    f"runInfo.image: {hit.description}",
                    ctx.profile.loc("runInfo", "image"),
                )


@check(CheckId.NO_SECRETS, needs=("rlinf",))
def no_secrets_in_rlinf_config(ctx: Context) -> Iterator[Finding]:
    """The RLinf config travels with the Job and is printed by RLinf at start-up: a literal
    ``wandb.api_key`` or ``*_token`` there is a secret in the run's logs and reports."""
    r = ctx.rlinf
    assert r is not None
    for layer in r.config.layers:
        for path, hit in ctx.redactor.scan_tree(layer.doc.data):
            key = dotted(path)
            if layer.package:
                key = f"{layer.package}.{key}"
            yield error(
                CheckId.NO_SECRETS,
                f"secret-{hit.kind}",
                f"RLinf config {key}: {hit.description}",
                layer.doc.text_loc(*path, offset=hit.line),
            )
    for ov in r.config.applied.values():
        if ov.source != "profile":
            continue  # the run script's overrides are scanned with the Job's scripts
        name, _, value = ov.text.lstrip("+~").partition("=")
        for hit in ctx.redactor.scan_value(name, value):
            yield error(
                CheckId.NO_SECRETS,
                f"secret-{hit.kind}",
                f"override {name}: {hit.description}",
                ov.origin,
            )
