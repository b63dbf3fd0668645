"""Where a notification goes, as a user writes it: ``--notify [FORMAT:]URL`` (repeatable) or
a release file's ``notify:`` list.

``FORMAT`` is ``json`` (the generic payload), ``slack`` (any Slack-compatible incoming
webhook: Slack, Mattermost, Rocket.Chat) or ``feishu`` (a Feishu or Lark custom bot; ``lark``
is the same). Without it the host decides (``hooks.slack.com`` is Slack, ``open.feishu.cn``
and ``open.larksuite.com`` are Feishu / Lark), and anything else gets the generic JSON.

A webhook's URL holds the token that lets anyone post to the channel. So ``${NAME}`` in it
is taken from the environment (the CI's secret variables), and a file may give a URL only
that way: a literal ``https://…`` in a profile or release file is refused with its line,
since the file is shared and kept in version control. On the command line a literal URL is
accepted (the shell's own environment is where it came from).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from rlark_acceptance.model.errors import InputError

FORMATS = ("json", "slack", "feishu")
_ALIASES = {"lark": "feishu"}
_BY_HOST = {
    "hooks.slack.com": "slack",
    "open.feishu.cn": "feishu",
    "open.larksuite.com": "feishu",
}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PREFIX = re.compile(r"^(?P<fmt>[a-z]+):(?=\S)(?!//)")


@dataclass(frozen=True)
class NotifyTarget:
    format: str
    url: str  # with the environment's values in: never printed, never recorded

    @property
    def shown(self) -> str:
        """What the record and the terminal say of it: the format and the host alone."""
        parts = urlsplit(self.url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
        return f"{self.format} to {parts.scheme}://{host}{port}"


def parse_target(text: str, *, where: str = "--notify", from_file: bool = False) -> NotifyTarget:
    """``[FORMAT:]URL`` as written; ``where`` names it in an answer (``file:line``)."""
    spec = text.strip()
    fmt: str | None = None
    m = _PREFIX.match(spec)
    if m and m.group("fmt") not in ("http", "https"):
        word = m.group("fmt")
        fmt = _ALIASES.get(word, word)
        if fmt not in FORMATS:
            raise InputError(
                where, f"notify format {word!r} is not one of {', '.join(FORMATS)} (or lark)"
            )
        spec = spec[m.end() :]
    if from_file and not _VAR.search(spec):
        raise InputError(
            where,
            "a notify URL in a file must come from the environment, as ${NAME} (it "
            "carries the channel's token, and the file is shared): export NAME in the CI's "
            "secret variables",
        )
    missing = [n for n in _VAR.findall(spec) if n not in os.environ]
    if missing:
        raise InputError(where, f"the notify URL reads ${{{missing[0]}}}, which is not set")
    url = _VAR.sub(lambda v: os.environ[v.group(1)], spec)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(where, "a notify URL is http:// or https:// with a host")
    return NotifyTarget(fmt or _BY_HOST.get(parts.hostname, "json"), url)
