"""testenv: real test services on loopback (Kubernetes control plane with simulated GPU
nodes, and an S3 server), built from Go modules.

    testenv up [s3|cluster|all]     build what is missing, start, wait, write the env file;
                                    kept running until `testenv down`
    testenv down [s3|cluster|all]   stop what `up` started (by pid) and remove its state;
                 [--force]          refused (exit 2) while a run holds it, unless --force
    testenv status [--json]         what runs, its pids, memory and holders (never credentials)
    testenv env                     the env file, for `eval "$(testenv/testenv env)"`
    testenv build [s3|cluster|all]  only build (e.g. to warm a CI cache)
    testenv image rlinf             build the Worker image with real RLinf (~8 GB, cached)
                                    and import it into this checkout's running real node
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from typing import Any

from testenv import build, lease, state
from testenv.paths import cache_root, state_root
from testenv.recover import recover
from testenv.services import SERVICES, Service


def _targets(which: str) -> tuple[Service, ...]:
    return tuple(SERVICES.values()) if which == "all" else (SERVICES[which],)


def up(which: str = "all") -> dict[str, Any]:
    """Idempotent: a healthy service is left as it is. Returns timings."""
    started = time.monotonic()
    targets = _targets(which)
    built = build.ensure(tuple(r for t in targets for r in t.needs))
    with state.locked():
        st = state.load()
        try:
            for target in targets:
                t0 = time.monotonic()
                target.up(st)
                build.say(f"{target.name} ready in {time.monotonic() - t0:.1f}s")
        finally:
            # Record whatever started, even on failure, so `down` can stop it.
            state.save(st)
    return {"built_seconds": built, "up_seconds": round(time.monotonic() - started, 1)}


def down(which: str = "all") -> None:
    with state.locked():
        try:
            st = state.load()
        except state.StateCorrupt as e:
            # The record is lost, not the set: stop what is found running.
            build.say(f"warning: {e}")
            st = recover()
        for target in reversed(_targets(which)):
            target.down(st)
            lease.unkeep(target.name)
        if any(svc.recorded(st) for svc in SERVICES.values()):
            state.save(st)
        else:
            # Nothing left: remove all generated state but the lock files (and the leases of
            # holders still running: a lock file must stay the file every holder locks).
            root = state_root()
            for child in root.iterdir() if root.is_dir() else ():
                if child.name == ".lock" or child == lease.leases_root():
                    continue
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)


def healthy(service: str) -> bool:
    """Up and usable: the S3 server answering with its bucket; the cluster whole (control
    plane, real node and platform stand-in)."""
    return SERVICES[service].healthy(state.load())


@contextlib.contextmanager
def held(service: str, *, keep: bool = False) -> Iterator[None]:
    """``service`` up for as long as the block runs, shared with every other holder.

    Started if it is not up; after the block, stopped only if no other holder is left
    (another run's lease, or a `testenv up` by hand that keeps it). ``keep``: when this is
    the last holder, leave it running as `testenv up` does (``RLARK_TESTENV_KEEP=1``).
    """
    with lease.deciding(service):
        mine = lease.take(service)
        try:
            if not healthy(service):
                try:
                    up(service)
                except BaseException:
                    # Ctrl-C (or a failure) while it was starting: stop what was started, as
                    # `up` recorded it, or it outlives the session; unless another holder
                    # still uses it.
                    if not lease.holders(service, besides=mine):
                        with contextlib.suppress(Exception):  # the error raised below
                            down(service)
                    raise
        except BaseException:
            mine.release()
            raise
    try:
        yield
    finally:
        with lease.deciding(service):
            mine.release()
            if not lease.holders(service):
                if keep:
                    lease.keep(service)
                else:
                    down(service)


def status() -> dict[str, Any]:
    st = state.load()
    report: dict[str, Any] = {
        "state_dir": str(state_root()),
        "cache_dir": str(cache_root()),
        "built": {name: r.is_built() for name, r in build.RECIPES.items()},
    }
    for name, svc in SERVICES.items():
        report[name] = svc.status(st) | {"holders": [h.to_json() for h in lease.holders(name)]}
    cl = report["cluster"]
    rss = (
        report["s3"].get("rss_mib", 0)
        + sum(c["rss_mib"] for c in cl.get("components", {}).values())
        + sum(c["rss_mib"] for c in (cl.get("node") or {}).get("components", {}).values())
        + (cl.get("platform") or {}).get("rss_mib", 0)
    )
    report["total_rss_mib"] = round(rss, 1)
    return report


def _print_status(report: dict[str, Any]) -> None:
    """``testenv status`` for a person: each service, its parts and holders."""
    for svc in SERVICES:
        info = report[svc]
        print(f"{svc}: {'running' if info.get('running') else 'down'}")
        for key, val in info.items():
            if key == "components":
                for comp, c in val.items():
                    alive = "up" if c["alive"] else "DEAD"
                    print(f"  {comp}: pid {c['pid']} {alive} {c['rss_mib']} MiB")
            elif key == "node" and val.get("components"):
                print(f"  node {val['name']}: netns {val['netns']}, {val['node_ip']}")
                for comp, c in val["components"].items():
                    alive = "up" if c["alive"] else "DEAD"
                    print(f"    {comp}: pid {c['pid']} {alive} {c['rss_mib']} MiB")
                print(f"    images: {', '.join(val['images'])}")
            elif key == "holders":
                for holder in val:
                    print(f"  {lease.Holder.from_json(holder).line()}")
                if not val:
                    print("  holders: none")
            elif key != "running":
                print(f"  {key}: {val}")
    print(f"total rss: {report['total_rss_mib']} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="testenv", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    up_parser, down_parser = sub.add_parser("up"), sub.add_parser("down")
    for p in (up_parser, down_parser):
        p.add_argument("which", nargs="?", default="all", choices=("all", *SERVICES))
    down_parser.add_argument(
        "--force", action="store_true", help="stop it even while another run holds it"
    )
    p = sub.add_parser("build")
    p.add_argument("which", nargs="?", default="all", choices=("all", *build.NEEDS))
    p = sub.add_parser("status")
    p.add_argument("--json", action="store_true")
    sub.add_parser("env")
    p = sub.add_parser("image")
    p.add_argument("which", choices=("rlinf", "harness"))
    args = parser.parse_args(argv)

    try:
        if args.cmd == "up":
            targets = _targets(args.which)
            names = tuple(t.name for t in targets)
            build.ensure(tuple(r for t in targets for r in t.needs))
            with lease.deciding(*names):
                timings = up(args.which)
                # By hand: kept running, whoever else holds it, until `testenv down`.
                for name in names:
                    lease.keep(name)
            build.say(f"up done in {timings['up_seconds']}s; env file: {state.env_file()}")
        elif args.cmd == "down":
            names = tuple(t.name for t in _targets(args.which))
            with lease.deciding(*names):
                held_by = [(t, h) for t in names for h in lease.holders(t) if not h.kept]
                if held_by and not args.force:
                    for target, holder in held_by:
                        build.say(f"{target} still {holder.line()} (down --force stops it)")
                    return 2
                down(args.which)
            build.say("down: stopped")
        elif args.cmd == "build":
            build.ensure(build.needed(args.which))
        elif args.cmd == "image":
            from testenv import harness_image, rlinf_image

            which = harness_image if args.which == "harness" else rlinf_image
            figures = which.import_into_node()
            ref = (
                harness_image.HARNESS_IMAGE if args.which == "harness" else rlinf_image.RLINF_IMAGE
            )
            build.say(f"{ref} on the node: {json.dumps(figures)}")
        elif args.cmd == "env":
            if not state.env_file().is_file():
                build.say("no env file: run `testenv up` first")
                return 1
            sys.stdout.write(state.env_file().read_text())
        elif args.cmd == "status":
            report = status()
            if args.json:
                print(json.dumps(report, indent=2))
            else:
                _print_status(report)
            st = state.load()
            recorded = [name for name, svc in SERVICES.items() if svc.recorded(st)]
            ok = all(report[name]["running"] for name in recorded)
            return 0 if ok and recorded else 1
    except (build.BuildError, RuntimeError) as exc:
        build.say(f"error: {exc}")
        return 1
    except BrokenPipeError:
        # The reader went away (``status | head``): nothing more to say, and no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
