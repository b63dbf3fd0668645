"""What a secret hit is: its stable kind code, its human text, and no part of the value."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

REDACTED = "***"


@dataclass(frozen=True)
class SecretHit:
    """One secret found; carries no part of the value."""

    kind: str  # stable kebab-case code, see KIND_TEXT
    name: str | None  # variable / YAML key / flag name when known
    line: int  # 0-based line offset inside the scanned text
    description: str  # human text, never contains the value


# Human text per kind; the keys are the stable codes callers may match on.
KIND_TEXT: dict[str, str] = {
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
    "registry-credentials": "credentials embedded in an image reference",
    "auth-header": "literal Authorization header credential",
    "command-argument": "literal credential given to a command",
    "docker-auth": "registry credentials in a Docker auth config",
    "secret-variable": "literal secret value",
}


@dataclass
class Found:
    """Internal hit with the value's span, used for naming and redaction."""

    kind: str
    name: str | None
    start: int
    end: int
    strong: bool  # format / URL match (True) or name-based literal (False)
    encoded: bool = False  # found inside a base64 blob


def to_hits(text: str, found: list[Found]) -> list[SecretHit]:
    """The hits of ``text``; its newline offsets are found once, so that a text with
    thousands of hits is not rescanned for each (and no text is kept after the call)."""
    newlines = [i for i, c in enumerate(text) if c == "\n"] if found else []
    return [to_hit(text, f, bisect.bisect_left(newlines, f.start)) for f in found]


def to_hit(text: str, f: Found, line: int) -> SecretHit:
    value = text[f.start : f.end]
    what = KIND_TEXT.get(f.kind, f.kind)
    if f.encoded:
        what = f"base64-encoded {what}"
    name = f.name
    # Defence in depth: a name parsed from text must not carry the value itself.
    if name and value and (value in name or (len(name) >= 8 and name in value)):
        name = None
    where = f" in {name}" if name else ""
    advice = (
        "reference a Kubernetes Secret or a mounted file instead"
        if not f.strong
        or f.kind in ("cloud-secret-key", "url-credentials", "registry-credentials", "auth-header")
        else "remove it and rotate it"
    )
    description = f"{what}{where} (value withheld); {advice}"
    return SecretHit(f.kind, name, line, description)
