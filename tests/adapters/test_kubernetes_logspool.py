"""A later spoolment's spool (``logspool.py``): its lines kept in memory, then on disk, put
once and in order; the spools of one log bounded together, their readers waiting past the
bound and returning once stopped."""

from __future__ import annotations

import threading
import time

import pytest

from rlark_acceptance.adapters.kubernetes import logspool
from rlark_acceptance.adapters.kubernetes.logspool import Spool, Spools


def test_the_spool_puts_every_line_once_in_order_from_memory_and_file() -> None:
    spool = Spool()
    written = [f"line {i} " + "x" * 90 for i in range(30_000)]  # ~3 MB: the file and memory
    stop = threading.Event()

    def write() -> None:
        for i in range(0, len(written), 700):
            # 1000.0 + i: when its last line was written
            assert spool.keep(written[i : i + 700], 1000.0 + i)
        spool.end()

    writer = threading.Thread(target=write)
    writer.start()
    batches = list(spool.drain(stop))
    writer.join()
    assert [line for batch, _ in batches for line in batch] == written
    # Each batch is no later than its lines were written, and the last one is the last write.
    stamps = [w for _, w in batches if w is not None]
    assert len(stamps) == len(batches) and stamps == sorted(stamps)
    assert stamps[-1] == 1000.0 + (len(written) - 1) // 700 * 700
    # Read and removed: a line spooled now is too late, the caller puts it at once.
    assert spool.drained and not spool.keep(["late"])
    assert spool._file is None


def test_the_spools_wait_past_their_bound_and_put_every_line_once_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two later files' spools, their readers far ahead of the consumer: past the bound the
    readers wait (their streams unread), the one being put empties its file as it is read, and
    every line still comes out once, in order, with the disk held never over twice the
    bound and a megabyte a reader."""
    bound = 3 << 20
    monkeypatch.setattr(logspool, "SPOOL_AHEAD_BYTES", bound)
    spools = Spools()
    pair = [Spool(spools), Spool(spools)]
    texts = {
        id(s): [f"{i} line {n} " + "x" * 90 for n in range(100_000)] for i, s in enumerate(pair)
    }

    def write(spool: Spool) -> None:
        mine = texts[id(spool)]
        for n in range(0, len(mine), 700):
            assert spool.keep(mine[n : n + 700], 1000.0 + n)
        spool.end()

    writers = [threading.Thread(target=write, args=(spool,)) for spool in pair]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 30
    while spools.held < bound and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    # Each wrote ~10 MB: both wait, the spools full but not past the bound.
    assert all(w.is_alive() for w in writers)
    assert bound <= spools.held <= bound + 2 * (1 << 20) + 100_000
    stop = threading.Event()
    for spool in pair:
        got = [line for batch, _ in spool.drain(stop) for line in batch]
        assert got == texts[id(spool)]
        assert spool._file is None
    for w in writers:
        w.join(10)
        assert not w.is_alive()
    assert bound <= spools.peak <= 2 * bound + 2 * (1 << 20) + 200_000
    assert spools.held == 0


def test_a_reader_waiting_for_room_in_the_spools_returns_once_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logspool, "SPOOL_AHEAD_BYTES", 1 << 20)
    spool = Spool()
    stop = threading.Event()
    batch = ["y" * 100] * 20_000  # 2 MB a batch
    done: list[bool] = []
    waiting = threading.Thread(
        target=lambda: done.extend(spool.keep(batch, None, stop) for _ in range(3))
    )
    waiting.start()
    waiting.join(1.0)
    assert waiting.is_alive() and spool.waiting, "past the bound, the reader waits"
    stop.set()
    waiting.join(5)
    assert not waiting.is_alive() and done == [True, True, True]
