"""准备 RLinf 运行信息: what must be written down before the console is opened."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from rlark_acceptance.model.findings import Finding, Location, error, warning
from rlark_acceptance.preflight.checks.base import Context, check, is_count
from rlark_acceptance.preflight.checks.images import MOVING_TAGS, parse_image
from rlark_acceptance.secrets import Redactor

PATH_KINDS = ("data", "model", "checkpoint", "output")


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


@check("P.1", needs=("run_info",))
def prepared_image(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    yield from image_findings("P.1", ri.image, ctx.ri_loc("image"), ctx.redactor)


@check("P.2", needs=("run_info",))
def prepared_gpus(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    if ri.gpus is None:
        yield error("P.2", "gpus-missing", "runInfo.gpus is not set", ctx.ri_loc("gpus"))
    elif not is_count(ri.gpus) or ri.gpus <= 0:
        yield error(
            "P.2",
            "gpus-invalid",
            f"runInfo.gpus {ri.gpus!r} is not a positive count",
            ctx.ri_loc("gpus"),
        )


@check("P.3", needs=("run_info",))
def prepared_commands(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    if not (ri.start_command or "").strip():
        yield error(
            "P.3",
            "start-command-missing",
            "runInfo.startCommand is empty",
            ctx.ri_loc("startCommand"),
        )


@check("P.4", needs=("run_info",))
def prepared_paths(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    for kind in PATH_KINDS:
        value = ri.paths.get(kind)
        loc = ctx.ri_loc("paths", kind)
        if value in (None, ""):
            yield error("P.4", "path-missing", f"runInfo.paths.{kind} is not set", loc)
        elif not isinstance(value, str) or not posixpath.isabs(value):
            yield error(
                "P.4",
                "path-not-absolute",
                f"runInfo.paths.{kind} {value!r} is not an absolute container path",
                loc,
            )


@check("P.5", needs=("run_info",))
def prepared_signal(ctx: Context) -> Iterator[Finding]:
    ri = ctx.the_run_info
    sig = ri.first_signal
    if not isinstance(sig, str) or not sig.strip():
        yield error(
            "P.5", "signal-missing", "runInfo.firstSignal is not set", ctx.ri_loc("firstSignal")
        )
    else:
        try:
            re.compile(sig)
        except re.error as exc:
            yield error(
                "P.5",
                "signal-invalid",
                f"runInfo.firstSignal is not a valid regex: {exc}",
                ctx.ri_loc("firstSignal"),
            )
    out = ri.expected_output
    if out in (None, ""):
        yield error(
            "P.5",
            "output-missing",
            "runInfo.expectedOutput is not set",
            ctx.ri_loc("expectedOutput"),
        )
    elif not isinstance(out, str) or not posixpath.isabs(out):
        yield error(
            "P.5",
            "output-not-absolute",
            f"runInfo.expectedOutput {out!r} is not an absolute container path",
            ctx.ri_loc("expectedOutput"),
        )
