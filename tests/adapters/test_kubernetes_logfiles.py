"""The files of a Worker's log, each read by its own reader while the follow is behind
(``logfiles.py``): where one file's lines end and the next one's begin, what a segment
takes, and when a jump of the stamps can no longer be a skipped file.

Pure parts, driven directly; the same on the real node's kubelet, a Worker printing 3 M
numbered lines through several rotations, is in ``test_kubernetes_loud_worker.py``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_acceptance.adapters.clock import Clock
from rlark_acceptance.adapters.kubernetes import logfiles
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, stamp_key
from rlark_acceptance.adapters.kubernetes.logfiles import (
    Chain,
    Segment,
    continued,
    first_stamp,
    keys_before,
)
from rlark_acceptance.adapters.kubernetes.stream import LineSplitter


def at(s: str) -> str:
    return f"2026-12-01T09:40:{s}Z"


def lines(*pairs: tuple[str, str]) -> list[str]:
    return [f"{at(s)} {text}" for s, text in pairs]


@dataclass
class Ticks:
    """The run's clock, moved only by the test: every timing of the chain is driven, none
    waited for. Its wall clock starts at ``at(wall)``, the node's stamps being on it."""

    wall: str = "00"
    now: float = 1000.0

    def __post_init__(self) -> None:
        self.epoch = stamp_key(at(self.wall))[0] - self.now
        self.clock = Clock(monotonic=lambda: self.now, wall=lambda: self.epoch + self.now)

    def chain(self) -> Chain:
        return Chain(self.clock)

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
    chain.head.done = True
    assert chain.add(at("05")) is None


def test_a_segment_idle_at_its_rotated_files_end_is_complete() -> None:
    t = Ticks()
    chain = t.chain()
    follow = chain.head
    follow.reading = True
    chain.take(follow, lines(("01", "a")))
    seg = chain.add(at("05"))
    assert seg is not None
    t.advance(logfiles.FILE_IDLE_SECONDS + 0.1)
    assert chain.stalled() == []  # the next file's reader has nothing yet
    chain.take(seg, lines(("05", "e")))
    # Lines its file got just before the rotation may still be on their way for a second.
    assert chain.stalled() == []
    t.advance(logfiles.SERVED_SECONDS + 0.1)
    assert chain.stalled() == [follow] and follow.complete
    assert chain.stalled() == []  # once


def test_a_segment_between_two_requests_is_never_at_its_files_end() -> None:
    """A reader whose stream broke (an outage) and is not open again has shown nothing of
    where it is: taking it for being at its file's end, while the next file's reader reads
    on, would lose the rest of its file without a word (it is read again, and what it can no
    longer read is said)."""
    t, chain, follow, seg = rotated_once()
    follow.reading = False
    t.advance(logfiles.FILE_SILENT_SECONDS + 1)
    chain.take(seg, lines(("15", "f")))
    assert chain.stalled() == [] and not follow.complete


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e9):09d}Z"


def test_a_jump_of_the_stamps_is_a_skipped_file_unless_probes_saw_every_file() -> None:
    now = time.time()
    gap = Gap(stamp(now - 30), stamp(now - 2), jump=True)

    def watched(probes: Sequence[tuple[float, float]]) -> bool:
        chain = Chain()
        chain.probed.extend((now + sent, now + answered) for sent, answered in probes)
        return chain.watched(gap)

    assert not watched([])  # 28 s without a probe: a file may have been current unseen
    assert watched([(-31 + i, -31 + i + 0.2) for i in range(31)])  # one a second throughout
    # Answers 6.5 s apart on a loaded machine: no file is current for less than 10 s.
    assert watched([(-31 + 6.5 * i, -31 + 6.5 * i + 0.1) for i in range(6)])
    # A hole of 11 s between two probes: a whole file may have come and gone in it.
    assert not watched([(-31 + i, -31 + i + 0.1) for i in range(8)] + [(-13, -13), (-5, -5)])
    # A probe is taken at its request against a later moment, at its answer against an
    # earlier one: answers 5 s apart, but the second's request was sent 10 s before its
    # answer, so it may have seen its file before the first did, 10 s before the third.
    every_5 = [(-31, -30), (-26, -25), (-21, -20), (-16, -15), (-11, -10), (-6, -5), (-3, -2)]
    assert watched(every_5)
    assert not watched([every_5[0], (-35, -25), *every_5[2:]])
    # Probes that stopped 10 s into the jump, once later files had readers of their own:
    # those readers stop at their files' ends, so a file after them that no probe saw is
    # lost unless this jump says so.
    assert not watched([(-31 + i, -31 + i + 0.2) for i in range(12)])
    assert not watched([(-40 + i, -40 + i) for i in range(9)])  # every probe before the jump
    # One a second, but one left unanswered (the API server down): a file seen empty before
    # it may have got its lines and been rotated meanwhile.
    chain = Chain()
    chain.probed.extend((now - 31 + i, now - 31 + i + 0.2) for i in range(31) if i != 15)
    assert chain.watched(gap)
    chain.unanswered.append(now - 16)
    assert not chain.watched(gap)


