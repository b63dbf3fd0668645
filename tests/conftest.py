"""The tests' own collection order, for the workers of ``./run tests``."""

from __future__ import annotations

import pytest

from tests.durations import known


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On pytest-xdist's workers, the longest files first (``tests/durations.py``).

    Each worker sorts the same collection the same way, so they still agree on it; a
    file's tests stay together and in their own order. A session of one process keeps the
    order of the files on disk."""
    if not hasattr(config, "workerinput"):
        return
    seconds = known()
    where = {id(item): n for n, item in enumerate(items)}

    def weight(item: pytest.Item) -> tuple[float, int]:
        rel = item.path.relative_to(config.rootpath).as_posix()
        return (-seconds.get(rel, 0.0), where[id(item)])

    items.sort(key=weight)
