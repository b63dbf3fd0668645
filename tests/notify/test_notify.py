"""Notifications (``rlark_acceptance.notify``): what each receiver gets, posted to a real HTTP
server on loopback; a target that does not answer is a delivery's error, never a raise; a
webhook's URL (it carries the channel's token) is never said. The suite's own runs sending
them as a user asks (``--notify``): ``tests/run/test_red_runs.py``."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from rlark_acceptance.model.errors import InputError
from rlark_acceptance.notify import deliver_all, parse_target
from rlark_acceptance.notify.payloads import generic, headline
from tests.notify.receiver import receiver

TOKEN = "T0KEN-of-the-channel"

GREEN: dict[str, Any] = {
    "profile": "profiles/local.yaml",
    "runId": "261207190000-abcdef",
    "verdict": "passed",
    "earliestFailure": None,
    "notReached": [],
    "durations": {"submit": 0.5, "rayHead": 6.8, "output": 9.4},
    "budgets": {"stages": {"rayHead": {"budget": 20, "median": 6.1, "overBudget": False}}},
    "provenance": {"profileName": "smoke-ppo-mlp-local"},
    "warnings": [],
}
RED: dict[str, Any] = GREEN | {
    "verdict": "failed",
    "earliestFailure": {
        "check": "3.7",
        "message": "output-read-only — the log path /mnt/ckpt/logs lies in read-only mount ckpt",
        "hint": "Step 3: make RLinf write checkpoints and logs under a mount's container path",
        "location": "my-site/local/job.yaml:31",
    },
    "notReached": ["6.1", "6.5"],
    "durations": {},
}
INTERRUPTED: dict[str, Any] = GREEN | {
    "verdict": "interrupted",
    "interruptedAt": {"check": "6.1"},
}
RELEASE: dict[str, Any] = {
    "release": "nightly",
    "verdict": "notAccepted",
    "accepted": 1,
    "total": 2,
    "profiles": [
        {"name": "local", "verdict": "passed", "accepted": True, "runId": "a"},
        {
            "name": "kubernetes",
            "verdict": "failed",
            "accepted": False,
            "runId": "b",
            "earliestFailure": RED["earliestFailure"],
        },
    ],
}


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        (GREEN, "smoke-ppo-mlp-local: ACCEPTED"),
        (RED, "smoke-ppo-mlp-local: NOT ACCEPTED at 3.7"),
        (INTERRUPTED, "smoke-ppo-mlp-local: INTERRUPTED at 6.1"),
        (RELEASE, "release nightly: NOT ACCEPTED on 1 of 2"),
    ],
)
def test_every_format_leads_with_the_verdict_as_the_report_titles_it(
    summary: dict[str, Any], said: str
) -> None:
    assert headline(summary) == said
    with receiver() as r:
        targets = [parse_target(f"{fmt}:{r.url()}") for fmt in ("json", "slack", "feishu")]
        done = deliver_all(targets, summary, "https://ci.example/job/7/report")
    assert [d.error for d in done] == [None, None, None]
    plain, slack, card = (g.body for g in r.got)
    assert plain["headline"] == said and plain["report"] == "https://ci.example/job/7/report"
    assert slack["text"].endswith(said) and slack["blocks"][0]["text"]["text"] == said
    header = card["card"]["header"]
    assert header["title"]["content"] == said
    assert header["template"] == ("green" if summary["verdict"] == "passed" else "red")
    assert all(g.content_type.startswith("application/json") for g in r.got)


def test_a_red_runs_message_names_the_check_its_line_and_the_remedy() -> None:
    body = generic(RED, None)
    first = body["earliestFailure"]
    assert first["check"] == "3.7" and first["location"] == "my-site/local/job.yaml:31"
    assert first["remedy"].startswith("Step 3: make RLinf write")
    assert body["notReached"] == ["6.1", "6.5"]
    with receiver() as r:
        deliver_all([parse_target(f"slack:{r.url()}")], RED)
    text = r.got[0].body["blocks"][1]["text"]["text"]
    assert "earliest failing check 3.7 (my-site/local/job.yaml:31): output-read-only" in text
    assert "→ Step 3: make RLinf write" in text


def test_the_stages_are_said_against_their_budgets() -> None:
    stages = {s["stage"]: s for s in generic(GREEN, None)["stages"]}
    assert stages["rayHead"] == {
        "stage": "rayHead",
        "seconds": 6.8,
        "budget": 20,
        "median": 6.1,
        "overBudget": False,
        "regressed": False,
    }
    assert stages["submit"]["budget"] is None


def test_a_release_lists_each_profile() -> None:
    body = generic(RELEASE, None)
    assert body["kind"] == "release" and [p["name"] for p in body["profiles"]] == [
        "local",
        "kubernetes",
    ]
    assert body["profiles"][1]["earliestFailure"]["check"] == "3.7"


def test_the_host_decides_the_format_when_none_is_written() -> None:
    assert parse_target("https://hooks.slack.com/services/X/Y/Z").format == "slack"
    assert parse_target("https://open.feishu.cn/open-apis/bot/v2/hook/x").format == "feishu"
    assert parse_target("https://open.larksuite.com/open-apis/bot/v2/hook/x").format == "feishu"
    assert parse_target("lark:https://bots.example/x").format == "feishu"
    assert parse_target("https://dash.example/hook").format == "json"


def test_a_url_in_a_file_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    where = "release.yaml:4"
    with pytest.raises(InputError) as literal:
        parse_target(f"slack:https://hooks.slack.com/services/{TOKEN}", where=where, from_file=True)
    assert str(literal.value).startswith("release.yaml:4: a notify URL in a file must come")
    assert TOKEN not in str(literal.value)
    with pytest.raises(InputError, match=r"reads \$\{CHANNEL_HOOK\}, which is not set"):
        parse_target("slack:${CHANNEL_HOOK}", where=where, from_file=True)
    monkeypatch.setenv("CHANNEL_HOOK", f"https://hooks.slack.com/services/{TOKEN}")
    target = parse_target("${CHANNEL_HOOK}", where=where, from_file=True)
    assert target.format == "slack" and TOKEN in target.url and TOKEN not in target.shown
    assert target.shown == "slack to https://hooks.slack.com"


@pytest.mark.parametrize("text", ["ftp://x/y", "slack:", "pager:https://x/y", "https://"])
def test_a_target_that_is_no_http_url_is_one_clear_answer(text: str) -> None:
    with pytest.raises(InputError) as e:
        parse_target(text)
    assert str(e.value).startswith("--notify: ")


def test_a_receiver_that_fails_for_a_moment_gets_the_message_again() -> None:
    with receiver([503, 502]) as r:
        (done,) = deliver_all([parse_target(r.url())], GREEN)
    assert done.error is None and done.status == 200 and len(r.got) == 3


def test_a_refused_or_absent_receiver_is_a_warning_that_never_names_the_url() -> None:
    with receiver([404]) as r:
        (refused,) = deliver_all([parse_target(r.url())], GREEN)
    assert len(r.got) == 1, "a 4xx is final: a wrong or revoked URL does not get better"
    assert refused.error == "the receiver answered HTTP 404"
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (absent,) = deliver_all([parse_target(f"http://127.0.0.1:{port}/hook/{TOKEN}")], GREEN)
    assert absent.status is None and "after 3 attempts" in str(absent.error)
    for d in (refused, absent):
        assert TOKEN not in d.line and d.line.startswith("notification not delivered (json to ")
