"""The page's 41 checks, in the order troubleshooting follows, with the doc's remedy for each.

Order matters: the run record names the *earliest* failing check in this order, because the
page says to start troubleshooting at the earliest place where something went wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final


class CheckId:
    """The page's check IDs by what each requires, so that code names a check by meaning and a
    typo is a name error, not a check that silently never matches. The values are the stable IDs
    of the record and the ``@check-<ID>`` tags; ``CHECKS`` below holds their order and remedies."""

    # §0
    NUM_NODES_IS_ONE: Final = "0.1"
    ONE_NODE_PROVIDES_ALL: Final = "0.2"
    ONE_IMAGE_MOUNTS_ENV: Final = "0.3"
    MULTI_NODE_REDIRECT: Final = "0.4"
    REAL_ROBOT_SAFETY: Final = "0.5"

    # 准备 RLinf 运行信息
    IMAGE_VERSIONED: Final = "P.1"
    GPU_COUNT_GIVEN: Final = "P.2"
    START_COMMAND_GIVEN: Final = "P.3"
    CONTAINER_PATHS_GIVEN: Final = "P.4"
    FIRST_SIGNAL_GIVEN: Final = "P.5"

    # Step 1
    LOADED_NUM_NODES_IS_ONE: Final = "1.1"
    VALIDATED_CONFIG_KEPT: Final = "1.2"

    # Step 2
    TASK_NAME: Final = "2.1"
    TASK_TYPE_CUSTOM: Final = "2.2"
    ONE_ROLE_NAMED_WORKER: Final = "2.3"
    WORKER_IS_HEADER: Final = "2.4"

    # Step 3
    TARGET_CLUSTER: Final = "3.1"
    ONE_NODE_SELECTED: Final = "3.2"
    GPUS_FIT: Final = "3.3"
    IMAGE_PULLABLE: Final = "3.4"
    PREPARE_SCRIPT: Final = "3.5"
    ENV_NOT_SENSITIVE: Final = "3.6"
    PATHS_UNDER_MOUNTS: Final = "3.7"

    # Step 4
    HEAD_ROLE_IS_WORKER: Final = "4.1"
    NO_CROSS_CLUSTER_NETWORK: Final = "4.2"
    SSH_KEY_ONLY_IF_NEEDED: Final = "4.3"
    START_COMMAND_KEPT: Final = "4.4"
    TENSORBOARD_PATH: Final = "4.5"

    # Step 5
    ROLES_ONE_WORKER: Final = "5.1"
    WORKERS_ONE: Final = "5.2"
    RAY_NODES_ONE: Final = "5.3"
    HEADER_WORKER_ONE_REPLICA: Final = "5.4"
    GPUS_CONSISTENT: Final = "5.5"
    PREPARED_VALUES_EQUAL: Final = "5.6"
    EXPECTED_NODE_ONLY: Final = "5.7"
    NO_SECRETS: Final = "5.8"

    # Step 6
    JOB_LISTED: Final = "6.1"
    ONE_POD_ON_NODE: Final = "6.2"
    RAY_HEAD_STARTED: Final = "6.3"
    PROGRESS_LOGGED: Final = "6.4"
    OUTPUT_PERSISTED: Final = "6.5"

    # Beyond the page: did the run really train (``TRAINING`` below). ``T.`` is no section
    # of the page, so these IDs cannot be read as one of its checks.
    STEPS_ADVANCE: Final = "T.1"
    METRICS_REAL: Final = "T.2"
    CHECKPOINT_TRAINED: Final = "T.3"
    RESUMES: Final = "T.4"  # opt-in: a second submission resumes from the checkpoint

    # Release over release (``BUDGETS`` below): the Step 6 stages against the profile's
    # budgets and the history of its earlier runs. ``B.`` is no section of the page either.
    STAGES_HOLD_BUDGETS: Final = "B.1"


@dataclass(frozen=True)
class DocCheck:
    id: str
    section: str  # the doc's own section title
    kind: str  # static | cluster | runtime
    says: str
    remedy: str


_S0 = "§0 确认任务适合单节点运行"
_SP = "准备 RLinf 运行信息"
_S1 = "Step 1 保留原有 RLinf 配置"
_S2 = "Step 2 添加 worker 角色"
_S3 = "Step 3 配置一个 Worker"
_S4 = "Step 4 填写运行命令"
_S5 = "Step 5 核对 YAML 并提交"
_S6 = STEP6_SECTION = "Step 6 确认任务开始运行"

_MULTI = "§0: use the multi-node guide (规划多节点和异构 Worker) instead of this page"

CHECKS: tuple[DocCheck, ...] = (
    DocCheck(
        "0.1",
        _S0,
        "static",
        "the effective cluster.num_nodes is 1",
        "§0: make the effective cluster.num_nodes 1 (YAML, defaults and run-command "
        "overrides), or " + _MULTI.removeprefix("§0: "),
    ),
    DocCheck(
        "0.2",
        _S0,
        "static",
        "GPU, data and storage come from one compute node",
        "§0: one cluster, one Worker, and mounts the one node can reach; otherwise "
        + _MULTI.removeprefix("§0: "),
    ),
    DocCheck(
        "0.3",
        _S0,
        "static",
        "all components share one image, mounts and environment",
        "§0: one role with one image and one environment; otherwise " + _MULTI.removeprefix("§0: "),
    ),
    DocCheck(
        "0.4",
        _S0,
        "static",
        "multi-node or extra resource fields go to the multi-node guide",
        _MULTI,
    ),
    DocCheck(
        "0.5",
        _S0,
        "static",
        "real-robot jobs only after device and on-site safety confirmation",
        "§0: read 使用真实设备前的安全要求 and confirm devices and on-site safety first",
    ),
    DocCheck(
        "P.1",
        _SP,
        "static",
        "image address with an explicit version",
        "准备 RLinf 运行信息: use an image with an explicit version tag (not latest) or a digest",
    ),
    DocCheck(
        "P.2",
        _SP,
        "static",
        "the GPU count this Worker requests",
        "准备 RLinf 运行信息: write down the GPU count the one Worker requests",
    ),
    DocCheck(
        "P.3",
        _SP,
        "static",
        "the RLinf start command, optional preparation command",
        "准备 RLinf 运行信息: write down the validated RLinf start command",
    ),
    DocCheck(
        "P.4",
        _SP,
        "static",
        "container paths of data, model, checkpoint, output",
        "准备 RLinf 运行信息: write down absolute container paths for data, model, "
        "checkpoint and output",
    ),
    DocCheck(
        "P.5",
        _SP,
        "static",
        "the first business signal and the expected output location",
        "准备 RLinf 运行信息: decide the first business signal (a log pattern) and where "
        "output is expected",
    ),
    DocCheck(
        "1.1",
        _S1,
        "static",
        "the config actually loaded has cluster.num_nodes: 1",
        "Step 1: make the config the run command really loads say cluster.num_nodes: 1",
    ),
    DocCheck(
        "1.2",
        _S1,
        "static",
        "keep the validated placement, world sizes, offload, pipeline stages, algorithm, "
        "model, data and checkpoint settings",
        "Step 1: run the validated config unchanged; do not override the settings that "
        "decide how RLinf uses the Worker's GPUs",
    ),
    DocCheck(
        "2.1",
        _S2,
        "static",
        "a recognisable task name in the page's name format",
        "Step 2: name the task with lowercase letters, digits and '-' (at most 63)",
    ),
    DocCheck(
        "2.2",
        _S2,
        "static",
        "task type 自定义任务 (custom)",
        "Step 2: choose 自定义任务 (custom) as the task type",
    ),
    DocCheck(
        "2.3",
        _S2,
        "static",
        "one role, renamed worker",
        "Step 2: keep exactly one role and name it worker",
    ),
    DocCheck(
        "2.4",
        _S2,
        "static",
        "worker shows as Header",
        "Step 2: select the worker row and make sure it shows as Header",
    ),
    DocCheck(
        "3.1",
        _S3,
        "cluster",
        "the target cluster this environment provides",
        "Step 3: choose the target cluster this environment provides (浏览集群)",
    ),
    DocCheck(
        "3.2",
        _S3,
        "cluster",
        "node selection hits exactly one node",
        "Step 3: narrow the node selection until exactly 1 node is selected; otherwise "
        "several Workers each start a Ray head",
    ),
    DocCheck(
        "3.3",
        _S3,
        "static",
        "GPU count the Worker needs, within node capacity",
        "Step 3: request at least the GPUs the placement uses (ranks 0-7 → 8) and no "
        "more than the selected node can allocate",
    ),
    DocCheck(
        "3.4",
        _S3,
        "static",
        "a pinned tag or a digest the cluster can pull",
        "Step 3: fill in a pinned tag (not latest) or a digest that the target cluster can pull",
    ),
    DocCheck(
        "3.5",
        _S3,
        "static",
        "RLark replaces ENTRYPOINT: preparation goes in the prepare script",
        "Step 3: put environment activation, cd and file preparation into the prepare "
        "script; RLark does not run the image ENTRYPOINT",
    ),
    DocCheck(
        "3.6",
        _S3,
        "static",
        "environment variables are non-sensitive",
        "Step 3 / Step 5: remove secrets from environment variables and use the "
        "environment's credential injection",
    ),
    DocCheck(
        "3.7",
        _S3,
        "static",
        "the program reads and writes through mount paths",
        "Step 3: make RLinf write checkpoints and logs (runner.logger.log_path) under a "
        "mount's container path; files outside mounts are lost when the Pod is rebuilt",
    ),
    DocCheck(
        "4.1",
        _S4,
        "static",
        "worker is the Header role",
        "Step 4: in 选择 Head 节点, confirm worker is the Header role",
    ),
    DocCheck(
        "4.2",
        _S4,
        "static",
        "single-cluster jobs use no cross-cluster network",
        "Step 4: keep the default: no cross-cluster network",
    ),
    DocCheck(
        "4.3",
        _S4,
        "static",
        "SSH public key only when remote access is needed",
        "Step 4: choose an SSH public key only when remote access is really needed",
    ),
    DocCheck(
        "4.4",
        _S4,
        "static",
        "the validated RLinf start command, with cd when needed",
        "Step 4: paste the validated RLinf start command; add an explicit cd when it "
        "depends on the working directory",
    ),
    DocCheck(
        "4.5",
        _S4,
        "static",
        "TensorBoard: where the program writes event files",
        "Step 4: fill in <runner.logger.log_path>/tensorboard (or a parent), under a mount",
    ),
    DocCheck(
        "5.1",
        _S5,
        "static",
        "RLark roles: 1, named worker",
        "Step 5: the YAML must have one role, named worker",
    ),
    DocCheck("5.2", _S5, "static", "Workers: 1", "Step 5: the one role must have 1 replica"),
    DocCheck(
        "5.3",
        _S5,
        "static",
        "Ray nodes: 1, equal to cluster.num_nodes",
        "Step 5: Workers, Ray nodes and the effective cluster.num_nodes must all be 1",
    ),
    DocCheck(
        "5.4",
        _S5,
        "static",
        "Header: worker, replicas 1",
        "Step 5: the Header must be worker with 1 replica",
    ),
    DocCheck(
        "5.5",
        _S5,
        "static",
        "GPU consistent with the RLinf config and node capacity",
        "Step 5: the YAML's GPU count must match the RLinf placement and the node capacity",
    ),
    DocCheck(
        "5.6",
        _S5,
        "static",
        "image, command and mounts equal the prepared values",
        "Step 5: make image, commands and mounts in the YAML equal what you prepared",
    ),
    DocCheck(
        "5.7",
        _S5,
        "cluster",
        "node selection only hits the expected node",
        "Step 5: make the node selection hit only the expected Node",
    ),
    DocCheck(
        "5.8",
        _S5,
        "static",
        "no passwords, private keys, tokens or storage keys",
        "Step 5 (保护敏感信息): remove the secret from the task configuration and use the "
        "credential injection this environment allows",
    ),
    DocCheck(
        "6.1",
        _S6,
        "runtime",
        "the Job appears in the task list",
        "Step 6: the Job was not listed; check the submission and the platform's task list",
    ),
    DocCheck(
        "6.2",
        _S6,
        "runtime",
        "one actual Pod for the one Worker, on the expected Node",
        "Step 6 → 首次运行问题排查: check node selection, GPU count and image (Step 3)",
    ),
    DocCheck(
        "6.3",
        _S6,
        "runtime",
        "logs show the Ray head started and the run script began",
        "Step 6 → 首次运行问题排查: check the prepare script and the image environment "
        "(Step 3), then the run script (Step 4)",
    ),
    DocCheck(
        "6.4",
        _S6,
        "runtime",
        "RLinf logs show the predetermined progress",
        "Step 6 → 首次运行问题排查: check the RLinf config and start command (Step 1, "
        "Step 4) and the first signal you prepared",
    ),
    DocCheck(
        "6.5",
        _S6,
        "runtime",
        "checkpoint or output persisted and readable again",
        "Step 6 → 首次运行问题排查: make RLinf write under a mount's container path "
        "(Step 3, 在训练任务中使用存储)",
    ),
)

# Checks of the training itself, after the page's: a run can pass all 41 while it trains
# garbage (non-finite losses, a stall after its first step, weights that never change, an
# earlier run's checkpoint). T.1-T.3 are on by default for a workload that trains, T.4 (a
# second submission that resumes from the checkpoint) is opt-in; each is switchable in the
# profile's ``training:``; they come after 6.5 in the troubleshooting order.
TRAINING_SECTION = "训练检查 Training checks (beyond the page)"

TRAINING: tuple[DocCheck, ...] = (
    DocCheck(
        "T.1",
        TRAINING_SECTION,
        "runtime",
        "the run reaches the steps its validated config asks for, without stalling",
        "Training: find why the run stopped advancing (its first error, GPU memory, the data "
        "and environment workers); lower the steps the config asks for "
        "(runner.max_epochs / max_steps, or the profile's training.steps) only if they were "
        "not meant",
    ),
    DocCheck(
        "T.2",
        TRAINING_SECTION,
        "runtime",
        "the run's TensorBoard scalars are there, finite and within the profile's bounds",
        "Training: a non-finite or out-of-bounds metric is a platform or data fault as often "
        "as a config one: compare the GPU, driver and image with the last release that "
        "trained, check the data mount; a run with no scalars needs "
        "runner.logger.logger_backends to include tensorboard",
    ),
    DocCheck(
        "T.3",
        TRAINING_SECTION,
        "runtime",
        "the checkpoint is this run's, its tensors finite and changed by training",
        "Training: weights that are non-finite or never change are a training fault "
        "(optimizer, learning rate, a frozen model, a rollout that yields nothing); a "
        "checkpoint older than the run is an earlier run's: give each run an output "
        "location of its own",
    ),
    DocCheck(
        "T.4",
        TRAINING_SECTION,
        "runtime",
        "a second submission with runner.resume_dir resumes from the run's last checkpoint at "
        "the next step and reaches its target (opt-in)",
        "Training: a run that starts again at step 1 never got or never honoured "
        "runner.resume_dir: make the run command pass it to RLinf's entry point (a launch "
        "script may drop further arguments) and check that the image's RLinf loads the actor "
        "from it; a resume path error needs the global_step_<N> directory the first run wrote, "
        "as the store lists it, on the same mount",
    ),
)

# Release over release, after the training: a platform release can pass every check above
# while the Ray head takes six times as long to start. Decided at the end of the run from the
# Step 6 durations, the profile's ``budgets:`` and the history of its earlier runs; a warning
# by default, a failure of B.1 under the strict policy (``--budgets strict``).
BUDGETS_SECTION = "版本对比 Release over release (beyond the page)"

BUDGETS: tuple[DocCheck, ...] = (
    DocCheck(
        "B.1",
        BUDGETS_SECTION,
        "runtime",
        "the stages hold their budgets and do not regress",
        "Release over release: compare this run's provenance with the last run that held "
        "(image, node, harness commit in summary.md); find the slow stage's cause on the "
        "target (image pulls, the prepare script, the node's load) before raising its budget "
        "in the profile's budgets:",
    ),
)

# Every check the record knows, in troubleshooting order: the page's, the training's, then
# release over release.
ALL_CHECKS: tuple[DocCheck, ...] = CHECKS + TRAINING + BUDGETS

BY_ID: dict[str, DocCheck] = {c.id: c for c in ALL_CHECKS}
ORDER: dict[str, int] = {c.id: i for i, c in enumerate(ALL_CHECKS)}


# Where one remedy of the doc does not fit every way a check fails, the failure's message
# picks the fitting one: 3.2's "narrow the node selection" is wrong for a selection that
# hits no node at all (the doc's step: use the conditions confirmed for this environment).
_REMEDY_FOR_MESSAGE: dict[str, tuple[tuple[re.Pattern[str], str], ...]] = {
    # 1.1's "say cluster.num_nodes: 1" is wrong for a config RLinf cannot compose at all.
    "1.1": (
        (
            re.compile(r"the Job never sets"),
            "Step 1: set the variable the config reads where the Job runs RLinf: export it "
            "in the role's prepareScript (or add it to the role's env), as RLinf's own launch "
            "script for this config does",
        ),
        (
            re.compile(r"RLinf would not start"),
            "Step 1: the config the run command loads must compose as RLinf composes it: fix "
            "what the message names, at its line",
        ),
    ),
    # 5.6 compares four prepared values: the remedy names the one that differs.
    "5.6": (
        (
            re.compile(r"^image .* differs from prepared"),
            "Step 5: set the Worker's image in the YAML to the prepared one (runInfo.image)",
        ),
        (
            re.compile(r"run script differs from the prepared start command"),
            "Step 5: make the run script in the YAML the prepared start command "
            "(runInfo.startCommand), word for word",
        ),
        (
            re.compile(r"prepare script lacks the prepared command"),
            "Step 5: put the prepared command (runInfo.prepareCommand) in the Worker's "
            "prepare script",
        ),
        (
            re.compile(r"no mount holds the prepared"),
            "Step 5: add to the Worker a mount whose container path holds the prepared path "
            "(runInfo.paths), or correct the prepared path",
        ),
    ),
    "3.2": (
        (
            re.compile(r"hits 0 |hits no node|matches no node"),
            "Step 3: the node selection hits no ready, schedulable node: browse the cluster's "
            "nodes (online, schedulable, GPUs, labels) and select with the conditions confirmed "
            "for this environment until exactly 1 node is selected; if they cannot be "
            "determined, ask the platform administrator (1 Worker, its GPUs, its storage)",
        ),
    ),
}


def remedy(check_id: str, message: str | None = None) -> str:
    """The doc's remedy for ``check_id``; the variant that fits ``message`` where there is one."""
    for pattern, text in _REMEDY_FOR_MESSAGE.get(check_id, ()):
        if message and pattern.search(message):
            return text
    return BY_ID[check_id].remedy if check_id in BY_ID else ""


def earliest(ids: list[str]) -> str | None:
    """The check that comes first in the doc's troubleshooting order."""
    known = [i for i in ids if i in ORDER]
    return min(known, key=ORDER.__getitem__) if known else None
