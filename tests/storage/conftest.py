"""An S3 prefix of its own on the repository's S3 test server, for one test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from rlark_acceptance.storage import S3Store


@pytest.fixture
def s3_store(s3_env: Any) -> Iterator[S3Store]:
    """An ``S3Store`` on a unique prefix of the test server's bucket, emptied afterwards."""
    store = S3Store(s3_env.client(), s3_env.bucket, f"rlark-acceptance-tests/{uuid.uuid4().hex}")
    try:
        yield store
    finally:
        store.delete([o.key for o in store.list("")])
