"""``rlark-acceptance diagnose`` as a user runs it: the installed command on a file and on
standard input, and ``main`` in-process; what it prints, its JSON and its exit status."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlark_acceptance.cli import main
from rlark_acceptance.diagnose import batches, command, diagnose
from rlark_acceptance.diagnose.lines import MAX_LINE, redrawn
from tests.diagnose.corpus import CONSTRUCTED, REAL, Expected, load

COMMAND = Path(sys.executable).parent / "rlark-acceptance"
ALL = [*CONSTRUCTED, *REAL]
GREEN = Path(__file__).resolve().parents[1] / "fidelity" / "rlinf-0.3.0" / "worker.log"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(COMMAND), "diagnose", *args],
        input=stdin.decode("utf-8", "replace") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def saved(tmp_path: Path, e: Expected) -> Path:
    log = tmp_path / "worker.log"
    log.write_text(e.text(), encoding="utf-8")
    return log


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_command_on_each_corpus_log_names_its_cause(tmp_path: Path, path: Path) -> None:
    """The installed command, on the file with ``--json`` and on standard input in words."""
    e = load(path)
    log = saved(tmp_path, e)
    done = run(str(log), "--json")
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    cause = out["firstCause"]
    assert cause["text"] == e.quote and out["class"] == e.kind, out
    assert e.quote in e.lines[cause["line"] - 1], cause  # 1-based, as editors count
    assert set(out) >= {"firstCause", "class", "remedy", "check", "knockOns"}
    assert out["check"] in {"6.3", "6.4", "T.1"} and isinstance(out["knockOns"], int), out
    if e.actor is not None:
        assert cause["actor"] == e.actor, cause

    words = run("-", stdin=log.read_bytes())
    assert words.returncode == 1 and words.stderr == "", words.stderr
    assert f'"{e.quote}"' in words.stdout and f"class: {e.kind} — " in words.stdout
    assert f"first cause at log line {cause['line']} of {len(e.lines)}," in words.stdout
    assert f"knock-ons passed over: {out['knockOns']}" in words.stdout


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_main_in_process_on_each_corpus_log(
    tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e = load(path)
    assert main(["diagnose", str(saved(tmp_path, e)), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["firstCause"]["text"], out["class"]) == (e.quote, e.kind)


def test_what_it_prints_for_a_real_run_red_at_start_up(tmp_path: Path) -> None:
    """The real RLinf run whose SAC actor could not write to the read-only models mount: the
    harness's record of that run is red at 6.4 with this cause, and 3.7 is the page's check
    that says where to fix it."""
    e = load(REAL[0])
    assert e.name == "real/actor-start-up.log"
    done = run(str(saved(tmp_path, e)))
    lines = done.stdout.splitlines()
    assert lines[0] == " rlark-acceptance diagnosis ".center(80, "=")
    assert lines[1].startswith("verdict: failed  first cause at log line ")
    assert lines[1].endswith(f", in EmbodiedSACFSDPPolicy  ({tmp_path / 'worker.log'})")
    assert lines[2] == f'  "{e.quote}"'
    assert lines[3] == "class: read-only-checkpoint-dir — The checkpoint directory is read-only"
    assert lines[5].startswith("check: 6.4 (RLinf logs show the predetermined progress): ")
    assert lines[7].startswith("fixed at: 3.7 ")
    assert "path: /mnt/models/replay_buffer" in lines


def test_a_log_of_a_run_that_passed_exits_0() -> None:
    done = run(str(GREEN))
    assert done.returncode == 0, done.stdout
    assert "verdict: no failure" in done.stdout
    done = run(str(GREEN), "--json")
    out = json.loads(done.stdout)
    assert out["failed"] is False and out["firstCause"] is None and out["class"] is None


def test_an_error_of_no_class_is_quoted_and_said_so() -> None:
    log = b"Ray runtime started.\n(ActorGroup(rank=0) pid=4) RuntimeError: shapes do not match\n"
    done = run(stdin=log)
    assert done.returncode == 1
    assert '"RuntimeError: shapes do not match"' in done.stdout
    assert "class: none of the known classes fits" in done.stdout
    out = json.loads(run("--json", stdin=log).stdout)
    assert out["class"] is None and out["remedy"] is None and out["check"] == "6.4", out
    assert out["firstCause"] == {
        "line": 2,
        "text": "RuntimeError: shapes do not match",
        "actor": "ActorGroup(rank=0)",
        "path": None,
    }


def test_the_words_of_a_cause_in_a_log_with_nothing_but_knock_ons() -> None:
    """An actor died without Python's output: the first knock-on is quoted, its class says it
    is one, and no check of the page is named as the place of the fix."""
    d = diagnose(
        [
            [
                "Ray runtime started.",
                "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing.",
                "Exiting main process due to a failure upon worker execution.",
            ]
        ]
    )
    words = command.render(d, "worker.log").splitlines()
    assert (
        words[1] == "verdict: failed  first cause at log line 2 of 3, in the driver  (worker.log)"
    )
    assert words[3] == "class: actor-killed-knock-on — An actor was killed or died as a consequence"
    assert words[5].startswith("check: 6.4 ") and not any(w.startswith("fixed at") for w in words)
    assert words[-1] == "knock-ons passed over: 0"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: None, "No such file or directory"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"PK\x03\x04\x00\x00binary"), "is not a text log"),
        (lambda p: p.write_bytes(gzip.compress(b"log line\n")[:12]), "cannot be read"),
    ],
    ids=["missing", "directory", "binary", "cut-gzip"],
)
def test_bad_input_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, make: object, says: str
) -> None:
    bad = tmp_path / "worker.log"
    assert callable(make)
    make(bad)
    done = run(str(bad))
    assert done.returncode == 2, done
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and says in err[0], err
    assert done.stdout == ""


def test_a_usage_error_exits_2() -> None:
    assert run("a.log", "b.log").returncode == 2


def test_no_log_at_a_terminal_is_a_usage_error_not_a_wait(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert main(["diagnose"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rlark-acceptance: diagnose: no log: give a file, pipe one in, or --pod NAME"
    )


def test_a_gzip_log_is_read_as_its_text(tmp_path: Path) -> None:
    e = load(CONSTRUCTED[0])
    log = tmp_path / "worker.log.gz"
    log.write_bytes(gzip.compress(e.text().encode()))
    out = json.loads(run(str(log), "--json").stdout)
    assert out["firstCause"]["text"] == e.quote


# --- reading: what a terminal showed, line numbers of the file --------------------------


def read(data: bytes, chunk: int = 5) -> list[str]:
    import io

    return [line for batch in batches(io.BytesIO(data), chunk) for line in batch]


def test_line_ends_colours_and_redraws() -> None:
    data = (
        b"a\r\n"
        b"\x1b[36m(EnvWorker pid=1)\x1b[0m \x1b[?25l\rbar 1/2\rbar 2/2\r\n"
        b"\x1b]0;title\x07plain\n"
        b"Epochs: 50%|##  | 1/2Traceback (most recent call last):\n"
        b"Epochs: 50%|##  | 1/2\rEpochs: 100%|####| 2/2Traceback (most recent call last):\n"
        b"no newline at the end"
    )
    assert read(data) == [
        "a",
        "(EnvWorker pid=1) bar 2/2",
        "plain",
        "Epochs: 50%|##  | 1/2Traceback (most recent call last):",
        "Traceback (most recent call last):",
        "no newline at the end",
    ]
    assert redrawn("(A pid=2) x\r\r") == "(A pid=2) x"


def test_a_line_without_end_is_cut_and_memory_stays_flat() -> None:
    huge = b"x" * (5 * MAX_LINE) + b"\nValueError: after the long line\n" + b"y" * (3 * MAX_LINE)
    lines = read(huge, chunk=4096)
    assert [len(line) for line in lines] == [MAX_LINE, 31, MAX_LINE]
    d = diagnose([lines])
    assert d.cause is not None and d.cause.line == 1


def test_invalid_utf8_is_read_not_refused() -> None:
    d = diagnose([read(b"\xff\xfe ok\nOSError: [Errno 28] No space left on device: '/x'\n")])
    assert d.cause is not None and d.cause.kind is not None and d.cause.kind.id == "disk-full"
