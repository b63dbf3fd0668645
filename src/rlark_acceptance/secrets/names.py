"""Names and values: which names hold secrets, which values are literals, where assignments are.

A literal value of a secret-named variable is a hit; references (``${HF_TOKEN}``,
``$(cat /run/secrets/x)``, file paths, secret-manager URIs) and placeholders are not.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

# user:password@ in any scheme://, also s3://<key id>:<secret>@bucket; both parts redacted.
# Lives here because a URL without it is a reference, not a literal (see is_literal).
URL_CREDS = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.\-]*://(?P<user>[^\s:/?#\[\]@'\"`]*):(?P<pw>[^\s/?#\[\]@'\"`]+)@"
)


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
# Base64 secrets (AWS secret access keys) may start with "/" and contain more: a leading "/"
# alone does not make a value a path. A key switches between upper case, lower case and
# digits at about two of three characters (~25 times in 40); a path's words do so rarely.
_KEY_MIN_LENGTH = 30
_KEY_MIN_SWITCHES = 12
# A printf / format slot (`password %s`, `{}`, `{0}`) is filled in at run time; a capital
# letter or an upper-case name of a secret (`wandb login KEY`, `-p PASSWORD`) is prose.
_PLACEHOLDER = re.compile(
    r"<[^<>]*>|\{\{.*\}\}|\*+|[xX]{3,}|\.\.\.|…|(?i:redacted|str|string|bytes|any)"
    r"|%[-+ #0-9.]*[a-zA-Z](?:\\+[ntr])*|\{\d*\}"
    r"|[A-Z]|(?:[A-Z]+_)*(?:KEY|PASSWORD|SECRET|TOKEN|PASS|VALUE|CREDENTIALS?)"
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


def _class(c: str) -> int:
    return 0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3


def _looks_like_a_key(v: str) -> bool:
    """A base64 key that happens to contain "/" (a path has no "+" and reads as words)."""
    if "+" in v:
        return True
    chars = [_class(c) for c in v if c.isalnum()]
    switches = sum(a != b for a, b in itertools.pairwise(chars))
    return len(v) >= _KEY_MIN_LENGTH and switches >= _KEY_MIN_SWITCHES


def is_literal(value: str) -> bool:
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
    if (
        v.startswith(("/", "./", "../", "~/", "file:")) and not _looks_like_a_key(v)
    ) or _REL_PATH.fullmatch(v):
        return False  # a path to a mounted secret file is the recommended pattern
    if _URL_REF.fullmatch(v) and not URL_CREDS.search(v):
        return False  # vault://..., https://secret-manager/...; URL credentials have own rule
    if v.lower().startswith(("arn:", "secretsmanager:", "vault:", "gcp-secret:", "projects/")):
        return False  # secret-manager references
    return not _PLACEHOLDER.fullmatch(v)


@dataclass(frozen=True)
class Assignment:
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
# Its value as a shell word, like a long flag's (a parenthesis starts no literal: a
# finding's own "sshpass -p (value withheld)" is not a password).
_SSHPASS = re.compile(
    r"\bsshpass[ \t]+-p[ \t]*"
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|(?:[^\s;&|()<>"'`\\]|\\.)+)"""
)
# A .netrc line; the value stops at a quote, which closes the string that writes the line.
_NETRC = re.compile(r"\blogin\s+\S+\s+(?P<name>password)\s+(?P<value>[^\s'\"]+)")


# name=value inside a comma-separated option string (a mount's "vers=4,password=x,ro",
# "-o user=u,password=x"): the shell rule stops only at blanks, so its value would swallow the
# options that follow.
_OPTION_ASSIGN = re.compile(
    r"(?<![^\s,\"'])(?P<name>[A-Za-z_][\w.\-]*)=(?P<value>[^\s,;&|()<>\"'`\\]+)(?=,|\s|$|[\"'])"
)
# A secret-named word followed by a token as a command argument: `echo apikey X`,
# `login --user u password X`, `tool token X`. Prose ("token budget", "password reset") is
# not a hit: the value must look generated (8+ characters mixing letters and digits).
# The value is matched inside a lookahead: it may be the name of the next pair
# (`set aws_secret_access_key X`), which a consumed match would hide.
_POSITIONAL = re.compile(
    r"(?<![^\s\"'])(?P<name>[A-Za-z][A-Za-z0-9_]*)[ \t]+"
    r"(?=(?P<value>[^\s;&|()<>\"'`\\=:]{8,})(?:[\s;&|)\"']|$))"
)


def _generated(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def assignments(text: str) -> Iterator[Assignment]:
    if "=" in text and "," in text:
        for m in _OPTION_ASSIGN.finditer(text):
            name = m.group("name")
            yield Assignment(name, m.start("value"), m.end("value"), secret_name_kind(name))
    for m in _POSITIONAL.finditer(text):
        name, value = m.group("name"), m.group("value")
        kind = secret_name_kind(name)
        if kind and _generated(value):
            yield Assignment(name, m.start("value"), m.end("value"), kind)
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
            yield Assignment(display, m.start("value"), m.end("value"), secret_name_kind(name))
    for m in _AUTH_HEADER.finditer(text):
        yield Assignment(m.group("name"), m.start("value"), m.end("value"), "auth-header")
    for m in _SSHPASS.finditer(text):
        yield Assignment("sshpass -p", m.start("value"), m.end("value"), "secret-variable")
    for m in _NETRC.finditer(text):
        yield Assignment("password", m.start("value"), m.end("value"), "secret-variable")


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Span of the value without surrounding whitespace and one pair of quotes."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start >= 2 and text[start] == text[end - 1] and text[start] in "\"'":
        start, end = start + 1, end - 1
    return start, end


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]
