"""``rlark-acceptance``: the pre-flight, the config audit (docs/contract.md §3) and the
rendering of a run's report; each command's --help lists its exit status.

Exit status: 0 no error finding; 1 an error finding or a redirect; 2 the input could not be
read (one line naming the file and line; never a traceback). ``report``: 0 accepted, 1 not
accepted (the quality gate), 2 nothing to render. ``diagnose``: 0 the log shows no failure,
1 a cause is named, 2 the log could not be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rlark_acceptance import __version__
from rlark_acceptance.diagnose import command as diagnose_command
from rlark_acceptance.model.doc_checks import BY_ID, CHECKS, remedy
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.findings import Severity, Status
from rlark_acceptance.scaffold import command as scaffold_command

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2

# What each command's --help ends with: a CI job branches on these, so they are said where a
# user first looks, not only in docs/contract.md §3.
_BAD_INPUT = """\
  2  an input could not be read, or holds what the harness does not know (a misspelt
     key): one line naming its file and line; or a wrong command line"""
_EXIT_PREFLIGHT = f"""\
exit status:
  0  no error finding (warnings may be printed)
  1  at least one error finding, or a redirect to the multi-node guide
{_BAD_INPUT}"""
_EXIT_CONFIGS = """\
exit status:
  0  every config was read and composed (multi-node is a classification, not a failure)
  1  a config could not be read or composed: its row names the file and line
  2  a wrong command line"""
_EXIT_REPORT = """\
exit status:
  0  the report was rendered and the run is accepted
  1  the run is not accepted (the quality gate)
  2  nothing to render (no run record in the reports directory), or a wrong command line"""
_EXIT_ALL = """\
exit status: each command's own (rlark-acceptance COMMAND --help lists them):
  0 passed, 1 findings (report: not accepted), 2 an input that could not be read,
  named by its file and line in one line"""


class _Formatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal; the exit-status table kept line for line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("exit status"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"rlark-acceptance: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="rlark-acceptance",
        description="The pre-flight of an RLinf run on one GPU node as the RLark page documents "
        "it (§0 to Step 5, offline, and against the cluster), the audit of RLinf configs, and "
        "the rendering and gating of a run's report.",
        epilog=_EXIT_ALL,
        formatter_class=_Formatter,
    )
    p.add_argument("--version", action="version", version=__version__)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    pf = sub.add_parser(
        "preflight",
        help="run every static check of §0–§5",
        description="Run every static check of §0 to Step 5 on a profile (its RLinf config, "
        "Job YAML and run information), or on an RLinf config and a Job YAML given as files; "
        "each finding names its check ID and the file:line to fix.",
        epilog=_EXIT_PREFLIGHT,
        formatter_class=_Formatter,
    )
    src = pf.add_mutually_exclusive_group(required=True)
    src.add_argument("--profile", help="an acceptance profile (docs/contract.md §2)")
    src.add_argument("--rlinf-config", help="a validated RLinf YAML")
    pf.add_argument("--job", help="the Job YAML exported from the console (with --rlinf-config)")
    pf.add_argument("--config-dir", help="Hydra search path for the config's defaults")
    pf.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="K=V",
        help="a Hydra override, as on RLinf's command line, after the profile's "
        "rlinf.overrides (repeatable)",
    )
    pf.add_argument(
        "--cluster",
        action="store_true",
        help="also judge 3.1, 3.2, 3.3, 5.5 and 5.7 against the cluster of the profile's "
        "target: its clusters, and its nodes' labels, readiness and allocatable GPUs",
    )
    pf.add_argument(
        "--job-normaliser",
        metavar="NAME",
        help="read the Job YAML with a site's normaliser (rlark_acceptance.normalisers)",
    )
    pf.add_argument(
        "--nodes",
        metavar="FILE",
        help="a node inventory for 3.2, 3.3, 5.5 and 5.7 (kubectl get nodes -o yaml, or a list)",
    )
    pf.add_argument("--json", action="store_true", help="print docs/contract.md §3 JSON")
    cf = sub.add_parser(
        "configs",
        help="audit RLinf configs (files or directories)",
        description="Compose each RLinf config as RLinf would and say whether it runs on one "
        "node: its cluster.num_nodes, the GPUs its placement needs, whether it drives a real "
        "robot, or why it belongs to the multi-node guide.",
        epilog=_EXIT_CONFIGS,
        formatter_class=_Formatter,
    )
    cf.add_argument(
        "paths", nargs="+", metavar="PATH", help="an RLinf config, or a folder of them (searched)"
    )
    cf.add_argument("--json", action="store_true", help="print one JSON row per config")
    rp = sub.add_parser(
        "report",
        help="render a run's Allure report (replacing the previous one) and gate it",
        description="Render a run's Allure report from its reports directory (replacing the "
        "previous one), then gate it: accepted or not, as the run record says.",
        epilog=_EXIT_REPORT,
        formatter_class=_Formatter,
    )
    rp.add_argument(
        "--reports-dir",
        default="reports",
        metavar="DIR",
        help="the run's reports directory, as given to the suite (default: reports)",
    )
    rp.add_argument("--open", action="store_true", help="then serve it on localhost")
    rp.add_argument(
        "--history",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="where the trend's earlier points are read and this render's is added "
        "(default: the history the run kept its summary in, else none)",
    )
    diagnose_command.add_parser(sub)
    scaffold_command.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "preflight":
            return _preflight(args)
        if args.command == "diagnose":
            return diagnose_command.main(args)
        if args.command == "init":
            return scaffold_command.main(args)
        if args.command == "report":
            from pathlib import Path

            from rlark_acceptance.run import report_render

            return report_render.main(
                Path(args.reports_dir), open_after=args.open, history=args.history
            )
        return _configs(args)
    except InputError as exc:
        print(f"rlark-acceptance: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("rlark-acceptance: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS


def _preflight(args: argparse.Namespace) -> int:
    from rlark_acceptance.preflight.entry import preflight_files, preflight_profile

    nodes = clusters = None
    if args.nodes:
        from rlark_acceptance.model.inventory import load_inventory

        nodes = load_inventory(args.nodes)
    if args.profile:
        from rlark_acceptance.model.profile import load_profile

        prof = load_profile(args.profile)
        if args.cluster:
            from rlark_acceptance.adapters import open_adapter

            adapter = open_adapter(prof)
            try:
                nodes, clusters = adapter.node_inventory(), adapter.clusters()
            finally:
                adapter.close()
        result = preflight_profile(prof, nodes=nodes, clusters=clusters, overrides=args.override)
    else:
        result = preflight_files(
            args.rlinf_config,
            job=args.job,
            overrides=args.override,
            config_dir=args.config_dir,
            nodes=nodes,
            job_normaliser=args.job_normaliser,
        )
    if args.json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        _print_human(result)
    return result.exit_status


_MARK = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "·"}


def _print_human(result: Any) -> None:
    from rlark_acceptance.preflight.entry import sorted_findings

    verdict = result.verdict.upper()
    cov = result.coverage()
    judged = f"{cov['evaluated']} of {cov['static']} static checks judged"
    print(f"pre-flight: {verdict}  ({result.config_path or 'no RLinf config'}; {judged})")
    r = result.rlinf
    if r is not None:
        need = "all" if r.cluster.gpus_all else r.cluster.gpus_required
        print(
            f"  effective cluster.num_nodes={r.num_nodes}  GPUs required={need}  "
            f"real robot={'yes' if r.cluster.real_robot else 'no'}  "
            f"checkpoints → {r.checkpoint_dir or 'unknown'}"
        )
    by_section: dict[str, list[Any]] = {}
    for f in sorted_findings(result.findings):
        by_section.setdefault(BY_ID[f.check].section if f.check in BY_ID else "?", []).append(f)
    for section, findings in by_section.items():
        print(f"\n{section}")
        shown_remedy: set[str] = set()
        for f in findings:
            where = f"  {f.location}" if f.location else ""
            print(f"  {_MARK[f.severity]} {f.check} {f.code}{where}\n      {f.message}")
            if f.severity == Severity.ERROR and f.check not in shown_remedy:
                shown_remedy.add(f.check)
                print(f"      → {remedy(f.check, f.message)}")
    status = result.check_status()
    counts = {s: sum(1 for v in status.values() if v == s) for s in Status}
    errors = sum(1 for f in result.findings if f.severity == Severity.ERROR)
    warnings = sum(1 for f in result.findings if f.severity == Severity.WARNING)
    print(
        f"\n{_many(errors, 'error')}, {_many(warnings, 'warning')}; static checks: "
        f"{counts[Status.PASSED]} passed, "
        f"{counts[Status.FAILED]} failed, {counts[Status.SKIPPED]} not evaluated "
        f"(of {sum(1 for c in CHECKS if c.kind != 'runtime')})"
    )
    need = _needs_text(result.coverage())
    if need:
        print(f"not evaluated: {need}")


def _needs_text(coverage: dict[str, Any]) -> str:
    parts = [
        (coverage["needJob"], "the Job YAML (--job)"),
        (coverage["needProfile"], "a profile's runInfo (--profile)"),
        (coverage["needCluster"], "the cluster (--cluster or --nodes)"),
        (coverage["needConfig"], "the RLinf config"),
    ]
    return "; ".join(f"{n} need {what}" for n, what in parts if n)


def _configs(args: argparse.Namespace) -> int:
    from rlark_acceptance.preflight.audit import audit

    rows = audit(args.paths)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for row in rows:
            if row["error"]:
                state = f"error: {row['error']}"
            elif row["singleNode"]:
                state = "single node"
            else:
                state = "redirect: " + ", ".join(row["redirectReasons"])
            gpus = "all" if row["gpusAll"] else row["gpusRequired"]
            robot = "  real robot" if row["realRobot"] else ""
            print(f"{row['path']}: num_nodes={row['numNodes']} gpus={gpus}{robot}  {state}")
    # A classification is not a failure: only a file that could not be read or composed is.
    return EXIT_FINDINGS if any(r["error"] for r in rows) else EXIT_OK


def _many(n: int, word: str) -> str:
    """``1 error``, ``2 errors``: the count with its noun as a reader says it."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


if __name__ == "__main__":
    raise SystemExit(main())
