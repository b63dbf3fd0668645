"""The soak's verdicts: which record is right for which fault (``bench/soak.py``).

The soak itself runs on the test services for tens of minutes (its figures are in the
README); what it holds each run to is decided here, without a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.soak import Expect, Run, judge, judge_release, outage_expect
from tests.release.release_runs import ReleaseRun


def red(check: str, message: str) -> dict[str, Any]:
    return {"verdict": "failed", "earliestFailure": {"check": check, "message": message}}


GREEN = {"verdict": "passed", "earliestFailure": None}
API_DOWN = red(
    "6.4", "the Kubernetes API server https://127.0.0.1:1 is unreachable: no answer for 31 s"
)
STORE = red("6.4", "the store behind mount ckpt (/mnt/ckpt, s3://b) does not answer")
# Every Kubernetes run's last warning, whatever its fault: it names no component.
DNS = (
    'last warning: MissingClusterDNS: pod: "x". kubelet does not have ClusterDNS IP '
    'configured and cannot create Pod using "ClusterFirst" policy.'
)
CONFIG = red("6.4", "the logs never showed the first signal: check the RLinf config")


def test_a_fault_that_is_ridden_out_must_pass() -> None:
    assert judge(GREEN, Expect(True)) is None
    why = judge(CONFIG, Expect(True))
    assert why is not None and "naming nothing (it should pass)" in why, why


def test_a_fault_that_cannot_be_recovered_must_be_named() -> None:
    kubelet = Expect(False, frozenset({"kubelet"}))
    assert (
        judge(red("6.4", "node gpu-node-09: its kubelet stopped answering (...)"), kubelet) is None
    )
    assert "cannot be recovered" in str(judge(GREEN, kubelet))
    # Red for the wrong reason is as wrong as green: the RLinf config is not the kubelet.
    assert "naming kubelet nowhere" in str(judge(CONFIG, kubelet))


def test_a_word_in_a_warning_is_not_a_component_named() -> None:
    """What a containerd killed under the Worker first met: red at 6.4 as "the Worker ended
    ... Unknown, exit code 255", judged right because the node's DNS warning says "kubelet"."""
    lost = red(
        "6.4",
        f"the Worker ended: pod p Failed, Unknown, exit code 255; {DNS}",
    )
    for component in ("kubelet", "runtime", "api", "store", "eviction"):
        assert judge(lost, Expect(True, frozenset({component}))) is not None, component
    named = red(
        "6.4",
        f"the Worker ended: pod p Failed, Unknown [container-runtime-lost], exit code 255; {DNS}",
    )
    assert judge(named, Expect(True, frozenset({"runtime"}))) is None
    evicted = red("6.4", "the Worker ended: pod p Failed, EvictionByEvictionAPI [worker-disrupted]")
    assert judge(evicted, Expect(False, frozenset({"eviction"}))) is None
    # 6.2's silent kubelet asks whether it is connected to the API server: that is no outage.
    silent = red(
        "6.2",
        "bound to node n, whose kubelet has reported nothing of it (is the "
        "node's kubelet running and connected to the API server?)",
    )
    assert judge(silent, Expect(True, frozenset({"kubelet"}))) is None
    assert judge(silent, Expect(True, frozenset({"api"}))) is not None


def test_what_the_third_soak_judged_wrong_and_was_right() -> None:
    """Two records of the third soak named the API server's outage another run had struck,
    in words the judge did not read: 6.2 asking whether the scheduler is connected to the
    API server (it had not reconnected yet), and a run that could not start, its target
    refusing connections (said in ``error``, with no earliest failure)."""
    outage = Expect(True).widened("api")
    pending = red(
        "6.2",
        "nothing after 30 s (timeouts.scheduled); pod p Pending; no scheduling decision and "
        "no Event: nothing has considered the Pod (is the cluster's scheduler running and "
        "connected to the API server?)",
    )
    assert judge(pending, outage) is None
    refused = {
        "verdict": "failed",
        "earliestFailure": None,
        "error": "usage error: target: k: the API server https://127.0.0.1:1 refuses "
        "connections (Connection refused)",
    }
    assert judge(refused, outage) is None
    assert judge(refused, Expect(True)) is not None  # with no outage, that is no right verdict


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


def released(tmp_path: Path, verdict: str, code: int, **records: dict[str, Any]) -> Run:
    """A soak run with a release beside it, whose profiles wrote ``records``."""
    for name, summary in records.items():
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "run-summary.json").write_text(json.dumps(summary), encoding="utf-8")
    profiles = [{"name": n, "record": n} for n in records]
    run = Run(0, "local", "release-beside", Expect(True))
    run.released = ReleaseRun(code, "", tmp_path, 1.0, {"verdict": verdict, "profiles": profiles})
    return run


def test_a_release_beside_a_run_is_accepted_on_every_profile(tmp_path: Path) -> None:
    ok = released(tmp_path, "accepted", 0, a=GREEN | {"runId": "r-a"}, b=GREEN | {"runId": "r-b"})
    assert judge_release(ok, Expect(True)) is None and ok.run_ids == ["r-a", "r-b"]


def test_a_release_beside_a_run_red_for_a_reason_no_fault_gives_is_wrong(tmp_path: Path) -> None:
    run = released(tmp_path, "not accepted", 1, a=GREEN, b=CONFIG)
    why = judge_release(run, Expect(True))
    assert why is not None and why.startswith("release profile b: failed at 6.4"), why
    # A shared fault that reached the release may be named by its profiles, as by the run's.
    store = released(tmp_path / "x", "not accepted", 1, a=STORE, b=GREEN)
    assert judge_release(store, Expect(True).widened("store")) is None


def test_a_release_that_is_not_accepted_though_its_profiles_pass_is_wrong(
    tmp_path: Path,
) -> None:
    run = released(tmp_path, "not accepted", 1, a=GREEN, b=GREEN)
    assert "every profile passing" in str(judge_release(run, Expect(True)))
    assert "no release-summary.json" in str(
        judge_release(Run(1, "local", "x", Expect(True)), Expect(True))
    )
