"""A loud Worker on the Kubernetes target's real node: 300 MB printed before the printed
config and the first signal, through the kubelet's rotations (10 MiB, checked every 10 s),
read by the suite as a release engineer runs it (``k8s_suite``) and by the adapter's
observation itself. Each test runs in a namespace of its own, beside the other tests at the
cluster; a loud Worker while the API server is down is the fault tests'.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.testenv import KubeEnv, S3Env
from rlark_acceptance.adapters import EventSeen, LogEnded, LogLines, TargetLost, open_adapter
from rlark_acceptance.adapters.base import HARNESS_SOURCE, LOG_READ_AHEAD
from rlark_acceptance.adapters.kubernetes import logspool
from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.run.step6.plan import manifest_of
from rlark_acceptance.run.step6.run_id import for_run, new_run_id
from tests.adapters.k8s_suite import (
    LONG,
    LONG_EVERY,
    LOUD,
    NUMBERED,
    ROTATED,
    STARTING,
    Site,
    SuiteRun,
    harness_role,
    site_namespace,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture
def namespace(kube_env: KubeEnv, s3_env: S3Env) -> Iterator[str]:
    """The profile's namespace, the test's own, the harness's Role bound there."""
    with site_namespace(kube_env, "loud", harness_role()) as ns:
        yield ns


def test_a_worker_printing_300_mb_before_its_signal_passes(namespace: str, tmp_path: Path) -> None:
    """The kubelet rotates the Worker's log at 10 MiB (checked every 10 s) and serves it
    slower than the Worker writes: the printed config and the signal after 300 MB are
    read, from files rotated before the follow reached them, and the verdict is the
    Worker's."""
    before = f"{STARTING}; " + LOUD.format(n=3_000_000)
    site = Site.make(tmp_path / "site", before=before, namespace=namespace)
    run = SuiteRun.start(tmp_path, site)
    try:
        run.finish()
    finally:
        run.kill()
    s = run.summary
    print(
        f"loud Worker (300 MB): {s['verdict']} in {run.elapsed:.0f} s, "
        f"peak RSS {run.peak_rss_mib:.0f} MiB"
    )
    assert run.returncode == 0, run.tail()
    assert s["verdict"] == "passed" and s["earliestFailure"] is None, s["earliestFailure"]
    assert all(s["checks"][c] == "passed" for c in ("1.1", "1.2", "6.4", "6.5")), s["checks"]
    # Whether every line was read is test_every_line_of_300_mb_is_read_once_in_order's to
    # count. Here the record may only say, in its own words, that lines may be missing: in
    # one CI run on the loaded 2 cores it said so of 54 s of lines (the harness could not
    # rule out a file rotated past unseen; whether lines were lost is not known).
    for warning in s.get("warnings", []):
        print(f"loud Worker (300 MB): {warning}")
        assert warning.startswith(ROTATED), warning
    assert run.peak_rss_mib < 600, run.peak_rss_mib
    # The follow fell behind by files (the Worker wrote 300 MB in seconds): their readers
    # ahead said so in the observation's own Event, which the record keeps beside the
    # target's, in the run's "Pods and events" evidence of the Allure results.
    ahead = [e for e in _evidence_events(run.reports) if e.get("reason") == LOG_READ_AHEAD]
    assert ahead, "no LogReadAhead Event in the run's evidence"
    print(f"loud Worker (300 MB): {ahead[0]['message']}")
    assert all(e["source"] == HARNESS_SOURCE and e["type"] == "Normal" for e in ahead), ahead
    said = ahead[0]["message"]
    assert re.match(r"\d+ of the Worker's log files were read while the follow", said), said


def _evidence_events(reports: Path) -> list[dict[str, Any]]:
    """The Events of every "Pods and events" attachment of the run's Allure results."""
    found = []
    for path in (reports / "allure-results").glob("*-attachment.json"):
        body = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(body, dict) and isinstance(body.get("events"), list):
            found.extend(body["events"])
    return found


# A consumer's stop, longer than the kubelet's 10 s between size checks, and than the 10 s
# within which a reader that delivers nothing is still chased (logfiles.ARRIVING_SECONDS): a
# reader held by its consumer is chased all the same.
BUSY_SECONDS = 12.0


