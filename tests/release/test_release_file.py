"""The release file and the release's command line: what a good file means, and every bad
input answered by one line naming the file and line, exit 2, before anything runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.release.release_file import load_release
from tests.release.release_runs import command, env, release_file, variant
from tests.run.suite_runs import ROOT


def test_profiles_are_paths_and_globs_relative_to_the_file(tmp_path: Path) -> None:
    a, b = variant(tmp_path, "site-a"), variant(tmp_path, "site-b")
    path = release_file(
        tmp_path / "release.yaml",
        [
            "site-b/site/local.yaml",
            "site-a/site/*.yaml",
            str(ROOT / "profiles" / "kubernetes.yaml"),
        ],
        jobs=3,
        reportsDir="out",
        select="runtime",
        faultInjection=True,
        docUrl="https://d/x",
    )
    release = load_release(path)
    assert [(p.name, p.path) for p in release.profiles] == [
        ("site-b", b.profile.resolve()),
        ("site-a", a.profile.resolve()),
        ("smoke-ppo-mlp-kubernetes", (ROOT / "profiles" / "kubernetes.yaml").resolve()),
    ]
    assert release.profiles[1].listed_at == f"{path}:3"
    assert release.profiles[1].shown == "site-a/site/local.yaml"
    assert release.name == "release" and release.jobs == 3
    assert release.reports_dir == tmp_path / "out"
    assert release.session_args() == (
        "-m",
        "runtime",
        "--fault-injection",
        "--doc-url",
        "https://d/x",
    )


def _bad(tmp_path: Path) -> dict[str, tuple[str, int | None, str]]:
    """name → (release file text, the line the answer names, what it says)."""
    variant(tmp_path, "site-a")
    twin = variant(tmp_path, "twin")
    twin.edit(twin.profile, "name: twin\n", "name: site-a\n")
    a = "site-a/site/local.yaml"
    return {
        "malformed YAML": (f"profiles:\n  - {a}\n  - [\n", 4, "malformed YAML"),
        "unknown key": (f"profiles: [{a}]\nprofile: x\n", 2, "did you mean `profiles`?"),
        "no profiles": ("jobs: 2\n", 1, "profiles must be a list"),
        "profiles not a list": ("profiles: site-a\n", 1, "profiles must be a list"),
        "a profile not text": (f"profiles:\n  - {a}\n  - {{x: 1}}\n", 3, "path or a glob"),
        "no such file": (f"profiles:\n  - {a}\n  - nowhere.yaml\n", 3, "nowhere.yaml: no such"),
        "a glob matching nothing": (f"profiles:\n  - {a}\n  - s/*.yaml\n", 3, "no profile matches"),
        "two profiles of one name": (
            f"profiles:\n  - {a}\n  - twin/site/local.yaml\n",
            3,
            "is named 'site-a', as",
        ),
        "jobs zero": (f"profiles: [{a}]\njobs: 0\n", 2, "jobs must be a whole number"),
        "jobs text": (f"profiles: [{a}]\njobs: many\n", 2, "jobs must be a whole number"),
        "faultInjection not a flag": (
            f"profiles: [{a}]\nfaultInjection: yes please\n",
            2,
            "true or false",
        ),
        "select not text": (f"profiles: [{a}]\nselect: [a]\n", 2, "select must be text"),
    }


BAD = [
    "malformed YAML",
    "unknown key",
    "no profiles",
    "profiles not a list",
    "a profile not text",
    "no such file",
    "a glob matching nothing",
    "two profiles of one name",
    "jobs zero",
    "jobs text",
    "faultInjection not a flag",
    "select not text",
]


def _release(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command("--reports-dir", str(tmp_path / "reports"), *args),
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    said = [x for x in (done.stdout + done.stderr).splitlines() if x.strip()]
    assert done.returncode == 2, (done.returncode, said)
    assert len(said) == 1, said
    assert "Traceback" not in said[0]
    return said[0]


@pytest.mark.parametrize("case", BAD)
def test_a_bad_release_file_is_an_input_error_at_its_line(tmp_path: Path, case: str) -> None:
    text, line, says = _bad(tmp_path)[case]
    path = tmp_path / "release.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_release(path)
    assert str(raised.value).startswith(f"{path}:{line}: "), raised.value
    assert says in str(raised.value), raised.value


@pytest.mark.parametrize("case", ["malformed YAML", "two profiles of one name", "jobs zero"])
def test_the_command_answers_a_bad_release_file_in_one_line_and_exit_2(
    tmp_path: Path, case: str
) -> None:
    text, line, says = _bad(tmp_path)[case]
    path = tmp_path / "release.yaml"
    path.write_text(text, encoding="utf-8")
    said = _one_line(_release(tmp_path, "--release", str(path)))
    assert said.startswith(f"ERROR: {path}:{line}: "), said
    assert says in said, said
    assert not (tmp_path / "reports").exists(), "a release that never ran wrote a record"


def test_a_profile_that_cannot_be_read_is_named_at_its_own_line(tmp_path: Path) -> None:
    broken = variant(tmp_path, "broken")
    line = broken.edit(broken.profile, "adapter: local", "adapter: no-such-adapter")
    path = release_file(tmp_path / "release.yaml", ["broken/site/local.yaml"])
    said = _one_line(_release(tmp_path, "--release", str(path)))
    assert said.startswith(f"ERROR: {broken.profile}:{line}: "), said
    assert "no-such-adapter" in said


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path) -> None:
    a, b = variant(tmp_path, "site-a"), variant(tmp_path, "site-b")
    path = release_file(tmp_path / "release.yaml", ["site-a/site/local.yaml"])
    both = _one_line(_release(tmp_path, "--release", str(path), "--profile", str(a.profile)))
    assert both == "ERROR: --release: give a release file or --profile options, not both"
    jobs = _one_line(
        _release(tmp_path, "--profile", str(a.profile), "--profile", str(b.profile), "--jobs", "0")
    )
    assert jobs.startswith("ERROR: --jobs: '0'"), jobs
    same = _one_line(_release(tmp_path, "--profile", str(a.profile), "--profile", str(a.profile)))
    assert same.startswith(f"ERROR: --profile {a.profile}: ") and "is named 'site-a'" in same
    missing = tmp_path / "none.yaml"
    gone = _one_line(_release(tmp_path, "--release", str(missing)))
    assert gone.startswith(f"ERROR: {missing}: "), gone
