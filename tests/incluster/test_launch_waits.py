"""The in-cluster launch's requests while the API server is away (``incluster/launch.py``):
each rides an outage out up to ``timeouts.apiServer`` in a row and then names the server,
a creation whose answer was lost finds what it created, and a stop ends the waiting as an
interrupt. The same against the real API server, SIGKILLed while the runner starts, is in
``tests/adapters/test_kubernetes_incluster.py``."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from rlark_acceptance.adapters.clock import Clock
from rlark_acceptance.adapters.kubernetes.stream import ApiUnreachable, Reach
from rlark_acceptance.incluster.launch import (
    Interrupted,
    _agreed,
    _create,
    _exit_code,
    _failure,
    _once,
    _Stop,
)

SERVER = "https://api.example.test:6443"


class Flaky:
    """A request that fails ``fails`` times as a dead API server does, then answers."""

    def __init__(self, fails: int, answer: Any = "answer") -> None:
        self.fails, self.answer, self.calls = fails, answer, 0

    def __call__(self, *args: Any, **kw: Any) -> Any:
        self.calls += 1
        if self.calls <= self.fails:
            raise urllib3.exceptions.ProtocolError("Connection refused")
        return self.answer


def test_a_request_rides_a_short_outage_out() -> None:
    stop = _Stop(None, Reach(SERVER, 30.0))
    flaky = Flaky(3)
    assert stop.ask(flaky) == "answer" and flaky.calls == 4


def test_an_outage_past_the_bound_names_the_server_and_the_bound() -> None:
    stop = _Stop(None, Reach(SERVER, 1.0))
    with pytest.raises(ApiUnreachable) as e:
        stop.ask(Flaky(10**6))
    assert SERVER in str(e.value) and "(timeouts.apiServer is 1 s)" in str(e.value)
    assert "Connection refused" in str(e.value)


def test_a_stop_during_an_outage_is_an_interrupt() -> None:
    event = threading.Event()
    stop = _Stop(event, Reach(SERVER, 30.0))
    threading.Timer(0.3, event.set).start()
    with pytest.raises(Interrupted):
        stop.ask(Flaky(10**6))


def test_the_clean_up_is_not_cut_short_by_the_stop_it_follows() -> None:
    event = threading.Event()
    event.set()
    stop = _Stop(event, Reach(SERVER, 30.0))
    assert stop.clean(Flaky(2)) == "answer"


def test_a_creation_whose_answer_was_lost_finds_what_it_created() -> None:
    """The API server took the request and died before answering: the retry is refused as
    existing, and the object read back is the run's own (its name is the run's alone)."""
    made: list[str] = []

    def create(ns: str, body: dict[str, Any]) -> Any:
        if made:
            raise ApiException(status=409, reason="AlreadyExists")
        made.append(body["metadata"]["name"])
        raise urllib3.exceptions.ProtocolError("Connection reset by peer")

    def read(name: str, ns: str) -> Any:
        return {"read": name, "ns": ns}

    stop = _Stop(None, Reach(SERVER, 30.0))
    body = {"metadata": {"name": "rlark-runner-site-a1b2c3"}}
    assert _create(stop, create, read, "ns", body) == {
        "read": "rlark-runner-site-a1b2c3",
        "ns": "ns",
    }
    assert made == ["rlark-runner-site-a1b2c3"]


def test_a_refused_creation_is_not_taken_for_one_that_exists() -> None:
    def create(ns: str, body: dict[str, Any]) -> Any:
        raise ApiException(status=403, reason="Forbidden")

    stop = _Stop(None, Reach(SERVER, 30.0))
    with pytest.raises(ApiException) as e:
        _create(stop, create, lambda *a: None, "ns", {"metadata": {"name": "x"}})
    assert e.value.status == 403


def pod(state: str, code: int = 0) -> Any:
    terminated = SimpleNamespace(exit_code=code) if state == "terminated" else None
    status = SimpleNamespace(state=SimpleNamespace(terminated=terminated))
    return SimpleNamespace(status=SimpleNamespace(container_statuses=[status]))


def test_the_runner_is_waited_for_on_the_launchs_clock() -> None:
    """After the runner's log ended, its exit code is waited for 30 s of the launch's clock
    (here 20 s pass at each read): none by then is not known (None), not a hang."""
    now = [0.0]
    reads: list[float] = []

    def read_namespaced_pod(name: str, ns: str) -> Any:
        reads.append(now[0])
        now[0] += 20.0
        return pod("running")

    stop = _Stop(None, Reach(SERVER, 30.0, Clock(monotonic=lambda: now[0])))
    core: Any = SimpleNamespace(read_namespaced_pod=read_namespaced_pod)
    assert _exit_code(core, "ns", "runner-0", stop, within=30.0) is None
    assert reads == [0.0, 20.0]
    core = SimpleNamespace(read_namespaced_pod=lambda name, ns: pod("terminated", 1))
    assert _exit_code(core, "ns", "runner-0", stop, within=30.0) == 1


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ApiException(status=403, reason="Forbidden"), "refused the runner: 403 Forbidden"),
        (ApiUnreachable("the Kubernetes API server X is unreachable"), "server X is unreachable"),
        (urllib3.exceptions.ProtocolError("reset"), "did not answer: ProtocolError: reset"),
    ],
)
def test_each_error_of_the_api_server_is_said_as_what_it_is(error: Exception, said: str) -> None:
    line = _failure(error)
    assert line.startswith("error: ") and said in line


@pytest.mark.parametrize(
    ("status", "verdict", "expected"),
    [(0, "passed", 0), (0, "interrupted", 1), (0, None, 1), (1, "failed", 1), (2, "passed", 2)],
)
def test_the_exit_status_is_never_green_on_a_record_that_is_not(
    status: int, verdict: str | None, expected: int
) -> None:
    said: list[str] = []
    assert _agreed(status, verdict, "s3://b/r", said.append) == expected
    assert bool(said) == (expected != status), said
    if said:
        what = repr(verdict) if verdict else "has no verdict"
        assert "exited 0" in said[0] and what in said[0] and "s3://b/r" in said[0]


def test_the_pods_said_after_the_runner_are_asked_once_within_a_bound() -> None:
    asked: list[dict[str, Any]] = []

    def down(ns: str, **kw: Any) -> None:
        asked.append(kw)
        raise urllib3.exceptions.MaxRetryError(None, "/api/v1/pods", "refused")  # type: ignore[arg-type]

    with pytest.raises(urllib3.exceptions.MaxRetryError):
        _once(down, "ns", timeout=5.0, label_selector="x")
    assert asked == [{"_request_timeout": 5.0, "label_selector": "x"}]
