"""Render a run's Allure report as a reader sees it, in headless Chromium, and screenshot it.

    python bench/report_screenshot.py [REPORTS_DIR] [--out DIR]

Renders the report with the documented command (``rlark-acceptance report``: Allure 3 with
``allurerc.mjs``, the previous report replaced whole), serves it on 127.0.0.1, and saves two
PNGs: the overview and the first failed check of the profile with its ``Job YAML``
attachment opened, and prints how long the rendering took. Needs ``npm install``
(package.json) and Debian's ``chromium`` (both installed by ``./run tests``). The test
``tests/run/test_report_in_browser.py`` uses the same functions.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = "__probe.html"

# A page of the same origin that opens one test of the report in a frame, presses the
# attachment's button the way a reader would, and copies the frame's visible text into
# itself (so that ``--dump-dom`` shows what the reader sees).
_PROBE_PAGE = """<!doctype html><html><body style="margin:0">
<iframe id="r" src="index.html#{test_id}"
  style="width:{width}px;height:{height}px;border:0"></iframe>
<pre id="seen"></pre>
<script>
const frame = document.getElementById("r");
function done() {{
  // The report shows a description in a frame of its own: its text is part of the page.
  const doc = frame.contentDocument;
  const inner = [...doc.querySelectorAll("iframe")].map(
    (f) => f.contentDocument?.body?.innerText || "");
  const all = [doc.body.innerText, ...inner];
  document.getElementById("seen").textContent = all.join(String.fromCharCode(10));
}}
function press(doc, text) {{
  const buttons = [...doc.querySelectorAll("button, [role=tab]")].filter(
    (b) => b.textContent.includes(text));
  buttons.sort((a, b) => a.textContent.length - b.textContent.length);
  if (buttons.length) {{ buttons[0].scrollIntoView(); buttons[0].click(); }}
  return buttons.length > 0;
}}
function open(tries) {{
  const doc = frame.contentDocument;
  if (doc && press(doc, {attachment})) {{ setTimeout(done, 1500); }}
  else if (doc && tries === 10) {{
    press(doc, "Attachments");
    setTimeout(() => open(tries - 1), 500);
  }}
  else if (tries > 0) {{ setTimeout(() => open(tries - 1), 200); }}
  else {{ done(); }}
}}
frame.addEventListener("load", () => setTimeout(() => open(40), 500));
</script></body></html>
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("Debian's chromium is not installed (.ci/run installs it)")


def generate(reports: Path) -> Path:
    """The documented command (``rlark-acceptance report``) on ``reports``; the report."""
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("rlark-acceptance")),
            "report",
            "--reports-dir",
            str(reports),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), f"report failed: {done.stdout}{done.stderr}"
    out = reports / "allure-report"
    assert (out / "index.html").is_file(), f"no report in {out}"
    return out


def failed_profile_test(report: Path) -> dict[str, object]:
    """The report's first failed test of the profile as it is (not a self-check)."""
    for path in sorted((report / "data" / "test-results").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        labels = {(x["name"], x["value"]) for x in data.get("labels", [])}
        if data.get("status") == "failed" and ("acceptance", "profile") in labels:
            return dict(data)
    raise AssertionError(f"no failed test of the profile in {report}")


@contextlib.contextmanager
def serve(report: Path, test_id: str, *, width: int = 1400, height: int = 1800) -> Iterator[str]:
    """Serve the report (and the probe page for ``test_id``) on 127.0.0.1; yields the base URL."""
    probe = _PROBE_PAGE.format(
        test_id=test_id, width=width, height=height, attachment=json.dumps("Job YAML")
    ).encode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] == f"/{PROBE}":
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(probe)))
                self.end_headers()
                self.wfile.write(probe)
                return
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Handler, directory=str(report))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def browse(url: str, *, screenshot: Path | None = None, size: str = "1400,1800") -> str:
    """Load ``url`` in headless Chromium; the DOM after its scripts ran (and a PNG)."""
    args = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--window-size={size}",
        "--virtual-time-budget=15000",
    ]
    if screenshot is not None:
        subprocess.run(
            [*args, f"--screenshot={screenshot}", url], check=True, capture_output=True, timeout=120
        )
    done = subprocess.run(
        [*args, "--dump-dom", url], check=True, capture_output=True, text=True, timeout=120
    )
    return done.stdout


def seen_text(dom: str) -> str:
    """The text the probe page copied from the report's frame."""
    import html

    start = dom.find('<pre id="seen">')
    end = dom.find("</pre>", start)
    return html.unescape(dom[start + len('<pre id="seen">') : end]) if start >= 0 else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="?", default=str(ROOT / "reports"))
    ap.add_argument("--out", default=None, help="where the PNGs go (default: REPORTS_DIR)")
    args = ap.parse_args()
    reports = Path(args.reports).resolve()
    out = Path(args.out).resolve() if args.out else reports
    t0 = time.monotonic()
    report = generate(reports)
    print(f"rlark-acceptance report: {time.monotonic() - t0:.1f} s (whole process)")
    test = failed_profile_test(report)
    with serve(report, str(test["id"])) as base:
        browse(f"{base}/index.html", screenshot=out / "report-overview.png", size="1400,2000")
        text = seen_text(browse(f"{base}/{PROBE}", screenshot=out / "report-failed-check.png"))
    print(f"{out / 'report-overview.png'}\n{out / 'report-failed-check.png'}")
    print(text[:2000])


if __name__ == "__main__":
    main()
