"""Registry credentials in Docker's auth config (``~/.docker/config.json``, ``DOCKER_AUTH_CONFIG``).

Docker keeps a registry login as ``{"auths": {"<host>": {"auth": "<base64 of user:password>"}}}``;
a Job that writes that file, or passes it in an env value, carries the password in base64, where
no format rule sees it. An ``auth`` field counts when it decodes to ``user:password``
with a literal password; the whole config given as base64 (a Kubernetes
``.dockerconfigjson`` value, ``echo <b64> | base64 -d > config.json``) is decoded by the
scanner's base64 rule and lands here as JSON. ``"password"`` and ``"identitytoken"`` fields
are secret-named keys, found by the JSON assignment rule.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from rlark_acceptance.secrets.hits import Found
from rlark_acceptance.secrets.names import is_literal

# "auth": "<base64>", also JSON escaped inside another string (\"auth\": \"...\").
_AUTH = re.compile(r'\\*"auth\\*"[ \t]*:[ \t]*\\*"(?P<value>[A-Za-z0-9+/]{4,}={0,2})\\*"')


def docker_auth_found(text: str) -> Iterator[Found]:
    if '"auths' not in text and 'auths\\"' not in text:
        return
    for m in _AUTH.finditer(text):
        if _credentials(m.group("value")):
            yield Found("docker-auth", None, m.start("value"), m.end("value"), strong=True)


def _credentials(blob: str) -> bool:
    """True when ``blob`` is base64 of ``user:password`` with a literal password."""
    try:
        decoded = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password) and decoded.isprintable() and is_literal(password)
