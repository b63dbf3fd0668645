"""The soak's verdicts: which record is right for which fault (``bench/soak.py``).

The soak itself runs on the test services for tens of minutes (its figures are in the
README); what it holds each run to is decided here, without a run."""

from __future__ import annotations

from typing import Any

import pytest

from bench.soak import Expect, judge, outage_expect


def red(check: str, message: str) -> dict[str, Any]:
    return {"verdict": "failed", "earliestFailure": {"check": check, "message": message}}


GREEN = {"verdict": "passed", "earliestFailure": None}
API_DOWN = red("6.4", "the API server at https://127.0.0.1:1 is unreachable (timeouts.apiServer)")
STORE = red("6.4", "the store behind mount ckpt (/mnt/ckpt, s3://b) does not answer")
CONFIG = red("6.4", "the logs never showed the first signal: check the RLinf config")


def test_a_fault_that_is_ridden_out_must_pass() -> None:
    assert judge(GREEN, Expect(True)) is None
    why = judge(CONFIG, Expect(True))
    assert why is not None and "naming nothing (it should pass)" in why, why


def test_a_fault_that_cannot_be_recovered_must_be_named() -> None:
    kubelet = Expect(False, frozenset({"kubelet"}))
    assert judge(red("6.4", "node gpu-node-09: its kubelet stopped answering"), kubelet) is None
    assert "cannot be recovered" in str(judge(GREEN, kubelet))
    # Red for the wrong reason is as wrong as green: the RLinf config is not the kubelet.
    assert "naming kubelet nowhere" in str(judge(CONFIG, kubelet))


def test_an_error_of_the_harness_is_never_a_right_verdict() -> None:
    """What the first soak met: the adapter's own error at the clean-up, reported at 6.1,
    whose text happened to name the kubelet."""
    escaped = red(
        "6.1", "error in setup: KubernetesAdapterError: ... whose kubelet does not answer"
    )
    why = judge(escaped, Expect(False, frozenset({"kubelet"})))
    assert why is not None and "an error of the harness" in why, why


def test_a_run_another_runs_fault_overlapped_may_also_name_that_fault() -> None:
    widened = Expect(True).widened("store")
    assert judge(GREEN, widened) is None and judge(STORE, widened) is None
    assert judge(API_DOWN, widened) is not None  # not the component that failed


@pytest.mark.parametrize(
    ("outage", "passes", "names"),
    [(5.0, True, frozenset()), (30.0, True, {"api"}), (40.0, False, {"api"})],
)
def test_an_api_server_outage_is_ridden_out_within_its_bound_and_named_past_it(
    outage: float, passes: bool, names: frozenset[str]
) -> None:
    expect = outage_expect(outage)
    assert (expect.passes, expect.names) == (passes, names)
    assert (judge(API_DOWN, expect) is None) == bool(names)
