"""Placement GPU counts against RLinf's parser semantics, on generated placements.

The reference is built from the generated structure, not by parsing the text: each
``resource_ranks[:process_ranks]`` segment names resources in increasing order; process
ranks are one continuous block from 0 (implicit: as many as resources), and in each
segment one count is a multiple of the other (docs/placement.rst). A GPU component needs
its highest resource rank + 1 GPUs; the Worker needs the highest over all components.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rlark_acceptance.rlinf.placement import summarize_cluster


@dataclass(frozen=True)
class Segment:
    first: int
    last: int
    processes: int | None  # None: implicit, one per resource

    @property
    def resources(self) -> int:
        return self.last - self.first + 1


def _range(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}-{b}"


@st.composite
def segments(draw: st.DrawFn) -> list[Segment]:
    out: list[Segment] = []
    next_free = draw(st.integers(0, 3))
    for _ in range(draw(st.integers(1, 3))):
        first = next_free + draw(st.integers(0, 2))
        last = first + draw(st.integers(0, 7))
        n = last - first + 1
        explicit = draw(st.booleans())
        if explicit:
            factor = draw(st.integers(1, 3))
            processes = n * factor if draw(st.booleans()) else max(1, n // factor)
            if n % processes and processes % n:
                processes = n
        out.append(Segment(first, last, processes if explicit else None))
        next_free = last + 1
    return out


def render(segs: list[Segment]) -> str:
    parts = []
    rank = 0
    for s in segs:
        text = _range(s.first, s.last)
        count = s.processes if s.processes is not None else s.resources
        if s.processes is not None:
            text += ":" + _range(rank, rank + count - 1)
        rank += count
        parts.append(text)
    return ",".join(parts)


COMPONENTS = ["actor", "rollout", "env", "reward", "agent"]


@settings(max_examples=300, deadline=None)
@given(st.lists(segments(), min_size=1, max_size=4), st.booleans())
def test_gpu_count_and_world_size_follow_rlinfs_semantics(
    placements: list[list[Segment]], as_int: bool
) -> None:
    cp: dict[str, Any] = {}
    for name, segs in zip(COMPONENTS, placements, strict=False):
        text = render(segs)
        single = len(segs) == 1 and segs[0].processes is None and segs[0].resources == 1
        cp[name] = segs[0].first if as_int and single else text
    summary = summarize_cluster({"num_nodes": 1, "component_placement": cp})
    assert [p.message for p in summary.problems] == []
    used = list(zip(COMPONENTS, placements, strict=False))
    expected_gpus = max(s.last for _, segs in used for s in segs) + 1
    assert summary.gpus_required == expected_gpus
    assert summary.gpus_all is False
    by_name = {p.components[0]: p for p in summary.placements}
    for name, segs in used:
        world = sum(s.processes if s.processes is not None else s.resources for s in segs)
        assert by_name[name].process_count == world


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_any_cluster_section_is_classified_without_raising(cluster: Any) -> None:
    """A bug would raise here with its traceback: nothing turns it into a finding."""
    summary = summarize_cluster(cluster)
    for p in summary.problems:
        assert p.message and p.path[:1] == ("cluster",)
