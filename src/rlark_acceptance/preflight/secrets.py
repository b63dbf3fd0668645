"""Secret scan for the strings and scripts of an RLark Job YAML (DOC-CHECKS 3.6 / 5.8).

Finds private keys, cloud / object-storage keys, well-known token formats, credentials in
URLs and *literal* values of variables named like passwords, secrets, tokens or keys.
References (``${HF_TOKEN}``, ``$(cat /run/secrets/x)``, file paths) are not secrets.

A hit never carries the value: only its kind, the variable name and the line.

Example::

    >>> [h.kind for h in scan_value("DB_PASSWORD", "hunter2")]
    ['secret-variable']
    >>> scan_value("HF_TOKEN", "${HF_TOKEN}")
    []
    >>> redact("export DB_PASSWORD=hunter2 && run")
    'export DB_PASSWORD=*** && run'

Library use: the specific-format plugins of detect-secrets (private key markers, AWS, GitHub,
GitLab, Slack, JWT, Azure storage, OpenAI, Stripe, SendGrid, PyPI, npm, Square) are run through
their compiled ``denylist`` regexes and confirmed with the plugin's own ``analyze_string``. We
never call ``analyze_line`` / ``scan_line``: those read detect-secrets' process-global settings
and may try network verification. Its entropy and keyword plugins are not used: entropy flags
image digests, git SHAs and UUIDs, and the keyword plugin misses ``*_TOKEN`` names and flags
references. Names, URLs, flags and formats the library lacks are small rules below.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SecretHit", "dotted", "redact", "scan_script", "scan_tree", "scan_value"]

REDACTED = "***"


@dataclass(frozen=True)
class SecretHit:
    """One secret found; carries no part of the value."""

    kind: str  # stable kebab-case code, see _KIND_TEXT
    name: str | None  # variable / YAML key / flag name when known
    line: int  # 0-based line offset inside the scanned text
    description: str  # human text, never contains the value


# Human text per kind; the keys are the stable codes callers may match on.
_KIND_TEXT: dict[str, str] = {
    "private-key": "private key",
    "aws-access-key": "AWS access key ID",
    "cloud-secret-key": "cloud / object-storage secret key",
    "github-token": "GitHub token",
    "gitlab-token": "GitLab token",
    "slack-token": "Slack token or webhook",
    "huggingface-token": "Hugging Face token",
    "openai-key": "OpenAI-style API key (sk-...)",
    "google-api-key": "Google API key",
    "stripe-key": "Stripe secret key",
    "sendgrid-key": "SendGrid API key",
    "pypi-token": "PyPI token",
    "npm-token": "npm token",
    "square-secret": "Square OAuth secret",  # pragma: allowlist secret
    "jwt": "JSON Web Token",
    "azure-storage-key": "Azure storage / shared access key",
    "url-credentials": "credentials embedded in a URL",
    "auth-header": "literal Authorization header credential",
    "secret-variable": "literal secret value",
}


@dataclass
class _Found:
    """Internal hit with the value's span, used for naming and redaction."""

    kind: str
    name: str | None
    start: int
    end: int
    strong: bool  # format / URL match (True) or name-based literal (False)
    encoded: bool = False  # found inside a base64 blob


# --------------------------------------------------------------------------- detect-secrets


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
        ("aws-access-key", AWSKeyDetector()),  # 2nd regex: quoted secret key, see _lib_found
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


def _pem_span(text: str, start: int, end: int) -> tuple[int, int]:
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


def _lib_found(text: str) -> Iterator[_Found]:
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
                start, end = _pem_span(text, start, end)
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
            yield _Found(kind, None, start, end, strong=True)


def _extend_base64(text: str, end: int) -> int:
    while end < len(text) and _B64_CHAR.match(text, end):
        end += 1
    return end


# --------------------------------------------------------------------------- own format rules


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


def _own_found(text: str) -> Iterator[_Found]:
    for kind, regex, group, valid in _OWN_RULES:
        for m in regex.finditer(text):
            if valid is not None and not valid(m.group(group)):
                continue
            start, end = m.span(group)
            if kind == "private-key":
                start, end = _pem_span(text, start, end)
            yield _Found(kind, None, start, end, strong=True)


# user:password@ in any scheme://, also s3://<key id>:<secret>@bucket; both parts redacted.
_URL_CREDS = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://(?P<user>[^\s:/?#\[\]@'\"`]*):(?P<pw>[^\s/?#\[\]@'\"`]+)@"
)


