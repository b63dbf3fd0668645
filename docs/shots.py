"""Writes the docs' pictures from real runs: docs/img/*.png, stage-trend.svg and shots.json.

    .venv/bin/python docs/shots.py --write   # three runs of the default profile, ~4 min

Two green runs of the default profile on the embedded target (the second compares with the
first: summary.md's trend chart) and one broken at 3.7 (its Job's checkpoint mount made
read-only), each as a user runs it (``pytest features/ -m <the profile as it is>``), each
report rendered by the documented command and opened in headless Chromium. What the
pictures show is what those runs wrote: the terminal's record, the Allure overview and the
failed check, summary.md and its chart.

``shots.json`` keeps the digest of the files that shape what the pictures show (the
record's writers and the report's configuration); ``tests/test_docs_images.py`` fails when
that digest is not the tree's (a picture is stale: run this again) or a picture the docs
show is missing. Needs what ``./run tests`` installs (chromium, the renderer).
"""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
MANIFEST = IMG / "shots.json"
# What the pictures show is made by these: a change to any of them may change a picture.
SOURCES = (
    "allurerc.mjs",
    "allure-render.mjs",
    "package.json",
    "src/rlark_acceptance/run/report.py",
    "src/rlark_acceptance/run/report_writers.py",
    "src/rlark_acceptance/run/allure_results.py",
    "src/rlark_acceptance/run/summary_md.py",
    "docs/shots.py",
)
IMAGES = (
    "terminal-red.png",
    "allure-overview-red.png",
    "allure-failed-check-red.png",
    "allure-overview-green.png",
    "summary-md-green.png",
    "stage-trend.svg",
)


def digest() -> str:
    """The digest of ``SOURCES`` (of the writer modules that exist: one may be added)."""
    h = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        h.update(name.encode() + b"\0")
        if path.is_file():
            h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _page(body: str, title: str, *, dark: bool = False) -> str:
    colours = "background:#1e1e1e;color:#d4d4d4" if dark else "background:#fff;color:#222"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>body{{margin:16px;{colours};font:14px/1.45 'DejaVu Sans Mono',monospace}}"
        "pre{white-space:pre-wrap;margin:0}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px}"
        "body.md{font-family:'DejaVu Sans','WenQuanYi Zen Hei',sans-serif}</style></head>"
        f"<body class='{'term' if dark else 'md'}'>{body}</body></html>"
    )


def _terminal(output: str) -> str:
    """The run's last lines as the terminal showed them: its record and closing line."""
    lines = output.rstrip().splitlines()
    start = next(
        (i for i, x in enumerate(lines) if "rlark-acceptance run record" in x), len(lines) - 30
    )
    return "\n".join(lines[max(0, start - 2) :])


def write() -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    import markdown

    from bench.report_screenshot import PROBE, browse, failed_profile_test, generate, serve
    from tests.run.suite_runs import AS_IT_IS, run_suite, site_copy

    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rlark-shots-") as tmp:
        work = Path(tmp)
        site = site_copy(work / "green")
        history = ["--history", str(work / "history")]
        run_suite(site, "-m", AS_IT_IS, *history)
        green = run_suite(site, "-m", AS_IT_IS, *history)
        assert green.summary["verdict"] == "passed", green.explain()
        red_site = site_copy(work / "red")
        mount = "containerPath: /mnt/ckpt}"
        red_site.edit(red_site.job, mount, "containerPath: /mnt/ckpt, readOnly: true}")
        red = run_suite(red_site, "-m", AS_IT_IS)
        assert red.summary["earliestFailure"]["check"] == "3.7", red.explain()

        pages = work / "pages"
        pages.mkdir()
        (pages / "terminal.html").write_text(
            _page(f"<pre>{html.escape(_terminal(red.output))}</pre>", "terminal", dark=True),
            encoding="utf-8",
        )
        browse(
            (pages / "terminal.html").as_uri(),
            screenshot=IMG / "terminal-red.png",
            size="1400,420",
        )
        chart = green.reports / "stage-trend.svg"
        shutil.copyfile(chart, IMG / "stage-trend.svg")
        shutil.copyfile(chart, pages / "stage-trend.svg")
        text = (green.reports / "summary.md").read_text(encoding="utf-8")
        body = markdown.markdown(text, extensions=["tables"])
        (pages / "summary.html").write_text(_page(body, "summary.md"), encoding="utf-8")
        browse(
            (pages / "summary.html").as_uri(),
            screenshot=IMG / "summary-md-green.png",
            size="1100,900",
        )

        report = generate(red.reports)
        test = failed_profile_test(report)
        with serve(report, str(test["id"])) as base:
            browse(f"{base}/index.html", screenshot=IMG / "allure-overview-red.png")
            browse(f"{base}/{PROBE}", screenshot=IMG / "allure-failed-check-red.png")
        report = generate(green.reports)
        with serve(report, "") as base:
            browse(f"{base}/index.html", screenshot=IMG / "allure-overview-green.png")
    MANIFEST.write_text(
        json.dumps({"sources": digest(), "images": list(IMAGES)}, indent=2) + "\n",
        encoding="utf-8",
    )
    for name in IMAGES:
        print(IMG / name)


def main() -> int:
    if "--write" not in sys.argv[1:]:
        print(__doc__)
        return 2
    write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
