"""Build the real service binaries from their Go modules into a version-keyed cache.

Every recipe reaches only the Go module proxy (through the ordinary ``go`` client), so it
works on a fresh machine with no other network. A warm cache means ``up`` builds nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from testenv import versions
from testenv.paths import cache_root, dir_lock

# The trace collector's command (a Go main over the collector's packages) and the modules it
# imports, each at the version line it is released under.
OTELCOL = Path(__file__).resolve().parent / "otelcol"
OTELCOL_MODULES = (
    ("github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter", "beta"),
    ("go.opentelemetry.io/collector/receiver/otlpreceiver", "beta"),
    ("go.opentelemetry.io/collector/otelcol", "beta"),
    ("go.opentelemetry.io/collector/service", "beta"),
    ("go.opentelemetry.io/collector/service/telemetry/otelconftelemetry", "beta"),
    ("go.opentelemetry.io/collector/confmap/provider/envprovider", "stable"),
    ("go.opentelemetry.io/collector/confmap/provider/fileprovider", "stable"),
    ("go.opentelemetry.io/collector/confmap/provider/yamlprovider", "stable"),
)

# The S3 server's command (a Go main over versitygw's packages) and the packages it imports.
S3GW = Path(__file__).resolve().parent / "s3gw"
S3GW_PACKAGES = ("embedgw", "backend/posix", "backend/meta", "debuglogger")


class BuildError(RuntimeError):
    """A recipe failed; the message names the log with the full output."""


@dataclass(frozen=True)
class Recipe:
    name: str
    version: str
    # Bump when the recipe itself changes, so old cache entries are not reused.
    revision: int
    binaries: tuple[str, ...]
    run: Callable[[Path, Path, Path], None]  # (work dir, output dir, log file)
    # Files of this repository the build reads: their content is part of the key, so an
    # edit builds anew without a revision bump.
    inputs: tuple[Path, ...] = ()

    @property
    def key(self) -> str:
        key = f"{self.name}-{self.version}-r{self.revision}"
        if self.inputs:
            digest = hashlib.sha256()
            for path in self.inputs:
                digest.update(path.read_bytes())
            key += f"-{digest.hexdigest()[:12]}"
        return key

    @property
    def dir(self) -> Path:
        return cache_root() / self.key

    def bin(self, binary: str) -> Path:
        return self.dir / "bin" / binary

    def is_built(self) -> bool:
        return (self.dir / "BUILDINFO.json").is_file() and all(
            self.bin(b).is_file() for b in self.binaries
        )


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            # Reproducible paths in the binaries and shared compile cache entries.
            "GOFLAGS": "-trimpath",
            # Pure Go binaries: no C toolchain needed, nothing to link at run time.
            "CGO_ENABLED": "0",
            # Never fetch another Go toolchain behind our back: fail loudly instead.
            "GOTOOLCHAIN": "local",
            "GOWORK": "off",
            "GO111MODULE": "on",
        }
    )
    return env


def _go(args: list[str], cwd: Path, log: Path, extra_env: dict[str, str] | None = None) -> str:
    env = _go_env()
    if extra_env:
        env.update(extra_env)
    with log.open("a") as fh:
        fh.write(f"\n$ (cd {cwd.name}) go {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.run(
            ["go", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=fh, text=True
        )
        fh.write(proc.stdout)
    if proc.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-25:])
        raise BuildError(
            f"go {' '.join(args[:2])} failed (exit {proc.returncode}); see {log}\n{tail}"
        )
    return proc.stdout


def _check_go() -> None:
    if shutil.which("go") is None:
        raise BuildError("the 'go' command is not on PATH; install Go >= 1.26 first")
    out = subprocess.run(
        ["go", "env", "GOVERSION"], capture_output=True, text=True, env=_go_env(), check=True
    ).stdout.strip()
    match = re.match(r"go(\d+)\.(\d+)", out)
    if not match or (int(match[1]), int(match[2])) < versions.GO_MIN:
        want = ".".join(map(str, versions.GO_MIN))
        raise BuildError(f"Go {want} or newer is needed to build the pins, found {out!r}")


def _module_info(module: str, version: str, cwd: Path, log: Path) -> dict[str, str]:
    out = _go(["mod", "download", "-json", f"{module}@{version}"], cwd, log)
    info: dict[str, str] = json.loads(out)
    return info


def _wrapper_gomod(name: str, require: str, replaces: list[tuple[str, str]]) -> str:
    lines = [f"module rlark.local/testenv-{name}", "", "go 1.26.0", "", f"require {require}", ""]
    if replaces:
        lines.append("replace (")
        lines += [f"\t{mod} => {mod} {ver}" for mod, ver in replaces]
        lines.append(")")
    return "\n".join(lines) + "\n"


def _build_kubernetes(work: Path, out: Path, log: Path) -> None:
    _build_k8s_commands(work, out, log, recipe_binaries["kubernetes"])


def _build_kubelet(work: Path, out: Path, log: Path) -> None:
    # Its own recipe (same wrapper, same version), so adding the real node does not
    # invalidate the control plane's cache entry; the Go build cache makes it ~40 s.
    _build_k8s_commands(work, out, log, recipe_binaries["kubelet"])


def _build_k8s_commands(work: Path, out: Path, log: Path, binaries: tuple[str, ...]) -> None:
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
    # ./staging paths, which only work inside its own repository. A wrapper module that
    # replaces each with the published v0.<minor>.<patch> is what makes it buildable.
    version = versions.KUBERNETES
    major, minor, patch = version.lstrip("v").split(".")
    staging_version = f"v0.{minor}.{patch}"
    info = _module_info("k8s.io/kubernetes", version, work, log)
    gomod = Path(info["GoMod"]).read_text()
    staging = sorted(
        {
            m[1]
            for m in re.finditer(
                r"^\s*(?:require\s+)?(k8s\.io/\S+)\s+v0\.0\.0(?:\s|$)", gomod, re.M
            )
        }
    )
    (work / "go.mod").write_text(
        _wrapper_gomod(
            "k8s", f"k8s.io/kubernetes {version}", [(m, staging_version) for m in staging]
        )
    )
    cmds = [f"k8s.io/kubernetes/cmd/{c}" for c in binaries]
    _go(["get", *[f"{c}@{version}" for c in cmds]], work, log)
    ldflags = " ".join(
        [
            "-s -w",
            f"-X k8s.io/component-base/version.gitVersion={version}",
            f"-X k8s.io/component-base/version.gitMajor={major.lstrip('v')}",
            f"-X k8s.io/component-base/version.gitMinor={minor}",
            "-X k8s.io/component-base/version.gitTreeState=clean",
            f"-X k8s.io/client-go/pkg/version.gitVersion={version}",
            f"-X k8s.io/client-go/pkg/version.gitMajor={major.lstrip('v')}",
            f"-X k8s.io/client-go/pkg/version.gitMinor={minor}",
        ]
    )
    # One invocation for all four commands so they share every compiled package.
    _go(["build", "-ldflags", ldflags, "-o", str(out) + "/", *cmds], work, log)


def _build_etcd(work: Path, out: Path, log: Path) -> None:
    # etcd's server module replaces its sibling modules with relative paths, so
    # `go install` refuses it; as a dependency of a wrapper those replaces are ignored
    # and the published sibling versions it requires are used.
    version = versions.ETCD
    (work / "go.mod").write_text(_wrapper_gomod("etcd", f"go.etcd.io/etcd/server/v3 {version}", []))
    _go(["get", f"go.etcd.io/etcd/server/v3@{version}"], work, log)
    _go(
        ["build", "-ldflags", "-s -w", "-o", str(out / "etcd"), "go.etcd.io/etcd/server/v3"],
        work,
        log,
    )


# Default kwok stages that kwokctl embeds: a custom stage list replaces them, so the
# environment re-adds them from the pinned module next to its own stages.
KWOK_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
    "kustomize/stage/pod/chaos/pod-container-running-failed.yaml",
)


def _build_kwok(work: Path, out: Path, log: Path) -> None:
    version = versions.KWOK
    _go(
        [
            "install",
            "-ldflags",
            "-s -w",
            f"sigs.k8s.io/kwok/cmd/kwok@{version}",
            f"sigs.k8s.io/kwok/cmd/kwokctl@{version}",
        ],
        work,
        log,
        {"GOBIN": str(out)},
    )
    moddir = Path(_module_info("sigs.k8s.io/kwok", version, work, log)["Dir"])
    stages = out.parent / "stages"
    stages.mkdir(parents=True, exist_ok=True)
    for rel in KWOK_STAGE_FILES:
        shutil.copyfile(moddir / rel, stages / Path(rel).name)


def _build_versitygw(work: Path, out: Path, log: Path) -> None:
    # versitygw's gateway from testenv/s3gw: its posix backend through embedgw, without the
    # backends its own command links and the tests never start (see main.go there).
    version = versions.VERSITYGW
    shutil.copyfile(S3GW / "main.go", work / "main.go")
    (work / "go.mod").write_text(
        _wrapper_gomod("s3gw", f"github.com/versity/versitygw {version}", [])
    )
    _go(["get", *(f"github.com/versity/versitygw/{p}@{version}" for p in S3GW_PACKAGES)], work, log)
    _go(
        [
            "build",
            "-ldflags",
            f"-s -w -X main.Version={version}",
            "-o",
            str(out / "versitygw"),
            ".",
        ],
        work,
        log,
    )


def _build_otelcol(work: Path, out: Path, log: Path) -> None:
    # The collector's builder would generate this main from a manifest and fetch itself
    # first; testenv/otelcol/main.go is its output for two components, so only the
    # components' modules are fetched.
    line = {"beta": versions.OTELCOL, "stable": versions.OTELCOL_STABLE}
    shutil.copyfile(OTELCOL / "main.go", work / "main.go")
    (work / "go.mod").write_text("module rlark.local/testenv-otelcol\n\ngo 1.26.0\n")
    _go(["get", *(f"{mod}@{line[which]}" for mod, which in OTELCOL_MODULES)], work, log)
    _go(
        [
            "build",
            "-ldflags",
            f"-s -w -X main.Version={versions.OTELCOL}",
            "-o",
            str(out / "otelcol"),
            ".",
        ],
        work,
        log,
    )


def _build_containerd(work: Path, out: Path, log: Path) -> None:
    # Pure Go (CGO off), without the btrfs snapshotter (its only cgo dependency): the node
    # uses overlayfs. The daemon, its runc shim and ctr (to import the local images).
    version = versions.CONTAINERD
    mod = "github.com/containerd/containerd/v2"
    _go(
        [
            "install",
            "-tags",
            "no_btrfs",
            "-ldflags",
            f"-s -w -X {mod}/version.Version={version}",
            *[f"{mod}/cmd/{c}@{version}" for c in recipe_binaries["containerd"]],
        ],
        work,
        log,
        {"GOBIN": str(out)},
    )


# The sandbox ("pause") process of every Pod: there is no registry to pull the usual one
# from, so the node's image is built here. It waits for SIGTERM / SIGINT and, as PID 1 of
# the Pod's PID namespace when shared, reaps orphans.
PAUSE_GO = """package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var st syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &st, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
"""


def _build_pause(work: Path, out: Path, log: Path) -> None:
    (work / "go.mod").write_text("module rlark.local/testenv-pause\n\ngo 1.26.0\n")
    (work / "main.go").write_text(PAUSE_GO)
    _go(["build", "-ldflags", "-s -w", "-o", str(out / "pause"), "."], work, log)


def _build_chainsaw(work: Path, out: Path, log: Path) -> None:
    version = versions.CHAINSAW
    _go(
        ["install", "-ldflags", "-s -w", f"github.com/kyverno/chainsaw@{version}"],
        work,
        log,
        # The one recipe that needs another Go release; the go command fetches that
        # toolchain as a module from the proxy (and checks it against the checksum DB).
        {"GOBIN": str(out), "GOTOOLCHAIN": versions.CHAINSAW_GOTOOLCHAIN},
    )


recipe_binaries: dict[str, tuple[str, ...]] = {
    "kubernetes": ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
    "etcd": ("etcd",),
    "kwok": ("kwok", "kwokctl"),
    "versitygw": ("versitygw",),
    "kubelet": ("kubelet",),
    "containerd": ("containerd", "containerd-shim-runc-v2", "ctr"),
    "pause": ("pause",),
    "chainsaw": ("chainsaw",),
    "otelcol": ("otelcol",),
}

RECIPES: dict[str, Recipe] = {
    "kubernetes": Recipe(
        "kubernetes", versions.KUBERNETES, 1, recipe_binaries["kubernetes"], _build_kubernetes
    ),
    "etcd": Recipe("etcd", versions.ETCD, 1, recipe_binaries["etcd"], _build_etcd),
    "kwok": Recipe("kwok", versions.KWOK, 1, recipe_binaries["kwok"], _build_kwok),
    "versitygw": Recipe(
        "versitygw",
        versions.VERSITYGW,
        2,
        recipe_binaries["versitygw"],
        _build_versitygw,
        inputs=(S3GW / "main.go",),
    ),
    "kubelet": Recipe(
        "kubelet", versions.KUBERNETES, 1, recipe_binaries["kubelet"], _build_kubelet
    ),
    "containerd": Recipe(
        "containerd", versions.CONTAINERD, 1, recipe_binaries["containerd"], _build_containerd
    ),
    "pause": Recipe("pause", "go", 1, recipe_binaries["pause"], _build_pause),
    "chainsaw": Recipe(
        "chainsaw", versions.CHAINSAW, 1, recipe_binaries["chainsaw"], _build_chainsaw
    ),
    "otelcol": Recipe(
        "otelcol",
        versions.OTELCOL,
        1,
        recipe_binaries["otelcol"],
        _build_otelcol,
        inputs=(OTELCOL / "main.go",),
    ),
}

# Which recipes each service needs (chainsaw only for the bench: `testenv build chainsaw`).
NEEDS: dict[str, tuple[str, ...]] = {
    "s3": ("versitygw",),
    "cluster": ("kubernetes", "etcd", "kwok", "kubelet", "containerd", "pause"),
    "chainsaw": ("chainsaw",),
    # Started by each test that reads a trace back (testenv/otelcol.py), not a shared service.
    "otelcol": ("otelcol",),
}
# What ``all`` builds: every service the tests start (the bench's chainsaw only when named).
ALL = ("s3", "cluster", "otelcol")


def needed(which: str) -> tuple[str, ...]:
    """The recipes of ``which``: a name of ``NEEDS``, or ``all``."""
    return tuple(r for name in (ALL if which == "all" else (which,)) for r in NEEDS[name])


def _cache_lock() -> contextlib.AbstractContextManager[None]:
    return dir_lock(cache_root())


def say(msg: str) -> None:
    print(f"testenv: {msg}", file=sys.stderr, flush=True)


def ensure(names: tuple[str, ...]) -> dict[str, float]:
    """Build each missing recipe; returns seconds spent per recipe actually built."""
    spent: dict[str, float] = {}
    missing = [RECIPES[n] for n in names if not RECIPES[n].is_built()]
    if not missing:
        return spent
    _check_go()
    with _cache_lock():
        for recipe in missing:
            if recipe.is_built():  # another process built it while we waited
                continue
            spent[recipe.name] = _build_one(recipe)
    return spent


def _build_one(recipe: Recipe) -> float:
    root = cache_root()
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{recipe.key}.log"
    log.write_text("")
    tmp = root / f".tmp-{recipe.key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "src").mkdir(parents=True)
    (tmp / "bin").mkdir()
    say(f"building {recipe.key} (log: {log}) ...")
    started = time.monotonic()
    try:
        recipe.run(tmp / "src", tmp / "bin", log)
        for binary in recipe.binaries:
            if not (tmp / "bin" / binary).is_file():
                raise BuildError(f"{recipe.key}: {binary} was not produced; see {log}")
        seconds = round(time.monotonic() - started, 1)
        (tmp / "BUILDINFO.json").write_text(
            json.dumps({"key": recipe.key, "seconds": seconds, "built_at": time.time()}) + "\n"
        )
        shutil.rmtree(tmp / "src")
        shutil.rmtree(recipe.dir, ignore_errors=True)
        tmp.rename(recipe.dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"built {recipe.key} in {seconds:.0f}s")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """``python3 -m testenv.build [s3|cluster|chainsaw|all]``: only the builds.

    This module needs nothing but the standard library, so ``./run`` starts the builds with
    any python3 while the virtualenv is still being installed (``testenv build`` needs it).
    """
    parser = argparse.ArgumentParser(prog="python3 -m testenv.build")
    parser.add_argument("which", nargs="?", default="all", choices=("all", *NEEDS))
    args = parser.parse_args(argv)
    # ./run stops the builds with SIGTERM when what runs beside them failed. Taken as an
    # exit, the go command under way is killed and its half-built tree removed (a default
    # SIGTERM would leave both: go building on, hundreds of MB in the cache).
    signal.signal(signal.SIGTERM, _stopped)
    try:
        ensure(needed(args.which))
    except BuildError as exc:
        say(f"error: {exc}")
        return 1
    return 0


def _stopped(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
