"""How Step 6 reads a Worker log: Ray's start-up, the run script's first output."""

from __future__ import annotations

import pytest

from rlark_acceptance.run.step6.log import RAY_STARTED, is_script_output

# What `ray start --head` printed in a Pod (not a terminal), as the local target logs it.
RAY_LOG = """\
2026-11-30 13:13:35,847\tINFO usage_lib.py:448 -- Usage stats collection is disabled.
2026-11-30 13:13:38,745\tSUCC scripts.py:1084 -- --------------------
2026-11-30 13:13:38,746\tSUCC scripts.py:1085 -- Ray runtime started.
2026-11-30 13:13:38,746\tINFO scripts.py:1088 -- Next steps
2026-11-30 13:13:38,746\tINFO scripts.py:1095 --   ray start --address='127.0.0.1:43305'
2026-11-30 13:13:38,746\tINFO scripts.py:1108 -- import ray
2026-11-30 13:13:38,747\tINFO scripts.py:1143 --   ray stop"""

# The same banner on a terminal.
RAY_TTY = """\
--------------------
Ray runtime started.
--------------------
Next steps
  To add another node to this Ray cluster, run
    ray start --address='127.0.0.1:6379'
  To connect to this Ray cluster:
    import ray
    ray.init()
  To terminate the Ray runtime, run
    ray stop"""


def test_ray_start_up_line_is_recognised() -> None:
    assert sum(bool(RAY_STARTED.search(line)) for line in RAY_LOG.splitlines()) == 1


@pytest.mark.parametrize("line", RAY_LOG.splitlines() + RAY_TTY.splitlines() + [""])
def test_ray_own_lines_are_not_the_run_script(line: str) -> None:
    assert not is_script_output(line)


@pytest.mark.parametrize(
    "line",
    [
        "{",
        "rlark-acceptance smoke workload: CPU-only stand-in for an RLinf run (not RLinf)",
        "+ python train_embodied_agent.py --config-name maniskill_ppo_openvlaoft",
        "bash: line 1: cd: /workspace/RLinf: No such file or directory",
        "Traceback (most recent call last):",
    ],
)
def test_run_script_lines_are(line: str) -> None:
    assert is_script_output(line)
