"""Resuming the Kubernetes target's streams: the log cursor (stamps, ties, rotation) and the
API server's reach (retries for as long as its bound allows, then named, then fast).

Pure parts, driven directly; the same paths against a real API server whose process is
killed and restarted are in ``test_kubernetes_faults.py``.
"""

from __future__ import annotations

import time

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters.base import TargetUnreachable
from rlark_acceptance.adapters.kubernetes.logcursor import Gap, LogCursor, since_time, stamp_key
from rlark_acceptance.adapters.kubernetes.stream import ApiUnreachable, Reach, call


def stamped(*pairs: tuple[str, str]) -> list[str]:
    return [f"2026-12-01T09:40:{s}Z {text}" for s, text in pairs]


def read(cursor: LogCursor, raw: list[str]) -> tuple[list[str], list[Gap]]:
    """One read of the log, line by line; ``read_batches`` reads it a chunk at a time."""
    cursor.resume()
    out: list[str] = []
    gaps: list[Gap] = []
    for line in raw:
        text, gap = cursor.take(line)
        if text is not None:
            out.append(text)
        if gap is not None:
            gaps.append(gap)
    return out, gaps


def read_batches(cursor: LogCursor, raw: list[str], size: int) -> tuple[list[str], list[Gap]]:
    cursor.resume()
    out: list[str] = []
    gaps: list[Gap] = []
    for i in range(0, len(raw), size):
        texts, gap = cursor.take_batch(raw[i : i + size])
        out += texts
        gaps += [gap] if gap is not None else []
    return out, gaps


def test_stamps_compare_by_time_not_text() -> None:
    # RFC3339Nano drops trailing zeros: as text, ".1Z" sorts after ".12Z".
    assert stamp_key("2026-12-01T09:40:00.1Z") < stamp_key("2026-12-01T09:40:00.12Z")
    assert stamp_key("2026-12-01T09:40:00Z") < stamp_key("2026-12-01T09:40:00.000000001Z")
    assert stamp_key("2026-12-01T10:40:00+01:00") == stamp_key("2026-12-01T09:40:00Z")
    # The API server passes whole seconds to the kubelet: the resumed read starts there.
    assert since_time("2026-12-01T09:40:05.999999999Z") == "2026-12-01T09:40:05Z"


def test_a_resumed_read_delivers_each_line_once_even_with_equal_stamps() -> None:
    log = stamped(
        ("01.5", "a"), ("02.25", "b"), ("02.25", "c"), ("02.25", "d"), ("03.1", "e"), ("04", "f")
    )
    cursor = LogCursor()
    first, _ = read(cursor, log[:3])  # the stream broke after "c", mid-way through a tie
    assert first == ["a", "b", "c"] and cursor.since() == "2026-12-01T09:40:02Z"
    # The kubelet sends from the second on (inclusive): "b" and "c" again, then the rest.
    again, gaps = read(cursor, log[1:])
    assert again == ["d", "e", "f"] and gaps == []
    assert cursor.delivered == 6
    # Read again with nothing new: nothing doubled.
    assert read(cursor, log[4:]) == ([], [])


def test_a_line_rotated_away_before_the_resumed_read_is_a_gap() -> None:
    cursor = LogCursor()
    read(cursor, stamped(("01", "a"), ("02", "b")))
    # The kubelet rotated: the current file starts later than the last line read.
    again, gaps = read(cursor, stamped(("09", "x"), ("10", "y")))
    assert again == ["x", "y"]
    assert len(gaps) == 1 and "09:40:02" in gaps[0].after and "09:40:09" in gaps[0].before


def test_a_follow_that_jumps_may_have_skipped_a_rotated_file() -> None:
    """One unbroken follow: the kubelet went from the file it had open to the file now at
    the log's path. A jump of the stamps may be a file skipped, also where the lines after it
    come as they are written: a follow left at the end of a file rotated before it got to it
    is moved on at the next rotation, and reads on as one that keeps up. (Whether the probes
    saw every file meanwhile, so that it is the Worker's silence, the log machine judges.)"""
    # Loud lines (a rotated file holds megabytes), 200 kB each.
    loud = "x" * 200_000
    log = stamped(*((f"{s:02d}.{i}", f"{loud}{s}.{i}") for s in (1, 2, 12, 13) for i in range(3)))
    cursor = LogCursor()
    texts, gaps = read_batches(cursor, log, 4)
    assert texts == [raw.split(" ", 1)[1] for raw in log]  # every line delivered once
    assert len(gaps) == 1, gaps
    assert "09:40:02.2" in gaps[0].after and "09:40:12.0" in gaps[0].before and gaps[0].jump