@pytest.mark.xfail(
    strict=False,
    reason="a known loss of the kubelet's own follow on a loaded machine: beside real RLinf "
    "runs at a load of 10-37 on 2 cores, 3 of 8 runs failed, where 14 of 14 on a quiet "
    "machine (10 of them in a row) read every line once, whole, at 2.9-3.2 MB/s, and 38 of 40 "
    "since the observer reads what has arrived at once, at 6.6-8.1 MB/s. 5 lines at a file "
    "boundary, and in another run 33, were missing without a word, "
    "and a 40 KB line was split at a rotation: a follow at its file's end goes on to the "
    "new file as soon as it is created, while containerd's old logger still writes its "
    "buffered lines to the old file (docs/explanation/kubernetes.md). The third, a jump "
    "over files with readers of their own said as lost, is mended",
)
def test_every_line_of_300_mb_is_read_once_in_order(
    namespace: str, s3_env: S3Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observation of a Worker printing 3 M numbered lines as fast as it can on the
    real node, through several rotations: each line once, whole, in order, and nothing said
    lost. A rotation cuts the line in flight into two partial entries, one in each file (and
    1,500 of the lines are 40 KB long, stored in partial entries anyway): its head is never
    a line of its own, nor its end a line again. The files read ahead of the consumer wait
    on disk within a bound of 4 MiB, about a seventieth of the log (under half of a file's
    lines), so later files' readers wait, streams open, and read on as the spools are put:
    that loses nothing either. The consumer stops for 12 s early on, as Step 6 does while it
    reads a checkpoint, and the follow, held meanwhile, falls far behind the Worker. Where
    the kubelet rotated the log while the Worker printed (it may print all 300 MB between
    two of the kubelet's size checks, into one file), later files are read ahead."""
    n = 3_000_000
    bound = 4 << 20
    monkeypatch.setattr(logspool, "SPOOL_AHEAD_BYTES", bound)
    before = f"{NUMBERED.format(n=n)}; exit 0"
    site = Site.make(tmp_path / "site", before=before, namespace=namespace)
    profile = load_profile(site.profile)
    adapter = open_adapter(profile)
    try:
        job = read_job(str(site.job))
        job, manifest = for_run(job, manifest_of(job), new_run_id(), None)
        ref = adapter.submit(job, manifest)
        obs = adapter.observe(ref)
        got, warned, noted, started = 0, [], [], time.monotonic()
        bad: list[tuple[int, str, list[str]]] = []  # (expected, read, the lines before)
        prev: list[str] = []
        deadline = started + 600
        busy = True  # the consumer's stop is still to come
        while (left := deadline - time.monotonic()) > 0:
            if busy and got >= n // 10:
                busy = False
                time.sleep(BUSY_SECONDS)
            item = obs.next(left)
            if item is None or isinstance(item, LogEnded | TargetLost):
                assert isinstance(item, LogEnded), item
                break
            if isinstance(item, EventSeen) and item.event.type == "Warning":
                warned.append(item.event)
            elif isinstance(item, EventSeen) and item.event.source == HARNESS_SOURCE:
                noted.append(item.event)
            for line in item.lines if isinstance(item, LogLines) else ():
                if line.startswith("L") and line[1:10].isdigit():
                    if int(line[1:10]) != got:
                        bad.append((got, line[:14], [x[:40] for x in prev[-3:]]))
                        got = int(line[1:10])
                    if len(line) != (100 if got % LONG_EVERY else LONG):
                        bad.append((got, f"{line[:14]}... of {len(line)} characters", []))
                    got += 1  # or out of order
                elif line and set(line) == {"x"}:  # the end of a line cut by a rotation, again
                    bad.append((got, f"a line of {len(line)} x alone", [x[:40] for x in prev[-3:]]))
                prev.append(line)
                del prev[:-4]
        elapsed = time.monotonic() - started
        print(
            f"{got} of {n} numbered lines in {elapsed:.0f} s ({got * 100 / elapsed / 1e6:.1f} MB/s)"
        )
        # Whether a loss was said, and where, goes with any failure: a loss said is the
        # record's own account, a silent one the worst the observation can do.
        said = [e.message[:200] for e in warned if e.source == HARNESS_SOURCE]
        assert not bad, f"{bad[:10]}; said: {said}"
        assert got == n, f"{got} of {n} lines, the last ones missing; said: {said}"
        assert not said
        # Where files were read ahead, it is said; their spools filled to the bound (so
        # readers waited) and held within it (twice it, and a megabyte a reader).
        # Said once the follow caught up with the files read ahead, and again at the end if
        # it fell behind by more files after that: the last one counts them all.
        for ahead in [e.message for e in noted if e.reason == LOG_READ_AHEAD][-1:]:
            print(ahead)
            m = re.match(r"(\d+) of .* at most ([\d.]+) MB", ahead)
            assert m is not None, ahead
            files, held = int(m[1]), float(m[2]) * 1e6
            assert files >= 1 and bound <= held <= 2 * bound + (files + 1) * 1.1e6
        adapter.delete(ref)
    finally:
        adapter.close()
