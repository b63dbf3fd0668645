"""The docs' pictures are of the tree as it is: every picture a page shows exists, and each
was made (``docs/shots.py --write``) from the record's writers and the report's
configuration as they are now."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))

import shots  # noqa: E402

SHOWN = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")


def _shown() -> dict[Path, list[str]]:
    """Each picture a page of the docs shows → the pages that show it."""
    found: dict[Path, list[str]] = {}
    for page in DOCS.rglob("*.md"):
        for target in SHOWN.findall(page.read_text(encoding="utf-8")):
            if "://" not in target:
                picture = (page.parent / target).resolve()
                found.setdefault(picture, []).append(str(page.relative_to(ROOT)))
    return found


def test_every_picture_a_page_shows_is_there_and_made_by_the_script() -> None:
    shown = _shown()
    assert shown, "no page shows a picture"
    made = {(shots.IMG / name).resolve() for name in shots.IMAGES}
    for picture, pages in shown.items():
        assert picture.is_file(), f"{pages} show {picture.name}, which is missing"
        assert picture in made, f"{picture.name} ({pages}) is not made by docs/shots.py"


def test_the_pictures_are_of_the_tree_as_it_is() -> None:
    manifest = json.loads(shots.MANIFEST.read_text(encoding="utf-8"))
    assert manifest["images"] == list(shots.IMAGES)
    assert manifest["sources"] == shots.digest(), (
        "the docs' pictures are stale: a file that shapes them changed "
        f"({', '.join(shots.SOURCES)}); run .venv/bin/python docs/shots.py --write"
    )


def test_a_change_to_what_shapes_them_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest follows each source: one byte more in one of them changes it."""
    before = shots.digest()
    copy = tmp_path / "root"
    for name in shots.SOURCES:
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes(source.read_bytes())
    monkeypatch.setattr(shots, "ROOT", copy)
    assert shots.digest() == before
    with (copy / "allurerc.mjs").open("a", encoding="utf-8") as f:
        f.write("\n")
    assert shots.digest() != before