def test_a_file_seen_empty_is_seen_unless_answers_came_too_far_apart_after_it() -> None:
    """A file a probe sees empty has no reader: if it gets its lines and is rotated before
    the next answer, no one reads them. Answers more than ``EMPTY_SEEN_SECONDS`` apart after
    it leave room for that, unless the kubelet cannot have rotated meanwhile (its rotations
    are ``ROTATED_APART_SECONDS`` apart, and one came after the last file seen with lines)."""
    now = time.time()
    gap = Gap(stamp(now - 30), stamp(now - 2), jump=True)

    def watched(lined: list[float], empty: list[tuple[float, float]]) -> bool:
        chain = Chain()
        probes = [(now + t, now + t + 0.1) for t in lined]
        empties = [(now + sent, now + answered) for sent, answered in empty]
        chain.probed.extend(sorted(probes + empties, key=lambda p: p[1]))
        chain.empty.extend(empties)
        return chain.watched(gap)

    # The file with lines seen up to 18 s before the end, then seen empty every second: the
    # empty one was seen throughout.
    every = [(-17 + i + 0.0, -17 + i + 0.5) for i in range(15)]
    assert watched([-31 + i for i in range(14)], every)
    # One answer 3.5 s after the one that saw the file empty, 12 s after the rotation was
    # known to be possible: the empty file may have been filled and rotated in between.
    holed = [p for p in every if not -9 <= p[0] <= -7]
    assert not watched([-31 + i for i in range(14)], holed)
    # A hole as long, 4 s after the one that saw the file empty, but within 10 s of the last
    # file seen with lines: the kubelet cannot have rotated the empty file in it.
    early = [(-13.0, -12.5)] + [(-9 + i + 0.0, -8.5 + i) for i in range(7)]
    assert watched([-31 + i for i in range(18)], early)


def rotated_once() -> tuple[Ticks, Chain, Segment, Segment]:
    """The follow has a line of the first file, the second file's reader one of its own,
    both taken now."""
    t = Ticks()
    chain = t.chain()
    follow = chain.head
    follow.reading = True  # (its stream open)
    chain.take(follow, lines(("01", "a")))
    seg = chain.add(at("05"))
    assert seg is not None
    seg.reading = True
    chain.take(seg, lines(("05", "e")))
    return t, chain, follow, seg


def test_a_segment_handing_lines_to_a_busy_consumer_is_never_idle() -> None:
    """The rotated file's reader waits on Step 6 (busy reading a checkpoint) longer than the
    idle bound while the next file has lines: it is not at its file's end, and cutting it
    then would lose the rest of its file without a word. Idle counts from the handing."""
    t, chain, follow, seg = rotated_once()
    chain.held(follow, True)
    t.advance(logfiles.FILE_IDLE_SECONDS + 0.1)
    chain.take(seg, lines(("06", "f")))
    assert chain.stalled() == [] and not follow.complete
    chain.held(follow, False)
    assert chain.stalled() == [], "idle from the handing's end, not from the lines' arrival"
    t.advance(logfiles.FILE_IDLE_SECONDS + 0.1)
    chain.take(seg, lines(("07", "g")))
    assert chain.stalled() == [follow]


def test_a_segment_is_not_cut_while_the_next_one_got_nothing_either() -> None:
    """This process (or the kubelet, or the API server) held off the CPU for longer than
    the idle bound: every reader is idle alike, and the older file's may still have lines
    on their way. It is at its file's end only once the next file's reader got lines after
    its own last ones, or after the longer bound of a Worker silent since the rotation."""
    t, chain, follow, _ = rotated_once()
    t.advance(logfiles.FILE_IDLE_SECONDS + 0.5)  # both held off together
    assert chain.stalled() == []
    t.advance(logfiles.FILE_SILENT_SECONDS - logfiles.FILE_IDLE_SECONDS)  # the Worker silent
    assert chain.stalled() == [follow]


