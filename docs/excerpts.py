"""Writes the run excerpts the README and the tutorial quote: what a green and a red run of
the acceptance suite print at their end, the ``rlark-acceptance run record`` block.

    .venv/bin/python docs/excerpts.py            # run both, write docs/snippets/, update README
    .venv/bin/python docs/excerpts.py --readme   # only copy docs/snippets/ into the README

Never typed by hand: each excerpt is cut from the terminal output of a real run.

- **green**: ``pytest features/`` on the embedded default profile, what ``./run acceptance``
  runs after its set-up (a real Ray head, the smoke workload, every self-check);
- **red**: the same suite, the profile's own scenarios, on a copy of the default profile
  whose checkpoint mount is read-only (the tutorial's first red run, 3.7): the pre-flight
  fails, nothing is submitted. Its copy is the tutorial's ``my-site/``.

Each run writes its record into a directory of its own; the paths the record prints are
then written as a reader of the tutorial has them (``reports/…``, ``my-site/…``), so the
excerpt names no directory of the machine that made it. ``tests/test_site.py`` fails when
the README's quoted excerpts are not what ``docs/snippets/`` holds.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "docs" / "snippets"
README = ROOT / "README.md"
SECTION = "rlark-acceptance run record"

# The README quotes a snippet between these two lines, as a ```text block.
BLOCK = re.compile(
    r"(<!-- excerpt: (?P<path>docs/snippets/[\w.-]+\.txt) -->\n```text\n)(?P<body>.*?)(```)",
    re.S,
)


def record_block(output: str) -> str:
    """The run record block of pytest's terminal output: its header line and the lines up
    to the next section."""
    lines = output.splitlines()
    start = next(
        (i for i, x in enumerate(lines) if SECTION in x and x.startswith("=")),
        None,
    )
    if start is None:
        raise SystemExit(f"no {SECTION!r} section in the run's output:\n{output[-3000:]}")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("=")),
        len(lines),
    )
    return "\n".join(lines[start:end]) + "\n"


def as_a_reader_has_it(text: str, places: dict[Path, str]) -> str:
    """``text`` with each directory of ``places`` written as the reader's name for it."""
    for path, name in sorted(places.items(), key=lambda p: -len(str(p[0]))):
        text = text.replace(str(path), name)
    return text


def _pytest(profile: Path, reports: Path, *args: str) -> str:
    command = [sys.executable, "-m", "pytest", "features/", "-p", "no:cacheprovider"]
    command += ["--profile", str(profile), "--reports-dir", str(reports), *args]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False
    )
    return done.stdout + done.stderr


def green(tmp: Path) -> str:
    reports = tmp / "green"
    out = _pytest(ROOT / "profiles" / "local.yaml", reports)
    return as_a_reader_has_it(record_block(out), {reports: "reports", ROOT: "."})


def red(tmp: Path) -> str:
    sys.path.insert(0, str(ROOT))
    from tests.run.suite_runs import AS_IT_IS, site_copy

    site = site_copy(tmp / "red")
    site.edit(site.job, "containerPath: /mnt/ckpt}", "containerPath: /mnt/ckpt, readOnly: true}")
    reports = tmp / "red" / "reports"
    out = _pytest(site.profile, reports, "-m", AS_IT_IS)
    places = {reports: "reports", site.root: "my-site", ROOT: "."}
    return as_a_reader_has_it(record_block(out), places)


def update_readme() -> None:
    """Copy each snippet into the README's block that quotes it."""
    text = README.read_text(encoding="utf-8")

    def body(m: re.Match[str]) -> str:
        snippet = (ROOT / m["path"]).read_text(encoding="utf-8")
        return m.group(1) + snippet + m.group(4)

    README.write_text(BLOCK.sub(body, text), encoding="utf-8")


def main() -> int:
    if "--readme" not in sys.argv[1:]:
        SNIPPETS.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="rlark-excerpts-") as tmp:
            (SNIPPETS / "green.txt").write_text(green(Path(tmp)), encoding="utf-8")
            (SNIPPETS / "red.txt").write_text(red(Path(tmp)), encoding="utf-8")
    update_readme()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
