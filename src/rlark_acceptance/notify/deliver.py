"""Posting the notifications: bounded, retried a little, never changing a verdict.

Each target gets one POST of its payload, retried (tenacity) on a connection error or a 5xx
answer, 3 attempts within about 10 s at the most; a 4xx is final (a wrong or revoked URL
does not get better). What did not arrive is a warning of the record naming the target's
format and host, never its URL (it carries the channel's token).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_attempt, wait_fixed

from rlark_acceptance.notify.payloads import payload
from rlark_acceptance.notify.targets import NotifyTarget

TIMEOUT_S = 3.0
ATTEMPTS = 3


@dataclass(frozen=True)
class Delivery:
    target: NotifyTarget
    status: int | None  # the receiver's HTTP status; None: it never answered
    error: str | None  # None: delivered

    @property
    def line(self) -> str:
        if self.error is None:
            return f"notified {self.target.shown} ({self.status})"
        return f"notification not delivered ({self.target.shown}): {self.error}"


class _Retryable(Exception):
    pass


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, _Retryable)


def _post(target: NotifyTarget, body: bytes) -> int:
    request = urllib.request.Request(
        target.url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    try:
        # http(s) only: the scheme is checked where the target is read (targets.py).
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500:
            raise _Retryable(f"HTTP {exc.code}") from exc
        raise
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Retryable(f"{type(reason).__name__}: {reason}") from exc


def deliver(target: NotifyTarget, summary: dict[str, Any], report_url: str | None) -> Delivery:
    body = json.dumps(payload(target.format, summary, report_url), ensure_ascii=False).encode()
    send = retry(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_fixed(0.5),
        reraise=True,
    )(_post)
    try:
        return Delivery(target, send(target, body), None)
    except urllib.error.HTTPError as exc:
        return Delivery(target, exc.code, f"the receiver answered HTTP {exc.code}")
    except _Retryable as exc:
        return Delivery(target, None, f"{exc} (after {ATTEMPTS} attempts)")


def deliver_all(
    targets: list[NotifyTarget], summary: dict[str, Any], report_url: str | None = None
) -> list[Delivery]:
    return [deliver(t, summary, report_url) for t in targets]