def _url_found(text: str) -> Iterator[_Found]:
    if "://" not in text or "@" not in text:
        return
    for m in _URL_CREDS.finditer(text):
        if not _is_literal(m.group("pw")):
            continue  # https://user:${PASS}@host
        yield _Found("url-credentials", None, m.start("user"), m.end("pw"), strong=True)


_B64_BLOB = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/]{40,}={0,2}(?![A-Za-z0-9+/=_\-])")


def _b64_found(text: str) -> Iterator[_Found]:
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
        kinds = {f.kind for f in _format_found(decoded)}
        for kind in sorted(kinds):
            yield _Found(kind, None, m.start(), m.end(), strong=True, encoded=True)


def _format_found(text: str) -> list[_Found]:
    return [*_lib_found(text), *_own_found(text), *_url_found(text)]


# --------------------------------------------------------------------------- names and values

# Names are split into lower-case words; the LAST word decides (HF_TOKEN yes, HF_TOKEN_PATH,
# KEY_FILE, SECRETS_DIR, TOKENIZERS_PARALLELISM, SSH_KEY_BITS no).
_PASSWORD_WORDS = frozenset({"password", "passwd", "passwords", "pwd", "passphrase"})
_CREDENTIAL_WORDS = frozenset({"credential", "credentials", "creds", "authorization"})
# "<x>_token" is not a secret for tokenizer / counting words.
_TOKEN_NOT_SECRET = frozenset(
    {
        "pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "start", "end", "stop",
        "max", "min", "num", "n", "total", "new", "image", "img", "vision", "video", "audio",
        "placeholder", "think", "answer", "action", "prompt", "chat", "eot", "eom", "split",
        "first", "last", "next", "per", "dummy", "use", "vocab", "context", "reward",
    }
)  # fmt: skip
_PASS_NOT_SECRET = frozenset(
    {"first", "second", "last", "num", "n", "multi", "single", "forward", "backward", "fwd",
     "bwd", "skip", "max", "min", "by", "one", "two"}
)  # fmt: skip
# "<x>_key" is a secret only for these x: data.prompt_key, reward_key, sort_key, SSH_KEY_BITS
# (last word "bits") and bare "key" (secretKeyRef.key) are not.
_KEY_SECRET_PREV = frozenset(
    {
        "api", "access", "secret", "private", "priv", "auth", "client", "account", "service",
        "master", "encryption", "encrypt", "signing", "sign", "hmac", "license", "session",
        "app", "admin", "deploy", "storage", "shared", "consumer", "ssh", "gpg", "pgp", "rsa",
        "tls", "ssl", "jwt", "db", "database", "wandb", "openai", "anthropic", "hf",
        "huggingface", "comet", "neptune", "github", "gitlab", "slack", "stripe", "sendgrid",
        "aws", "gcp", "azure", "minio", "oss", "cos", "obs",
    }
)  # fmt: skip
_CLOUD_WORDS = frozenset(
    {"aws", "s3", "minio", "oss", "obs", "cos", "gcs", "gcp", "google", "azure", "r2", "b2",
     "boto", "ceph", "rgw", "storage", "bucket", "aliyun", "tencent", "huawei"}
)  # fmt: skip
_SPLIT_SUFFIXES = ("password", "passwd", "secret", "token", "key")


def _name_words(name: str) -> list[str]:
    # Last segment of a dotted / path-like key (runner.logger.wandb.api_key, env[HF_TOKEN]).
    seg = [s for s in re.split(r"[./\[\]\s]", name.strip().lstrip("-+")) if s]
    if not seg:
        return []
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", seg[-1])
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    words: list[str] = []
    for w in re.split(r"[_\-]+", s.lower()):
        if not w:
            continue
        # apikey -> api key, authtoken -> auth token (monkey -> mon key: "mon" is not secret).
        for suffix in _SPLIT_SUFFIXES:
            if w != suffix and w.endswith(suffix) and len(w) - len(suffix) >= 2:
                words += [w[: -len(suffix)], suffix]
                break
        else:
            words.append(w)
    return words


