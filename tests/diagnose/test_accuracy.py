"""First-cause accuracy of ``rlark-acceptance diagnose`` on each failure corpus, measured as
the issue asks: the share whose class is right, the share whose quoted line is the first
cause, the share of knock-on lines never quoted as the cause. Every miss must be listed in
``MISSES`` with why; an unlisted miss, or a listed one that no longer happens, fails.

The same logs are then read as users hand them over: with Windows line ends, coloured, with
tqdm's ``\\r`` redraws, cut at the top inside the cause's traceback; the diagnosis must not
change (but for the lines cut)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlark_acceptance.diagnose import Diagnosis, diagnose
from rlark_acceptance.diagnose.lines import batches, clean
from rlark_acceptance.rlinf.failures import ACTOR_KILLED, Cause, classify
from tests.diagnose.corpus import CONSTRUCTED, CORPORA, REAL, Expected, load

# corpus log name → why diagnose misses it. None today: the constructed logs were written
# from the formats the classifier reads (by the same hands), the real ones are five runs of
# one profile on this machine; the users' reports are measured in test_users_logs.py.
MISSES: dict[str, str] = {}


@dataclass
class Score:
    logs: int = 0
    class_right: int = 0
    line_right: int = 0
    knock_on_lines: int = 0
    knock_ons_quoted: int = 0

    def line(self, name: str) -> str:
        def share(n: int, of: int) -> str:
            return f"{n}/{of} ({100 * n / of:.0f} %)" if of else "n/a"

        never = self.knock_on_lines - self.knock_ons_quoted
        return (
            f"{name}: class right {share(self.class_right, self.logs)}, quoted line is the "
            f"first cause {share(self.line_right, self.logs)}, knock-on lines never quoted "
            f"{share(never, self.knock_on_lines)}"
        )


def first_line_holding(lines: list[str], quote: str) -> int | None:
    return next((i for i, line in enumerate(lines) if quote in clean(line)), None)


def judge(e: Expected, d: Diagnosis, score: Score) -> list[str]:
    """Score one log; what it missed, in words."""
    missed = []
    score.logs += 1
    c = d.cause
    if c is not None and c.kind is not None and c.kind.id == e.kind:
        score.class_right += 1
    else:
        missed.append(f"class {c.kind.id if c and c.kind else None}, not {e.kind}")
    if c is not None and c.quote == e.quote and c.line == first_line_holding(e.lines, e.quote):
        score.line_right += 1
    else:
        missed.append(f"quoted line {c.line + 1 if c else None}: {c.quote if c else None!r}")
    return missed + knock_ons(e.kind, e.lines, c, score)


def knock_ons(kind: str | None, lines: list[str], c: Cause | None, score: Score) -> list[str]:
    """Count a log's knock-on lines; the one quoted as the cause, if any, is a miss."""
    if kind == ACTOR_KILLED.id:  # a log of knock-ons only: its first one is the cause
        return []
    knocks = [i for i, line in enumerate(lines) if classify(line) is ACTOR_KILLED]
    score.knock_on_lines += len(knocks)
    if c is None or c.line not in knocks:
        return []
    score.knock_ons_quoted += 1
    return [f"a knock-on quoted: log line {c.line + 1}"]


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_first_cause_accuracy_on_each_corpus(
    corpus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    score, misses = Score(), {}
    for path in CORPORA[corpus]:
        e = load(path)
        missed = judge(e, diagnose([e.lines]), score)
        if missed:
            misses[e.name] = "; ".join(missed)
    with capsys.disabled():
        sys.stderr.write("\n" + score.line(corpus) + "\n")
    names = {f"{p.parent.name}/{p.name}" for p in CORPORA[corpus]}
    assert sorted(misses) == sorted(set(MISSES) & names), misses
    assert score.logs == len(CORPORA[corpus]) and score.knock_on_lines > 0, score


def test_the_corpora_are_there() -> None:
    """The figures above are of 14 constructed logs and 5 real ones: a corpus that lost its
    logs would score 100 % of nothing."""
    assert len(CONSTRUCTED) == 14 and len(REAL) == 5


def test_the_actor_is_the_one_the_real_runs_name() -> None:
    for path in REAL:
        e = load(path)
        d = diagnose([e.lines])
        assert d.cause is not None and d.cause.actor == e.actor, (e.name, d.cause)


# --- the same logs as users hand them over ----------------------------------------------


def crlf(lines: list[str]) -> list[str]:
    return [line + "\r" for line in lines]  # read as split on "\n": "\r\n" line ends


def coloured(lines: list[str]) -> list[str]:
    """Every line as a terminal recording keeps it: the cursor hidden (a private mode,
    which Ray's own colour stripping does not know), bold red, reset, erased to its end."""
    return [f"\x1b[?25l\x1b[1;31m{line}\x1b[0m\x1b[K" if line else line for line in lines]


def tqdm(lines: list[str]) -> list[str]:
    """A progress bar redrawn with ``\\r`` on the lines of progress, and one left without
    its newline just before each traceback, which then begins on the bar's line."""
    bar = "\rEpochs:   0%|          | 0/2\rEpochs:  50%|#####     | 1/2"
    out = []
    for line in lines:
        if "it/s" in line or "Epochs" in line:
            line = f"{bar}\r{line}"
        at = line.find("Traceback (most recent call last)")
        if at >= 0:
            line = f"{line[:at]}{bar}{line[at:]}"
        out.append(line)
    return out


@pytest.mark.parametrize("variant", [crlf, coloured, tqdm], ids=lambda v: v.__name__)
@pytest.mark.parametrize("path", [*CONSTRUCTED, *REAL], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_log_as_users_save_it_reads_the_same(
    variant: Callable[[list[str]], list[str]], path: Path
) -> None:
    e = load(path)
    plain = diagnose([e.lines])
    text = "\n".join(variant(e.lines)) + "\n"
    for chunk in (7, 4096, 1 << 20):
        seen = diagnose(batches(io.BytesIO(text.encode()), chunk))
        assert seen.cause == plain.cause and seen.check == plain.check, (chunk, seen.cause)


@pytest.mark.parametrize("path", [*CONSTRUCTED, *REAL], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_log_cut_at_the_top_inside_its_cause_still_names_it(path: Path) -> None:
    """Every cut from the log's top down to its first cause's line (``kubectl logs --tail``,
    a paste that starts mid-traceback): the same quote and class, the line moved up."""
    e = load(path)
    plain = diagnose([e.lines])
    assert plain.cause is not None
    for cut in range(plain.cause.line + 1):
        seen = diagnose([e.lines[cut:]]).cause
        assert seen is not None and seen.quote == e.quote, (cut, seen)
        assert seen.kind == plain.cause.kind and seen.line == plain.cause.line - cut, (cut, seen)
