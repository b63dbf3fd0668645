"""A saved log read as the lines a terminal would have shown, in batches, in flat memory.

A log a user has is rarely clean: ``kubectl logs`` of a Pod that ran with a TTY keeps Ray's
colour codes, a log saved from a browser on Windows ends its lines with ``\\r\\n``, tqdm
redraws its bar with ``\\r`` on one line, ``--limit-bytes`` or a copy cut a line in the
middle, and a single line may be megabytes of a dumped tensor. What is read here is what
the classifier (``rlinf.failures``) was written for: one printed line per log line, the
line numbers those of the file (``\\n`` alone ends a line, as for ``wc -l`` and editors).

Memory: one chunk of bytes, its lines, and at most :data:`MAX_LINE` bytes of the line the
chunk ends inside; a longer line is kept to that length and the rest read past.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20
# More than any line the classifier looks at (it quotes 300 characters): a longer line
# is cut here, so that a line without end (a binary file, a dumped array) bounds memory.
MAX_LINE = 64 * 1024

# Every terminal control sequence: CSI (colours, erase line, cursor moves, private modes
# such as tqdm's cursor hiding) and OSC (window titles, hyperlinks).
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# Ray's prefix of an actor's line; kept when the rest of the line was redrawn with ``\r``.
_RAY_PREFIX = re.compile(r"\((?:[^()\n]|\([^()\n]*\))*\bpid=\d+[^()\n]*\) ?")
_TRACEBACK = "Traceback (most recent call last):"


def batches(stream: BinaryIO, chunk: int = CHUNK) -> Iterator[list[str]]:
    """The lines of ``stream`` in batches of about ``chunk`` bytes, cleaned (:func:`clean`);
    the last line is given whether or not it ends with a newline."""
    carry = b""  # the line the last chunk ended inside, at most MAX_LINE bytes of it
    while data := stream.read(chunk):
        end = data.rfind(b"\n")
        if end < 0:
            carry = (carry + data)[:MAX_LINE] if len(carry) < MAX_LINE else carry
            continue
        # One decode and one split per chunk: UTF-8 never holds a newline inside a character.
        lines = clean((carry + data[:end]).decode("utf-8", "replace")).split("\n")
        carry = data[end + 1 :][:MAX_LINE]
        if max(map(len, lines)) > MAX_LINE:
            lines = [line[:MAX_LINE] for line in lines]
        yield lines
    if carry:
        yield clean(carry.decode("utf-8", "replace")).split("\n")


def clean(text: str) -> str:
    """``text`` (whole lines joined by ``\\n``) without terminal control sequences, each line
    as a terminal left it: ``\\r\\n`` ends a line, a line redrawn with ``\\r`` shows its last
    drawing."""
    if "\x1b" in text:
        text = _CONTROL.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            text = "\n".join(redrawn(line) if "\r" in line else line for line in text.split("\n"))
    return text


def redrawn(line: str) -> str:
    """What a terminal shows of a line redrawn with ``\\r``: its last drawing that is not
    blank, after the Ray prefix the line began with. A traceback printed just after a
    progress bar (which ends without a newline) starts a line of its own there."""
    drawings = line.split("\r")
    shown = next((d for d in reversed(drawings) if d.strip()), "")
    prefix = _RAY_PREFIX.match(drawings[0])
    at = shown.find(_TRACEBACK)
    if at > 0:
        shown = shown[at:]
    if prefix is not None and not _RAY_PREFIX.match(shown):
        shown = prefix.group(0) + shown
    return shown
