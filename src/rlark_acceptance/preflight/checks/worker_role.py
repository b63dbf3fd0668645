"""Step 2 添加 worker 角色: name, task type, one role named worker, shown as Header."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, error
from rlark_acceptance.preflight.checks.base import Context, check

DNS1123_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


@check(CheckId.TASK_NAME, needs=("job",))
def task_name(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    name = job.name
    loc = job.loc("metadata", "name")
    if not isinstance(name, str) or not name:
        yield error(CheckId.TASK_NAME, "name-missing", "the task has no name (metadata.name)", loc)
    elif not DNS1123_LABEL.match(name):
        yield error(
            CheckId.TASK_NAME,
            "name-format",
            f"task name {name!r} is not a DNS-1123 label: lowercase letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63",
            loc,
        )


@check(CheckId.TASK_TYPE_CUSTOM, needs=("job",))
def task_type_custom(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    if job.task_type != "custom":
        yield error(
            CheckId.TASK_TYPE_CUSTOM,
            "task-type",
            f"taskType is {job.task_type!r}, expected custom (自定义任务)",
            job.loc("spec", "taskType"),
        )


@check(CheckId.ONE_ROLE_NAMED_WORKER, needs=("job",))
def one_role_named_worker(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    names = [r.name for r in job.roles]
    if len(job.roles) != 1:
        yield error(
            CheckId.ONE_ROLE_NAMED_WORKER,
            "role-count",
            f"{len(job.roles)} roles ({', '.join(map(str, names)) or 'none'}); "
            "expected exactly one, named worker",
            job.loc("spec", "roles"),
        )
    elif names[0] != "worker":
        yield error(
            CheckId.ONE_ROLE_NAMED_WORKER,
            "role-name",
            f"the role is named {names[0]!r}, expected worker",
            job.roles[0].loc("name"),
        )


@check(CheckId.WORKER_IS_HEADER, needs=("job",))
def worker_is_header(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    worker = job.worker
    if worker is None:
        yield error(
            CheckId.WORKER_IS_HEADER,
            "header-missing",
            "no worker role to be the Header",
            job.loc("spec", "roles"),
        )
        return
    if not worker.header:
        yield error(
            CheckId.WORKER_IS_HEADER,
            "worker-not-header",
            f"role {worker.name!r} is not marked header: true",
            worker.loc("header"),
        )
    others = [r.name for r in job.roles if r.header and r is not worker]
    if others:
        yield error(
            CheckId.WORKER_IS_HEADER,
            "other-header",
            f"other roles are marked Header too: {others}",
            job.loc("spec", "roles"),
        )
