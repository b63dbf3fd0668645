"""A target configuration that cannot be used is a usage error, as a user meets it.

``rlark-acceptance preflight --profile P --cluster`` (exit 2) and ``pytest features/
--profile P`` (pytest's usage error, exit 4, and the record's ``error``) answer one line
naming the kubeconfig file (and line, for YAML), the context or the server, before anything
runs: no traceback, nothing submitted. The servers here are real sockets on loopback: a
port nobody listens on, and a plain-HTTP server spoken to over TLS.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from testenv import proc
from tests.run.suite_runs import features_command

REPO = Path(__file__).resolve().parents[2]


def kubeconfig(server: str, context: str = "site") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "current-context": context,
    }


def profile(tmp_path: Path, kubeconfig: Path, context: str | None = None) -> Path:
    text = (REPO / "profiles" / "kubernetes.yaml").read_text()
    text = text.replace("kubeconfig: ../.testenv/harness.kubeconfig", f"kubeconfig: {kubeconfig}")
    if context:
        text = text.replace(
            "  namespace: rlinf-acceptance", f"  context: {context}\n  namespace: rlinf-acceptance"
        )
    text = text.replace("config: ../src/", f"config: {REPO / 'src'}/")
    text = text.replace(
        "job: kubernetes/job.yaml", f"job: {REPO / 'profiles' / 'kubernetes' / 'job.yaml'}"
    )
    path = tmp_path / "profile.yaml"
    path.write_text(text)
    return path


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "PYTEST_"))}
    return out | {"PYTHONDONTWRITEBYTECODE": "1"}


def preflight_cluster(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rlark_acceptance.cli",
            "preflight",
            "--profile",
            str(path),
            "--cluster",
        ],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def features(path: Path, reports: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        features_command(path, reports, ["-q"]),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def plain_http() -> Iterator[str]:
    """A server on loopback that speaks HTTP only: TLS to it fails."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def cases(tmp_path: Path, tls_server: str) -> dict[str, tuple[Path, Path, str]]:
    """name → (profile, kubeconfig, what the one line must say)."""
    out = {}
    missing = tmp_path / "missing.kubeconfig"
    out["unreadable"] = (
        profile(tmp_path / "a", missing),
        missing,
        "cannot be read: No such file or directory",
    )
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: []\n  users: oops\ncontexts: []\n")
    out["malformed"] = (profile(tmp_path / "b", bad), bad, "is not valid YAML")
    good = tmp_path / "good.kubeconfig"
    closed = f"https://127.0.0.1:{proc.free_port()}"
    good.write_text(yaml.safe_dump(kubeconfig(closed)))
    out["no such context"] = (
        profile(tmp_path / "c", good, "nope"),
        good,
        "no context 'nope' (it has: site)",
    )
    out["refused"] = (
        profile(tmp_path / "d", good),
        good,
        f"the API server {closed} refuses connections (Connection refused)",
    )
    tls = tmp_path / "tls.kubeconfig"
    tls.write_text(yaml.safe_dump(kubeconfig(tls_server)))
    out["tls"] = (profile(tmp_path / "e", tls), tls, f"TLS with {tls_server} failed")
    return out


@pytest.mark.parametrize("case", ["unreadable", "malformed", "no such context", "refused", "tls"])
def test_a_bad_kubeconfig_is_one_line_and_exit_2_in_preflight_cluster(
    tmp_path: Path, plain_http: str, case: str
) -> None:
    for d in "abcde":
        (tmp_path / d).mkdir()
    path, kubecfg, says = cases(tmp_path, plain_http)[case]
    res = preflight_cluster(path)
    assert res.returncode == 2, res.stdout + res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    if case == "unreadable":  # what to fix is the profile's line that names it
        line = path.read_text().splitlines().index(f"  kubeconfig: {kubecfg}") + 1
        assert err.startswith(f"rlark-acceptance: {path}:{line}: target.kubeconfig {kubecfg}:")
    else:
        assert err.startswith(f"rlark-acceptance: {kubecfg}"), err
    assert says in err, err
    if case == "malformed":
        assert err.startswith(f"rlark-acceptance: {kubecfg}:4: "), err  # the line of the error
    print(f"{case}: {err}")


@pytest.mark.parametrize("case", ["malformed", "refused"])
def test_a_bad_kubeconfig_stops_the_suite_before_any_scenario(
    tmp_path: Path, plain_http: str, case: str
) -> None:
    for d in "abcde":
        (tmp_path / d).mkdir()
    path, kubecfg, says = cases(tmp_path, plain_http)[case]
    res = features(path, tmp_path / "reports")
    assert res.returncode == 4, res.stdout[-3000:] + res.stderr[-3000:]  # pytest's usage error
    out = res.stdout + res.stderr
    errors = [line for line in out.splitlines() if line.startswith("ERROR: ")]
    assert errors == [f"ERROR: target: {errors[0].removeprefix('ERROR: target: ')}"], out[-3000:]
    assert str(kubecfg) in errors[0] and says in errors[0], errors
    assert "Traceback" not in out, out[-3000:]
    # pytest's last line: no scenario ran ("no tests ran", or only the opt-in T.4's
    # scenarios deselected)
    last = [x for x in out.splitlines() if re.search(r" in [\d.]+s\b", x)][-1]
    assert not re.search(r"\d+ (passed|failed|error)", last), last
    summary = json.loads((tmp_path / "reports" / "run-summary.json").read_text())
    assert summary["verdict"] == "failed" and says in summary["error"], summary
    assert set(summary["checks"].values()) == {"notReached"}
