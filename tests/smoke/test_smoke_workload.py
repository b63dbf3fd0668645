"""The smoke workload end to end: a real Ray head, the workload as a subprocess, its outputs.

The head is this module's own: its own ports and ``--temp-dir``, started in a new process
session and stopped by killing that process group, so other Ray instances on the machine
(other engineers, other tests) are never touched. ``ray stop`` would kill them all.

Over ~400 lines: the tests share one Ray head fixture that is costly to start, so they stay
in the module that owns it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rlark_acceptance.adapters.local.container import free_ports
from rlark_acceptance.smoke import progress, runner, toy
from rlark_acceptance.storage import FileStore, verify_checkpoints, verify_event_files

pytest.importorskip("ray")

CONFIG_NAME = "smoke_ppo_mlp"
STEP_LINE = re.compile(r"^│ Global Step:\s+(\d+)/(\d+) │ Progress: [█░]+ │\s+\d+\.\d%")
RUN_TIMEOUT = 180


def _live_members(pgid: int) -> list[int]:
    """Processes of the group that are not zombies (read from /proc)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


def _kill_group(pgid: int, timeout: float = 15.0) -> None:
    """``ray stop --force`` for this head only: SIGKILL its process group, wait until gone.

    Zombies may remain where PID 1 does not reap orphans; they hold no ports or memory.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


@dataclass
class RayHead:
    address: str
    temp_dir: Path
    startup_seconds: float


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    # Unix socket paths are limited to ~107 bytes and Ray nests sockets deep inside the
    # temp dir: fall back to a short private dir when pytest's base temp is long.
    temp_dir = tmp_path_factory.mktemp("ray")
    if len(str(temp_dir)) > 40:
        temp_dir = Path(tempfile.mkdtemp(prefix="rkray-", dir="/tmp"))
    # Fixed default ports would collide with another head on this machine (the client
    # server's even silently: it binds with SO_REUSEPORT); ports picked one by one could
    # collide with each other, which Ray refuses.
    port, *others = free_ports(7)
    cmd = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        f"--port={port}",
        "--num-cpus=2",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        *(
            f"--{flag}={p}"
            for flag, p in zip(
                (
                    "dashboard-port",
                    "dashboard-agent-listen-port",
                    "dashboard-agent-grpc-port",
                    "runtime-env-agent-port",
                    "metrics-export-port",
                    "ray-client-server-port",
                ),
                others,
                strict=True,
            )
        ),
    ]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # Loopback only: otherwise Ray binds to the machine's interface address.
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # the head's daemons inherit this process group
    )
    pgid = proc.pid
    try:
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            pytest.fail(f"ray start failed ({proc.returncode}):\n{out[-3000:]}")
        yield RayHead(f"127.0.0.1:{port}", temp_dir, time.monotonic() - t0)
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_group(pgid)


@dataclass
class Run:
    returncode: int
    log: str  # stdout and stderr interleaved, as a Pod log shows them
    cwd: Path
    log_path: Path
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.log.splitlines()

    def step_lines(self) -> list[str]:
        return [line for line in self.lines if STEP_LINE.match(line)]


def run_smoke(
    cwd: Path,
    overrides: list[str],
    ray_address: str,
    config: tuple[Path, str] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Run:
    """Run the workload like a run script does; ``config`` is ``(--config-path, --config-name)``."""
    cwd.mkdir(parents=True, exist_ok=True)
    log_path = cwd / "logs"
    env = dict(
        os.environ,
        RAY_ADDRESS=ray_address,
        RAY_USAGE_STATS_ENABLED="0",
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        **(extra_env or {}),
    )
    env.pop("HYDRA_FULL_ERROR", None)
    args = ["--config-path", str(config[0]), "--config-name", config[1]] if config else []
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlark_acceptance.smoke",
            *args,
            f"runner.logger.log_path={log_path}",
            *overrides,
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    return Run(proc.returncode, proc.stdout, cwd, log_path, time.monotonic() - t0)


def resolved_config(lines: list[str]) -> dict:
    """The indented JSON block RLinf prints at start-up: from a ``{`` line to its ``}`` line."""
    start = lines.index("{")
    end = lines.index("}", start)
    return json.loads("\n".join(lines[start : end + 1]))


def composed_config(config_dir: Path, name: str, overrides: list[str]) -> dict:
    """What Hydra itself composes from the same inputs, resolved."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        cfg = compose(config_name=name, overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def shipped_config_dir() -> Path:
    import rlark_acceptance.smoke.config as pkg

    return Path(pkg.__file__).parent


