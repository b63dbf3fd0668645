"""The docs site, tested like code: it builds in strict mode, every shell command of a
tutorial or how-to is run by a test (or needs a real cluster), the README fits on a screen
and quotes the run excerpts ``docs/excerpts.py`` cut from real runs, the generated
reference pages are what their generator writes, and a how-to's code does what it says.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
GUIDES = sorted([*(DOCS / "tutorial").glob("*.md"), *(DOCS / "how-to").glob("*.md")])
SHELL = {"sh", "bash", "shell", "console", "zsh"}
RUN_BY = re.compile(r"^<!-- run by: (?P<tests>.+?) -->$")
NEEDS_CLUSTER = "<!-- needs a real cluster -->"
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")


def _docs_module(name: str) -> Any:
    sys.path.insert(0, str(DOCS))
    return __import__(name)


# -- the site builds -------------------------------------------------------------------


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    """No broken link or anchor, no page missing from the nav, no snippet missing; built
    by the documented command, ``./run docs --build``, with its own set-up (mkdocs is in
    the dev extra, not in what ``./run acceptance`` installs)."""
    out = tmp_path / "site"
    done = subprocess.run(
        [str(ROOT / "run"), "docs", "--build", "--site-dir", str(out)],
        cwd=ROOT,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "index.html").is_file() and (out / "checks" / "index.html").is_file()
    assert (out / "tutorial" / "first-run" / "index.html").is_file()
    # The excerpts are included, not typed into the tutorial.
    first_run = (out / "tutorial" / "first-run" / "index.html").read_text(encoding="utf-8")
    green = (DOCS / "snippets" / "green.txt").read_text(encoding="utf-8").splitlines()[1]
    assert green.split("  (")[0] in first_run


# -- every command shown is run by a test, or needs a real cluster ------------------------


def fenced_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line, language, the line before it that is not blank) of each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, open_indent = [], None
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if not m:
            continue
        if open_indent is None:
            before = next((x.strip() for x in reversed(lines[:i]) if x.strip()), "")
            out.append((i + 1, m["lang"], before))
            open_indent = m["indent"]
        elif m["indent"] == open_indent and not m["lang"]:
            open_indent = None
    return out


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    }


def marker_problems(path: Path, root: Path = ROOT) -> list[str]:
    """What breaks the rule in one page: a block without its language, a shell block without
    its marker, a marker naming a test that does not exist."""
    problems = []
    where = path.relative_to(root)
    for line, lang, before in fenced_blocks(path):
        if not lang:
            problems.append(f"{where}:{line}: a fenced block without its language")
            continue
        if lang not in SHELL:
            continue
        if before == NEEDS_CLUSTER:
            continue
        m = RUN_BY.match(before)
        if not m:
            problems.append(
                f"{where}:{line}: a shell block with neither `<!-- run by: FILE::TEST -->` "
                f"nor `{NEEDS_CLUSTER}` before it"
            )
            continue
        for named in (t.strip() for t in m["tests"].split(",")):
            file, _, test = named.partition("::")
            module = root / file
            if not file.startswith("tests/") or not module.is_file():
                problems.append(f"{where}:{line}: {named}: no test file {file}")
            elif test not in _tests_in(module):
                problems.append(f"{where}:{line}: {named}: {file} has no test {test!r}")
    return problems


def test_every_shell_command_of_a_guide_is_run_by_a_test_or_needs_a_real_cluster() -> None:
    assert GUIDES, "no tutorial or how-to pages"
    problems = [p for page in GUIDES for p in marker_problems(page)]
    assert problems == [], "\n".join(problems)
    shells = [b for page in GUIDES for b in fenced_blocks(page) if b[1] in SHELL]
    assert len(shells) >= 10, "the guides show fewer commands than they did"


def test_the_marker_rule_finds_what_it_must(tmp_path: Path) -> None:
    page = tmp_path / "guide.md"
    page.write_text(
        textwrap.dedent(
            """\
            <!-- run by: tests/test_site.py::test_the_site_builds_in_strict_mode -->
            ```sh
            ./run acceptance
            ```

            <!-- needs a real cluster -->
            ```bash
            kubectl apply -f deploy/harness-rbac.yaml
            ```

            ```sh
            ./run tests
            ```

            <!-- run by: tests/test_site.py::test_no_such_test -->
            ```sh
            ./run check
            ```

            ```
            untagged
            ```

            ```yaml
            a: 1
            ```
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_site.py").write_text(
        "def test_the_site_builds_in_strict_mode():\n    pass\n", encoding="utf-8"
    )
    problems = marker_problems(page, tmp_path)
    assert len(problems) == 3, problems
    assert "guide.md:11: a shell block with neither" in problems[0]
    assert "has no test 'test_no_such_test'" in problems[1]
    assert "guide.md:20: a fenced block without its language" in problems[2]


# -- the README --------------------------------------------------------------------------


def test_the_readme_fits_on_a_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines"


