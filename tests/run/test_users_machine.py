"""The user's own machine: state in the harness user's HOME never reaches the Worker.

Ray's token auth leaves ``~/.ray/auth_token`` behind; a Worker that shared the user's HOME
would send that token to its own fresh head and be refused (``InvalidAuthToken``). The
suite runs here as a user would, with such a HOME, and the record is read back. The HOME is
the real one seen through an overlay in a mount namespace of the test's own, so the token
exists for the suite and its Worker only, never on this machine.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.run.suite_runs import AS_IT_IS, run_suite, site_copy

pytestmark = pytest.mark.slow

# Runs its arguments with HOME ($1) overlaid by the test's folder ($2) holding a Ray token.
PLANT = r"""
home=$1 layer=$2; shift 2
mkdir -p "$layer/upper" "$layer/work"
mount -t overlay overlay -o "lowerdir=$home,upperdir=$layer/upper,workdir=$layer/work" "$home"
mkdir -p "$home/.ray" && cat "$layer/token" > "$home/.ray/auth_token"
exec "$@"
"""


@pytest.fixture(scope="module", autouse=True)
def _s3(s3_env: Any) -> Iterator[None]:
    yield


def test_a_ray_token_in_the_users_home_leaves_the_default_profile_green(tmp_path: Path) -> None:
    layer = tmp_path / "home-layer"
    layer.mkdir()
    (layer / "token").write_text(uuid.uuid4().hex)  # what `ray get-auth-token --generate` writes
    wrapper = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", PLANT, "sh"]
    wrapper += [str(Path.home()), str(layer)]
    run = run_suite(site_copy(tmp_path), "-m", AS_IT_IS, wrapper=wrapper)
    assert (layer / "upper" / ".ray" / "auth_token").is_file()  # the suite's HOME had it
    s = run.summary
    assert run.returncode == 0, run.explain()
    assert s["verdict"] == "passed" and s["checks"].pop("T.4") == "skipped", s["checks"]
    assert set(s["checks"].values()) == {"passed"}, s["checks"]  # all but T.4, opt-in
    assert "InvalidAuthToken" not in run.output
