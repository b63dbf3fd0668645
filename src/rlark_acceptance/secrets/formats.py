"""The scanner's own format rules: formats detect-secrets lacks, URL credentials, base64."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from rlark_acceptance.secrets.docker_auth import docker_auth_found
from rlark_acceptance.secrets.hits import Found
from rlark_acceptance.secrets.names import URL_CREDS, is_literal
from rlark_acceptance.secrets.plugins import pem_span, plugin_found


def _mixed(s: str) -> bool:
    """Random keys mix upper, lower and digits; identifiers and model names rarely all three."""
    return (
        any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
    )


def _mixed_case(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s)


# (kind, regex, group holding the secret, validator of that group)
_OWN_RULES: tuple[tuple[str, re.Pattern[str], int, Any], ...] = (
    # PKCS#8 ENCRYPTED keys and PuTTY v3 files are not in detect-secrets' marker list.
    ("private-key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"), 0, None),
    ("private-key", re.compile(r"PuTTY-User-Key-File-\d+:"), 0, None),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), 0, None),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0, _mixed_case),
    ("openai-key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), 0, lambda s: _mixed(s[3:])),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), 0, None),
    ("stripe-key", re.compile(r"\b[sr]k_(?:live|test)_[0-9A-Za-z]{24,}"), 0, None),
    ("slack-token", re.compile(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), 0, None),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0, None),
    (
        "azure-storage-key",
        re.compile(r"\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})"),
        1,
        None,
    ),
)


def _own_found(text: str) -> Iterator[Found]:
    for kind, regex, group, valid in _OWN_RULES:
        for m in regex.finditer(text):
            if valid is not None and not valid(m.group(group)):
                continue
            start, end = m.span(group)
            if kind == "private-key":
                start, end = pem_span(text, start, end)
            yield Found(kind, None, start, end, strong=True)


def _url_found(text: str) -> Iterator[Found]:
    if "://" not in text or "@" not in text:
        return
    for m in URL_CREDS.finditer(text):
        if not is_literal(m.group("pw")):
            continue  # https://user:${PASS}@host
        yield Found("url-credentials", None, m.start("user"), m.end("pw"), strong=True)


# user:password@registry/repository[:tag]: an image reference with credentials (no scheme, so
# the URL rule misses it). The registry must look like a host (a dot, a port or localhost) and
# a path must follow, which keeps `repo:tag@sha256:<digest>` and `user@host` out.
_IMAGE_CREDS = re.compile(
    r"(?<![\w.\-/:@])(?P<user>[A-Za-z0-9][\w.\-]*):(?P<pw>[^\s/@:'\"`]+)@"
    r"(?:[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+|[A-Za-z0-9.\-]+:\d+|localhost)/"
)


def _image_found(text: str) -> Iterator[Found]:
    if "@" not in text:
        return
    for m in _IMAGE_CREDS.finditer(text):
        if not is_literal(m.group("pw")):
            continue  # user:${REGISTRY_PASSWORD}@registry/...
        yield Found("registry-credentials", None, m.start("user"), m.end("pw"), strong=True)


_B64_BLOB = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_\-])")


def b64_found(text: str) -> Iterator[Found]:
    """A key hidden as base64 (``echo LS0t... | base64 -d > id_rsa``) is still a key.

    Only format rules run on the decoded text, so base64 of ordinary config, digests and
    hashes (which decode to binary or to harmless text) produce nothing.
    """
    for m in _B64_BLOB.finditer(text):
        blob = m.group(0)
        if len(blob) % 4:
            continue
        try:
            decoded = base64.b64decode(blob, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        kinds = {f.kind for f in format_found(decoded)}
        for kind in sorted(kinds):
            yield Found(kind, None, m.start(), m.end(), strong=True, encoded=True)


def format_found(text: str) -> list[Found]:
    return [
        *plugin_found(text),
        *_own_found(text),
        *_url_found(text),
        *_image_found(text),
        *docker_auth_found(text),
    ]
