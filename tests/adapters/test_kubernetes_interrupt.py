"""A stream over TLS (as every API server serves a log) interrupted from another thread, as
the observer cuts a reader and the stopper ends them all (``stream.interrupt``): the reader
gets what was queued, then the end; never the TLS records' bytes as if they were the log.

A real TLS server on loopback (Python's ``ssl``, a certificate made by ``openssl``) streams
numbered lines in HTTP chunks faster than the reader takes them.
"""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import urllib3

from rlark_acceptance.adapters.kubernetes.stream import LineSplitter, batches, interrupt

LINE = re.compile(r"line \d{7}")
LINES_PER_CHUNK = 20_000  # 260 KB chunks
PIECE = 16 * 1024


def certificate(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@contextmanager
def streaming(tmp: Path) -> Iterator[tuple[str, Path, threading.Event]]:
    """A TLS server on loopback answering one request with numbered lines in large HTTP
    chunks, each written a piece at a time (so the reader is mostly inside one when it is
    cut, as a reader of a fast log is), and keeping the connection open until ``done``."""
    cert, key = certificate(tmp)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        raw, _ = listener.accept()
        with ctx.wrap_socket(raw, server_side=True) as conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            n = 0
            try:
                while not done.is_set():
                    body = "".join(f"line {n + i:07d}\n" for i in range(LINES_PER_CHUNK))
                    n += LINES_PER_CHUNK
                    data = body.encode()
                    conn.sendall(b"%x\r\n" % len(data))
                    for at in range(0, len(data), PIECE):
                        conn.sendall(data[at : at + PIECE])
                        done.wait(0.005)
                    conn.sendall(b"\r\n")
            except OSError:
                pass  # the reader went away
            done.wait(10)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}/log", cert, done
    finally:
        done.set()
        listener.close()
        server.join(15)


def read_interrupted(tmp: Path, cut: Callable[[Any], None]) -> tuple[list[str], BaseException]:
    """Read the stream in a thread of its own, ``cut`` it from this one while the reader is
    inside a chunk, and let the reader go on to the end: every line it got, and how its
    stream ended."""
    with streaming(tmp) as (url, cert, done):
        pool = urllib3.PoolManager(ca_certs=str(cert), cert_reqs="CERT_REQUIRED")
        resp = pool.request("GET", url, preload_content=False, timeout=urllib3.Timeout(5, 10))
        got: list[str] = []
        ended: list[BaseException] = []

        def reader() -> None:
            try:
                for batch in batches(resp, LineSplitter()):
                    got.extend(batch)
                raise EOFError("the stream ended whole, as if it had not been cut")
            except Exception as e:  # the stream's end, however urllib3 says it
                ended.append(e)

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        done.wait(0.5)
        assert got, "nothing read before the cut"
        cut(resp)
        thread.join(10)
        assert not thread.is_alive(), "the reader did not end after the cut"
        done.set()
        resp.release_conn()
        return got, ended[0]


def test_an_interrupted_tls_stream_gives_what_was_queued_then_ends(tmp_path: Path) -> None:
    got, ended = read_interrupted(tmp_path, interrupt)
    bad = [line for line in got if not LINE.fullmatch(line)]
    assert not bad, f"{len(bad)} lines that are not the log's, first {bad[0][:80]!r}"
    assert got == [f"line {i:07d}" for i in range(len(got))], "a line lost or out of order"
    assert not isinstance(ended, EOFError), ended
    assert b"\x17\x03\x03" not in str(ended).encode("latin-1", "replace"), ended


@pytest.mark.parametrize("cut", ["interrupt", "HTTPResponse.shutdown"])
def test_after_the_cut_the_socket_still_gives_the_log_not_its_tls_records(
    tmp_path: Path, cut: str
) -> None:
    """The reader held off the CPU while the server's records queue up, then cut: what the
    socket gives next is what the reader's next read gets. Through ``interrupt``, the log as
    it was sent; through urllib3's own ``shutdown`` (``ssl.SSLSocket.shutdown`` drops the
    TLS state), the records' bytes, which a reader inside a chunk takes for the log."""
    with streaming(tmp_path) as (url, cert, done):
        pool = urllib3.PoolManager(ca_certs=str(cert), cert_reqs="CERT_REQUIRED")
        resp = pool.request("GET", url, preload_content=False, timeout=urllib3.Timeout(5, 10))
        sock = getattr(resp, "_sock_shutdown").__self__  # noqa: B009 - urllib3 keeps it private
        assert isinstance(sock, ssl.SSLSocket)
        done.wait(0.5)  # not read meanwhile: the server's records queue up in the kernel
        if cut == "interrupt":
            interrupt(resp)
        else:
            resp.shutdown()
        data = sock.recv(4096)
        done.set()
        resp.release_conn()
    records = data.startswith(b"\x17\x03\x03")  # TLS 1.2+ application data
    if cut == "interrupt":
        assert data and not records, data[:40]
        assert re.match(rb"[0-9a-f]+\r\n|line \d", data), data[:40]  # a chunk's size or lines
    else:
        assert records, f"urllib3's shutdown kept the TLS state: {data[:40]!r}"