# --- the end-to-end runs -----------------------------------------------------------------

OVERRIDES = ["runner.max_steps=5", "runner.save_interval=2", "actor.optim.lr=0.05"]


@pytest.fixture(scope="module")
def config_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped config copied elsewhere, passed with --config-path as a run script would."""
    target = tmp_path_factory.mktemp("config")
    shutil.copy(shipped_config_dir() / f"{CONFIG_NAME}.yaml", target)
    return target


@pytest.fixture(scope="module")
def good_run(ray_head: RayHead, config_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    run = run_smoke(
        tmp_path_factory.mktemp("good"), OVERRIDES, ray_head.address, (config_copy, CONFIG_NAME)
    )
    print(f"ray head start {ray_head.startup_seconds:.1f}s, workload {run.seconds:.1f}s")
    assert run.returncode == 0, run.log[-4000:]
    return run


def test_prints_resolved_config_equal_to_hydra_composition(
    good_run: Run, config_copy: Path
) -> None:
    printed = resolved_config(good_run.lines)
    overrides = [f"runner.logger.log_path={good_run.log_path}", *OVERRIDES]
    expected = composed_config(config_copy, CONFIG_NAME, overrides)
    assert printed == expected
    assert printed["cluster"]["num_nodes"] == 1  # 1.1 reads it from here
    assert printed["actor"]["optim"]["lr"] == 0.05
    # Interpolations are resolved, as RLinf's print shows them.
    assert (
        printed["env"]["train"]["video_cfg"]["video_base_dir"] == f"{good_run.log_path}/video/train"
    )


def test_config_is_printed_before_attaching_and_progress_after(good_run: Run) -> None:
    lines = good_run.lines
    json_at = lines.index("{")
    attached_at = next(i for i, line in enumerate(lines) if line.startswith("Attached to Ray head"))
    first_step_at = next(i for i, line in enumerate(lines) if STEP_LINE.match(line))
    assert json_at < attached_at < first_step_at
    assert "not RLinf" in lines[0]


def test_one_global_step_line_per_step(good_run: Run) -> None:
    steps = [STEP_LINE.match(line).groups() for line in good_run.step_lines()]  # type: ignore[union-attr]
    assert steps == [(str(i), "5") for i in range(1, 6)]
    # The metrics follow in the table's sections, as RLinf groups them.
    after = good_run.lines[good_run.lines.index(good_run.step_lines()[-1]) :]
    assert any(line.startswith("│reward=") for line in after), after[:20]


def test_checkpoints_in_rlinf_layout_pass_verification(good_run: Run) -> None:
    ckpts = good_run.log_path / "smoke_ppo_mlp" / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir()) == [
        "global_step_2",
        "global_step_4",
        "global_step_5",
    ]
    weights = ckpts / "global_step_5/actor/model_state_dict/full_weights.safetensors"
    assert weights.is_file()
    report = verify_checkpoints(
        FileStore(good_run.log_path), "smoke_ppo_mlp/checkpoints", all_steps=True
    )
    assert report.ok, report.problems
    assert report.steps == [2, 4, 5]
    assert "global_step_5/actor/optim_state_dict/optim.safetensors" in report.files_checked
    # Real training: the weights moved between checkpoints and stayed finite.
    from safetensors.numpy import load_file

    w2 = load_file(ckpts / "global_step_2/actor/model_state_dict/full_weights.safetensors")
    w5 = load_file(weights)
    assert set(w2) == set(w5)
    assert all(np.isfinite(v).all() for v in w5.values())
    assert any(not np.array_equal(w2[k], w5[k]) for k in w5)
    assert not list(ckpts.rglob("*.tmp"))


def test_tensorboard_events_written(good_run: Run) -> None:
    assert list((good_run.log_path / "tensorboard").glob("events.out.tfevents.*"))
    report = verify_event_files(FileStore(good_run.log_path), "tensorboard")
    assert report.ok, report.problems
    assert sum(report.files.values()) > 5  # the file_version record plus scalars per step


def test_hydra_leaves_cwd_alone(good_run: Run) -> None:
    # hydra.run.dir=. and output_subdir=null: no outputs/, no .hydra/, no job log file.
    assert sorted(p.name for p in good_run.cwd.iterdir()) == ["logs"]


def test_max_steps_zero_prints_no_progress_and_exits_zero(
    ray_head: RayHead, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = run_smoke(tmp_path_factory.mktemp("zero"), ["runner.max_steps=0"], ray_head.address)
    assert run.returncode == 0, run.log[-4000:]
    assert "Global Step" not in run.log
    assert not (run.log_path / "smoke_ppo_mlp" / "checkpoints").exists()


def test_crash_knob_fails_with_traceback(
    ray_head: RayHead, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = run_smoke(tmp_path_factory.mktemp("crash"), ["smoke.crash_at_step=2"], ray_head.address)
    assert run.returncode != 0
    assert "Traceback" in run.log
    assert "smoke.crash_at_step=2: deliberate failure" in run.log
    assert len(run.step_lines()) == 1


def test_step_seconds_slows_every_step_but_the_last(
    ray_head: RayHead, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``smoke.step_seconds``: a slower training, the next checkpoint that much later."""
    overrides = ["runner.max_steps=2", "smoke.step_seconds=3"]
    run = run_smoke(tmp_path_factory.mktemp("slow"), overrides, ray_head.address)
    assert run.returncode == 0, run.log[-4000:]
    # Each table's Step Time is the mean over the steps so far: step 2 alone took
    # 2 × its mean − step 1's, the pause included (step 1 itself may take seconds on a busy
    # machine: the actors' first calls).
    times = [float(t) for t in re.findall(r"Step Time: ([0-9.]+)s", run.log)]
    assert len(times) == 2 and 2 * times[1] - times[0] >= 3, times


