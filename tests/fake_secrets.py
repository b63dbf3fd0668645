"""Fake but well-formed secrets of every kind the scanner knows, built at run time.

Each value is assembled from pieces and random characters, so that no realistic secret literal
sits in the repository (secret scanners on the repository would flag it, and the project's own
scan must stay clean).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


class FakeSecrets:
    """A source of fake secrets; seeded for reproducible unit tests, random otherwise."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def rand(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, n: int) -> str:
        """Random alnum with at least one upper, lower and digit, like real keys."""
        tail = self.rand(string.ascii_uppercase, 1) + self.rand("abcdefgh", 1) + "7"
        return self.rand(ALNUM, n - 3) + tail

    def pem(self, label: str = "RSA PRIVATE KEY") -> str:
        dash = "-" * 5
        body = "\n".join(self.rand(ALNUM + "+/", 64) for _ in range(6))
        return f"{dash}BEGIN {label}{dash}\n{body}\n{dash}END {label}{dash}\n"

    def jwt(self) -> str:
        head = b64url({"alg": "HS256", "typ": "JWT"})
        return f"{head}.{b64url({'sub': self.rand(ALNUM, 8)})}.{self.rand(ALNUM + '-_', 43)}"

    def format_tokens(self) -> dict[str, str]:
        """One token per format rule (detect-secrets plugins and the scanner's own), by kind."""
        r, m = self.rand, self.mixed
        return {
            "private-key": self.pem(),
            "aws-access-key": "AK" + "IA" + r(string.ascii_uppercase + "234567", 16),
            "github-token": "gh" + "p_" + r(ALNUM, 36),
            "gitlab-token": "gl" + "pat-" + r(ALNUM, 20),
            "slack-token": "xo" + "xb-" + r(string.digits, 12) + "-" + r(string.digits, 12)
            + "-" + r(string.ascii_lowercase + string.digits, 24),
            "jwt": self.jwt(),
            "azure-storage-key": r(ALNUM + "+/", 86) + "==",
            "openai-key": "s" + "k-proj-" + m(48),
            "stripe-key": "sk" + "_live_" + r(ALNUM, 24),
            "sendgrid-key": "S" + "G." + r(ALNUM, 22) + "." + r(ALNUM, 43),
            "pypi-token": "py" + "pi-AgEIcHlwaS5vcmc" + r(ALNUM, 80),
            "npm-token": "n" + "pm_" + r(ALNUM, 36),
            "square-secret": "sq0" + "csp-" + r(ALNUM, 43),  # pragma: allowlist secret
            "huggingface-token": "h" + "f_" + r(string.ascii_letters, 32) + "aB",
            "google-api-key": "AI" + "za" + r(ALNUM, 35),
        }  # fmt: skip


def b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Planted:
    """One planted secret: where it went, the kind the scanner should name, the value."""

    where: str
    kind: str
    value: str

    def needles(self) -> list[str]:
        """What must never appear in an artefact: the value, or each line of a multi-line one
        (a JSON or XML writer escapes the line breaks)."""
        lines = [ln for ln in self.value.splitlines() if len(ln) >= 8 and "-----" not in ln]
        return lines if "\n" in self.value.strip() else [self.value]
