"""The init of a local Worker Pod: PID 1 of its own PID and mount namespaces.

Started by the adapter as ``unshare --mount --pid --fork --kill-child --propagation private
<python> -m rlark_acceptance.adapters.local.worker SPEC``. It

1. assembles the Pod's filesystem (``mounts``) and mounts object storage with s3fs;
2. reports ``started`` on the status pipe, then runs, in one ``bash`` chrooted into the Pod
   root, the role's prepareScript, ``ray start --head``, and the Job's runScript. Its
   stdout + stderr are inherited: they are the Pod log. The image's ENTRYPOINT is not used;
3. when that shell ends (or SIGTERM arrives): stops every other process of the Pod (this
   Pod's Ray head and workers: being PID 1, it sees only its own namespace, so no other
   Ray on the machine is touched), then unmounts s3fs, which completes its uploads;
4. exits with the shell's status (128+N when a signal N killed it).

If the adapter's ``unshare`` dies, ``--kill-child`` SIGKILLs this init, and the kernel kills
everything else in the PID namespace with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rlark_acceptance.adapters.local.mounts import MountError, build_root, mount_volumes, unmount_s3
from rlark_acceptance.adapters.local.spec import (
    GPU_STANDIN_DIR,
    SCRIPT_DIR,
    STATUS_ERROR,
    STATUS_MOUNT_FAILED,
    STATUS_STARTED,
    WorkerSpec,
)

# Ray's gcs_server and raylet wait on each other after SIGTERM for many seconds; nothing of
# a finished head is worth keeping, so they get a short grace before SIGKILL.
STOP_GRACE_S = 1.0
S3FS_EXIT_GRACE_S = 30.0
EXIT_INIT_ERROR = 125
# The stand-in is one self-contained file, loaded by every interpreter of the Pod through
# a sitecustomize on PYTHONPATH (Ray's workers inherit the variable).
GPU_STANDIN_SOURCE = Path(__file__).resolve().parents[2] / "gpu_standin.py"
SITECUSTOMIZE = """\
# The node has no GPU: RLinf sees the CPU where it asks for one (rlark_acceptance.gpu_standin).
import gpu_standin

gpu_standin.install()
"""


class Init:
    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.status = os.fdopen(spec.status_fd, "w", buffering=1)
        self.shell: subprocess.Popen[bytes] | None = None
        self.terminating = False

    def report(self, *words: str) -> None:
        with contextlib.suppress(OSError):  # the adapter is gone: nothing to tell
            self.status.write(" ".join(words).replace("\n", " ") + "\n")

    def ns_pids(self) -> dict[int, str]:
        """Every process of this PID namespace but init itself, with its command name."""
        out: dict[int, str] = {}
        proc = self.spec.root / "proc"  # the namespace's own procfs
        if not (proc / "1").exists():  # setup failed before procfs was mounted
            return out
        for entry in os.listdir(proc):
            if entry.isdigit() and int(entry) != 1:
                try:
                    out[int(entry)] = (proc / entry / "comm").read_text().strip()
                except OSError:
                    continue
        return out

    def write_scripts(self) -> None:
        d = self.spec.root / SCRIPT_DIR.lstrip("/")
        d.mkdir(parents=True, exist_ok=True)
        (d / "prepare.sh").write_text(self.spec.prepare_script)
        (d / "run.sh").write_text(self.spec.run_script)
        # The Worker's container command, as RLark runs it (no image ENTRYPOINT).
        (d / "entry.sh").write_text(self.spec.entry)
        if self.spec.gpu_standin:
            site = self.spec.root / GPU_STANDIN_DIR.lstrip("/")
            site.mkdir(parents=True, exist_ok=True)
            (site / "gpu_standin.py").write_bytes(GPU_STANDIN_SOURCE.read_bytes())
            (site / "sitecustomize.py").write_text(SITECUSTOMIZE)

    def start_shell(self) -> None:
        root = str(self.spec.root)
        workdir = self.spec.workdir

        def enter() -> None:  # in the child, before exec: become the container
            os.chroot(root)
            os.chdir(workdir)

        self.shell = subprocess.Popen(
            ["bash", f"{SCRIPT_DIR}/entry.sh"],
            env=self.spec.env,
            stdin=subprocess.DEVNULL,
            preexec_fn=enter,
            start_new_session=True,
            close_fds=True,
        )

    def on_term(self, signum: int, _frame: object) -> None:
        self.terminating = True
        if self.shell is not None and self.shell.returncode is None:
            _kill_group(self.shell.pid, signal.SIGTERM)

    def wait_shell(self) -> int:
        """Reap every child (orphans come to PID 1) until the shell has ended."""
        assert self.shell is not None
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == self.shell.pid:
                code = os.waitstatus_to_exitcode(status)
                self.shell.returncode = code
                return 128 - code if code < 0 else code

    def stop_others(self) -> None:
        """SIGTERM the rest of the Pod (its Ray head), then SIGKILL after a grace period."""
        for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 2.0)):
            victims = [pid for pid, comm in self.ns_pids().items() if comm != "s3fs"]
            if not victims:
                return
            for pid in victims:
                _kill(pid, sig)
            self.reap_until(lambda: not any(c != "s3fs" for c in self.ns_pids().values()), grace)

    def reap_until(self, done: object, grace: float) -> None:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                pass
            if done():  # type: ignore[operator]
                return
            # Exit of a grand-child gives no event to wait on here: poll briefly.
            time.sleep(0.05)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.on_term)
        signal.signal(signal.SIGINT, self.on_term)
        # A process inherits the signals its parent blocks, through unshare too, and the
        # harness submits runs side by side from threads that block these (only its main
        # thread takes them): blocked here, delete()'s SIGTERM would never arrive, and the
        # Pod would be SIGKILLed after its grace, its trap and s3fs's flush never run. After
        # the handlers: one already pending is handled, not taken by the default action.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        s3_targets: list[Path] = []
        try:
            build_root(self.spec)
            s3_targets = mount_volumes(self.spec)
            self.write_scripts()
        except MountError as e:
            self.report(STATUS_MOUNT_FAILED, str(e))
            self.cleanup(s3_targets)
            return EXIT_INIT_ERROR
        except Exception as e:  # report any setup failure instead of dying silently
            self.report(STATUS_ERROR, f"{type(e).__name__}: {e}")
            self.cleanup(s3_targets)
            return EXIT_INIT_ERROR
        if self.terminating:
            self.cleanup(s3_targets)
            return 128 + signal.SIGTERM
        self.start_shell()
        self.report(STATUS_STARTED)
        code = self.wait_shell()
        self.cleanup(s3_targets)
        return code

    def cleanup(self, s3_targets: list[Path]) -> None:
        self.stop_others()
        for problem in unmount_s3(s3_targets):
            self.report(STATUS_ERROR, problem)
        self.reap_until(lambda: not self.ns_pids(), S3FS_EXIT_GRACE_S)


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def main(argv: list[str]) -> int:
    spec = WorkerSpec.load(Path(argv[1]))
    code = Init(spec).run()
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