def secret_name_kind(name: str | None) -> str | None:
    """The hit kind a literal value of ``name`` would get, or None for ordinary names.

    >>> secret_name_kind("AWS_SECRET_ACCESS_KEY"), secret_name_kind("MAX_TOKENS")
    ('cloud-secret-key', None)
    """
    if not name:
        return None
    words = _name_words(name)
    if not words:
        return None
    last, prev = words[-1], (words[-2] if len(words) > 1 else None)
    if last in _PASSWORD_WORDS or last in _CREDENTIAL_WORDS:
        return "secret-variable"
    if last == "pass":
        return None if prev in _PASS_NOT_SECRET else "secret-variable"
    if last == "token":
        if prev in _TOKEN_NOT_SECRET:
            return None
        return "cloud-secret-key" if _CLOUD_WORDS.intersection(words) else "secret-variable"
    if last == "secret" or (last == "key" and prev in _KEY_SECRET_PREV):
        cloudish = _CLOUD_WORDS.intersection(words) or (
            last == "key" and prev in {"secret", "access", "account", "storage"}
        )
        return "cloud-secret-key" if cloudish else "secret-variable"
    return None


_BOOL_NULL = frozenset(
    {"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "~", "enabled",
     "disabled", "enable", "disable", "auto", "required", "optional"}
)  # fmt: skip
_NUMBER = re.compile(r"[+-]?(?:\d{1,5}(?:\.\d*)?|\d*\.\d+)(?:[eE][+-]?\d+)?")
# a/b/c.ext, or a bare file name with a typical secret-file extension (HF_TOKEN=token.txt).
_REL_PATH = re.compile(
    r"[\w.\-]+(?:/[\w.\-]+)+\.[A-Za-z]{2,5}"
    r"|[\w.\-]+\.(?i:txt|json|pem|key|ya?ml|env|cfg|conf|ini|crt|p12|pfx|jks|toml|token)"
)
_URL_REF = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S*")
_PLACEHOLDER = re.compile(
    r"<[^<>]*>|\{\{.*\}\}|\*+|[xX]{3,}|\.\.\.|…|(?i:redacted|str|string|bytes|any)"
    r"|(?i:.*placeholder.*|your[-_ ]?\w*)"
)
# A name-like value (another variable, attribute chain, subscript, format field, the start of
# a mapping / list) is code or config structure, not a literal: token=token,
# secret_key=creds.secret_key, access_key=creds['AccessKeyId'], Credential={key}/{scope}.
_IDENT_CHAIN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CODE_REF = re.compile(r"\w[\[(]|\{[A-Za-z_][\w.]*(?:\}|$)|^[\[{]")


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    return v


def _is_literal(value: str) -> bool:
    """True when ``value`` is a literal secret, not a reference, path, flag or setting."""
    v = _unquote(value).rstrip(",")
    if not v or v[0] in "$`" or "${" in v or "$(" in v:
        return False  # empty or shell / Kubernetes $(VAR) reference
    if _CODE_REF.search(v) or (
        ("_" in v or "." in v) and _IDENT_CHAIN.fullmatch(v) and secret_name_kind(v)
    ):
        return False  # another variable: aws_session_token=aws_session_token
    if v.lower() in _BOOL_NULL or _NUMBER.fullmatch(v):
        # Booleans and short numbers (ports, counts, 4096): settings, not secrets. Numbers of
        # six or more digits stay suspicious (DB_PASSWORD=123456).
        return False
    if v.startswith(("/", "./", "../", "~/", "file:")) or _REL_PATH.fullmatch(v):
        return False  # a path to a mounted secret file is the recommended pattern
    if _URL_REF.fullmatch(v) and not _URL_CREDS.search(v):
        return False  # vault://..., https://secret-manager/...; URL credentials have own rule
    if v.lower().startswith(("arn:", "secretsmanager:", "vault:", "gcp-secret:", "projects/")):
        return False  # secret-manager references
    return not _PLACEHOLDER.fullmatch(v)


@dataclass(frozen=True)
class _Assign:
    name: str
    start: int  # span of the value (quotes included)
    end: int
    kind: str | None  # secret_name_kind(name) or the fixed kind of the rule


