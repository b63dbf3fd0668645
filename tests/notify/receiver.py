"""A real HTTP receiver on loopback, standing where a chat's incoming webhook would: it keeps
every POST it gets and answers with the statuses it is given, in turn (200 after them)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    content_type: str
    body: Any


@dataclass
class Receiver:
    port: int
    statuses: list[int] = field(default_factory=list)
    got: list[Received] = field(default_factory=list)

    def url(self, path: str = "/hook/T0KEN-of-the-channel") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def receiver(statuses: list[int] | None = None) -> Iterator[Receiver]:
    rec = Receiver(0, list(statuses or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rec.got.append(
                Received(self.path, self.headers.get("Content-Type", ""), json.loads(raw))
            )
            status = rec.statuses.pop(0) if rec.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads what was received, not the server's log

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    rec.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()