def test_fails_fast_without_a_ray_head(tmp_path: Path) -> None:
    # A port nobody listens on: RAY_ADDRESS pins the lookup, so another head on this
    # machine cannot be picked up by address discovery.
    run = run_smoke(tmp_path / "nohead", [], f"127.0.0.1:{free_ports(1)[0]}")
    assert run.returncode == 3, run.log[-4000:]
    assert "no Ray head is reachable at 127.0.0.1:" in run.log
    assert "ray start --head" in run.log
    assert "Traceback" not in run.log
    assert "Global Step" not in run.log


REAL_CONFIGS = Path(__file__).resolve().parents[1] / "data/rlinf-configs/examples/embodiment"


@pytest.mark.skipif(not REAL_CONFIGS.is_dir(), reason="tests/data/rlinf-configs not present")
@pytest.mark.filterwarnings("ignore:In 'frankasim_ppo_mlp'. Defaults list is missing:UserWarning")
def test_runs_a_real_rlinf_embodied_config(
    ray_head: RayHead, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # RLinf's configs find their Hydra defaults through EMBODIED_PATH, as run_embodiment.sh sets.
    config_dir = REAL_CONFIGS / "config"
    overrides = ["runner.max_steps=2", "runner.save_interval=1"]
    run = run_smoke(
        tmp_path_factory.mktemp("real"),
        overrides,
        ray_head.address,
        (config_dir, "frankasim_ppo_mlp"),
        {"EMBODIED_PATH": str(REAL_CONFIGS)},
    )
    assert run.returncode == 0, run.log[-4000:]
    monkeypatch.setenv("EMBODIED_PATH", str(REAL_CONFIGS))
    expected = composed_config(
        config_dir, "frankasim_ppo_mlp", [f"runner.logger.log_path={run.log_path}", *overrides]
    )
    assert resolved_config(run.lines) == expected
    assert len(run.step_lines()) == 2
    report = verify_checkpoints(FileStore(run.log_path), "franka_sim_ppo_mlp/checkpoints")
    assert report.ok and report.steps == [1, 2], report.problems


# --- the pieces, without Ray -------------------------------------------------------------


def test_ppo_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(0)
    p = {k: v.astype(np.float64) for k, v in toy.init_params(3, 5, 4, seed=1).items()}
    obs = rng.normal(size=(8, 3))
    actions = rng.integers(0, 4, size=8)
    adv, returns = rng.normal(size=8), rng.random(8)
    _, logp_all, _ = toy.forward(p, obs)
    # old log-probs near the current ones keep every ratio inside the clip range
    old = logp_all[np.arange(8), actions] + rng.normal(scale=0.01, size=8)

    def loss(q: toy.Params) -> float:
        _, lp, v = toy.forward(q, obs)
        ratio = np.exp(lp[np.arange(8), actions] - old)
        return float(np.mean(-adv * ratio) + 0.5 * np.mean((v - returns) ** 2))

    grads, _ = toy.ppo_grads(p, obs, actions, old, adv, returns, 0.2, 0.2)
    for name, g in grads.items():
        idx = (0,) * p[name].ndim
        q = {k: v.copy() for k, v in p.items()}
        q[name][idx] += 1e-6
        up = loss(q)
        q[name][idx] -= 2e-6
        numeric = (up - loss(q)) / 2e-6
        assert abs(numeric - float(g[idx])) < 1e-4, name


def test_training_improves_reward_on_the_bandit() -> None:
    env = toy.ContextualBandit(obs_dim=6, num_actions=4, seed=7)
    p = toy.init_params(6, 16, 4, seed=1)
    opt = toy.Adam(lr=0.05)
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(40):
        obs = env.reset(64)
        actions, logp, values = toy.sample(p, obs, rng)
        r = env.step(actions)
        rewards.append(r.mean())
        adv = (r - values - (r - values).mean()) / ((r - values).std() + 1e-8)
        grads, _ = toy.ppo_grads(p, obs, actions, logp, adv, r, 0.2, 0.2)
        opt.step(p, grads)
    assert np.mean(rewards[-10:]) > np.mean(rewards[:10]) + 0.2


def test_step_and_save_semantics_follow_rlinf() -> None:
    assert runner.compute_max_steps({"max_epochs": 100, "max_steps": 5}) == 5
    assert runner.compute_max_steps({"max_epochs": 3, "max_steps": -1}) == 3
    assert runner.compute_max_steps({"max_epochs": 3, "max_steps": 10}) == 3
    saved = [s for s in range(1, 8) if runner.should_save(s, 7, 3)]
    assert saved == [3, 6, 7]
    assert not any(runner.should_save(s, 7, -1) for s in range(1, 8))


def test_metric_table_shape() -> None:
    """RLinf's embodied metric table: 120 columns, the step row first."""
    table = progress.format_table(2, 5, 1.0, {"rollout/reward": 0.5, "train/lr": 3e-4})
    rows = table.splitlines()
    assert rows[0] == "" and rows[1].startswith("╭") and "Metric Table" in rows[2]
    assert STEP_LINE.match(rows[3]), rows[3]
    assert rows[3].startswith(
        "│ Global Step:    2/5 │ Progress: " + "█" * 16 + "░" * 24 + " │  40.0%"
    )
    assert all(len(r) == 120 for r in rows[1:-1]), [len(r) for r in rows]
    assert any(r.startswith("│reward=0.500 ") for r in rows) and any(
        "lr=3.00e-04" in r for r in rows
    )
    assert progress.step_row(5, 5).startswith("│ Global Step:    5/5 │ Progress: " + "█" * 40)


def test_probe_tells_a_listening_head_from_none() -> None:
    from rlark_acceptance.smoke.cluster import NoRayHeadError, probe

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        probe(f"127.0.0.1:{server.getsockname()[1]}")
    with pytest.raises(NoRayHeadError, match=r"no Ray head is reachable at 127\.0\.0\.1:"):
        probe(f"127.0.0.1:{free_ports(1)[0]}", timeout=2)
    with pytest.raises(NoRayHeadError, match="not host:port"):
        probe("nonsense")


def test_atomic_safetensors_write_is_complete_and_readable(tmp_path: Path) -> None:
    from safetensors.numpy import load_file

    from rlark_acceptance.smoke.atomic import write_safetensors

    path = write_safetensors(tmp_path / "a/b.safetensors", {"x": np.arange(3.0)}, {"k": "v"})
    assert np.array_equal(load_file(path)["x"], np.arange(3.0))
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["b.safetensors"]


def test_spec_reads_real_configs_leniently() -> None:
    from rlark_acceptance.smoke.spec import MAX_HIDDEN, SmokeSpec

    spec = SmokeSpec.from_cfg(
        {"actor": {"model": {"hidden_dim": 4096, "obs_dim": "n/a"}}, "smoke": {"crash_at_step": 3}}
    )
    assert spec.hidden_dim == MAX_HIDDEN and spec.obs_dim == 6
    assert spec.crash_at_step == 3 and spec.actor_group == "ActorGroup"
