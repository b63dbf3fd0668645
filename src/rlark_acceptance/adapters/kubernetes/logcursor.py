"""Where the Worker's log was read up to, so a log read again resumes without a line lost or
doubled, and says when the kubelet rotated lines away before they were read.

The log is requested with ``timestamps=true``: the kubelet prefixes every line with the
time the container runtime stamped it with (RFC 3339, nanoseconds). A stream opened again
asks for ``sinceTime`` = the last line's second (the API server passes whole seconds to the
kubelet), and the lines up to and including the last one delivered are skipped by their
stamp; lines sharing that stamp are counted, so none is skipped that was not delivered.

If the first line of a resumed read is already later than the last line delivered, that
line is no longer in the file the kubelet serves: it rotated the log (at
``containerLogMaxSize``) and the lines between may be gone (rotated files are not served).

A follow loses lines the same way without breaking: the kubelet reads the file it opened
to its end, then the file now at the log's path; a file rotated away in between (the
reader more than one rotation behind the Worker) is skipped. Its mark is a jump of the
stamps. It is no mark of lateness: a follow that waited at the end of a file rotated before
it got to it is moved on by the kubelet at the next rotation, past the files between, and
then reads the newest lines as they come, as one that keeps up does. So every jump is
said, and the log machine (``logmachine.py``) sets it against the probes: one they saw
every file of (``logfiles.Chain.watched``) is the Worker's own silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote


def stamp_key(stamp: str) -> tuple[float, int]:
    """A CRI stamp as (whole seconds since the epoch, nanoseconds): comparable, unlike the
    text (RFC3339Nano drops trailing zeros of the fraction)."""
    head, dot, rest = stamp.partition(".")
    frac, tz = "", ""
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, tz = rest[:digits], rest[digits:]
    else:
        for sign in ("Z", "+", "-"):
            at = head.find(sign, 19)
            if at != -1:
                head, tz = head[:at], head[at:]
                break
    base = datetime.fromisoformat(head + (tz.replace("Z", "+00:00") or "+00:00"))
    return base.timestamp(), int((frac + "000000000")[:9])


def since_time(stamp: str) -> str:
    """``sinceTime`` for a read that includes the line stamped ``stamp`` (whole seconds, UTC)."""
    seconds, _ = stamp_key(stamp)
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Two consecutive lines stamped this far apart: the follow may have skipped a rotated file
# (the kubelet checks sizes every 10 s), or the Worker was silent.
SKIP_SECONDS = 1.0
# ... on a stream that has delivered this much already: a rotated file holds at least
# containerLogMaxSize (10 MiB by default), while the backlog a read resumed after an API
# server outage delivers at once is an ordinary Worker's few lines, silences included.
SKIP_AFTER_BYTES = 1 << 20
# Delivered lines of one stamp kept to line a resumed read up by (CRI stamps are nanoseconds:
# only a burst the runtime stamps at once shares one).
TIE_KEPT = 1024


@dataclass
class Gap:
    """Lines the kubelet no longer had when the log was read again."""

    after: str  # the stamp of the last line delivered
    before: str  # the stamp of the first line it still had
    # Found by a jump of the stamps within one follow (not by a read's first line): a
    # skipped file, or the Worker's own silence while the reader was behind.
    jump: bool = False


class LogCursor:
    """The stamp of the last line delivered and how many delivered lines carry it.

    A log served without stamps (a kubelet stand-in that ignores ``timestamps``) is
    resumed by count instead: read from its start, the lines delivered already skipped."""

    def __init__(self) -> None:
        self.stamp: str | None = None
        self.same = 0
        # The texts of the delivered lines that carry ``stamp`` (the last ``same``, at most
        # TIE_KEPT): a resumed read that starts inside them is lined up by text, and one that
        # starts after them all (the file with the rest of them rotated away) is a gap.
        self.tie: list[str] = []
        self.delivered = 0
        self.stamped: bool | None = None  # known from the first line read
        self._skip_key: tuple[float, int] | None = None
        self._skip_tie: list[str] = []
        self._skip_at: int | None = None  # the next line of ``_skip_tie`` the read repeats
        self._skip_count = 0
        self._first = False
        self._streamed = 0

    def since(self) -> str | None:
        return since_time(self.stamp) if self.stamped and self.stamp else None

    def resume(self) -> None:
        """A new read of the log starts: skip what was delivered already."""
        self._first = True
        self._skip_key = stamp_key(self.stamp) if self.stamped and self.stamp else None
        self._skip_tie, self._skip_at = list(self.tie), None
        self._skip_count = self.delivered if self.stamped is False else 0
        self._streamed = 0  # bytes of new lines this read has delivered

    def _resuming(self) -> bool:
        """This read may still repeat what was delivered (or its kind is not known yet)."""
        return (
            self._first
            or self.stamped is None
            or self._skip_key is not None
            or (self.stamped is False and self._skip_count > 0)
        )

    def take_batch(self, batch: list[str], raw: bool = False) -> tuple[list[str], Gap | None]:
        """``take`` for a batch of lines: their new texts (``raw``: the new lines as read,
        stamps included), and the gap they show."""
        texts: list[str] = []
        gap = None
        i = 0
        while i < len(batch) and self._resuming():  # line by line, as take()
            text, found = self.take(batch[i])
            i += 1
            gap = gap or found
            if text is not None:
                texts.append(batch[i - 1] if raw else text)
        rest = batch[i:] if i else batch
        if not rest:
            return texts, gap
        self.delivered += len(rest)
        if not self.stamped:
            texts.extend(rest)
            return texts, gap
        # Past what was delivered: the texts, and the last stamp with how many lines carry it.
        parts = [raw.partition(" ") for raw in rest]
        last = parts[-1][0]
        self._streamed += sum(map(len, rest))
        gap = gap or self._skipped(parts)
        same = 0
        for stamp, _, _ in reversed(parts):
            if stamp != last:
                break
            same += 1
        tie = [p[2] for p in parts[len(parts) - same :]]
        if same == len(parts) and last == self.stamp:
            self.same += same
            self._keep_tie(self.tie + tie)
        else:
            self.stamp, self.same = last, same
            self._keep_tie(tie)
        texts.extend(rest if raw else (p[2] for p in parts))
        return texts, gap

    def _skipped(self, parts: list[tuple[str, str, str]]) -> Gap | None:
        """The first jump of the stamps in ``parts`` (after the last line delivered): a
        rotated file the kubelet skipped, or the Worker's silence (the probes tell)."""
        prev = self.stamp
        if self._streamed < SKIP_AFTER_BYTES or prev is None or prev[:19] == parts[-1][0][:19]:
            return None  # the batch stays within the second of the last line: no jump
        try:
            for stamp, _, _ in parts:
                jumped = stamp[:19] != prev[:19]
                if jumped and stamp_key(stamp)[0] - stamp_key(prev)[0] > SKIP_SECONDS:
                    return Gap(prev, stamp, jump=True)
                prev = stamp
        except ValueError:  # a line the runtime did not stamp
            return None
        return None

    def take(self, raw: str) -> tuple[str | None, Gap | None]:
        """The line's text if it is new (else None), and the gap it shows, if any."""
        first, self._first = self._first, False
        if self.stamped is None:
            try:
                stamp_key(raw.partition(" ")[0])
                self.stamped = True
            except ValueError:
                self.stamped, self._skip_count = False, 0
        if not self.stamped:
            if self._skip_count > 0:
                self._skip_count -= 1
                return None, None
            self.delivered += 1
            return raw, None
        stamp, _, text = raw.partition(" ")
        gap = None
        if self._skip_key is not None:
            try:
                key = stamp_key(stamp)
            except ValueError:
                # The tail of a line begun before ``sinceTime``: the kubelet skips a line's
                # first entries by their stamps and writes its later ones (a line over 16 KiB,
                # or one a rotation cut) without a stamp. That line was delivered, or it lies
                # inside the gap the read's first stamped line shows: its tail is no line.
                self._first = first
                return None, None
            if key < self._skip_key:
                return None, None
            if key == self._skip_key and self._repeats(text):
                return None, None
            if first and self.stamp is not None:
                # The last line delivered is gone from the file (it starts later, or inside
                # the last stamp's lines but after every one delivered): lines may be lost.
                gap = Gap(self.stamp, stamp)
            self._skip_key = None
        if stamp == self.stamp:
            self.same += 1
            self._keep_tie([*self.tie, text])
        else:
            self.stamp, self.same = stamp, 1
            self._keep_tie([text])
        self.delivered += 1
        return text, gap

    def _repeats(self, text: str) -> bool:
        """A resumed read's line stamped as the last one delivered: whether it is one of the
        delivered lines of that stamp. The read is lined up on its first such line (the
        earliest delivered line with its text), then each next one must be the next
        delivered; a line beyond them is new. Two equal texts under one stamp, at a rotation
        that cut between them, cannot be told apart by any reader: taken as repeated."""
        tie = self._skip_tie
        if self._skip_at is None:
            if text not in tie:
                return False
            self._skip_at = tie.index(text) + 1
            return True
        if self._skip_at < len(tie) and tie[self._skip_at] == text:
            self._skip_at += 1
            return True
        return False

    def _keep_tie(self, tie: list[str]) -> None:
        self.tie = tie[-TIE_KEPT:]


def open_log(
    api: Any,
    namespace: str,
    pod: str,
    *,
    follow: bool,
    since: str | None,
    timeout: Any,
    limit: int | None = None,
) -> Any:
    """The Pod's log with stamps, streamed (``read_namespaced_pod_log`` has no
    ``sinceTime``; the API server takes it as a query parameter); ``limit``: its first
    bytes only."""
    query: list[tuple[str, str]] = [("timestamps", "true")]
    if follow:
        query.append(("follow", "true"))
    if since:
        query.append(("sinceTime", since))
    if limit:
        query.append(("limitBytes", str(limit)))
    return api.call_api(
        f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/log",
        "GET",
        query_params=query,
        header_params={"Accept": "*/*"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=timeout,
    )