def test_a_backlog_read_after_an_outage_is_no_skipped_file() -> None:
    """A read resumed after the API server came back delivers the Worker's lines of the
    outage at once, long after they were written: its silences are no rotated file."""
    log = stamped(("01", "a"), ("02", "b"), ("12", "c"), ("13", "d"))
    cursor = LogCursor()
    read_batches(cursor, log[:1], 4)
    assert read_batches(cursor, log, 4) == (["b", "c", "d"], [])


def test_a_log_served_without_stamps_is_resumed_by_count() -> None:
    cursor = LogCursor()
    assert read(cursor, ["a b", "c"]) == (["a b", "c"], [])
    assert cursor.stamped is False and cursor.since() is None  # read again from the start
    assert read(cursor, ["a b", "c", "d"]) == (["d"], [])


def test_a_line_may_hold_spaces_and_be_empty() -> None:
    cursor = LogCursor()
    out, _ = read(cursor, ["2026-12-01T09:40:01Z   indented  text ", "2026-12-01T09:40:02Z "])
    assert out == ["  indented  text ", ""]


def refused() -> urllib3.exceptions.HTTPError:
    return urllib3.exceptions.MaxRetryError(
        None,  # type: ignore[arg-type]
        "/api",
        urllib3.exceptions.NewConnectionError(
            None,  # type: ignore[arg-type]
            "Failed to establish a new connection: [Errno 111] Connection refused",
        ),
    )


def test_an_outage_shorter_than_the_bound_is_ridden_out() -> None:
    reach = Reach("https://127.0.0.1:1", bound=5.0)
    back_at = time.monotonic() + 1.0
    tries = 0

    def api() -> str:
        nonlocal tries
        tries += 1
        if time.monotonic() < back_at:
            raise refused()
        return "answer"

    assert call(api, reach=reach) == "answer"
    assert tries > 3  # more than the few retries a request gets without a reach
    assert reach.down_for() == 0.0 and not reach.lost


def test_past_the_bound_the_api_server_is_named_and_later_requests_fail_fast() -> None:
    reach = Reach("https://127.0.0.1:1", bound=0.8)
    t0 = time.monotonic()
    with pytest.raises(ApiUnreachable) as info:
        call(lambda: (_ for _ in ()).throw(refused()), reach=reach)
    took = time.monotonic() - t0
    assert 0.8 <= took < 4.0, took
    msg = str(info.value)
    assert "API server https://127.0.0.1:1 is unreachable" in msg and "Connection refused" in msg
    assert "timeouts.apiServer" in msg and isinstance(info.value, TargetUnreachable)
    t1 = time.monotonic()
    with pytest.raises(ApiUnreachable):  # once lost: one attempt, no backoff
        call(lambda: (_ for _ in ()).throw(refused()), reach=reach)
    assert time.monotonic() - t1 < 0.5
    # An answer from any request clears it.
    assert call(lambda: "ok", reach=reach) == "ok" and not reach.lost


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_batches_read_as_lines_do(size: int) -> None:
    stamps = ("01", "02", "02", "02", "03", "03", "04", "05", "05", "05")
    log = stamped(*((s, f"line {i}") for i, s in enumerate(stamps)))
    for cut in range(len(log) + 1):
        by_line, by_batch = LogCursor(), LogCursor()
        assert read(by_line, log[:cut]) == read_batches(by_batch, log[:cut], size)
        # The stream broke after ``cut`` lines; read again from the last line's second.
        since = by_line.since()
        again = [raw for raw in log if since is None or raw[:19] >= since[:19]]
        expected = read(by_line, again)
        assert read_batches(by_batch, again, size) == expected
        assert expected[0] == [f"line {i}" for i in range(cut, len(log))]
        assert (by_batch.stamp, by_batch.same, by_batch.delivered) == (
            by_line.stamp,
            by_line.same,
            by_line.delivered,
        )
    unstamped = ["a", "b c", "d"]
    c1, c2 = LogCursor(), LogCursor()
    assert read(c1, unstamped[:2]) == read_batches(c2, unstamped[:2], size)
    assert read(c1, unstamped) == read_batches(c2, unstamped, size) == (["d"], [])


def test_a_refusal_right_after_an_outage_is_retried_while_the_server_recovers() -> None:
    """A restarted API server answers 403 until its RBAC caches are loaded (seen with
    kube-apiserver 1.36 killed and started again): not a verdict, this soon."""
    reach = Reach("https://127.0.0.1:1", bound=5.0)
    answers: list[BaseException | str] = [refused(), ApiException(status=403), "listed"]

    def api() -> str:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    assert call(api, reach=reach) == "listed" and answers == []
    # Without an outage before it, a 403 is the API server's verdict at once.
    calm = Reach("https://127.0.0.1:1", bound=5.0)
    with pytest.raises(ApiException):
        call(lambda: (_ for _ in ()).throw(ApiException(status=403)), reach=calm)
