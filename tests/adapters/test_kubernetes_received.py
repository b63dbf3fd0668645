"""A streamed body read as it arrives (``stream.received``): every HTTP chunk's data once, in
order, joined per read; the body's end, a broken stream and a stand-in response.

The API server relays a followed log an HTTP chunk per line; these tests send such bodies from
a real HTTP server on loopback and read them through urllib3, as the observer does."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_acceptance.adapters.kubernetes.stream import (
    LineSplitter,
    _dechunked,
    batches,
    interrupt,
    received,
)


def chunked(pieces: list[bytes]) -> bytes:
    """``pieces`` as a chunked body, the last chunk and an empty trailer after them."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p)
    return body + b"0\r\n\r\n"


class Reads:
    """A buffered reader's ``read1`` over ``data``, each read ending at the next of ``cuts``."""

    def __init__(self, data: bytes, cuts: list[int]) -> None:
        self.data, self.at = data, 0
        self.cuts = sorted({c for c in cuts if 0 < c < len(data)} | {len(data)})

    def read1(self, n: int) -> bytes:
        end = next(c for c in self.cuts if c > self.at) if self.at < len(self.data) else self.at
        got = self.data[self.at : min(end, self.at + n)]
        self.at += len(got)
        return got


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.binary(min_size=0, max_size=300), max_size=30),
    st.lists(st.integers(1, 10_000), max_size=40),
)
def test_every_chunks_data_is_read_once_in_order_wherever_the_reads_end(
    pieces: list[bytes], cuts: list[int]
) -> None:
    body = chunked(pieces)
    got = list(_dechunked(Reads(body + b"not read", cuts), None))
    assert b"".join(got) == b"".join(pieces)
    assert all(got)  # nothing empty handed on


def test_a_body_broken_off_before_its_last_chunk_is_a_broken_connection() -> None:
    body = chunked([b"line 1\n", b"line 2\n"])[:-5]
    reads = _dechunked(Reads(body, [12]), None)
    assert next(reads) == b"line 1\n"
    assert next(reads) == b"line 2\n"
    with pytest.raises(urllib3.exceptions.ProtocolError, match="ended early"):
        list(reads)


def test_a_chunk_length_that_is_not_one_is_a_broken_connection() -> None:
    with pytest.raises(urllib3.exceptions.ProtocolError, match="invalid chunk length"):
        list(_dechunked(Reads(b"zz\r\nline\r\n", []), None))


class Streamed(http.server.BaseHTTPRequestHandler):
    """Sends ``server.pieces`` as a chunked body, each flushed as the kubelet's lines are;
    then holds the stream open until ``server.release`` is set, or ends it."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        server: Any = self.server
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in server.pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        server.sent.set()
        if server.hold:
            server.release.wait(10)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    srv: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Streamed)
    srv.pieces, srv.hold = [], False
    srv.sent, srv.release = threading.Event(), threading.Event()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()


def get(srv: Any) -> Any:
    pool = urllib3.PoolManager()
    return pool.request(
        "GET", f"http://127.0.0.1:{srv.server_address[1]}/log", preload_content=False
    )


def test_lines_sent_a_chunk_each_are_handed_on_together_once_they_have_arrived(
    server: Any,
) -> None:
    server.pieces = [b"line %d\n" % i for i in range(2000)]
    resp = get(server)
    assert server.sent.wait(10)
    got = list(batches(resp))
    assert [line for batch in got for line in batch] == [f"line {i}" for i in range(2000)]
    # 2,000 chunks, already on the connection when it was read: a few reads, not 2,000.
    assert len(got) < 20


class Pieces:
    """A stand-in response whose body arrives as ``pieces``, one a read."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def stream(self, amt: int | None = None, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.pieces


def test_a_read_that_ends_no_line_is_handed_on_as_an_empty_batch() -> None:
    """The head of a line stored in parts, its rest still to come: the log machine must hear
    of it, or it takes the reader, idle by whole lines, for one at its file's end and joins
    that head to the next file's first line. The caller that keeps the rest is told; one
    that lets ``batches`` end the body gets lines only."""
    pieces = [b"line 1\n", b"head of ", b"a line\n", b"tail"]
    split = LineSplitter()
    assert list(batches(Pieces(pieces), split)) == [["line 1"], [], ["head of a line"], []]
    assert split.rest == "tail"
    assert list(batches(Pieces(pieces))) == [["line 1"], ["head of a line"], ["tail"]]


def test_a_stream_shut_down_under_its_reader_ends_it_as_a_broken_connection(
    server: Any,
) -> None:
    server.pieces, server.hold = [b"line 1\n"], True
    resp = get(server)
    assert server.sent.wait(10)
    reads = received(resp)
    assert next(reads) == b"line 1\n"
    threading.Timer(0.2, interrupt, (resp,)).start()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(reads)


def test_a_response_that_is_not_plainly_chunked_is_read_through_urllib3() -> None:
    class StandIn:
        headers: ClassVar[dict[str, str]] = {}

        def stream(self, amt: Any = None, decode_content: Any = None) -> Iterator[bytes]:
            yield from (b"a\nb", b"\n")

    assert list(received(StandIn())) == [b"a\nb", b"\n"]


def test_a_sized_body_is_read_through_urllib3() -> None:
    srv = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\na\nb\n")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    resp = urllib3.PoolManager().request(
        "GET", f"http://127.0.0.1:{srv.getsockname()[1]}/", preload_content=False
    )
    assert b"".join(received(resp)) == b"a\nb\n"
    srv.close()
