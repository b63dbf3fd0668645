"""Regenerate the logs of real RLinf failures (``tests/fidelity/failures/real/``).

Each scenario runs the Job of ``profiles/rlinf-embodied.yaml`` once on the local target with
a change a user makes (overrides on its run command), and keeps the Worker log as the Pod
log shows it: its first lines say how it was made, the failure class the scenario produces
and the line ``rlinf.failures.FirstCause`` quotes (checked here against what the scenario
expects, so a log that is not what it claims is never written). Run by hand, like
``regenerate.py`` (RLinf's environment built, the S3 server of ``testenv up s3`` running
and ``eval "$(testenv/testenv env)"`` done), then review and commit what it wrote:

    .venv/bin/python -m tests.fidelity.regenerate_failures [scenario ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rlark_acceptance.adapters import open_adapter
from rlark_acceptance.model.job import read_job
from rlark_acceptance.model.profile import load_profile
from rlark_acceptance.rlinf.failures import FirstCause

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "profiles" / "rlinf-embodied.yaml"
OUT = Path(__file__).resolve().parent / "failures" / "real"
ANCHOR = "runner.save_interval=1 "  # the overrides go right after it, in the run command
TIMEOUT_S = 900.0
RUN_KEYS = "logs/"  # runner.logger.log_path=/mnt/ckpt/logs on the ckpt mount


@dataclass(frozen=True)
class Scenario:
    name: str  # the log's file name
    kind: str  # the failure class id FirstCause must name
    overrides: str  # added to RLinf's command line
    what: str  # what the user did and what RLinf does
    expect: str  # a part of the quote the log must give
    actor: str | None = None  # the Ray actor whose line the cause is, when it is an actor's


SCENARIOS = (
    Scenario(
        "diverged-mid-run",
        "training-diverged",
        "actor.critic_optim.lr=1e20",
        "an absurd critic learning rate: every training scalar of step 1 is NaN, the "
        "weights synced to the rollout are NaN, and at step 2 the rollout worker fails "
        "sampling from them; RLinf kills the other actors (ActorDiedError) and exits",
        "normal expects all elements of std >= 0.0",
        "MultiStepRolloutWorker",
    ),
    Scenario(
        "actor-start-up",
        "read-only-checkpoint-dir",
        "+algorithm.replay_buffer.auto_save_path=/mnt/models/replay_buffer",
        "the SAC replay buffer's auto-save directory on the read-only models mount: the "
        "ActorGroup fails while RLinf starts its workers, before any step",
        "[Errno 30] Read-only file system: '/mnt/models/replay_buffer",
        "EmbodiedSACFSDPPolicy",
    ),
    Scenario(
        "hydra-composition",
        "hydra-composition",
        "runner.no_such_key=1",
        "an override of a key the config lacks (no leading +): Hydra refuses to compose",
        "no_such_key",
    ),
    Scenario(
        "resume-path",
        "resume-path",
        "+runner.resume_dir=/mnt/ckpt/nope",
        "runner.resume_dir naming no checkpoint: RLinf's runner refuses it at start",
        "resume_dir",
    ),
    Scenario(
        "read-only-log-path",
        "read-only-checkpoint-dir",
        "runner.logger.log_path=/mnt/models/logs",
        "the logs and checkpoints on the read-only models mount",
        "Read-only file system",
    ),
)


def run_scenario(s: Scenario) -> Path:
    profile = load_profile(PROFILE)
    assert profile.job is not None
    text = profile.job.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1, profile.job
    text = text.replace(ANCHOR, f"{ANCHOR}{s.overrides} ")
    with tempfile.TemporaryDirectory() as tmp:
        changed = Path(tmp) / "job.yaml"
        changed.write_text(text, encoding="utf-8")
        # Shown at the profile's Job: its relative hostPaths stay the profile's.
        job = read_job(str(changed), shown=str(profile.job))
    ckpt = next(m for m in job.roles[0].mounts if m.name == "ckpt")
    adapter = open_adapter(profile)
    try:
        store = adapter.store_for(job, ckpt)
        before = {o.key for o in store.list(RUN_KEYS)}
        t0 = time.monotonic()
        ref = adapter.submit(job, text)
        while not any(p.terminal for p in adapter.pods(ref)):
            assert time.monotonic() - t0 < TIMEOUT_S, f"{s.name}: RLinf did not end"
            time.sleep(2)
        pod = adapter.pods(ref)[0]
        log = adapter.logs(ref, pod.name)
        adapter.delete(ref)
        # Only what this run wrote (its log_path, /mnt/ckpt/logs): an acceptance run on the
        # same store writes under a run id of its own, at the same time perhaps.
        written = [o.key for o in store.list(RUN_KEYS) if o.key not in before]
        store.delete(written)  # type: ignore[attr-defined]
    finally:
        adapter.close()
    # The harness user's home is this machine's business: written as ~.
    lines = log.replace(str(Path.home()), "~").splitlines()
    kept = Path(tempfile.gettempdir()) / f"rlinf-failure-{s.name}.log"
    kept.write_text("\n".join(lines) + "\n", encoding="utf-8")  # to look at if it is not
    assert pod.phase == "Failed", f"{s.name}: the Pod is {pod.phase}, not Failed ({kept})"
    tracker = FirstCause()
    tracker.feed(lines, 0)
    cause = tracker.cause
    assert cause is not None, f"{s.name}: no error found in the log ({kept})"
    found = cause.kind.id if cause.kind is not None else None
    assert found == s.kind and s.expect in cause.quote and cause.actor == s.actor, (
        f"{s.name}: {found} in {cause.actor}: {cause.quote} ({kept})"
    )
    day = datetime.now(UTC).date().isoformat()
    header = [
        f"# From a run: RLinf 0.3.0, profiles/rlinf-embodied.yaml with {s.overrides}, {day}: "
        f"{s.what}.",
        f"# class: {s.kind}",
        f"# actor: {s.actor or 'the driver'}",
        f"# cause: {cause.quote}",
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{s.name}.log"
    path.write_text("\n".join([*header, *lines]) + "\n", encoding="utf-8")
    print(f"{path}: {found} in {cause.actor or 'the driver'}, line {cause.line + 1}: {cause.quote}")
    return path


def main(names: list[str]) -> int:
    chosen = [s for s in SCENARIOS if not names or s.name in names]
    unknown = set(names) - {s.name for s in SCENARIOS}
    if unknown:
        print(f"unknown scenarios: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    failed = []
    for s in chosen:
        try:
            run_scenario(s)
        except AssertionError as exc:  # the others still run: each is minutes of RLinf
            print(f"NOT WRITTEN: {exc}", file=sys.stderr)
            failed.append(s.name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