def test_a_segment_is_at_its_files_end_while_the_next_waits_for_room_and_another_reads() -> None:
    """The next file's reader waits for room in the spools since before this one's last
    lines (it got none since): another reader's lines, 2 s after this one's last, show the
    kubelet and the API server serving. Waiting the longer bound instead, the kubelet would
    move this reader at the log's next rotation to the file current then, joining a line its
    file ended inside to another's end."""
    t, chain, follow, seg = rotated_once()
    later = chain.add(at("09"))
    assert later is not None
    # waiting for room since its lines came, with the follow's
    seg.handing = seg.spool.waiting = True
    t.advance(logfiles.FILE_IDLE_SECONDS + 0.1)
    assert chain.stalled() == [], "no reader got lines since"
    chain.take(later, lines(("09", "i")))
    assert chain.stalled() == [follow]


def test_only_the_newest_reader_on_the_current_file_is_closed_for_its_last_read() -> None:
    """The Worker is over and its newest reader idle: it reads the rest in one request only
    if its file is the current one; a reader of a rotated file never is (that request reads
    the current file: the rest of its own would be lost)."""
    _, chain, follow, seg = rotated_once()
    assert not chain.close_head(follow, at("05"))  # a rotated file's reader
    assert not chain.close_head(follow, None, anyway=True)
    assert chain.close_head(seg, at("05")) and seg.final and not follow.final
    assert chain.add(at("09")) is None, "no segment after a final one"


def test_a_newest_reader_behind_the_current_file_is_not_closed() -> None:
    """Held off the CPU while the kubelet rotated: the current file is a later one than the
    newest reader's. That file gets a reader of its own, and the newest reader goes on to
    its own file's end."""
    chain = Chain()
    follow = chain.head
    chain.take(follow, lines(("01", "a")))
    assert not chain.close_head(follow, at("05")) and not follow.final
    seg = chain.add(at("05"))
    assert seg is not None and follow.end == stamp_key(at("05"))
    assert chain.close_head(seg, at("05"))  # its own file starts there: the current one


def test_a_newest_reader_is_closed_where_the_current_file_has_no_stamped_line() -> None:
    chain = Chain()
    assert chain.close_head(chain.head, None) and chain.head.final


def test_the_newest_readers_idle_time_is_its_own_and_nil_while_it_hands_lines_on() -> None:
    t, chain, follow, seg = rotated_once()
    t.advance(5)
    chain.take(follow, lines(("02", "b")))  # another reader's lines are not this one's
    head, idle = chain.idle()
    assert head is seg and idle == 5
    chain.held(seg, True)
    assert chain.idle()[1] == 0.0
    chain.held(seg, False)
    assert chain.idle()[1] == 0.0  # counted from the handing's end


def test_a_reader_held_off_the_cpu_for_seconds_is_still_chased() -> None:
    """Its lines are old and it delivered none for 5 s (a loaded machine): the current file
    is still asked for, or a file could be rotated past with no reader."""
    t = Ticks(wall="30")
    chain = t.chain()
    follow = chain.head
    chain.take(follow, lines(("01", "a")))  # stamped 29 s before now
    assert chain.behind()
    t.advance(5)
    assert chain.behind()
    t.advance(logfiles.ARRIVING_SECONDS - 5 + 1)  # the Worker silent
    assert not chain.behind()
    follow.spool.waiting = True  # waiting for room in the spools, not silent
    assert chain.behind()


def test_a_follow_that_keeps_up_is_not_chased_and_one_that_falls_behind_is() -> None:
    t = Ticks(wall="01")
    chain = t.chain()
    chain.take(chain.head, lines(("01", "a")))  # read as it is stamped
    assert not chain.behind()
    t.advance(5)
    chain.take(chain.head, lines(("02", "b")))  # read 4 s after it was written
    assert chain.behind()


