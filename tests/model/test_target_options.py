"""Typed target options (``model.options``): each adapter's keys of ``target:`` parsed once,
by its own type, when the profile is loaded; every wrong key or value is one line naming
the profile's file:line, exit status 2, as ``rlark-acceptance preflight`` prints it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlark_acceptance.adapters.kubernetes.options import KubernetesOptions
from rlark_acceptance.adapters.local.options import LocalOptions
from rlark_acceptance.model.errors import InputError
from rlark_acceptance.model.options import (
    OptionsSource,
    declared,
    parse_dataclass,
    parse_options,
)
from rlark_acceptance.model.profile import load_profile

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"


def test_the_profiles_options_are_typed_once_loaded() -> None:
    local = load_profile(PROFILES / "rlinf-embodied.yaml").target
    assert isinstance(local.options, LocalOptions)
    assert (local.options.without_gpu, local.options.ray_dashboard) == (True, True)
    assert list(local.options.images) == ["rlark-acceptance/rlinf:0.3.0-cpu"]
    assert local.keep_outputs == "onFailure" and local.cluster == ()
    k8s = load_profile(PROFILES / "kubernetes.yaml").target
    assert k8s.options == KubernetesOptions()
    assert k8s.cluster == ("rlark-testenv",)
    assert k8s.kubeconfig == str(PROFILES / ".." / ".testenv" / "harness.kubeconfig")
    assert load_profile(PROFILES / "local.yaml").target.options == LocalOptions(
        images={"rlark-acceptance/smoke:0.1.0": {"environment": "../.venv"}}
    )


def profile_with(tmp_path: Path, base: str, *lines: str) -> tuple[Path, int]:
    """A copy of ``profiles/<base>`` with ``lines`` added under ``target:``; the line of the
    first added one."""
    text = (PROFILES / base).read_text().replace("../", f"{REPO}/")
    head, rest = text.split("target:\n", 1)
    out = tmp_path / base
    out.write_text(head + "target:\n" + "".join(f"  {x}\n" for x in lines) + rest)
    return out, head.count("\n") + 2


def preflight(profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlark_acceptance.cli", "preflight", "--profile", str(profile)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    ("base", "lines", "offset", "message"),
    [
        (
            "local.yaml",
            ["rayDashbord: true"],
            0,
            "target.rayDashbord is not a target setting of the local adapter; "
            "did you mean `rayDashboard`?",
        ),
        ("local.yaml", ["withoutGpu: 'yes'"], 0, "target.withoutGpu must be true or false"),
        ("local.yaml", ["rayNumCpus: 1.5"], 0, "target.rayNumCpus must be a whole number"),
        ("local.yaml", ["scratchRoot: [a, b]"], 0, "target.scratchRoot must be a path"),
        (
            "kubernetes.yaml",
            ["images: [a, b]"],
            0,
            "target.images is not a target setting of the kubernetes adapter: one of adapter, "
            "kubeconfig, context, namespace, cluster, jobName, mounts, keepOutputs, node, "
            "deleteTimeout",
        ),
        ("local.yaml", ["imageDirs: {a: 1}"], 0, "target.imageDirs[0] must be text"),
        (
            "local.yaml",
            ["keepOutputs: sometimes"],
            0,
            "target.keepOutputs must be one of onFailure, always, never, not 'sometimes'",
        ),
        ("local.yaml", ["cluster:", "- a", "- {b: 1}"], 2, "target.cluster[1] must be text"),
        ("local.yaml", ["mounts:", "- data"], 1, "target.mounts[0] must be a mapping"),
        ("local.yaml", ["jobName: [x]"], 0, "target.jobName must be text"),
        ("kubernetes.yaml", ["deleteTimeout: soon"], 0, "target.deleteTimeout must be a number"),
        (
            "kubernetes.yaml",
            ["deleteTimout: 5"],
            0,
            "target.deleteTimout is not a target setting of the kubernetes adapter; "
            "did you mean `deleteTimeout`?",
        ),
    ],
)
def test_a_wrong_option_is_one_line_at_its_profile_line_exit_2(
    tmp_path: Path, base: str, lines: list[str], offset: int, message: str
) -> None:
    profile, line = profile_with(tmp_path, base, *lines)
    out = preflight(profile)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        f"rlark-acceptance: {profile}:{line + offset}: {message}"
    ]


def test_a_plugin_that_declares_nothing_gets_its_keys_read_only() -> None:
    assert declared("site-queue") is None
    opts = parse_options(OptionsSource("site-queue", {"queue": "gpu-a", "retries": 2}))
    assert isinstance(opts, types.MappingProxyType) and dict(opts) == {
        "queue": "gpu-a",
        "retries": 2,
    }
    with pytest.raises(TypeError):
        opts["queue"] = "other"  # type: ignore[index]


@dataclass(frozen=True)
class SiteOptions:
    """What a plugin adapter would register under ``rlark_acceptance.adapter_options``."""

    queue: str
    max_wait_seconds: float = 60.0
    labels: tuple[str, ...] = ()


def test_a_plugins_dataclass_is_parsed_like_the_built_in_ones(tmp_path: Path) -> None:
    src = OptionsSource("site", {"queue": "gpu-a", "maxWaitSeconds": 5, "labels": "x"})
    assert parse_dataclass(SiteOptions, src) == SiteOptions("gpu-a", 5.0, ("x",))
    with pytest.raises(InputError, match=r"^target: target\.maxWait is not an option of the site"):
        parse_dataclass(SiteOptions, OptionsSource("site", {"queue": "q", "maxWait": 1}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_dataclass(SiteOptions, src).queue = "other"  # type: ignore[misc]


def test_the_built_in_adapters_declare_their_types_by_entry_point() -> None:
    for name, cls in (("local", LocalOptions), ("kubernetes", KubernetesOptions)):
        parse = declared(name)
        assert parse is not None
        assert parse(OptionsSource(name, {})) == cls()
