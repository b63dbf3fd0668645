"""The trace collector: the OpenTelemetry Collector of testenv/otelcol on a loopback port.

Each test that reads a trace back starts its own (``collector``): it starts in a fraction of
a second, keeps nothing between tests, and what it wrote is that test's spans alone. It
takes OTLP over HTTP on a free loopback port and writes each batch it receives as one line
of OTLP JSON to a file of the test's folder, which ``Collector.spans`` reads back.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testenv import build

STARTUP_S = 30.0  # on a machine whose cores are busy; alone it is ready in under a second
CONFIG = """\
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
exporters:
  file:
    path: {spans}
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
"""


@dataclass(frozen=True)
class Collector:
    endpoint: str  # what OTEL_EXPORTER_OTLP_ENDPOINT names: http://127.0.0.1:PORT
    file: Path  # the spans it received, a batch a line (OTLP JSON)
    log: Path

    def spans(self, trace_id: str | None = None, *, within: float = 10.0) -> list[dict[str, Any]]:
        """Every span received (of ``trace_id``), each with ``resource`` and ``scope``; waits up
        to ``within`` for the file exporter's flush when none is there yet."""
        deadline = time.monotonic() + within
        while True:
            found = [s for s in _read(self.file) if trace_id is None or s["traceId"] == trace_id]
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.2)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            resource = {
                a["key"]: _value(a["value"]) for a in rs.get("resource", {}).get("attributes", [])
            }
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    span = dict(span)
                    span["attributes"] = {
                        a["key"]: _value(a["value"]) for a in span.get("attributes", [])
                    }
                    span["resource"] = resource
                    out.append(span)
    return out


def _value(v: dict[str, Any]) -> Any:
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in v:
            return v[kind]
    if "intValue" in v:
        return int(v["intValue"])  # OTLP JSON carries 64-bit integers as strings
    return v


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(endpoint: str) -> bool:
    try:
        urllib.request.urlopen(endpoint + "/v1/traces", timeout=1).close()
        return True
    except urllib.error.HTTPError:
        return True  # 405 to a GET: the receiver is up
    except OSError:
        return False


@contextlib.contextmanager
def collector(folder: Path) -> Iterator[Collector]:
    """A collector writing into ``folder``, stopped (SIGTERM, then SIGKILL) on the way out."""
    build.ensure(build.NEEDS["otelcol"])
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    found = Collector(f"http://127.0.0.1:{port}", folder / "spans.jsonl", folder / "otelcol.log")
    config = folder / "otelcol.yaml"
    config.write_text(CONFIG.format(port=port, spans=found.file), encoding="utf-8")
    exe = build.RECIPES["otelcol"].bin("otelcol")
    with found.log.open("wb") as log:
        proc = subprocess.Popen(
            [str(exe), "--config", f"file:{config}"], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _answers(found.endpoint):
            if proc.poll() is not None or time.monotonic() >= deadline:
                tail = found.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the trace collector did not start; {found.log}:\n{tail}")
            time.sleep(0.1)
        yield found
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


__all__ = ["Collector", "collector"]
