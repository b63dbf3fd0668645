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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

from rlark_acceptance.diagnose.diagnosis import Diagnosis, diagnose, with_pod
from rlark_acceptance.diagnose.harness_run import from_run, is_run_id
from rlark_acceptance.diagnose.lines import batches
from rlark_acceptance.diagnose.pod import PodSource
from rlark_acceptance.diagnose.words import render
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
  1  a cause is named (for a run id: the run is red)
  2  the log could not be read (missing, a directory, binary data, a gzip cut short):
     one line naming it; or a wrong command line"""
_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF = 8192


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
        metavar="LOG",
        help="the log: a file (gzip read as such), - for standard input (the default), or a "
        "harness run's id (its record and diagnostics bundle in --reports-dir)",
    )
    p.add_argument(
        "--reports-dir",
        metavar="DIR",
        help="where a run id's record is (default: reports/)",
    )
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON object")
    pod = p.add_argument_group("a Pod instead of a log file (its log, status and events)")
    pod.add_argument("--pod", metavar="NAME", help="the Worker's Pod, read through a kubeconfig")
    pod.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the kubeconfig (default: $KUBECONFIG, ~/.kube/config, else in-cluster)",
    )
    pod.add_argument("--context", help="the kubeconfig's context (default: its current one)")
    pod.add_argument(
        "--namespace", "-n", help="the Pod's namespace (default: the context's, else default)"
    )
    pod.add_argument(
        "--container", help="whose log to read (default: the Pod's first container, the Worker)"
    )


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    log = args.log
    if log is not None and is_run_id(log) and not Path(log).exists():
        if args.pod is not None:
            raise InputError("diagnose", "give a run id or --pod, not both")
        found, run = from_run(log, Path(args.reports_dir or "reports"))
        if args.json:
            data = found.to_json() | {"run": run.to_json()}
            print(json.dumps(data, indent=2, ensure_ascii=False), file=out)
        else:
            out.write(render(found, f"run {log}", run))
        return EXIT_CAUSE if found.failed or run.red else EXIT_NO_FAILURE
    if args.reports_dir is not None:
        raise InputError("--reports-dir", "reads a harness run: give its run id with it")
    if args.pod is not None:
        if args.log is not None:
            raise InputError("diagnose", "give a log file or --pod, not both")
        found, name = _from_pod(args)
    else:
        for flag in ("kubeconfig", "context", "namespace", "container"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag}", "reads a Pod: give --pod NAME with it")
        if args.log is None and sys.stdin.isatty():
            # Nothing piped in: a prompt waiting for a log nobody types is no answer.
            raise InputError("diagnose", "no log: give a file, pipe one in, or --pod NAME")
        found, name = _from_log(args.log or "-")
    if args.json:
        print(json.dumps(found.to_json(), indent=2, ensure_ascii=False), file=out)
    else:
        out.write(render(found, name))
    return EXIT_CAUSE if found.failed else EXIT_NO_FAILURE


def _from_log(path: str) -> tuple[Diagnosis, str]:
    name = "standard input" if path == "-" else path
    with _opened(path) as stream:
        try:
            if b"\x00" in stream.peek(_SNIFF)[:_SNIFF]:
                # A log has no NUL bytes: an archive, an image, a device like /dev/zero.
                raise InputError(name, "is not a text log (it holds binary data)")
            return diagnose(batches(stream)), name
        except (OSError, EOFError) as e:  # a read failed half-way, a gzip cut short
            raise InputError(name, f"cannot be read: {getattr(e, 'strerror', None) or e}") from None


def _from_pod(args: argparse.Namespace) -> tuple[Diagnosis, str]:
    source = PodSource(args.pod, args.kubeconfig, args.context, args.namespace)
    with source.read(args.container) as (side, log):
        name = f"pod {side.namespace}/{side.name}"
        try:
            lines: Iterable[list[str]] = ()
            if log is not None:
                # The body as it streams, never held whole: urllib3's response read as a raw
                # stream, left open at its end for the buffer's last read.
                log.auto_close = False
                lines = batches(io.BufferedReader(log))
            found = diagnose(lines)
        except (OSError, EOFError, ValueError) as e:  # the connection dropped mid-log
            raise InputError(f"{name}'s log", f"cannot be read: {e}") from None
    return with_pod(found, side), name


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
