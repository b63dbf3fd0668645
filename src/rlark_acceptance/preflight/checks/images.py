"""Image references: is one valid, and is its tag pinned (P.1, 3.4)?

Valid means what the container runtime accepts: the reference grammar of the distribution
project (``name[:tag][@digest]``, which containerd and the kubelet parse with), with its
digest rules (a registered algorithm, its length of lowercase hex) and Docker's rule that a
64-hex name is an image ID, not a repository. Anything else fails at the runtime's pull,
after submission; here it fails before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_NAME = rf"(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?")
NAME_MAX = 255
# The algorithms a digest may name, and the length of their hex encoding.
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}
_IMAGE_ID = re.compile(r"[a-f0-9]{64}")
# Tags that name a moving target even though they are not 'latest'.
MOVING_TAGS = frozenset({"main", "master", "nightly", "dev", "edge", "stable", "head"})


@dataclass(frozen=True)
class ImageRef:
    text: str
    repository: str
    tag: str | None
    digest: str | None
    valid: bool
    why: str | None = None  # what makes an invalid reference invalid

    @property
    def pinned(self) -> bool:
        if self.digest:
            return True
        return bool(self.tag) and self.tag != "latest"


def parse_image(text: str) -> ImageRef:
    """``name[:tag][@digest]`` by the reference grammar, or why it is not one.

    >>> parse_image("registry.example.com:5000/rlinf/rlinf:v0.3.0").tag
    'v0.3.0'
    >>> parse_image("UPPER_Case:::x").why
    'the repository path must be lowercase'
    """
    m = _REFERENCE.fullmatch(text)
    if m is None:
        return _invalid(text, _why(text))
    name, tag, digest = m.group("name"), m.group("tag"), m.group("digest")
    if len(name) > NAME_MAX:
        return _invalid(text, f"the name is longer than {NAME_MAX} characters", name, tag)
    if _IMAGE_ID.fullmatch(name):
        return _invalid(text, "a 64-hex name is an image ID, not a repository", name, tag)
    if digest is not None:
        algorithm, _, hex_ = digest.partition(":")
        want = _DIGEST_HEX.get(algorithm)
        if want is None or len(hex_) != want or hex_ != hex_.lower():
            return _invalid(text, _DIGEST_WHY, name, tag)
    return ImageRef(text, name, tag, digest, True)


_DIGEST_WHY = "the digest must be sha256:<64 lowercase hex> (or sha384, sha512)"


def _invalid(text: str, why: str, name: str = "", tag: str | None = None) -> ImageRef:
    return ImageRef(text, name, tag, None, False, why)


def _why(text: str) -> str:
    """A reason for a reference the grammar refuses, read from its parts (a best guess: the
    verdict is the grammar's)."""
    if not text or text != text.strip() or any(c.isspace() for c in text):
        return "a reference has no blanks"
    ref, at, digest = text.partition("@")
    if at and "/" in digest:
        return "user:password@ in front of the registry is not part of a reference"
    if at and not re.fullmatch(_DIGEST, digest):
        return _DIGEST_WHY
    last = ref.rsplit("/", 1)[-1]
    repo_last, colon, tag = last.partition(":")
    path = ref[: len(ref) - len(last)].split("/", 1)
    # A first component with '.', ':' or 'localhost' is a registry host, which may be mixed case.
    host = path[0] if len(path) > 1 and re.search(r"[.:]|^localhost$", path[0]) else ""
    repository = ref[len(host) : len(ref) - len(last)] + repo_last
    if repository != repository.lower():
        return "the repository path must be lowercase"
    if colon and not re.fullmatch(_TAG, tag):
        return "a tag is 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
    return "expected [registry/]repository[:tag][@digest]"
