"""The features themselves: valid Gherkin, and every doc check proven both ways."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gherkin.parser import Parser
from gherkin.token_scanner import TokenScanner

from rlark_acceptance.model.doc_checks import ALL_CHECKS

FEATURES = sorted((Path(__file__).resolve().parent.parent / "features").glob("*.feature"))


def parse(path: Path) -> dict[str, Any]:
    doc: Any = Parser().parse(TokenScanner(path.read_text(encoding="utf-8")))
    return dict(doc)


def scenarios(doc: dict[str, Any]) -> list[tuple[str, set[str]]]:
    feature = doc["feature"]
    feature_tags = {t["name"] for t in feature.get("tags", [])}
    out = []
    for child in feature["children"]:
        sc = child.get("scenario")
        if sc:
            out.append((sc["name"], feature_tags | {t["name"] for t in sc.get("tags", [])}))
    return out


@pytest.mark.parametrize("path", FEATURES, ids=lambda p: p.name)
def test_feature_parses_with_the_official_parser(path: Path) -> None:
    doc = parse(path)
    assert doc["feature"]["name"]
    for name, tags in scenarios(doc):
        checks = {t for t in tags if t.startswith("@check-")}
        assert checks, f"{path.name}: scenario {name!r} names no check"
        assert tags & {"@positive", "@negative"}, f"{path.name}: {name!r} is neither + nor -"


def test_every_check_has_a_positive_and_a_negative_scenario() -> None:
    seen: dict[str, set[str]] = {c.id: set() for c in ALL_CHECKS}
    for path in FEATURES:
        for _name, tags in scenarios(parse(path)):
            kinds = {t[1:] for t in tags} & {"positive", "negative"}
            for t in tags:
                if t.startswith("@check-"):
                    assert t[7:] in seen, f"{path.name}: unknown check tag {t}"
                    seen[t[7:]] |= kinds
    missing = {
        c: sorted({"positive", "negative"} - k)
        for c, k in seen.items()
        if k != {"positive", "negative"}
    }
    # 6.1, 6.2's cluster side and 5.7 without a node inventory have their negative sides in
    # 首次运行问题排查 and the cluster features; nothing may be missing.
    assert missing == {}


# Givens that leave the profile as it is; any other Given changes the copy (or reads another
# input), so its scenario is a self-check and must say so with a tag.
AS_IT_IS_GIVENS = {
    "the default acceptance profile",
    "the default acceptance profile has passed the pre-flight",
    "its Job has been submitted to the target",
}


def _givens(doc: dict[str, Any], scenario: dict[str, Any]) -> list[str]:
    steps: list[dict[str, Any]] = []
    for child in doc["feature"]["children"]:
        if child.get("background"):
            steps += child["background"]["steps"]
    steps += scenario["steps"]
    out, keyword = [], ""
    for step in steps:
        kw = step["keyword"].strip()
        keyword = keyword if kw in ("And", "But", "*") else kw
        if keyword == "Given":
            out.append(step["text"])
    return out


def test_only_scenarios_on_the_profile_as_it_is_lack_a_self_check_tag() -> None:
    """The verdict comes from the untagged scenarios (docs/contract.md §4): one that changes the
    profile's copy without a self-check tag would let a deliberate mistake fail the profile."""
    from rlark_acceptance.run.report import SELF_CHECK_TAGS

    wrong = []
    for path in FEATURES:
        doc = parse(path)
        feature_tags = {t["name"][1:] for t in doc["feature"].get("tags", [])}
        for child in doc["feature"]["children"]:
            sc = child.get("scenario")
            if not sc:
                continue
            tags = feature_tags | {t["name"][1:] for t in sc.get("tags", [])}
            changes = [g for g in _givens(doc, sc) if g not in AS_IT_IS_GIVENS]
            if changes and not tags & SELF_CHECK_TAGS:
                wrong.append(f"{path.name}: {sc['name']!r} changes the profile: {changes}")
    assert wrong == []


class _Item:
    """A collected scenario, as far as T.4's selection reads one: its markers' names."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def iter_markers(self) -> Any:
        return (SimpleNamespace(name=n) for n in self.names)

    def get_closest_marker(self, name: str) -> Any:
        return SimpleNamespace(name=name) if name in self.names else None


@pytest.mark.parametrize(
    ("expr", "selected"),
    [
        ("", False),
        ("resume", True),
        ("check-T.4", True),
        ("check-T.4 or check-T.1", True),
        ("runtime", False),  # every Step 6 scenario: T.4's only with the rest
        ("not negative", False),
        ("runtime and not negative", False),
        ("not resume", False),
        ("resume and negative", True),
    ],
)
def test_t_4_is_selected_by_its_tags_not_by_an_expression_that_selects_everything(
    expr: str, selected: bool
) -> None:
    from fixtures.acceptance import _selected_by_tag

    items = [
        _Item("check-T.4", "resume", "positive", "runtime"),
        _Item("check-T.4", "resume", "negative", "runtime", "fault-injection"),
        _Item("check-T.1", "positive", "runtime"),
    ]
    assert _selected_by_tag(expr, items) is selected  # type: ignore[arg-type]
