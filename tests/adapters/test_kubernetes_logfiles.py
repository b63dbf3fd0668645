"""The files of a Worker's log, each read by its own reader while the follow is behind
(``logfiles.py``): where one file's lines end and the next one's begin, what a segment
takes, its spool, and when a jump of the stamps can no longer be a skipped file.

Pure parts, driven directly; the same on the real node's kubelet, a Worker printing 3 M
numbered lines through several rotations, is in ``test_kubernetes_faults.py``.
"""

from __future__ import annotations

import threading
import time

from rlark_acceptance.adapters.kubernetes import logfiles
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, stamp_key
from rlark_acceptance.adapters.kubernetes.logfiles import (
    Chain,
    Segment,
    first_stamp,
    keys_before,
)


def at(s: str) -> str:
    return f"2026-12-01T09:40:{s}Z"


def lines(*pairs: tuple[str, str]) -> list[str]:
    return [f"{at(s)} {text}" for s, text in pairs]


def test_a_probe_answer_gives_the_current_files_first_stamp() -> None:
    # limitBytes may cut the first line anywhere after its stamp.
    assert first_stamp(f"{at('04.5')} L000123 xxx") == at("04.5")
    assert first_stamp("") is None and first_stamp("no stamp here") is None


def test_a_batch_is_cut_where_the_next_files_lines_begin() -> None:
    batch = lines(("01", "a"), ("02", "b"), ("02.5", "c"), ("03", "d"))
    assert keys_before(batch, stamp_key(at("02.5"))) == 2
    assert keys_before(batch, stamp_key(at("09"))) == 4
    assert keys_before(batch, stamp_key(at("00"))) == 0
    # A line the runtime did not stamp stays with the lines before it.
    assert keys_before([*batch[:2], "unstamped", *batch[2:]], stamp_key(at("02.5"))) == 3


def test_a_new_file_cuts_off_the_segment_reading_the_one_before() -> None:
    chain = Chain()
    follow = chain.head
    assert chain.take(follow, lines(("01", "a"), ("02", "b"))) == (2, None)
    # The current file starts at a line the follow has taken already: no new file.
    assert chain.add(at("01")) is None
    second = chain.add(at("05"))
    assert second is not None and chain.head is second
    assert follow.end == stamp_key(at("05"))
    assert chain.add(at("05")) is None  # asked again, the same file
    # The follow reads on (its file to the end, then the kubelet opens the file now at the
    # log's path): it takes up to the second file's first line, no further.
    assert chain.take(follow, lines(("03", "c"), ("05", "e"), ("06", "f"))) == (1, None)
    assert chain.after(follow) is second and chain.after(second) is None


def test_a_segment_whose_file_was_rotated_before_it_was_read_says_so() -> None:
    chain = Chain()
    chain.take(chain.head, lines(("01", "a")))
    seg = chain.add(at("05"))
    assert seg is not None
    # Its reader opened the file after the next rotation: it starts later than its file.
    n, gap = chain.take(seg, lines(("15", "x"), ("16", "y")))
    assert n == 2 and gap == Gap(at("05"), at("15"))
    assert chain.take(seg, lines(("17", "z"))) == (1, None)  # said once, at its start


def test_a_done_segment_gets_no_successor() -> None:
    chain = Chain()
    chain.take(chain.head, lines(("01", "a")))
    chain.head.finish()
    assert chain.add(at("05")) is None


def test_the_spool_puts_every_line_once_in_order_from_memory_and_file() -> None:
    seg = Segment(at("05"), stamp_key(at("05")))
    written = [f"line {i} " + "x" * 90 for i in range(30_000)]  # ~3 MB: the file and memory
    stop = threading.Event()

    def write() -> None:
        for i in range(0, len(written), 700):
            assert seg.spool(written[i : i + 700], 1000.0 + i)  # when its last line was written
        seg.finish()

    writer = threading.Thread(target=write)
    writer.start()
    batches = list(seg.spooled(stop))
    writer.join()
    assert [line for batch, _ in batches for line in batch] == written
    # Each batch is no later than its lines were written, and the last one is the last write.
    stamps = [w for _, w in batches if w is not None]
    assert len(stamps) == len(batches) and stamps == sorted(stamps)
    assert stamps[-1] == 1000.0 + (len(written) - 1) // 700 * 700
    # Read and removed: a line spooled now is too late, the caller puts it at once.
    assert seg.drained and not seg.spool(["late"])
    assert seg._spool is None


def test_a_segment_idle_at_its_rotated_files_end_is_complete() -> None:
    chain = Chain()
    follow = chain.head
    chain.take(follow, lines(("01", "a")))
    seg = chain.add(at("05"))
    assert seg is not None
    assert chain.stalled() == []  # the next file's reader has nothing yet
    chain.take(seg, lines(("05", "e")))
    follow.arrived = time.monotonic() - logfiles.FILE_IDLE_SECONDS - 0.1
    assert chain.stalled() == [follow] and follow.complete
    assert chain.stalled() == []  # once


def test_a_jump_of_the_stamps_is_a_skipped_file_unless_probes_saw_every_file() -> None:
    chain = Chain()
    now = time.time()
    gap = Gap(
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 8)),
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 4)),
        jump=True,
    )
    assert not chain.watched(gap)  # no probe at all
    chain.probed.extend(now - 10 + i for i in range(9))  # one a second, around the gap
    assert chain.watched(gap)
    holed = Chain()
    holed.probed.extend([now - 10, now - 9, now - 3, now - 2])  # none for 6 s within it
    assert not holed.watched(gap)


def test_a_segment_handing_lines_to_a_busy_consumer_is_never_idle() -> None:
    """The rotated file's reader waits on Step 6 (busy reading a checkpoint) longer than the
    idle bound while the next file has lines: it is not at its file's end, and cutting it
    then would lose the rest of its file without a word. Idle counts from the handing."""
    chain = Chain()
    follow = chain.head
    chain.take(follow, lines(("01", "a")))
    seg = chain.add(at("05"))
    assert seg is not None
    chain.take(seg, lines(("05", "e")))
    with chain.handing(follow):
        follow.arrived = time.monotonic() - logfiles.FILE_IDLE_SECONDS - 0.1
        assert chain.stalled() == [] and not follow.complete
    assert chain.stalled() == [], "idle from the handing's end, not from the lines' arrival"
    follow.arrived = time.monotonic() - logfiles.FILE_IDLE_SECONDS - 0.1
    assert chain.stalled() == [follow]
