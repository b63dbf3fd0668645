"""What a notification says, per receiver, from the record alone.

The release manager reads one line in the channel each morning: ACCEPTED or NOT ACCEPTED,
where it stopped (the earliest failing check, the doc's remedy, the ``file:line``), and how
long the stages took against their budgets, with the report's link when there is one. The
generic JSON carries the same fields for any other consumer (a dashboard, an issue bot).
"""

from __future__ import annotations

from typing import Any

GENERIC_VERSION = 1
_MAX_MESSAGE = 600  # a chat line, not a log: the report holds the rest


def headline(summary: dict[str, Any]) -> str:
    """``<profile>: ACCEPTED`` / ``NOT ACCEPTED at 6.3`` / ``INTERRUPTED at 6.1``, as the
    rendered report's title says it; a release's: ``release <name>: … on N of M``."""
    if "release" in summary:
        word = {"accepted": "ACCEPTED", "interrupted": "INTERRUPTED"}.get(
            str(summary.get("verdict")), "NOT ACCEPTED"
        )
        return (
            f"release {summary['release']}: {word} on {summary.get('accepted', 0)} of "
            f"{summary.get('total', 0)}"
        )
    name = _profile(summary)
    verdict = summary.get("verdict")
    first = summary.get("earliestFailure") or {}
    if verdict == "passed":
        return f"{name}: ACCEPTED"
    if verdict == "interrupted":
        at = (summary.get("interruptedAt") or {}).get("check")
        return f"{name}: INTERRUPTED" + (f" at {at}" if at else "")
    at = first.get("check")
    return f"{name}: NOT ACCEPTED" + (f" at {at}" if at else "")


def _profile(summary: dict[str, Any]) -> str:
    prov = summary.get("provenance") or {}
    return str(prov.get("profileName") or summary.get("profile") or "rlark-acceptance")


def _short(text: object) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= _MAX_MESSAGE else s[: _MAX_MESSAGE - 1] + "…"


def stages(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each stage's seconds against its budget (and the earlier runs' median, where known)."""
    measured = summary.get("durations") or {}
    judged = ((summary.get("budgets") or {}).get("stages")) or {}
    out = []
    for stage, seconds in measured.items():
        j = judged.get(stage) or {}
        out.append(
            {
                "stage": stage,
                "seconds": seconds,
                "budget": j.get("budget"),
                "median": j.get("median"),
                "overBudget": bool(j.get("overBudget")),
                "regressed": bool(j.get("regressed")),
            }
        )
    return out


def _failure(first: dict[str, Any] | None) -> dict[str, Any] | None:
    if not first:
        return None
    return {
        "check": first.get("check"),
        "message": _short(first.get("message") or ""),
        "remedy": first.get("hint"),
        "location": first.get("location"),
    }


def generic(summary: dict[str, Any], report_url: str | None) -> dict[str, Any]:
    if "release" in summary:
        return {
            "version": GENERIC_VERSION,
            "kind": "release",
            "headline": headline(summary),
            "verdict": summary.get("verdict"),
            "release": summary.get("release"),
            "accepted": summary.get("accepted"),
            "total": summary.get("total"),
            "profiles": [
                {
                    "name": e.get("name"),
                    "verdict": e.get("verdict"),
                    "accepted": e.get("accepted"),
                    "runId": e.get("runId"),
                    "earliestFailure": _failure(e.get("earliestFailure")),
                }
                for e in summary.get("profiles") or []
            ],
            "report": report_url,
        }
    return {
        "version": GENERIC_VERSION,
        "kind": "run",
        "headline": headline(summary),
        "verdict": summary.get("verdict"),
        "profile": _profile(summary),
        "runId": summary.get("runId"),
        "earliestFailure": _failure(summary.get("earliestFailure")),
        "notReached": summary.get("notReached") or [],
        "stages": stages(summary),
        "warnings": len(summary.get("warnings") or []),
        "report": report_url,
    }


def _lines(summary: dict[str, Any], report_url: str | None) -> list[str]:
    """The message's body, one fact a line, the same for every chat."""
    g = generic(summary, report_url)
    if g["kind"] == "release":
        out = []
        for e in g["profiles"]:
            first = e["earliestFailure"]
            said = "ACCEPTED" if e["accepted"] else f"not accepted ({e['verdict']})"
            if first:
                said = f"NOT ACCEPTED at {first['check']}: {first['message']}"
            out.append(f"{e['name']}: {said}")
            if first and first["remedy"]:
                out.append(f"→ {first['remedy']}")
        return out + ([f"report: {report_url}"] if report_url else [])
    out = []
    if g["runId"]:
        out.append(f"run {g['runId']}")
    first = g["earliestFailure"]
    if first:
        where = f" ({first['location']})" if first["location"] else ""
        out.append(f"earliest failing check {first['check']}{where}: {first['message']}")
        if first["remedy"]:
            out.append(f"→ {first['remedy']}")
    timed = [
        f"{s['stage']} {s['seconds']}s"
        + (f" (budget {s['budget']}s{', over' if s['overBudget'] else ''})" if s["budget"] else "")
        for s in g["stages"]
    ]
    if timed:
        out.append("stages: " + ", ".join(timed))
    if g["warnings"]:
        out.append(f"{g['warnings']} warning(s) in the record")
    if report_url:
        out.append(f"report: {report_url}")
    return out


def slack(summary: dict[str, Any], report_url: str | None) -> dict[str, Any]:
    """A Slack-compatible incoming webhook's message: ``text`` (what every compatible
    receiver shows, and the notification's preview) and Block Kit ``blocks``."""
    head = headline(summary)
    mark = ":white_check_mark:" if summary.get("verdict") == "passed" else ":x:"
    body = _lines(summary, report_url)
    return {
        "text": f"{mark} {head}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": head[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(body) or head}},
        ],
    }


def feishu(summary: dict[str, Any], report_url: str | None) -> dict[str, Any]:
    """A Feishu / Lark custom bot's interactive card: a green or red header, the body in
    lark_md, the report as a button."""
    passed = summary.get("verdict") == "passed"
    elements: list[dict[str, Any]] = [
        {"tag": "div", "text": {"tag": "lark_md", "content": "\n".join(_lines(summary, None))}}
    ]
    if report_url:
        elements.append(
            {
                "tag": "action",
                "actions": [
                    {
                        "tag": "button",
                        "text": {"tag": "plain_text", "content": "Open the report"},
                        "url": report_url,
                        "type": "primary",
                    }
                ],
            }
        )
    return {
        "msg_type": "interactive",
        "card": {
            "header": {
                "title": {"tag": "plain_text", "content": headline(summary)},
                "template": "green" if passed else "red",
            },
            "elements": elements,
        },
    }


BUILDERS = {"json": generic, "slack": slack, "feishu": feishu}


def payload(fmt: str, summary: dict[str, Any], report_url: str | None) -> dict[str, Any]:
    return BUILDERS[fmt](summary, report_url)
