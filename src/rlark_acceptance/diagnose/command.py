"""``rlark-acceptance diagnose``: the first cause of a failed run, from a log the user has.

Exit status: 0 the log shows no failure, 1 a cause is named, 2 the log could not be read
(one line naming it, never a traceback).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TextIO, cast

from rlark_acceptance.diagnose.diagnosis import Diagnosis, diagnose
from rlark_acceptance.diagnose.lines import batches
from rlark_acceptance.model.doc_checks import BY_ID
from rlark_acceptance.model.errors import InputError

EXIT_NO_FAILURE, EXIT_CAUSE, EXIT_INPUT = 0, 1, 2
HELP = "name the first cause of a failed run from its Worker log (a file, or - for stdin)"
# Kept line for line (RawDescriptionHelpFormatter): the exit status is a table a CI job reads.
DESCRIPTION = """\
Name the first cause of a failed RLinf run from a log you have (`kubectl logs` output,
a Pod log saved from the console, RLinf's own log), as Step 6 reads a live one: the line,
the actor, the failure class and its remedy, the page's check, the knock-ons passed over.
Streamed: a log of any size in flat memory."""
EPILOG = """\
exit status:
  0  the log shows no failure
  1  a cause is named
  2  the log could not be read (missing, a directory, binary data, a gzip cut short):
     one line naming it; or a wrong command line"""
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF = 8192
_WIDTH = 80


def add_parser(sub: Any) -> None:
    """Register the command on the subparsers of ``rlark-acceptance``."""
    p = sub.add_parser(
        "diagnose",
        help=HELP,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "log",
        nargs="?",
        default="-",
        metavar="FILE",
        help="the log: a file (gzip read as such), or - for standard input (the default)",
    )
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON object")


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    name = "standard input" if args.log == "-" else args.log
    with _opened(args.log) as stream:
        try:
            if b"\x00" in stream.peek(_SNIFF)[:_SNIFF]:
                # A log has no NUL bytes: an archive, an image, a device like /dev/zero.
                raise InputError(name, "is not a text log (it holds binary data)")
            found = diagnose(batches(stream))
        except (OSError, EOFError) as e:  # a read failed half-way, a gzip cut short
            raise InputError(name, f"cannot be read: {getattr(e, 'strerror', None) or e}") from None
    out = out or sys.stdout
    if args.json:
        print(json.dumps(found.to_json(), indent=2, ensure_ascii=False), file=out)
    else:
        out.write(render(found, name))
    return EXIT_CAUSE if found.failed else EXIT_NO_FAILURE


@contextmanager
def _opened(path: str) -> Iterator[io.BufferedReader]:
    if path == "-":
        yield _decompressed(sys.stdin.buffer)
        return
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed below, after the read)
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a log file") from None
    except OSError as e:
        raise InputError(path, f"cannot be read: {e.strerror or e}") from None
    with raw:
        yield _decompressed(raw)


def _decompressed(raw: BinaryIO) -> io.BufferedReader:
    """``raw``, or what it decompresses to when it is gzip (a log saved compressed), with a
    buffer to peek into."""
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(Any, raw))
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        return io.BufferedReader(cast(Any, gzip.GzipFile(fileobj=buffered)))
    return buffered


def render(d: Diagnosis, name: str) -> str:
    """The diagnosis as the run record prints a run: its verdict, then what to do."""
    out = [" rlark-acceptance diagnosis ".center(_WIDTH, "=")]
    c = d.cause
    if c is None:
        out.append(f"verdict: no failure  ({name}: {d.lines} lines, no error line)")
        return "\n".join(out) + "\n"
    actor = c.actor or "the driver"
    where = f"first cause at log line {c.line + 1} of {d.lines}, in {actor}"
    out.append(f"verdict: failed  {where}  ({name})")
    out.append(f'  "{c.quote}"')
    if c.kind is not None:
        out.append(f"class: {c.kind.id} — {c.kind.title}")
        out.append(f"  → {c.kind.remedy}")
    else:
        out.append("class: none of the known classes fits; the line above is the log's first error")
    assert d.check is not None
    check = BY_ID[d.check]
    out.append(f"check: {check.id} ({check.says}): {d.stood()}")
    out.append(f"  → {check.remedy}")
    if d.fix_at is not None and d.fix_at != d.check:
        fix = BY_ID[d.fix_at]
        out.append(f"fixed at: {fix.id} ({fix.says})")
        out.append(f"  → {fix.remedy}")
    if c.mount_path:
        out.append(f"path: {c.mount_path}")
    out.append(f"knock-ons passed over: {c.knock_ons}")
    return "\n".join(out) + "\n"
