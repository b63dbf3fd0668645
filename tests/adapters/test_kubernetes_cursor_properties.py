"""The log cursor's promise, over generated logs and reads: every line of the Worker's log
is delivered exactly once and in order, or it lies inside a gap the cursor reported.

A generated case is a log (stamps in nanoseconds: ties, sub-second steps, jumps of seconds;
some lines stored in several entries, as the runtime stores a line over 16 KiB) and a
sequence of reads, each as the kubelet serves one: the lines of the file now at the log's
path from ``sinceTime`` (the last delivered line's whole second) on, where a line whose
first entries are before that second is served as its later entries' text alone, without
a stamp (the kubelet stamps a line's first entry only); read line by line
or in batches, broken off after some lines (an API server outage, a cut), after which the
kubelet may have rotated the log (the current file now starts later: what was before it is
no longer served). The last read takes everything served. Named examples are the cases the
cursor once got wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlark_acceptance.adapters.kubernetes.logcursor import Gap, LogCursor, stamp_key

T0 = datetime(2026, 12, 1, 9, 40, tzinfo=UTC)
# Steps between two lines' stamps (ns): a tie, the next nanosecond, within the second,
# across it, and a silence of seconds.
STEPS = st.one_of(
    st.sampled_from([0, 0, 1, 250_000_000, 999_999_999, 1_000_000_000, 2_500_000_000]),
    st.integers(0, 3_000_000_000),
)


def rfc3339nano(ns: int) -> str:
    """A stamp as the runtime writes it: RFC3339Nano, trailing zeros of the fraction dropped."""
    whole = (T0 + timedelta(seconds=ns // 1_000_000_000)).strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{ns % 1_000_000_000:09d}".rstrip("0")
    return f"{whole}{'.' + frac if frac else ''}Z"


@dataclass(frozen=True)
class Read:
    taken: int  # lines of the served read taken before it breaks off
    batch: int  # 0: line by line, else lines per batch
    rotate: int  # lines the current file's start moves on by after the read


# A line of the log: its entries as the runtime stored them, (stamp, text) each; the line is
# the first entry's stamp and every entry's text.
Line = tuple[tuple[str, str], ...]


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Line], list[Read]]:
    entries = draw(st.lists(st.integers(1, 3), min_size=1, max_size=40))
    at, log = 0, []
    for i, n in enumerate(entries):
        parts = []
        for j in range(n):
            at += draw(STEPS)
            # The later entries' texts: a space in some, so no first word passes for a stamp.
            text = f"line {i}" + " x" * (i % 3) if j == 0 else f"~{i}.{j}" + " y" * (j % 2)
            parts.append((rfc3339nano(at), text))
        log.append(tuple(parts))
    reads = draw(
        st.lists(
            st.builds(Read, st.integers(0, 12), st.integers(0, 5), st.integers(0, 6)),
            max_size=8,
        )
    )
    return log, reads


def whole(line: Line) -> str:
    return f"{line[0][0]} " + "".join(text for _, text in line)


def lines(*raws: str) -> list[Line]:
    """A log of one-entry lines, given as the kubelet serves them."""
    return [((raw.partition(" ")[0], raw.partition(" ")[2]),) for raw in raws]


def serve(log: list[Line], start: int, since: str | None) -> list[str]:
    """The kubelet's answer: the current file (from ``start``) from ``since``'s second on, a
    line begun before it as the text of its entries from then on."""
    second = None if since is None else stamp_key(since)[0]
    out = []
    for line in log[start:]:
        kept = [(s, t) for s, t in line if second is None or stamp_key(s)[0] >= second]
        if len(kept) == len(line):
            out.append(whole(line))
        elif kept:
            out.append("".join(t for _, t in kept))
    return out


def read(cursor: LogCursor, lines: list[str], batch: int) -> tuple[list[str], list[Gap]]:
    cursor.resume()
    texts: list[str] = []
    gaps: list[Gap] = []
    if batch == 0:
        for raw in lines:
            text, gap = cursor.take(raw)
            texts += [text] if text is not None else []
            gaps += [gap] if gap is not None else []
        return texts, gaps
    for i in range(0, len(lines), batch):
        got, gap = cursor.take_batch(lines[i : i + batch])
        texts += got
        gaps += [gap] if gap is not None else []
    return texts, gaps


@dataclass
class Outcome:
    texts: list[str]  # delivered, in order
    gaps: list[Gap]  # reported
    rotated: bool = False  # the current file's start ever moved
    skipped: bool = False  # ... past a line not yet delivered


def run(log: list[Line], reads: list[Read]) -> Outcome:
    """Every read in turn, then one that takes the rest. The log rotates only once a line
    was delivered, and the current file keeps the log's last line: what was rotated away
    before the first read, or with the Worker's last line, no later line of the current
    file can show (the observation's probes and follows see those files while current)."""
    # (A jump of the stamps within one read is said only past SKIP_AFTER_BYTES read: these
    # logs are shorter, so every gap found is one a read's first line shows.)
    cursor = LogCursor()
    out, start = Outcome([], []), 0
    for r in [*reads, Read(len(log), 3, 0)]:
        got, found = read(cursor, serve(log, start, cursor.since())[: r.taken], r.batch)
        out.texts += got
        out.gaps += found
        if cursor.delivered and r.rotate:
            start = min(len(log) - 1, start + r.rotate)
            out.rotated = True
            out.skipped = out.skipped or start > cursor.delivered
    return out


def _stamped(stamp: str) -> bool:
    try:
        stamp_key(stamp)
    except ValueError:
        return False
    return True


def text_of(raw: str) -> str:
    return raw.partition(" ")[2]


@settings(max_examples=10_000, deadline=None)
@given(cases())
# A rotation inside a tie: "c" and "d" share the stamp of "b", the last line delivered, and
# the file now starts at "d": "c" is gone. It was skipped as if "d" were "c", unsaid.
@example(
    (
        lines(*(f"2026-12-01T09:40:0{s}Z {t}" for s, t in ("1a", "2b", "2c", "2d", "3e"))),
        [Read(2, 0, 3)],
    )
)
# A resumed read from the tie's second repeats the delivered lines of the tie first.
@example(
    (
        lines(*(f"2026-12-01T09:40:02.25Z {t}" for t in "abcd"), "2026-12-01T09:40:03.1Z e"),
        [Read(3, 0, 0), Read(1, 2, 0)],
    )
)
# A resumed read from second 02 starts inside "b" (its first entry at 01.9, its second at
# 02.1): the kubelet serves the second entry's text alone, without a stamp. It was taken for
# a stamp, said as a gap that broke the reader (a 3 M-line run on the real node), and put
# as an empty line.
@example(
    (
        [
            (("2026-12-01T09:40:01Z", "a"),),
            (("2026-12-01T09:40:01.9Z", "b"), ("2026-12-01T09:40:02.1Z", "xxxx")),
            (("2026-12-01T09:40:02.5Z", "c"),),
            (("2026-12-01T09:40:03Z", "d"),),
        ],
        [Read(3, 0, 0), Read(1, 0, 0)],
    )
)
def test_every_line_is_delivered_once_in_order_or_inside_a_reported_gap(
    case: tuple[list[Line], list[Read]],
) -> None:
    log, reads = case
    outcome = run(log, reads)
    texts, gaps = outcome.texts, outcome.gaps
    order = [text_of(whole(line)) for line in log]
    assert len(set(texts)) == len(texts), f"a line delivered twice: {texts}"
    assert all(t in order for t in texts), f"not a line of the log: {texts}"
    assert all(_stamped(g.after) and _stamped(g.before) for g in gaps), f"not a stamp: {gaps}"
    at = [order.index(t) for t in texts]
    assert at == sorted(at), f"out of order: {texts}"
    for i in sorted(set(range(len(log))) - set(at)):
        key = stamp_key(log[i][0][0])
        assert any(stamp_key(g.after) <= key <= stamp_key(g.before) for g in gaps), (
            f"{whole(log[i])!r} lost without a gap; gaps: {gaps}"
        )
    if not outcome.skipped:
        assert texts == order, texts
    if not outcome.rotated:  # a gap is said only where the file changed under the reader
        assert gaps == [], gaps
