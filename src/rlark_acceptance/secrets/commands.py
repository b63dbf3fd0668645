"""Credentials given to well-known command-line tools: a small, named rule set.

A script that logs a tool in with a literal argument (``wandb login <key>``, ``docker login
-p <password>``, ``aws configure set aws_secret_access_key <key>``) carries the secret as
surely as ``export WANDB_API_KEY=<key>`` does, but no variable name says so: the position
does. Each rule names the command and which argument is the credential; the value must be a
literal (``"$(cat /var/run/secrets/x)"``, ``"$KEY"`` and ``< file`` are the recommended forms
and are not hits). Long ``--password`` / ``--token`` flags are the generic flag rule's.

Each rule: ``(name shown in the finding, kind, regex whose group "value" is the secret)``,
anchored where a command starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlark_acceptance.secrets.names import Assignment

# One shell word: quoted, or unquoted up to a blank or an operator.
_WORD = r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|(?:[^\s;&|()<>"'`\\]|\\.)+)"""
_VALUE = rf"(?P<value>{_WORD})"
_START = r"(?:^|(?<=[\s;&|(`]))"  # a command starts a line or follows an operator
_GAP = r"[ \t]+(?:\\\n[ \t]*)?"  # blanks, or a continued line
# Options that take no value / take one, for the tools whose positional argument is the key.
_WANDB_FLAGS = (
    rf"(?:--(?:relogin|cloud|anonymously|verify|no-verify){_GAP}"
    rf"|--host(?:=|{_GAP}){_WORD}{_GAP})*"
)
_LOGIN_TOOLS = r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry)"
# Commands that read a credential on standard input.
_STDIN_READERS = (
    rf"{_LOGIN_TOOLS}[ \t]+login\b[^\n|;&]*--password-stdin"
    r"|gh[ \t]+auth[ \t]+login\b[^\n|;&]*--with-token"
    r"|wandb[ \t]+login\b[^\n|;&]*"
)

_ARG, _CLOUD = "command-argument", "cloud-secret-key"
_G, _V, _W = _GAP, _VALUE, _WORD  # short names: the table reads as the commands do
_TABLE: tuple[tuple[str, str, str], ...] = (
    ("aws configure set", _CLOUD,
     rf"aws{_G}(?:--profile{_G}\S+{_G})?configure{_G}set{_G}(?:--profile{_G}\S+{_G})?"
     rf"(?:[\w.-]*\.)?(?:aws_secret_access_key|aws_session_token|secret_key|session_token){_G}{_V}"),
    ("wandb login", _ARG, rf"wandb{_G}login{_G}{_WANDB_FLAGS}{_V}"),
    ("docker login -p", _ARG, rf"{_LOGIN_TOOLS}{_G}login\b[^\n;&|]*?{_G}-p(?:{_G}|=)?{_V}"),
    ("npm config set _authToken", _ARG,
     rf"(?:npm|pnpm|yarn){_G}config{_G}set{_G}"
     rf"(?:\S*:)?(?:_authToken|_auth|_password|npmAuthToken)(?:=|{_G}){_V}"),
    ("pip config set password", _ARG,
     rf"(?:pip3?|python3?{_G}-m{_G}pip){_G}config{_G}"
     rf"(?:--(?:global|user|site){_G})?set{_G}[\w.-]*(?:password|token){_G}{_V}"),
    ("poetry config http-basic", _ARG, rf"poetry{_G}config{_G}http-basic\.\S+{_G}{_W}{_G}{_V}"),
    ("poetry config pypi-token", _ARG, rf"poetry{_G}config{_G}pypi-token\.\S+{_G}{_V}"),
    ("mc alias set", _CLOUD,
     rf"mc{_G}(?:alias{_G}set|config{_G}host{_G}add){_G}{_W}{_G}{_W}{_G}{_W}{_G}{_V}"),
    ("kubectl create secret --from-literal", _ARG,
     rf"kubectl{_G}create{_G}secret\b[^\n;&|]*?--from-literal=[\w.-]+={_V}"),
    ("a login's standard input", _ARG,
     rf"(?:echo|printf)(?:{_G}-[neE]+)?{_G}{_V}[ \t]*\|[ \t]*(?:{_STDIN_READERS})"),
    ("a login's standard input", _ARG,
     rf"(?:{_STDIN_READERS})[^\n|;&]*<<<[ \t]*{_V}"),
)  # fmt: skip
_RULES = tuple((name, kind, re.compile(_START + regex)) for name, kind, regex in _TABLE)

# Cheap pre-check: most scripts name none of these tools.
_TOOLS = re.compile(r"\b(?:aws|wandb|login|npm|pnpm|yarn|pip3?|poetry|mc|kubectl)\b")


def command_assignments(text: str) -> Iterator[Assignment]:
    """Each literal-looking credential argument of a known command, as an assignment the
    scanner judges like ``NAME=value`` (references and placeholders are not literals)."""
    if not _TOOLS.search(text):
        return
    for name, kind, regex in _RULES:
        for m in regex.finditer(text):
            if m.group("value").startswith("-"):
                continue  # the next option (`wandb login --relogin`), not a value
            yield Assignment(name, m.start("value"), m.end("value"), kind)
