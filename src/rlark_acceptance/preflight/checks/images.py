"""Image references: is a tag pinned (P.1, 3.4)?"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
# Tags that name a moving target even though they are not 'latest'.
MOVING_TAGS = frozenset({"main", "master", "nightly", "dev", "edge", "stable", "head"})


@dataclass(frozen=True)
class ImageRef:
    text: str
    repository: str
    tag: str | None
    digest: str | None
    valid: bool

    @property
    def pinned(self) -> bool:
        if self.digest:
            return True
        return bool(self.tag) and self.tag != "latest"


def parse_image(text: str) -> ImageRef:
    ref = text.strip()
    digest = None
    if "@" in ref:
        ref, _, digest = ref.partition("@")
        if not _DIGEST.match(digest):
            return ImageRef(text, ref, None, digest, False)
    tag = None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo_last, _, tag = last.rpartition(":")
        ref = ref[: len(ref) - len(last)] + repo_last
        if not _TAG.match(tag):
            return ImageRef(text, ref, tag, digest, False)
    valid = bool(ref) and " " not in ref and ref == ref.strip()
    return ImageRef(text, ref, tag, digest, valid)