_VALUE = r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|(?:[^\s;&|()<>"'`\\]|\\.)*)"""
# NAME=value as in `export X=..`, `X=.. cmd`, `env X=..`, `-e "X=.."` and Hydra key=value.
_SHELL_ASSIGN = re.compile(r"(?<![^\s;&|(`\"'])(?P<name>\+{0,2}[A-Za-z_][\w.]*)=" + _VALUE)
# --password foo / --api-key=foo (long flags only: -p is mkdir/ssh port as often as password).
_FLAG = re.compile(
    r"(?<![^\s\"'])--(?P<name>[A-Za-z][\w.\-]*)(?:=|[ \t]+(?:\\\n[ \t]*)?)"
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|(?:[^\s;&|()<>"'`\\]|\\.)+)"""
)
# key: value at the start of a line (YAML / config heredocs, .env-like files).
_YAML_ASSIGN = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?["']?(?P<name>[A-Za-z_][\w.\-]*)["']?[ \t]*:[ \t]+"""
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\n#,}]*[^\s#,}])""",
    re.MULTILINE,
)
# "key": "value" in JSON.
_JSON_ASSIGN = re.compile(
    r'"(?P<name>[A-Za-z_][\w.\-]*)"[ \t]*:[ \t]*(?P<value>"(?:[^"\\\n]|\\.)*")'
)
# curl -H "X-Api-Key: ..." / --header 'PRIVATE-TOKEN: ...'
_HEADER = re.compile(
    r"(?:-H|--header)[ \t]+[\"']?(?P<name>[A-Za-z][\w\-]*)[ \t]*:[ \t]*(?P<value>[^\"'\n]+)"
)
_AUTH_HEADER = re.compile(
    r"(?i)\b(?P<name>(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:bearer|basic|token|digest|apikey|api-key)[ \t]+(?P<value>[^\s\"',;]+)"
)
_SSHPASS = re.compile(r"\bsshpass[ \t]+-p[ \t]*(?P<value>[^\s;&|]+)")
_NETRC = re.compile(r"\blogin\s+\S+\s+(?P<name>password)\s+(?P<value>\S+)")


def _assignments(text: str) -> Iterator[_Assign]:
    for regex in (_SHELL_ASSIGN, _FLAG, _YAML_ASSIGN, _JSON_ASSIGN, _HEADER):
        for m in regex.finditer(text):
            name = m.group("name")
            value = m.group("value")
            if regex is _FLAG and value.startswith("-"):
                continue  # next flag, not a value
            if text[m.end("value") : m.end("value") + 1] == "(":
                continue  # key=os.environ.get(...): a call, not a literal
            if regex is _HEADER and name.lower().endswith("authorization"):
                continue  # _AUTH_HEADER strips the scheme word
            display = f"--{name}" if regex is _FLAG else name
            yield _Assign(display, m.start("value"), m.end("value"), secret_name_kind(name))
    for m in _AUTH_HEADER.finditer(text):
        yield _Assign(m.group("name"), m.start("value"), m.end("value"), "auth-header")
    for m in _SSHPASS.finditer(text):
        yield _Assign("sshpass -p", m.start("value"), m.end("value"), "secret-variable")
    for m in _NETRC.finditer(text):
        yield _Assign("password", m.start("value"), m.end("value"), "secret-variable")


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Span of the value without surrounding whitespace and one pair of quotes."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start >= 2 and text[start] == text[end - 1] and text[start] in "\"'":
        start, end = start + 1, end - 1
    return start, end


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _scan_text(text: str) -> list[_Found]:
    """All hits in ``text`` with spans: formats, URL credentials and named literal values."""
    strong = [*_format_found(text), *_b64_found(text)]
    weak: list[_Found] = []
    for a in _assignments(text):
        span = _strip_span(text, a.start, a.end)
        inside = [f for f in strong if _overlaps((f.start, f.end), span)]
        for f in inside:
            if f.name is None:
                f.name = a.name  # HF_TOKEN=hf_... reports name HF_TOKEN
        value = text[span[0] : span[1]]
        if value.lower() == a.name.lstrip("-").lower():
            continue  # token=token passes a variable on (code in a heredoc / python -c)
        if a.kind and not inside and span[0] < span[1] and _is_literal(value):
            weak.append(_Found(a.kind, a.name, span[0], span[1], strong=False))
    return _dedupe([*strong, *weak])


def _dedupe(found: Iterable[_Found]) -> list[_Found]:
    seen: dict[tuple[str, int, int], _Found] = {}
    for f in found:
        key = (f.kind, f.start, f.end)
        if key not in seen or (seen[key].name is None and f.name is not None):
            seen[key] = f
    # A weak hit nested in another weak hit (X="--password y") keeps the innermost name.
    out = sorted(seen.values(), key=lambda f: (f.start, -f.end, f.kind))
    weak = [f for f in out if not f.strong]
    return [
        f
        for f in out
        if f.strong
        or not any(
            g is not f
            and f.start <= g.start
            and g.end <= f.end
            and (g.start, g.end) != (f.start, f.end)
            for g in weak
        )
    ]


# --------------------------------------------------------------------------- public API


def _hit(text: str, f: _Found) -> SecretHit:
    value = text[f.start : f.end]
    what = _KIND_TEXT.get(f.kind, f.kind)
    if f.encoded:
        what = f"base64-encoded {what}"
    name = f.name
    # Defence in depth: a name parsed from text must not carry the value itself.
    if name and value and value in name:
        name = None
    where = f" in {name}" if name else ""
    advice = (
        "reference a Kubernetes Secret or a mounted file instead"
        if not f.strong or f.kind in ("cloud-secret-key", "url-credentials", "auth-header")
        else "remove it and rotate it"
    )
    description = f"{what}{where} (value withheld); {advice}"
    return SecretHit(f.kind, name, text.count("\n", 0, f.start), description)


def scan_script(text: str) -> list[SecretHit]:
    """Hits in a script or any free text, ordered by position.

    >>> [(h.kind, h.name) for h in scan_script("export WANDB_API_KEY=abc123def\\nrun")]
    [('secret-variable', 'WANDB_API_KEY')]
    """
    return [_hit(text, f) for f in _scan_text(text)]


def scan_value(name: str | None, value: str) -> list[SecretHit]:
    """Hits in one env var / YAML string field; ``name`` is the variable name or YAML key.

    The value is also scanned as text (it may be a script). Hits in a one-line value carry
    ``name``; hits in a multi-line value carry the name found inside it when there is one.

    >>> doc_id = "AKIAIOSFODNN7EXAMPLE"  # pragma: allowlist secret
    >>> [h.kind for h in scan_value("AWS_ACCESS_KEY_ID", doc_id)]
    ['aws-access-key']
    """
    found = _scan_text(value)
    single_line = "\n" not in value.strip()
    for f in found:
        # A one-line value is reported under its field (AZURE_CONN, not the AccountKey inside
        # it); a script carried in YAML keeps the names found inside it (DB_PASSWORD).
        if f.name is None or (single_line and name):
            f.name = name
    kind = secret_name_kind(name)
    if kind:
        span = _strip_span(value, 0, len(value))
        covered = any(_overlaps((f.start, f.end), span) for f in found)
        if not covered and _is_literal(value):
            found.append(_Found(kind, name, span[0], span[1], strong=False))
    return [_hit(value, f) for f in sorted(found, key=lambda f: (f.start, f.kind))]


def redact(text: str, extra_values: Iterable[str] = ()) -> str:
    """Replace every detected secret value, and every ``extra_values`` entry, with ``***``.

    Everything else is kept byte-identical. Once a value is detected, its other occurrences
    are redacted too (values shorter than 4 characters only where detected, so that a
    one-letter password does not blank every letter of a log).

    >>> redact("https://bob:pw1234@h/x t=abc", ["abc"])  # pragma: allowlist secret
    'https://***@h/x t=***'
    """
    spans = [(f.start, f.end) for f in _scan_text(text)]
    values = {text[s:e] for s, e in spans if e - s >= 4}
    values.update(v for v in extra_values if v)
    for v in values:
        i = text.find(v)
        while i >= 0:
            spans.append((i, i + len(v)))
            i = text.find(v, i + 1)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for s, e in _merge(spans):
        out += [text[pos:s], REDACTED]
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


TreePath = tuple[str | int, ...]


def dotted(path: TreePath) -> str:
    """``("spec", "roles", 0, "env")`` as ``spec.roles[0].env``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def scan_tree(obj: Any, path: TreePath = ()) -> list[tuple[TreePath, SecretHit]]:
    """Scan every string in a parsed YAML document; returns ``(key path, hit)`` pairs.

    Env entries ``{name: X, value: Y}`` are scanned with ``X`` as the name; scripts and
    other multi-line strings with their own lines (``hit.line``).

    >>> scan_tree({"env": [{"name": "HF_TOKEN", "value": "${HF_TOKEN}"}]})
    []
    """
    out: list[tuple[TreePath, SecretHit]] = []
    if isinstance(obj, Mapping):
        env_name = obj.get("name") if isinstance(obj.get("name"), str) else None
        for key, val in obj.items():
            sub = (*path, str(key))
            if isinstance(val, str):
                name = env_name if key == "value" and env_name else str(key)
                out += [(sub, h) for h in scan_value(name, val)]
            else:
                out += scan_tree(val, sub)
    elif isinstance(obj, Sequence) and not isinstance(obj, str | bytes):
        for i, item in enumerate(obj):
            sub = (*path, i)
            if isinstance(item, str):
                out += [(sub, h) for h in scan_value(None, item)]
            else:
                out += scan_tree(item, sub)
    return out
