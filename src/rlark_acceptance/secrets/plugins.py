"""The detect-secrets wrapper: its specific-format plugins, run safely.

The plugins (private key markers, AWS, GitHub, GitLab, Slack, JWT, Azure storage, OpenAI,
Stripe, SendGrid, PyPI, npm, Square) are run through their compiled ``denylist`` regexes and
confirmed with the plugin's own ``analyze_string``. We never call ``analyze_line`` /
``scan_line``: those read detect-secrets' process-global settings and may try network
verification. Its entropy and keyword plugins are not used: entropy flags image digests, git
SHAs and UUIDs, and the keyword plugin misses ``*_TOKEN`` names and flags references.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rlark_acceptance.secrets.hits import Found


@dataclass(frozen=True)
class _LibRule:
    kind: str
    plugin: Any  # a detect_secrets RegexBasedDetector instance
    regex: re.Pattern[str]
    needles: tuple[str, ...]  # lower-case substrings a match must contain


# Cheap substring pre-checks: most strings skip most regexes, and some library regexes
# (npm's "//.+/:_authToken") are quadratic on long lines without their anchor text.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "private-key": ("private key", "putty-user-key-file"),
    "aws-access-key": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "gitlab-token": ("gl", "gr1348941"),
    "slack-token": ("xox", "hooks.slack.com"),
    "jwt": ("eyj",),
    "azure-storage-key": ("accountkey=",),
    "openai-key": ("t3blbkfj",),
    "stripe-key": ("k_live_",),
    "sendgrid-key": ("sg.",),
    "pypi-token": ("pypi-",),
    "npm-token": ("_authtoken",),
    "square-secret": ("sq0csp-",),
}


@functools.cache
def _lib_rules() -> tuple[_LibRule, ...]:
    """Plugin instances are built once (imports are lazy so importing this module is cheap).

    RegexBasedDetector instances hold no state besides class-level compiled regexes, so
    sharing them between threads is safe; functools.cache may build twice under a race,
    which is harmless.
    """
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector

    table: list[tuple[str, Any]] = [
        ("private-key", PrivateKeyDetector()),
        ("aws-access-key", AWSKeyDetector()),  # 2nd regex: quoted secret key, see plugin_found
        ("github-token", GitHubTokenDetector()),
        ("gitlab-token", GitLabTokenDetector()),
        ("slack-token", SlackDetector()),
        ("jwt", JwtTokenDetector()),
        ("azure-storage-key", AzureStorageKeyDetector()),
        ("openai-key", OpenAIDetector()),
        ("stripe-key", StripeDetector()),
        ("sendgrid-key", SendGridDetector()),
        ("pypi-token", PypiTokenDetector()),
        ("npm-token", NpmDetector()),
        ("square-secret", SquareOAuthDetector()),
    ]
    return tuple(
        _LibRule(kind, plugin, regex, _NEEDLES[kind])
        for kind, plugin in table
        for regex in plugin.denylist
    )


_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-]")
_JWT_CHAR = re.compile(r"[A-Za-z0-9_\-.=]")
_B64_CHAR = re.compile(r"[A-Za-z0-9+/=]")
_UPPER_ALNUM = re.compile(r"[A-Z0-9]")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|Private-MAC: *[0-9a-f]*")
_AKIA = re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")


def _extend_token(text: str, end: int, chars: re.Pattern[str] = _TOKEN_CHAR) -> int:
    # Library regexes often stop at a fixed length (the JWT one before the signature);
    # redaction must cover the whole token.
    while end < len(text) and chars.match(text, end):
        end += 1
    return end


_KEY_BODY_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{16,}|[\w-]+: [^\n]*)?[ \t]*\r?(?:\n|$)")


@functools.lru_cache(maxsize=16)
def _pem_ends(text: str) -> list[tuple[int, int]]:
    # Found once per text: many BEGIN lines without END would otherwise rescan the rest.
    return [m.span() for m in _PEM_END.finditer(text)]


def pem_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a ``BEGIN ... PRIVATE KEY`` marker to the whole block for redaction."""
    if text[max(0, start - 5) : start] == "-----":
        start -= 5
    ends = _pem_ends(text)
    i = bisect.bisect_left(ends, (end, -1))
    if i < len(ends):
        return start, ends[i][1]
    # No END line (a truncated key): the rest of the marker line and the base64 / header
    # lines after it are key material; stop at the first line that is not.
    nl = text.find("\n", end)
    if nl < 0:
        return start, len(text)
    end = nl + 1
    while end < len(text) and (b := _KEY_BODY_LINE.match(text, end)) and b.end() > end:
        if not b.group(0).strip():
            break  # a blank line ends the key
        end = b.end()
    return start, end


def plugin_found(text: str) -> Iterator[Found]:
    low = text.lower()
    for rule in _lib_rules():
        if not any(n in low for n in rule.needles):
            continue
        covered = 0  # end of the last (extended) hit: matches inside it are the same token
        for m in rule.regex.finditer(text):
            if m.start() < covered:
                continue
            # The plugin's own analyze_string confirms the match (e.g. JWT segments must
            # decode to JSON); it is a pure function of its argument.
            if not any(True for _ in rule.plugin.analyze_string(m.group(0))):
                continue
            start, end = m.span()
            # A capture group of real length is the secret (AWS quoted key, npm token); short
            # groups are only prefixes (GitLab "glpat") and the whole match is the token.
            groups = [g for g in range(1, (rule.regex.groups or 0) + 1) if m.group(g)]
            long_groups = [g for g in groups if len(m.group(g)) >= 16]
            if long_groups:
                start, end = m.span(long_groups[0])
            kind = rule.kind
            if kind == "private-key":
                # Keys carry PEM armour; a bare marker (grep "BEGIN ... KEY") does not.
                if text[max(0, start - 5) : start] != "-----" and not m.group(0).startswith(
                    "PuTTY"
                ):
                    continue
                start, end = pem_span(text, start, end)
            elif kind == "aws-access-key":
                if _AKIA.fullmatch(text, start, end):
                    # Inside a longer upper-case run it is not a key ID.
                    if (start > 0 and _UPPER_ALNUM.match(text, start - 1)) or (
                        end < len(text) and _UPPER_ALNUM.match(text, end)
                    ):
                        continue
                else:
                    kind = "cloud-secret-key"
            elif kind == "jwt":
                end = _extend_token(text, end, _JWT_CHAR)
            elif kind == "azure-storage-key":
                start += len("AccountKey=")
                end = _extend_base64(text, end)
            else:
                end = _extend_token(text, end)
            covered = end
            yield Found(kind, None, start, end, strong=True)


def _extend_base64(text: str, end: int) -> int:
    while end < len(text) and _B64_CHAR.match(text, end):
        end += 1
    return end
