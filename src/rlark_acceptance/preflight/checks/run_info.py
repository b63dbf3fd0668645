"""准备 RLinf 运行信息: what must be written down before the console is opened."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from rlark_acceptance.model.doc_checks import CheckId
from rlark_acceptance.model.findings import Finding, Location, error, warning
from rlark_acceptance.model.profile import RUN_INFO_PATHS
from rlark_acceptance.preflight.checks.base import Context, check, is_count
from rlark_acceptance.preflight.checks.images import MOVING_TAGS, parse_image
from rlark_acceptance.secrets import Redactor


def image_findings(
    check_id: str, image: object, loc: Location | None, redactor: Redactor
) -> Iterator[Finding]:
    """Shared by P.1 (run info) and 3.4 (the Worker's image field)."""
    if not isinstance(image, str) or not image.strip():
        yield error(check_id, "image-missing", "no image address", loc)
        return
    ref = parse_image(image)
    shown = redactor.redact(image)  # user:pass@registry/... must not reach the console or a report
    if not ref.valid:
        yield error(
            check_id, "image-invalid", f"image {shown} is not a valid reference: {ref.why}", loc
        )
    elif not ref.pinned:
        why = "uses latest" if ref.tag == "latest" else "has no tag (means latest)"
        yield error(check_id, "image-latest", f"image {shown} is not pinned: it {why}", loc)
    elif not ref.digest and ref.tag in MOVING_TAGS:
        yield warning(
            check_id,
            "image-moving-tag",
            f"image {shown}: tag {ref.tag!r} usually moves; prefer a version or digest",
            loc,
        )


@check(CheckId.IMAGE_VERSIONED, needs=("run_info",))
def prepared_image(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    yield from image_findings(CheckId.IMAGE_VERSIONED, ri.image, ctx.ri_loc("image"), ctx.redactor)


@check(CheckId.GPU_COUNT_GIVEN, needs=("run_info",))
def prepared_gpus(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    if ri.gpus is None:
        yield error(
            CheckId.GPU_COUNT_GIVEN, "gpus-missing", "runInfo.gpus is not set", ctx.ri_loc("gpus")
        )
    elif not is_count(ri.gpus) or ri.gpus <= 0:
        yield error(
            CheckId.GPU_COUNT_GIVEN,
            "gpus-invalid",
            f"runInfo.gpus {ri.gpus!r} is not a positive count",
            ctx.ri_loc("gpus"),
        )


@check(CheckId.START_COMMAND_GIVEN, needs=("run_info",))
def prepared_commands(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    if not (ri.start_command or "").strip():
        yield error(
            CheckId.START_COMMAND_GIVEN,
            "start-command-missing",
            "runInfo.startCommand is empty",
            ctx.ri_loc("startCommand"),
        )


@check(CheckId.CONTAINER_PATHS_GIVEN, needs=("run_info",))
def prepared_paths(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    for kind in RUN_INFO_PATHS:
        value = ri.paths.get(kind)
        loc = ctx.ri_loc("paths", kind)
        if value in (None, ""):
            yield error(
                CheckId.CONTAINER_PATHS_GIVEN,
                "path-missing",
                f"runInfo.paths.{kind} is not set",
                loc,
            )
        elif not isinstance(value, str) or not posixpath.isabs(value):
            yield error(
                CheckId.CONTAINER_PATHS_GIVEN,
                "path-not-absolute",
                f"runInfo.paths.{kind} {value!r} is not an absolute container path",
                loc,
            )


@check(CheckId.FIRST_SIGNAL_GIVEN, needs=("run_info",))
def prepared_signal(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    sig = ri.first_signal
    if not isinstance(sig, str) or not sig.strip():
        yield error(
            CheckId.FIRST_SIGNAL_GIVEN,
            "signal-missing",
            "runInfo.firstSignal is not set",
            ctx.ri_loc("firstSignal"),
        )
    else:
        try:
            re.compile(sig)
        except re.error as exc:
            yield error(
                CheckId.FIRST_SIGNAL_GIVEN,
                "signal-invalid",
                f"runInfo.firstSignal is not a valid regex: {exc}",
                ctx.ri_loc("firstSignal"),
            )
    out = ri.expected_output
    if out in (None, ""):
        yield error(
            CheckId.FIRST_SIGNAL_GIVEN,
            "output-missing",
            "runInfo.expectedOutput is not set",
            ctx.ri_loc("expectedOutput"),
        )
    elif not isinstance(out, str) or not posixpath.isabs(out):
        yield error(
            CheckId.FIRST_SIGNAL_GIVEN,
            "output-not-absolute",
            f"runInfo.expectedOutput {out!r} is not an absolute container path",
            ctx.ri_loc("expectedOutput"),
        )