def test_the_readme_quotes_the_excerpts_the_script_wrote() -> None:
    excerpts = _docs_module("excerpts")
    text = README.read_text(encoding="utf-8")
    quoted = {m["path"]: m["body"] for m in excerpts.BLOCK.finditer(text)}
    assert set(quoted) == {"docs/snippets/green.txt", "docs/snippets/red.txt"}, quoted.keys()
    for path, body in quoted.items():
        assert body == (ROOT / path).read_text(encoding="utf-8"), (
            f"README.md does not quote {path} as it is: run docs/excerpts.py --readme"
        )
    # The tutorial includes the same files, so the site shows what the README shows.
    tutorial = "".join(p.read_text(encoding="utf-8") for p in (DOCS / "tutorial").glob("*.md"))
    for path in quoted:
        assert f'--8<-- "{path}"' in tutorial, f"the tutorial does not include {path}"


def test_the_readme_links_and_commands_hold() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" not in target:
            assert (ROOT / target).is_file(), f"README.md links to {target}, which is not there"
    run = (ROOT / "run").read_text(encoding="utf-8")
    for command in ("acceptance", "tests", "check", "report", "docs"):
        assert f"./run {command}" in text and f"  {command})" in run, command


def test_an_excerpt_is_the_record_block_as_a_reader_has_it(tmp_path: Path) -> None:
    excerpts = _docs_module("excerpts")
    reports = tmp_path / "reports-green"
    output = "\n".join(
        [
            "features/test_doc_checks.py ....                                 [100%]",
            "=================== rlark-acceptance run record ===================",
            f"verdict: passed  checks: 45 passed  ({reports}/run-summary.json)",
            "run id: 261202010251-58e939",
            "=================== 45 passed in 60.00s ===================",
        ]
    )
    block = excerpts.record_block(output)
    assert block.splitlines()[0].startswith("=") and "run record" in block.splitlines()[0]
    assert block.splitlines()[-1] == "run id: 261202010251-58e939"
    shown = excerpts.as_a_reader_has_it(block, {reports: "reports"})
    assert "(reports/run-summary.json)" in shown and str(tmp_path) not in shown
    with pytest.raises(SystemExit):
        excerpts.record_block("no record here")


# -- the generated reference pages --------------------------------------------------------


def test_the_reference_pages_are_what_refmap_writes() -> None:
    refmap = _docs_module("refmap")
    for path, render in refmap.PAGES.items():
        assert path.read_text(encoding="utf-8") == render(), (
            f"{path.relative_to(ROOT)} is stale: run docs/refmap.py --write"
        )


def test_the_cli_reference_names_every_option_the_code_has() -> None:
    import argparse

    from rlark_acceptance.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert f"### `rlark-acceptance {name}`" in page, name
        for a in command._actions:
            for flag in a.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in page, flag
    for flag in ("--profile", "--release", "--in-cluster", "--reports-dir", "--doc-url"):
        assert f"`{flag}`" in page, flag


# -- a how-to's code does what it says -----------------------------------------------------


def _python_block(page: Path) -> str:
    m = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert m, f"no python block in {page.name}"
    return m.group(1)


def test_the_normaliser_how_to_reads_a_site_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The how-to's normaliser, registered under ``rlark_acceptance.normalisers`` as its
    package would register it, runs the how-to's command on an export of the default Job
    (with one mistake in it): the same findings as the Job itself, each at its line of the
    export."""
    from rlark_acceptance import cli
    from rlark_acceptance.model import job as job_model

    page = DOCS / "how-to" / "normaliser.md"
    (tmp_path / "site_normaliser.py").write_text(_python_block(page), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("site-export", "site_normaliser:site_export", "rlark_acceptance.normalisers")

    def fake_entry_points(*, group: str) -> Any:
        return [ep] if group == ep.group else entry_points(group=group)

    monkeypatch.setattr(job_model, "entry_points", fake_entry_points)

    text = (ROOT / "profiles" / "local" / "job.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "image: rlark-acceptance/smoke:0.1.0", "image: rlark-acceptance/smoke:latest"
    )
    plain = tmp_path / "job.yaml"
    plain.write_text(text, encoding="utf-8")
    export = tmp_path / "export.yaml"
    export.write_text("exportVersion: 3\njob:\n" + textwrap.indent(text, "  "), encoding="utf-8")
    config = ROOT / "src" / "rlark_acceptance" / "smoke" / "config" / "smoke_ppo_mlp.yaml"

    def preflight(job: Path, *more: str) -> tuple[int, dict[str, Any]]:
        code = cli.main(["preflight", "--rlinf-config", str(config), "--job", str(job), *more])
        return code, json.loads(capsys.readouterr().out)

    # The page's command, as it shows it (with --json, to read it back).
    code, seen = preflight(export, "--job-normaliser", "site-export", "--json")
    want_code, want = preflight(plain, "--json")

    def findings(result: dict[str, Any], path: Path, shift: int) -> list[tuple[Any, ...]]:
        out = []
        for f in result["findings"]:
            file, _, line = (f.get("location") or "").rpartition(":")
            at = (file, int(line) - shift) if line.isdigit() else (f.get("location"),)
            out.append((f["check"], f["code"], f["severity"], at))
        return [(c, k, s, tuple(str(x).replace(str(path), "JOB") for x in a)) for c, k, s, a in out]

    assert code == want_code == 1, (code, want_code)
    assert any(f["check"] == "3.4" for f in seen["findings"]), seen["findings"]
    assert findings(seen, export, 2) == findings(want, plain, 0)