def test_a_reader_waiting_on_a_busy_consumer_for_long_is_still_chased() -> None:
    """Step 6 reads a checkpoint for longer than the chase's bound while the follow, behind
    the Worker, waits to hand it lines: the Worker is not silent, and the kubelet rotates on.
    The current file is still asked for, or the files rotated meanwhile would have no reader
    and be skipped by the follow when it reads on."""
    t = Ticks(wall="30")
    chain = t.chain()
    follow = chain.head
    chain.take(follow, lines(("01", "a")))
    chain.held(follow, True)
    t.advance(logfiles.ARRIVING_SECONDS + 1)
    assert chain.behind()
    chain.held(follow, False)
    t.advance(logfiles.ARRIVING_SECONDS + 1)
    assert not chain.behind()  # handed on, then nothing for as long: a silent Worker


# --- lines cut by a rotation into partial entries ---------------------------------------------
# containerd replaces a container's logger when the kubelet rotates its log: the old one ends
# its file with the part of the line in flight as a partial entry, the new one starts the next
# file with the rest (and any line over 16 KiB is stored in partial entries anyway).
@dataclass(frozen=True)
class Entry:
    """One entry of a CRI log file: a line's part (``partial``: no newline after it)."""

    stamp: str
    text: str
    partial: bool = False


def served(files: list[list[Entry]], start: int, upto: int | None = None) -> str:
    """What the kubelet's log reader (cri-client ReadLogs, with timestamps) writes reading
    ``files[start]`` and, as a follow does, the files after it up to ``upto``: each entry's
    text, prefixed by its stamp only where a line begins (after an entry that ended one)."""
    out, new = [], True
    for entries in files[start:upto]:
        for e in entries:
            out.append((f"{e.stamp} " if new else "") + e.text + ("" if e.partial else "\n"))
            new = not e.partial
    return "".join(out)


def read(chain: Chain, seg: Segment, body: str, *, file_end: bool, chunk: int = 7) -> list[str]:
    """A reader of ``seg`` given ``body`` in chunks, as the observer reads: its texts, and
    (``file_end``: it stops at its file's end) the text after the last newline as its tail."""
    split, texts = LineSplitter(), []
    for i in range(0, len(body), chunk):
        batch = split.feed(body[i : i + chunk])
        if batch:
            n, _ = chain.take(seg, batch)
            texts += [line.partition(" ")[2] for line in batch[:n]]
            if n < len(batch):
                return texts  # the next file's lines: this segment is whole
    if file_end and split.rest:
        seg.tail = split.rest.partition(" ")[2]
    return texts


def drained(chain: Chain, texts: dict[int, list[str]]) -> list[str]:
    """The lines in the order the observation puts them: each segment's after the one
    before, its first ones ``continued``."""
    out = list(texts[0])
    for i, (prev, seg) in enumerate(itertools.pairwise(chain.segments), start=1):
        out += continued(prev, seg, texts[i])
    return out


# Two files: "a", then a line whose head ("x" * 32, two partial entries) is the first file's
# end and whose rest ("yyyy") is the second file's first entry, then "b".
CUT = [
    [Entry(at("01"), "a"), *(Entry(at(s), "x" * 16, partial=True) for s in ("02", "02.1"))],
    [Entry(at("03"), "yyyy"), Entry(at("04"), "b")],
]


def two_readers(
    files: list[list[Entry]], *, crossed: bool, second: str | None = None
) -> tuple[Chain, dict[int, list[str]]]:
    """The follow on the first file (``crossed``: read on into the second, as the kubelet
    serves a follow; else stopped at its file's end) and a reader of the second file of its
    own (given ``second``, else all of it), as the observer drives them."""
    chain = Chain()
    follow = chain.head
    seg = chain.add(files[1][0].stamp)
    assert seg is not None
    first = read(chain, follow, served(files, 0, None if crossed else 1), file_end=not crossed)
    body = served(files, 1) if second is None else second
    return chain, {0: first, 1: read(chain, seg, body, file_end=False)}


def test_a_line_cut_between_its_partial_entries_by_a_rotation_is_joined_once() -> None:
    """A line in partial entries with the rotation between two of them: the older file's
    reader stops at its end with the line's head, the next file's reader starts with its
    rest (stamped as a line of its own)."""
    chain, texts = two_readers(CUT, crossed=False)
    assert texts[1][0] == "yyyy" and chain.segments[0].tail == "x" * 32
    assert drained(chain, texts) == ["a", "x" * 32 + "yyyy", "b"]


