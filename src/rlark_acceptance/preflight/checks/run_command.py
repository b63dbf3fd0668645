"""Step 4 填写运行命令: Header, network, SSH key, the run script, TensorBoard."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, Location, error, warning
from rlark_acceptance.model.job import mount_for, under
from rlark_acceptance.preflight.checks.base import Context, check
from rlark_acceptance.rlinf.backends import KEY as BACKENDS_KEY
from rlark_acceptance.rlinf.backends import (
    SUPPORTED,
    WANDB_REMEDY,
    Backends,
    wandb_goes_online,
)
from rlark_acceptance.rlinf.effective import EffectiveRLinf


@check(CheckId.HEAD_ROLE_IS_WORKER, needs=("job",))
def head_role(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    if job.head_role != "worker":
        yield error(
            CheckId.HEAD_ROLE_IS_WORKER,
            "head-role",
            f"the head role is {job.head_role!r}, expected worker",
            job.loc("spec", "headRole"),
        )


@check(CheckId.NO_CROSS_CLUSTER_NETWORK, needs=("job",))
def no_cross_cluster_network(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    if job.cross_cluster_network not in (None, "", "none"):
        yield error(
            CheckId.NO_CROSS_CLUSTER_NETWORK,
            "cross-cluster-network",
            f"crossClusterNetwork is {job.cross_cluster_network!r}; a single-cluster job "
            "keeps the default none",
            job.loc("spec", "crossClusterNetwork"),
        )


@check(CheckId.SSH_KEY_ONLY_IF_NEEDED, needs=("job",))
def ssh_key_only_when_needed(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    if job.ssh_public_key not in (None, ""):
        yield warning(
            CheckId.SSH_KEY_ONLY_IF_NEEDED,
            "ssh-key-set",
            "an SSH public key is set: keep it only if remote access is really needed",
            job.loc("spec", "sshPublicKey"),
        )


@check(CheckId.START_COMMAND_KEPT, needs=("job",))
def run_script(ctx: Context) -> Iterator[Finding]:
    job = ctx.the_job
    loc = job.loc("spec", "runScript")
    script = job.run_script or ""
    if not script.strip():
        yield error(
            CheckId.START_COMMAND_KEPT, "run-script-missing", "the run script is empty", loc
        )
        return
    ri = ctx.run_info
    if (
        ri is not None
        and ri.start_command
        and " ".join(script.split()) != " ".join(ri.start_command.split())
    ):
        yield error(
            CheckId.START_COMMAND_KEPT,
            "run-script-differs",
            "the run script is not the prepared start command (runInfo.startCommand)",
            loc,
        )
    launch = ctx.rlinf.launch if ctx.rlinf else None
    if launch is None:
        yield warning(
            CheckId.START_COMMAND_KEPT,
            "rlinf-command-not-found",
            "no RLinf command (a launch script or python entry point) found in the "
            "run script: its overrides and working directory cannot be checked; call RLinf's "
            "launch script (bash .../run_embodiment.sh NAME) or its python entry point there",
            loc,
        )
        return
    for rel in launch.relative_without_cd:
        yield error(
            CheckId.START_COMMAND_KEPT,
            "relative-without-cd",
            f"{rel} is relative but the run script sets no working directory: add an explicit cd",
            loc,
        )
    if launch.ignored and launch.launcher is not None:
        name = launch.launcher.suffix.rsplit("/", 1)[-1]
        yield error(
            CheckId.START_COMMAND_KEPT,
            "launcher-drops-arguments",
            f"{name} passes only {', '.join(launch.launcher.positional)} on; "
            f"{' '.join(launch.ignored)} never reaches RLinf (call the python entry "
            "point with the overrides instead)",
            loc,
        )


@check(CheckId.TENSORBOARD_PATH, needs=("job", "rlinf"))
def tensorboard_dir(ctx: Context) -> Iterator[Finding]:
    job, r = ctx.the_job, ctx.the_rlinf
    backends = r.backends
    tb = job.tensorboard_log_dir
    loc = job.loc("spec", "tensorboard", "logDir")
    events = posixpath.join(r.log_path, "tensorboard") if r.log_path else None
    yield from _backends(ctx, backends)
    if not backends.judged:
        return
    if not backends.tensorboard:
        if tb:
            yield warning(
                CheckId.TENSORBOARD_PATH,
                "tensorboard-not-written",
                f"the TensorBoard path is set, but {backends.said()}: RLinf writes no "
                "TensorBoard events, so the page stays empty (and T.2 has no metrics to "
                "read); add tensorboard to the config's logger_backends, or leave "
                "tensorboard.logDir empty",
                _backends_loc(r),
            )
        return
    if not tb:
        where = events or "<runner.logger.log_path>/tensorboard"
        yield warning(
            CheckId.TENSORBOARD_PATH,
            "tensorboard-missing",
            f"RLinf writes TensorBoard events to {where}; fill in tensorboard.logDir with "
            "it to see them",
            job.loc("spec"),
        )
        return
    if not posixpath.isabs(tb):
        yield error(
            CheckId.TENSORBOARD_PATH,
            "tensorboard-relative",
            f"TensorBoard path {tb} is not absolute",
            loc,
        )
        return
    if events is None:
        yield warning(
            CheckId.TENSORBOARD_PATH,
            "tensorboard-unverifiable",
            "the log path is not known, so the TensorBoard path cannot be verified: give "
            "runner.logger.log_path an absolute path (or cd in the run script)",
            loc,
        )
    elif not under(events, tb):
        yield error(
            CheckId.TENSORBOARD_PATH,
            "tensorboard-elsewhere",
            f"TensorBoard path {tb} does not hold {events}, where RLinf writes events",
            loc,
        )
    if job.worker is not None and mount_for(tb, job.worker.mounts) is None:
        yield error(
            CheckId.TENSORBOARD_PATH,
            "tensorboard-outside-mounts",
            f"TensorBoard path {tb} is under no mount",
            loc,
        )


def _backends_loc(r: EffectiveRLinf) -> Location:
    key = BACKENDS_KEY if r.config.has(BACKENDS_KEY) else "runner.logger"
    return r.location(key)


def _backends(ctx: Context, backends: Backends) -> Iterator[Finding]:
    """A backend RLinf does not know stops it; wandb online needs a key and a network."""
    r = ctx.the_rlinf
    if backends.unknown:
        yield error(
            CheckId.TENSORBOARD_PATH,
            "logger-backend-unknown",
            f"{backends.said()}: RLinf's MetricLogger knows only {', '.join(SUPPORTED)} and "
            f"stops at start-up on {', '.join(backends.unknown)}; spell it as one of those",
            _backends_loc(r),
        )
    if "wandb" in backends.names and r.job_env is not None:
        env = r.job_env

        def variable(name: str) -> str | None:
            setting = env.setting(name)
            return None if setting is None else (setting.value or "?")

        if wandb_goes_online(variable):
            yield warning(
                CheckId.TENSORBOARD_PATH,
                "wandb-online",
                f"{backends.said()}: wandb logs online, and the Job sets neither WANDB_MODE "
                f"offline nor a key; a Pod may have no way out to its server: {WANDB_REMEDY}",
                _backends_loc(r),
            )
