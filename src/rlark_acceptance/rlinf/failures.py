"""The first cause of a failed RLinf run, read from the Worker's log as it streams.

When RLinf fails, the last lines of its log are knock-ons: the driver kills the other
actors (``ray.kill``), their pending calls end in ``ActorDiedError``, RLinf prints that it
exits "due to a failure upon worker execution". The cause is the *first* error, often far
above and on another actor's output. :class:`FirstCause` finds it in one pass over the
log, in batches as they arrive, and :func:`classify` names the failure class RLinf users
meet, with the remedy.

Pure: no I/O, standard library only. Memory is bounded whatever the log's size: the
tracker keeps the state of the tracebacks being read (not their lines), the first cause,
the first knock-on and a few counters.

What counts as an error (all of it formats of Python, Ray, Hydra and RLinf):

- the exception line of a ``Traceback (most recent call last):`` block, i.e. the first
  line after the header that is not indented (frames, source lines and carets are); of
  chained exceptions the first block wins, as it is printed first;
- a Ray wrapper (``ray.exceptions.RayTaskError(X): ray::Cls.f() (pid=…)``, RLinf's
  ``Exception occurred while running Cls's function f: exception is ray::Cls.f() (…)``,
  an actor's creation-task error) is followed by the frames of the remote task and its
  original exception line, which is the cause;
- lines that are fatal without a traceback: Hydra's compact errors (printed bare, then
  ``Set the environment variable HYDRA_FULL_ERROR=1 …``), an exception line alone,
  ``ERROR: …`` lines (the smoke workload's), ``Fatal Python error: …``, Ray killing a
  worker because the node ran low on memory.

Ray prefixes an actor's lines with ``(Cls pid=N)`` or ``(Cls pid=N, ip=A)``, coloured, and
may end a line with ``[repeated 3x across cluster]``; lines of different actors
interleave, so a traceback is followed per prefix. A knock-on is the cause only when the
log printed nothing else.

Example::

    >>> t = FirstCause()
    >>> t.feed(["(Actor pid=7) Traceback (most recent call last):",
    ...         '(Actor pid=7)   File "w.py", line 3, in step',
    ...         "(Actor pid=7) torch.OutOfMemoryError: CUDA out of memory.",
    ...         "ray.exceptions.ActorDiedError: The actor died unexpectedly before"
    ...         " finishing this task."], 0)
    >>> c = t.cause
    >>> c.line, c.actor, c.kind.id, c.knock_ons
    (2, 'Actor', 'gpu-out-of-memory', 1)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

QUOTE_MAX = 300


@dataclass(frozen=True)
class FailureClass:
    """A kind of failure RLinf users meet: what it is and what to do about it.

    ``rlinf_issues`` are RLinf GitHub issues that report it (for reference).
    """

    id: str
    title: str
    remedy: str
    rlinf_issues: tuple[int, ...] = ()


@dataclass(frozen=True)
class Cause:
    """The first error of a run, as the log printed it.

    ``line`` is the 0-based index of the error line in the log; ``quote`` that line with
    Ray's prefix, colours and repeat marker removed, stripped, at most :data:`QUOTE_MAX`
    characters; ``actor`` the name in the Ray prefix (``EnvGroup(rank=0)``), or the class of
    the remote task whose error the driver printed (``ray::MultiStepRolloutWorker.generate()``
    in Ray's wrapper), None for the driver's own errors; ``knock_ons`` how many other errors
    of the log are knock-ons (actors killed or dead); ``mount_path`` the absolute path an
    ``[Errno N]`` error names, for the caller to map to its mount.
    """

    line: int
    quote: str
    actor: str | None
    kind: FailureClass | None
    knock_ons: int = 0
    mount_path: str | None = None


GPU_OUT_OF_MEMORY = FailureClass(
    "gpu-out-of-memory",
    "A GPU ran out of memory",
    "Lower what one GPU holds: the actor's micro_batch_size, the rollout's "
    "gpu_memory_utilization, the envs per GPU; or enable offload, or give the "
    "components more GPUs in cluster.component_placement.",
    (272,),
)
HOST_OUT_OF_MEMORY = FailureClass(
    "host-out-of-memory",
    "The node ran low on memory and Ray killed a worker",
    "Raise the Worker Pod's memory limit, or hold less in RAM (fewer envs, a smaller "
    "replay buffer, no CPU offload).",
)
ACTOR_KILLED = FailureClass(
    "actor-killed-knock-on",
    "An actor was killed or died as a consequence",
    "This is a knock-on, not the cause: the first error above it (often on another "
    "actor) is. If the log printed none, the actor's process died without Python "
    "output (out-of-memory kill, segmentation fault): see the Pod's events and memory.",
    (101, 728, 681),
)
ENV_WORKER_CRASH = FailureClass(
    "env-worker-crash",
    "An environment worker crashed",
    "The simulator or its wrapper raised in the env worker: check the env section "
    "(env type, task id, assets downloaded, envs per GPU) against the error quoted.",
    (432,),
)
EGL_RENDERING = FailureClass(
    "egl-rendering",
    "Off-screen rendering (EGL / MuJoCo GL) failed",
    "The image or node lacks a working GPU rendering stack: MUJOCO_GL=egl and "
    "PYOPENGL_PLATFORM=egl need NVIDIA's EGL libraries in the image and the GPU "
    "visible to the env worker; MUJOCO_EGL_DEVICE_ID must index a visible GPU.",
    (953, 965),
)
RESUME_PATH = FailureClass(
    "resume-path",
    "The checkpoint to resume from was not found",
    "runner.resume_dir must name an existing global_step_<N> directory on the "
    "checkpoint mount, without a trailing slash: compare it with the store's listing.",
    (271,),
)
ROLLOUT_BACKEND_IMPORT = FailureClass(
    "rollout-backend-import",
    "The rollout backend (vLLM / SGLang) failed to import",
    "The image lacks the rollout backend the config selects, or holds a version RLinf "
    "does not support: use RLinf's image for that backend, or select the one installed.",
)
# Seen in users' reports of Ray-based trainers (tests/diagnose/users/): flash-attn built
# against another torch (``undefined symbol``), a package the image lacks, and
# transformers' lazy import reporting either.
DEPENDENCY_MISMATCH = FailureClass(
    "dependency-mismatch",
    "A Python package is missing or built for another version",
    "The image's packages do not match what the run imports: a module is missing, or a "
    "compiled extension (flash-attn, a CUDA kernel) was built against another torch or "
    "CUDA (undefined symbol). Check the package the error names against the versions "
    "RLinf pins for this config (pip show torch and the package), and use RLinf's image "
    "for it or reinstall that package's build for the image's torch and CUDA.",
)
NCCL = FailureClass(
    "nccl",
    "A NCCL collective failed",
    "Collectives between the workers failed: check that all the Pod's GPUs are visible "
    "to each worker, that /dev/shm is large enough, and rerun with NCCL_DEBUG=INFO to "
    "see which transport failed.",
)
HYDRA_COMPOSITION = FailureClass(
    "hydra-composition",
    "The config did not compose (Hydra / OmegaConf)",
    "An override or a defaults entry names a key or a config that does not exist: fix "
    "the run command's overrides (a key the config lacks needs a leading +) or the "
    "defaults list.",
)
DISK_FULL = FailureClass(
    "disk-full",
    "A disk is full",
    "The volume written to has no space left: free or enlarge it (checkpoints and "
    "replay buffers grow with save_interval and the buffer size); the path says which.",
)
READ_ONLY_CHECKPOINT_DIR = FailureClass(
    "read-only-checkpoint-dir",
    "The checkpoint directory is read-only",
    "The mount RLinf writes its checkpoints and logs to is read-only: mount it "
    "read-write, or point runner.logger.log_path at a writable mount.",
)
TRAINING_DIVERGED = FailureClass(
    "training-diverged",
    "Training diverged: NaN or infinite values reached the model",
    "The weights, or what they were fed, became NaN or infinite, and an actor sampling "
    "from them failed: the run's training scalars show the step it began. Lower the "
    "learning rates (actor.optim.lr, actor.critic_optim.lr, the entropy tuning's), keep "
    "gradient clipping on, check the precision (fp16 / bf16 overflow) and the rewards' scale.",
)
RAY_START_TIMEOUT = FailureClass(
    "ray-start-timeout",
    "The Ray head did not come up within Ray's own start-up waits",
    "The node's processes did not get the CPU to start Ray: the raylet gives its dashboard "
    "agent (a Python process with heavy imports) a fixed 15 s to write its port file and "
    "aborts past it, and `ray start` gives the raylet 30 s to register. Other Workers or Ray "
    "clusters on the node, or a CPU limit far below what Ray's dozen processes take to start, "
    "cause it: run one Worker per node at a time, give the Worker Pod more CPU, and look at "
    "the node's load when it failed; not the RLinf config, which had not started.",
)
MOUNT_IO_ERROR = FailureClass(
    "mount-io-error",
    "I/O error on a mounted store",
    "The mount's store stopped answering: check the object storage behind the mount "
    "(endpoint, credentials, bucket, quota), not the RLinf config.",
)

# Not read from the log: what the target reports of the Worker's Pod (``observed.pod_text``
# tags a Pod the cluster took away, or whose container its runtime lost, with these), so
# the run's remedy is the cluster's.
WORKER_DISRUPTED = FailureClass(
    "worker-disrupted",
    "The cluster took the Worker's Pod away",
    "The Worker was stopped from outside (evicted, preempted, its node lost, tainted or "
    "shut down), not by RLinf: read the Pod's DisruptionTarget condition and the node's "
    "events; check node pressure, PodDisruptionBudgets, priority classes and taints, not "
    "the RLinf config.",
)

CONTAINER_RUNTIME_LOST = FailureClass(
    "container-runtime-lost",
    "The node's container runtime lost the Worker's container",
    "The kubelet could not learn how the Worker ended: the node's container runtime "
    "(containerd, CRI-O) lost its container (the runtime restarted or its shim was "
    "killed). Check the runtime's service and log on the node and the kubelet's log, not "
    "the RLinf config.",
)

# Not read from the log either: 6.5 found the checkpoint intact while the Worker ran and
# gone after its deletion, so RLinf wrote it where it should; the remedy is whoever
# removed it.
OUTPUTS_REMOVED = FailureClass(
    "outputs-removed",
    "The checkpoint was removed after the Worker was deleted",
    "The checkpoint was written and read intact, then removed: look for what deletes at "
    "this location (the run script's or RLinf's clean-up on SIGTERM, a lifecycle rule of "
    "the bucket, another job or person writing under the same prefix), not the RLinf "
    "config. Give each run a location of its own (an objectStorage mount: the harness "
    "appends the run id to its prefix).",
)

HARNESS_REMOVED = FailureClass(
    "harness-removed",
    "The harness itself removed the run's checkpoint",
    "A fault of rlark-acceptance, not of the platform or the RLinf config: the removal "
    "named (which run, where, why) should never reach a live run's location. Keep this "
    "run's record and report it with the harness's removal log (removals.jsonl in its "
    "state directory).",
)

# What the Pod's status and events say where its log cannot (``diagnose --pod``): the
# container never ran, or the kernel killed it without Python's output.
WORKER_OOM_KILLED = FailureClass(
    "worker-oom-killed",
    "The Worker's container was killed for memory (OOMKilled)",
    "The container went past its memory limit and the kernel killed it (exit 137), so its "
    "log ends in knock-ons with no Python error: raise the Worker's memory limit, or hold "
    "less in RAM (fewer envs, a smaller replay buffer, no CPU offload).",
)
IMAGE_PULL_FAILED = FailureClass(
    "image-pull-failed",
    "The node could not pull the Worker's image",
    "Check the image reference (registry, repository, tag or digest) against the registry, "
    "that the node reaches the registry, and the pull secret the namespace gives the Pod.",
)
VOLUME_MOUNT_FAILED = FailureClass(
    "volume-mount-failed",
    "A volume of the Worker could not be mounted",
    "The kubelet could not mount a volume the Job names (its event says which and why): "
    "check that the claim, secret or config map exists in the Job's namespace, that the "
    "storage's driver runs on the node, and that the node reaches the store.",
)
UNSCHEDULABLE = FailureClass(
    "unschedulable",
    "No node could take the Worker's Pod",
    "The scheduler's message says what was missing on each node: narrow or fix the node "
    "selection, and request no more GPUs, CPU or memory than the selected node can allocate.",
)
POD_CLASSES = (WORKER_OOM_KILLED, IMAGE_PULL_FAILED, VOLUME_MOUNT_FAILED, UNSCHEDULABLE)

# Most specific first: an I/O error on a checkpoint path is the store's, not the resume
# path's; an ImportError about EGL is rendering, not the rollout backend; a worker Ray
# killed for memory is the memory's fault, not a knock-on.
_RULES: tuple[tuple[FailureClass, re.Pattern[str]], ...] = (
    (DISK_FULL, re.compile(r"\[Errno 28\]|No space left on device")),
    (RAY_START_TIMEOUT, re.compile(r"The current node timed out during startup")),
    (READ_ONLY_CHECKPOINT_DIR, re.compile(r"\[Errno 30\]|Read-only file system")),
    (
        MOUNT_IO_ERROR,
        re.compile(
            r"\[Errno (?:5|107|116)\]|Input/output error"
            r"|Transport endpoint is not connected|Stale file handle"
        ),
    ),
    (
        HOST_OUT_OF_MEMORY,
        re.compile(
            r"ray\.exceptions\.OutOfMemoryError|running low on memory"
            r"|killed due to memory pressure"
        ),
    ),
    (
        GPU_OUT_OF_MEMORY,
        re.compile(r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError"),
    ),
    (
        NCCL,
        re.compile(
            r"NCCL error|\bnccl[A-Z]\w*Error\b|DistBackendError|ProcessGroupNCCL"
            r"|NCCL communicator|Watchdog caught collective operation timeout"
        ),
    ),
    (
        # What torch says when it samples from NaN or infinite parameters: torch.normal's
        # check of its std, torch.distributions' argument validation, torch.multinomial's.
        TRAINING_DIVERGED,
        re.compile(
            r"normal expects all elements of std >= 0"
            r"|to satisfy the constraint \w+\(\), but found invalid values"
            r"|probability tensor contains either `inf`, `nan` or element < 0"
        ),
    ),
    (
        EGL_RENDERING,
        re.compile(r"\bEGL|\begl[A-Z]|MUJOCO_(?:EGL|GL)|GLFW|OpenGL|gladLoadGL|OSMesa"),
    ),
    (
        # A missing file is the resume path's only where it names a step or a resume: any
        # file RLinf writes (its TensorBoard events) may lie on a mount called ckpt.
        RESUME_PATH,
        re.compile(
            r"resume_dir|(?:FileNotFoundError|No such file or directory|\[Errno 2\]"
            r"|does not exist).*(?:global_step_|(?i:resum))"
        ),
    ),
    (
        ROLLOUT_BACKEND_IMPORT,
        re.compile(
            r"(?:ImportError|ModuleNotFoundError|No module named|cannot import name)"
            r".*\b(?i:vllm|sglang)\b|\b(?i:vllm|sglang)\b.*(?:ImportError|ModuleNotFoundError)"
        ),
    ),
    (
        HYDRA_COMPOSITION,
        re.compile(
            r"hydra\.errors|ConfigCompositionException|MissingConfigException"
            r"|OverrideParseException|omegaconf\.errors|is not in struct"
            r"|^(?:Could not (?:override|append to config|delete from config|load|find) "
            r"|Cannot find primary config|Error (?:parsing|merging) override|In '[^']*': )"
            r"|Missing mandatory value|ConfigKeyError|ConfigAttributeError"
            r"|InterpolationResolutionError|Error locating target|InstantiationException"
        ),
    ),
    (
        # After the rollout backend's and Hydra's (a missing vllm, a Hydra target that does
        # not import): their remedies are more precise than this one.
        DEPENDENCY_MISMATCH,
        re.compile(
            r"undefined symbol: \w|ModuleNotFoundError|No module named '"
            r"|Failed to import [\w.]+ because of the following error"
        ),
    ),
    (
        ACTOR_KILLED,
        re.compile(
            r"ActorDiedError|RayActorError|ActorUnavailableError|The actor died unexpectedly"
            r"|The actor is dead because|killed by `ray\.kill`|A worker died or was killed"
            r"|Exiting main process due to a failure upon worker execution"
        ),
    ),
)
# Which worker raised, when the error itself does not say what failed: RLinf's env
# workers print as EnvWorker / EnvGroup(rank=N) / Env(rank=N), their tasks as ray::EnvWorker.
_ENV_WORKER = re.compile(r"\bEnvWorker\b|\bEnvGroup\b|\bEnv\(rank=|ray::Env")

FAILURE_CLASSES: tuple[FailureClass, ...] = (*(c for c, _ in _RULES), ENV_WORKER_CRASH)

# Ray's prefix of an actor's (or a Ray process's) line, with the colour codes Ray adds.
_PREFIX = re.compile(
    r"(?:\x1b\[[\d;]*m)?\((?P<inner>[^\n]*?\bpid=\d+[^)\n]*|raylet|gcs_server|autoscaler"
    r"|monitor|dashboard[^)\n]*)\)(?:\x1b\[[\d;]*m)? ?"
)
_ANSI = re.compile(r"\x1b\[[\d;]*[A-Za-z]")
# Another actor's prefixed line run on inside this one: two processes of the Worker wrote
# to its one output and this line's newline came after the other's text. A named prefix
# only: Ray's wrapper names a task's process as ``ray::Cls.f() (pid=N, ip=A)``.
_RUN_ON = re.compile(r"\((?:[A-Za-z_][^()\n]*?(?:\([^()\n]*\))?) pid=\d+(?:, ip=[\d.]+)?\) ")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\].*$")
# vLLM's logger prefix on an error it logs (``ERROR 04-07 00:57:46 ray_utils.py:45] ``,
# newer ones ``[ray_utils.py:45]``): vLLM logs a worker's whole traceback under it, one
# prefixed line each, so the traceback is read under it as under Ray's.
_VLLM_ERROR = re.compile(r"(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w.]+:\d+\] ")

# A Python exception line: a dotted type name, for Ray's wrapper the wrapped type in
# parentheses, then ": message" or nothing (``KeyboardInterrupt``).
_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\(\w+\))?(?::\s|:?$)")
# Printed alone (no traceback) it is an error only if its type says so; a log cut at the
# top may begin inside a traceback whose type is the bare ``Exception`` (Ray's start-up).
_ALONE_EXCEPTION = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception)(?:\(\w+\))?(?::\s|:?$)"
)
# Fatal lines that print no traceback.
_ALONE_FATAL = re.compile(
    r"ERROR\b|Fatal Python error|Exception occurred while running "
    r"|Could not (?:override|append to config|delete from config|load|find) "
    r"|Cannot find primary config|Error (?:parsing|merging) override"
    r"|In '[^']*': (?:Could not|.*not found)"
)
# A remote task's header in Ray's wrapper; the remote traceback follows it.
# A line that ends at the task's title is one too: a user pasting RLinf's wrapper cut the
# ``(pid=…)`` after it and went on with "..." and the remote frames.
_RAY_WRAPPER = re.compile(r"ray::[\w.<>]+\(\)\s*(?:\(pid=\d+|$)|RayTaskError\(")
# The remote task a wrapper names: ``ray::MultiStepRolloutWorker.generate()``.
_RAY_TASK = re.compile(r"ray::(?P<cls>[A-Za-z_]\w*)\.[\w<>]+\(\)")
_ERRNO_PATH = re.compile(r"\[Errno \d+\] [^'\"\n]*?: (['\"])(?P<path>/[^'\"\n]*)\1")
# Ray's ActorDiedError message ends with "The actor is dead because …": that tail of an
# error already counted is no knock-on of its own.
_KNOCK_TAIL = "The actor is dead because"
_KNOCK_TAIL_SPAN = 16
_RLINF_EXIT = "Exiting main process due to a failure upon worker execution"
_HYDRA_MARKER = "HYDRA_FULL_ERROR=1 for a complete stack trace"
_TRACEBACK = "Traceback (most recent call last)"
_HYDRA_JOB = "Error executing job with overrides"
# Lines that are no part of a message Hydra printed: Ray's CLI log lines, warnings.
_NOT_HYDRA = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|Warning:|warnings\.warn|^\[[A-Z]+ ")

# Substrings one of which every line the tracker acts on holds: the batch is searched for
# them at C speed (one ``str.find`` pass each, so few and short) and only those lines are
# looked at, and every line while a traceback is open. "rror" covers Error and error
# (``Fatal Python error``, Ray's ``unexpected system error``), "ERROR" the smoke
# workload's lines and Hydra's marker (its compact errors are found from the marker);
# "OOM)" is the raylet's line on workers killed for memory.
_TRIGGERS = ("rror", "ERROR", "xception", "Traceback", "OOM)")
# Once the cause is found, only knock-ons are still counted: ActorDiedError /
# RayActorError lines, RLinf's "Exception occurred while running …" lines.
_KNOCK_TRIGGERS = ("rror", "xception")
# A traceback not ended within this many log lines is given up (a missed or cut-off end);
# Hydra's bare message is looked for this many lines above its marker.
MAX_BLOCK_LINES = 20_000
_LOOK_BACK = 12
_MAX_OPEN = 64

_TB, _WRAPPED, _HYDRA = 0, 1, 2


def classify(text: str) -> FailureClass | None:
    """The failure class of one error line (Ray's prefix allowed), None if unknown.

    >>> classify("OSError: [Errno 5] Input/output error: '/mnt/ckpt/logs'").id
    'mount-io-error'
    >>> classify("(EnvGroup(rank=0) pid=9) ValueError: bad task id").id
    'env-worker-crash'
    >>> classify("ValueError: bad task id") is None
    True
    """
    _, actor, body = _split(text)
    return _classify(body, actor or "")


def _classify(body: str, context: str) -> FailureClass | None:
    for failure, pattern in _RULES:
        if pattern.search(body):
            return failure
    if _ENV_WORKER.search(body) or (context and _ENV_WORKER.search(context)):
        return ENV_WORKER_CRASH
    return None


def _split(line: str) -> tuple[str, str | None, str]:
    """(key, actor, body): the Ray prefixes' text (``""`` for the driver), the first
    prefix's name, the line without prefixes, colours or repeat marker."""
    key, actor, body = "", None, line
    for _ in range(3):  # Ray nests prefixes: (vLLMRolloutModel pid=1) (EngineCore pid=2)
        if not body.startswith(("(", "\x1b")):
            break
        m = _PREFIX.match(body)
        if m is None:
            break
        inner = m.group("inner")
        name = inner.split("pid=", 1)[0].strip().rstrip(",") if "pid=" in inner else inner
        if actor is None and name:
            actor = name
        key += f"({inner})"
        body = body[m.end() :]
    if "\x1b" in body:
        body = _ANSI.sub("", body)
    if body.startswith(("ERROR ", "CRITICAL ")) and (m := _VLLM_ERROR.match(body)) is not None:
        body = body[m.end() :]
    if "[repeated" in body:
        body = _REPEATED.sub("", body)
    if " pid=" in body and (run_on := _RUN_ON.search(body, 1)) is not None:
        body = body[: run_on.start()]
    return key, actor, body


def _quote(body: str) -> str:
    return body.strip()[:QUOTE_MAX]


def _mount_path(body: str) -> str | None:
    m = _ERRNO_PATH.search(body)
    return m.group("path") if m else None


class _Block:
    """A traceback being read: where it began, whose it is, the Ray wrapper it is in."""

    __slots__ = ("actor", "mode", "opened", "wrapper", "wrapper_line")

    def __init__(self, mode: int, opened: int, actor: str | None) -> None:
        self.mode = mode
        self.opened = opened
        self.actor = actor
        self.wrapper: str | None = None
        self.wrapper_line = opened


class FirstCause:
    """The first error of a log fed in batches, and how many knock-ons followed.

    ``feed`` takes the log's lines in order (``first_index``: the 0-based index of
    ``lines[0]`` in the whole log); ``cause`` is what was found so far: the first real
    error, else the first knock-on, else None.
    """

    def __init__(self) -> None:
        self._cause: Cause | None = None
        self._knock: Cause | None = None
        self._knock_counted = False
        self._knock_ons = 0
        self._blocks: dict[str, _Block] = {}
        self._last_knock: dict[str, int] = {}
        # The log's last lines before this batch, for the look back above Hydra's marker.
        self._tail: tuple[str, ...] = ()
        self._tail_first = 0

    @property
    def cause(self) -> Cause | None:
        found = self._cause or self._knock
        if found is None:
            return None
        others = self._knock_ons - (1 if found is self._knock and self._knock_counted else 0)
        return replace(found, knock_ons=others)

    def feed(self, lines: Sequence[str], first_index: int) -> None:
        """Read ``lines``, the first of which is log line ``first_index``."""
        n = len(lines)
        if not n:
            return
        triggers = _TRIGGERS if self._cause is None else _KNOCK_TRIGGERS
        candidates = _candidates("\n".join(lines), triggers)
        c, i = 0, 0
        while i < n:
            if self._blocks:  # a traceback is open: every line counts
                while c < len(candidates) and candidates[c] < i:
                    c += 1
                self._line(lines, i, first_index, c < len(candidates) and candidates[c] == i)
                i += 1
                continue
            while c < len(candidates) and candidates[c] < i:
                c += 1
            if c == len(candidates):
                break
            i = candidates[c]
            self._line(lines, i, first_index, True)
            i += 1
        tail = (*self._tail, *lines[max(0, n - _LOOK_BACK) :])[-_LOOK_BACK:]
        self._tail, self._tail_first = tail, first_index + n - len(tail)

    def _line(self, lines: Sequence[str], i: int, first: int, candidate: bool) -> None:
        key, actor, body = _split(lines[i])
        index = first + i
        block = self._blocks.get(key)
        if block is not None:
            if index - block.opened <= MAX_BLOCK_LINES:
                self._in_block(block, key, body, index)
                return
            self._give_up(key, block)
        if candidate:
            self._alone(key, actor, body, index, lines, i, first)

    def _in_block(self, block: _Block, key: str, body: str, index: int) -> None:
        text = body.rstrip()
        if not text or text[0] in " \t":
            return  # frames, source lines, carets, blank lines
        if text.startswith(_TRACEBACK):
            if block.mode == _HYDRA:
                block.mode = _TB
            return
        if block.mode == _HYDRA:  # Hydra printed a compact error bare after its job line
            del self._blocks[key]
            self._offer(key, block.actor, text, index, "", HYDRA_COMPOSITION)
            return
        if _RAY_WRAPPER.search(text):
            block.mode, block.wrapper, block.wrapper_line = _WRAPPED, text, index
            return
        if _EXCEPTION_LINE.match(text):
            del self._blocks[key]
            self._offer(key, block.actor, text, index, block.wrapper or "")
        # else: an unprefixed line of some other output (a progress bar) inside the
        # driver's traceback; it is not the exception line.

    def end(self) -> None:
        """The log has ended: a Ray wrapper whose traceback it cut before the original
        exception line (a paste, ``kubectl logs`` of a Pod still writing) is the cause, as
        when the traceback is given up; a log that ends there did fail. Where no wrapper
        and no other error came first, the header of the earliest traceback it cut is the
        cause, of no class: the log shows a failure whose error it does not hold
        (lmm-r1 #49, cut in the driver's frames above Ray's wrapper)."""
        open_blocks = sorted(self._blocks.items(), key=lambda kb: kb[1].opened)
        for key, block in open_blocks:
            if key in self._blocks:
                self._give_up(key, block)
        cut = [b for _, b in open_blocks if b.mode == _TB and b.wrapper is None]
        if cut and self._cause is None and self._knock is None:
            self._cause = Cause(cut[0].opened, f"{_TRACEBACK}:", cut[0].actor, None)
        self._blocks.clear()

    def _give_up(self, key: str, block: _Block) -> None:
        del self._blocks[key]
        if block.wrapper is not None:
            self._offer(key, block.actor, block.wrapper, block.wrapper_line, block.wrapper)

    def _open(self, key: str, mode: int, index: int, actor: str | None) -> _Block:
        if len(self._blocks) >= _MAX_OPEN:
            del self._blocks[next(iter(self._blocks))]
        block = self._blocks[key] = _Block(mode, index, actor)
        return block

    def _alone(
        self,
        key: str,
        actor: str | None,
        body: str,
        index: int,
        lines: Sequence[str],
        i: int,
        first: int,
    ) -> None:
        """A line outside any traceback of its prefix."""
        if not body or body[0] in " \t":
            return
        text = body.rstrip()
        if self._cause is None:
            if text.startswith(_TRACEBACK):
                self._open(key, _TB, index, actor)
                return
            if _RAY_WRAPPER.search(text):
                block = self._open(key, _WRAPPED, index, actor)
                block.wrapper = text
                return
            if text.startswith(_HYDRA_JOB):
                self._open(key, _HYDRA, index, actor)
                return
            if _HYDRA_MARKER in text:
                self._hydra_look_back(lines, i, first)
                return
        kind = _classify(text, actor or "")
        if kind is ACTOR_KILLED:
            self._knocked(key, actor, text, index)
        elif self._cause is None and (
            kind is HOST_OUT_OF_MEMORY or _ALONE_EXCEPTION.match(text) or _ALONE_FATAL.match(text)
        ):
            self._offer(key, actor, text, index, "")

    def _offer(
        self,
        key: str,
        actor: str | None,
        text: str,
        index: int,
        context: str,
        default: FailureClass | None = None,
    ) -> None:
        kind = _classify(text, f"{context} {actor or ''}") or default
        if kind is ACTOR_KILLED:
            self._knocked(key, actor, text, index)
            return
        if actor is None and context:  # the driver printed a remote task's error: its actor
            task = _RAY_TASK.search(context)
            actor = task.group("cls") if task else None
        if self._cause is None:
            self._cause = Cause(index, _quote(text), actor, kind, 0, _mount_path(text))
            self._blocks.clear()  # the cause is known: no traceback needs reading now

    def _knocked(self, key: str, actor: str | None, text: str, index: int) -> None:
        counted = False
        if _RLINF_EXIT not in text:  # RLinf's own exit line: the last resort, not counted
            last = self._last_knock.get(key)
            tail = text.startswith(_KNOCK_TAIL)
            if not (tail and last is not None and index - last <= _KNOCK_TAIL_SPAN):
                self._knock_ons += 1
                counted = True
            if len(self._last_knock) >= _MAX_OPEN:
                self._last_knock.clear()
            self._last_knock[key] = index
        if self._knock is None or (counted and not self._knock_counted):
            self._knock = Cause(index, _quote(text), actor, ACTOR_KILLED, 0, _mount_path(text))
            self._knock_counted = counted

    def _hydra_look_back(self, lines: Sequence[str], i: int, first: int) -> None:
        """Hydra printed a compact error bare (no type, no traceback) just above its
        marker: the message is the run of driver lines above the marker's blank line; its
        cause is the line Hydra's wording names, else the run's first line."""
        run: list[tuple[int, str]] = []  # the message's lines, bottom up
        j = i - 1
        while len(run) < _LOOK_BACK:
            if j >= 0:
                index, raw = first + j, lines[j]
            elif -j <= len(self._tail):
                index, raw = self._tail_first + len(self._tail) + j, self._tail[j]
            else:
                break
            j -= 1
            key, _, body = _split(raw)
            if not body.strip():
                if run:
                    break
                continue
            if key or _NOT_HYDRA.search(body):
                break  # an actor's line, Ray's CLI, a warning: the message is above no more
            run.append((index, body))
        starts = [(index, body) for index, body in run if body[0] not in " \t"]
        if not starts or self._cause is not None:
            return
        named = [(index, body) for index, body in starts if _classify(body, "") is not None]
        index, body = (named or starts)[-1]
        kind = _classify(body, "") or HYDRA_COMPOSITION
        self._cause = Cause(index, _quote(body), None, kind, 0, _mount_path(body))
        self._blocks.clear()


def _candidates(text: str, triggers: Sequence[str]) -> list[int]:
    """Sorted indices of the lines of ``text`` that hold one of ``triggers``."""
    positions: list[int] = []
    for trigger in triggers:
        at = text.find(trigger)
        while at >= 0:
            positions.append(at)
            nl = text.find("\n", at)
            if nl < 0:
                break
            at = text.find(trigger, nl + 1)
    if not positions:
        return []
    positions.sort()
    out: list[int] = []
    index, prev = 0, 0
    for pos in positions:
        index += text.count("\n", prev, pos)
        prev = pos
        if not out or out[-1] != index:
            out.append(index)
    return out


_BY_ID = {
    c.id: c
    for c in (
        *FAILURE_CLASSES,
        WORKER_DISRUPTED,
        CONTAINER_RUNTIME_LOST,
        OUTPUTS_REMOVED,
        HARNESS_REMOVED,
        *POD_CLASSES,
    )
}
# How a failure's message names the class of its first error (``observed.cause_text``:
# ``its first error [mount-io-error: …]``), or of what the harness saw itself (a store that
# does not answer, ``engine.store_down``: ``does not answer [mount-io-error]``; a Pod the
# cluster took away: ``EvictionByEvictionAPI [worker-disrupted]``). The first one named wins:
# the Pod's comes before the log's first error, which is then what the Worker printed while
# it was stopped.
_NAMED = re.compile(r"its first error \[(?P<id>[a-z-]+):|\[(?P<bare>[a-z]+(?:-[a-z]+)+)\]")


def class_in(message: str) -> FailureClass | None:
    """The failure class a failure's message names for the Worker's first error, if any."""
    for m in _NAMED.finditer(message):
        found = _BY_ID.get(m.group("id") or m.group("bare"))
        if found is not None:
            return found
    return None