def test_a_follow_that_read_on_into_the_next_file_has_the_whole_line_once() -> None:
    """The older file's reader is a follow that went on into the next file: the kubelet
    joined the line's parts itself, and the next file's first line is that line's end."""
    chain, texts = two_readers(CUT, crossed=True)
    assert texts[0] == ["a", "x" * 32 + "yyyy"] and texts[1] == ["yyyy", "b"]
    assert drained(chain, texts) == ["a", "x" * 32 + "yyyy", "b"]


def test_a_follow_that_read_on_past_whole_lines_drops_nothing() -> None:
    files = [[Entry(at("01"), "a"), Entry(at("02"), "b")], [Entry(at("03"), "b")]]
    chain, texts = two_readers(files, crossed=True)
    assert drained(chain, texts) == ["a", "b", "b"]  # the same text twice, as written


def test_a_line_s_head_whose_rest_was_rotated_away_is_put_alone() -> None:
    """The next file's reader came too late for its file's first lines (said as rotated
    away): the older file's last line is put as far as it was read, nothing joined to it."""
    gone = served(CUT, 1).partition("\n")[2]  # its first line rotated away before it was read
    chain, texts = two_readers(CUT, crossed=False, second=gone)
    assert chain.segments[1].gapped
    assert drained(chain, texts) == ["a", "x" * 32, "b"]


@dataclass(frozen=True)
class Written:
    """A log as the runtime stored it (entries at most ``MAX`` characters, a longer line in
    partial ones), the rotations between entries, and how each file's reader ended."""

    lines: list[str]
    files: list[list[Entry]]
    crossed: list[bool]


MAX = 4


@st.composite
def written(draw: st.DrawFn) -> Written:
    texts = draw(st.lists(st.text("ab", min_size=1, max_size=3 * MAX), min_size=1, max_size=12))
    # The log ends with a whole line after the last rotation (see ``continued``).
    texts.append("end")
    entries: list[Entry] = []
    for text in texts:
        parts = [text[i : i + MAX] for i in range(0, len(text), MAX)]
        for j, part in enumerate(parts):
            stamp = f"2026-12-01T09:40:{len(entries):02d}Z"
            entries.append(Entry(stamp, part, partial=j < len(parts) - 1))
    picked = draw(st.sets(st.integers(1, len(entries)), max_size=4))
    cuts = sorted(c for c in picked if c < len(entries) - 1)  # a file's first entry
    files = [entries[a:b] for a, b in itertools.pairwise([0, *cuts, len(entries) - 1])]
    files[-1].append(entries[-1])
    crossed = draw(st.lists(st.booleans(), min_size=len(files) - 1, max_size=len(files) - 1))
    return Written(texts, files, crossed)


@settings(max_examples=1000, deadline=None)
@given(written())
def test_every_line_is_put_once_whole_wherever_the_rotations_fall(log: Written) -> None:
    """Any lines, any rotations between entries, each older file's reader either stopping
    at its end or reading on into the files after it: every line once, whole, in order."""
    chain = Chain()
    for entries in log.files[1:]:
        assert chain.add(entries[0].stamp) is not None
    texts: dict[int, list[str]] = {}
    for i, seg in enumerate(chain.segments):
        last = i == len(chain.segments) - 1
        crossed = not last and log.crossed[i]
        body = served(log.files, i, None if crossed else i + 1)
        texts[i] = read(chain, seg, body, file_end=not crossed)
    assert drained(chain, texts) == log.lines


def test_a_line_splitter_keeps_what_follows_the_last_newline() -> None:
    split = LineSplitter()
    assert split.feed(b"ab") == [] and split.rest == "ab"
    assert split.feed("c\nd\ne") == ["abc", "d"] and split.rest == "e"
    assert split.feed(b"\n") == ["e"] and split.rest == ""


def test_a_gap_a_resumed_read_finds_is_said_up_to_the_next_files_first_line() -> None:
    """The kubelet ended the follow at its rotated file's end while the Worker ran on (a
    clean end, as an API server restarting gives one): read again, the follow is served the
    current file, two files on. What may be missing is the rest of its own file; the next
    file's lines are its own reader's, said as lost by no one."""
    chain, follow, seg = rotated_once()[1:]
    gap = Gap(at("01"), at("09"))
    assert chain.within(follow, gap) == Gap(at("01"), at("05"))
    assert chain.within(follow, Gap(at("01"), at("04"))) == Gap(at("01"), at("04"))
    assert chain.within(follow, Gap(at("05"), at("09"))) is None
    assert chain.within(seg, gap) == gap  # the newest reader's gap is all its own
