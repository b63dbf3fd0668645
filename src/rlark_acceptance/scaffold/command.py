"""``rlark-acceptance init``'s face: its options, the file it writes, and the pre-flight of
what it wrote (what passes, and what is left to fill)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.inventory import load_inventory
from rlark_acceptance.scaffold.profile import scaffold

HELP = "write a profile for a new site from its Job YAML and RLinf config"
DESCRIPTION = """\
Write an acceptance profile for a new site from what it already has: the Job YAML its
console exported (Step 5's preview), the RLinf config that Job runs, and optionally the
cluster's kubeconfig and a node inventory. Everything they say is filled in; each value
only the site knows is null, marked "TO FILL:" with what to write there. The pre-flight
then runs on the profile written, and its verdict is printed."""
EPILOG = """\
exit status:
  0  the profile was written and its pre-flight passes
  1  the profile was written; values are left to fill, or its pre-flight finds an error
     (each is printed with its line)
  2  an input could not be read (one line naming its file and line), the output exists
     (without --force), or a wrong command line"""


def add_parser(sub: Any) -> None:
    """Register the command on the subparsers of ``rlark-acceptance``."""
    p = sub.add_parser(
        "init",
        help=HELP,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--job", required=True, help="the Job YAML exported from the console")
    p.add_argument("--rlinf-config", required=True, help="the RLinf config the Job runs")
    p.add_argument("--kubeconfig", help="the cluster's kubeconfig (target.kubeconfig)")
    p.add_argument("--context", help="the kubeconfig's context (default: its current one)")
    p.add_argument(
        "--nodes",
        metavar="FILE",
        help="a node inventory (kubectl get nodes -o yaml, or a list of {name, gpus, labels}): "
        "the node the Job selects, with its GPUs and labels",
    )
    p.add_argument(
        "--output", "-o", required=True, metavar="FILE", help="where to write the profile"
    )
    p.add_argument("--force", action="store_true", help="replace the output if it exists")


def main(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.exists() and not args.force:
        raise InputError(str(out), "exists: give another --output, or --force to replace it")
    for given in (args.job, args.rlinf_config, args.kubeconfig, args.nodes):
        if given and not Path(given).is_file():
            raise InputError(given, "no such file")
    written = scaffold(
        Path(args.job),
        Path(args.rlinf_config),
        out,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None,
        context=args.context,
        nodes=load_inventory(args.nodes) if args.nodes else None,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(written.text, encoding="utf-8")
    print(f"wrote {out}")
    for item in written.to_fill:
        print(f"  to fill: {item}")
    return 0 if _preflight(out) and not written.to_fill else 1


def _preflight(out: Path) -> bool:
    """The pre-flight of the profile written: its verdict, or the first thing left."""
    from rlark_acceptance.preflight.entry import preflight_profile

    try:
        result = preflight_profile(out)
    except InputError as exc:
        print(f"pre-flight: left to fill: {exc}")
        return False
    errors = [f for f in result.findings if f.severity == "error"]
    print(f"pre-flight: {str(result.verdict).upper()} ({len(errors)} errors)")
    for f in errors:
        print(f"  {f.check} {f.code} {f.location}: {f.message}")
    return result.exit_status == 0
