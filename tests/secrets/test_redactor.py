"""The run's ``Redactor`` (``rlark_acceptance.secrets.redactor``): what one run's scans find is
removed from that run's texts, and never known to another run in the same process.

The scans, formats and names have their tests in ``tests/preflight/test_secrets.py`` and
``tests/preflight/test_secret_corpus.py`` (checks 3.6 / 5.8, through the pre-flight).
"""

from __future__ import annotations

import doctest
from pathlib import Path

import rlark_acceptance.secrets as secrets_face
from rlark_acceptance.preflight.entry import preflight_files
from rlark_acceptance.secrets import Redactor, redactor
from rlark_acceptance.secrets.redactor import LIMIT
from tests.fake_secrets import FakeSecrets
from tests.secret_corpus import CONFIG, JOB


def _job_echoing(tmp: Path, value: str) -> Path:
    """The default profile's Job with a prepare script that passes ``value`` to a command as
    a key: the Worker's log shows it bare, with nothing around it a rule would recognise."""
    text = JOB.read_text(encoding="utf-8").replace(
        "      export PYTHONUNBUFFERED=1\n",
        f"      export PYTHONUNBUFFERED=1\n      echo apikey {value}\n",
    )
    assert value in text
    path = tmp / "job.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_two_runs_in_one_process_do_not_share_what_they_found(tmp_path: Path) -> None:
    key = FakeSecrets().mixed(24)
    log = f"Global Step 1\n{key}\nGlobal Step 2"
    (tmp_path / "a").mkdir()
    first = preflight_files(CONFIG, job=_job_echoing(tmp_path / "a", key))
    assert any(f.check == "5.8" and f.code == "secret-secret-variable" for f in first.findings)
    assert first.redactor.redact(log) == "Global Step 1\n***\nGlobal Step 2"
    # A second run in the same process, of a Job without the secret: it never saw the key.
    second = preflight_files(CONFIG, job=JOB)
    assert second.redactor is not first.redactor
    assert second.redactor.remembered() == []
    assert second.redactor.redact(log) == log
    # A run given the first run's redactor (a session's pre-flights) keeps what it found.
    third = preflight_files(CONFIG, job=JOB, redactor=first.redactor)
    assert third.redactor.redact(log) == "Global Step 1\n***\nGlobal Step 2"


def test_findings_messages_go_through_the_runs_redactor(tmp_path: Path) -> None:
    """The run's redactor rewrites what a message quotes of a value its scans found."""
    key = FakeSecrets().rand("abcdefghijklmnop", 20)
    shared = Redactor()
    shared.remember([key])
    job = tmp_path / "job.yaml"
    job.write_text(
        JOB.read_text(encoding="utf-8").replace(
            "image: rlark-acceptance/smoke:0.1.0", f"image: rlark-acceptance/smoke-{key}"
        ),
        encoding="utf-8",
    )
    messages = [f.message for f in preflight_files(CONFIG, job=job).findings]
    assert any(key in m for m in messages), messages  # 3.4 quotes the image
    messages = [f.message for f in preflight_files(CONFIG, job=job, redactor=shared).findings]
    assert not any(key in m for m in messages) and any("***" in m for m in messages)


def test_secret_named_environment_variables_are_removed_as_they_are_now() -> None:
    env: dict[str, str] = {}
    run = Redactor(environ=env)
    secret = FakeSecrets().mixed(16)
    text = f"endpoint up, key {secret}"
    assert run.redact(text) == text
    env["AWS_SECRET_ACCESS_KEY"] = secret  # exported after the run began
    assert run.redact(text) == "endpoint up, key ***"
    env["AWS_SECRET_ACCESS_KEY"] = "short"  # too short to remove from every text
    env["AWS_REGION"] = secret  # not a secret's name
    assert run.redact(text) == text


def test_short_values_are_not_remembered_and_the_memory_is_bounded() -> None:
    run = Redactor()
    run.remember(["abc", "abcd"])
    assert run.remembered() == ["abcd"]
    run.remember(f"value-{i:05d}" for i in range(LIMIT + 10))
    kept = run.remembered()
    assert len(kept) <= LIMIT and f"value-{LIMIT + 9:05d}" in kept and "abcd" not in kept
    assert repr(run) == f"Redactor({len(kept)} values)"  # never a value


def test_redact_strings_redacts_keys_and_values_of_a_record() -> None:
    token = FakeSecrets().format_tokens()["github-token"]
    run = Redactor()
    data = {"message": f"found {token}", token: [1, f"x {token}"], "n": 3}
    assert run.redact_strings(data) == {"message": "found ***", "***": [1, "x ***"], "n": 3}


def test_the_examples_in_the_docstrings_hold() -> None:
    for module in (redactor, secrets_face):
        assert doctest.testmod(module).failed == 0, module.__name__
