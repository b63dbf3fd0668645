"""Image references by the distribution project's reference grammar (P.1, 3.4)."""

from __future__ import annotations

import pytest

from rlark_acceptance.preflight.checks.images import parse_image

HEX64 = "0123456789abcdef" * 4

# (reference, repository, tag, digest given)
VALID = [
    ("rlinf", "rlinf", None, False),
    ("rlark-acceptance/smoke:0.1.0", "rlark-acceptance/smoke", "0.1.0", False),
    (
        "registry.example.com/rlinf:v0.3.0-cuda12.4",
        "registry.example.com/rlinf",
        "v0.3.0-cuda12.4",
        False,
    ),
    ("localhost:5000/team/rlinf:1", "localhost:5000/team/rlinf", "1", False),
    ("[::1]:5000/rlinf:1", "[::1]:5000/rlinf", "1", False),
    ("Registry.Example.COM/rlinf:1", "Registry.Example.COM/rlinf", "1", False),  # hosts: any case
    ("a--b/c__d/e.f_g:_x", "a--b/c__d/e.f_g", "_x", False),
    (f"rlinf:v1@sha256:{HEX64}", "rlinf", "v1", True),
    (f"rlinf@sha512:{HEX64 * 2}", "rlinf", None, True),
]

# (reference, the reason given)
INVALID = [
    ("UPPER_Case:::x", "must be lowercase"),
    ("team/RLinf:1", "must be lowercase"),
    ("rlinf:1:2", "a tag is"),
    ("rlinf:.hidden", "a tag is"),
    ("rlinf:", "a tag is"),
    ("rlinf:" + "x" * 129, "a tag is"),
    ("rl inf:1", "no blanks"),
    (" rlinf:1", "no blanks"),
    ("", "no blanks"),
    (f"rlinf@sha256:{HEX64[:40]}", "digest must be"),
    (f"rlinf@sha256:{HEX64.upper()}", "digest must be"),
    (f"rlinf@md5:{HEX64[:32]}", "digest must be"),
    ("rlinf@", "digest must be"),
    ("user:" + "pw" + "@registry.example.com/rlinf:1", "user:password@"),
    ("a___b:1", "expected [registry/]repository"),
    ("rlinf/:1", "expected [registry/]repository"),
    (HEX64, "image ID"),
    ("a/" * 130 + "b", "longer than 255"),
]


@pytest.mark.parametrize(("text", "repository", "tag", "has_digest"), VALID)
def test_a_reference_of_the_grammar_is_valid(
    text: str, repository: str, tag: str | None, has_digest: bool
) -> None:
    ref = parse_image(text)
    assert ref.valid and ref.why is None
    assert (ref.repository, ref.tag, bool(ref.digest)) == (repository, tag, has_digest)


@pytest.mark.parametrize(("text", "why"), INVALID)
def test_a_reference_outside_the_grammar_is_invalid_and_says_why(text: str, why: str) -> None:
    ref = parse_image(text)
    assert not ref.valid and not ref.pinned
    assert ref.why is not None and why in ref.why


def test_pinning_follows_the_tag_or_digest() -> None:
    assert not parse_image("rlinf").pinned
    assert not parse_image("rlinf:latest").pinned
    assert parse_image("rlinf:v0.3.0").pinned
    assert parse_image(f"rlinf@sha256:{HEX64}").pinned
