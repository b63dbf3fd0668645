"""No planted secret reaches any artefact of an acceptance run (checks 3.6 / 5.8).

One fake secret of every kind the scanner knows is planted into a copy of the default profile
(its Job's env, prepare script, run script, a URL, the image reference, a mount's options, the
RLinf config, and one token per format rule). The acceptance suite then runs on it in a
subprocess, as a release engineer would run it, in a scratch copy of the checkout so that its
``reports/`` is the scratch one; every byte under ``reports/`` and of the console output is
searched for every planted value, raw and in the forms a writer could encode it into. The
pre-flight CLI (human and ``--json``) is searched the same way.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlark_acceptance.secrets import scan_tree, scan_value
from tests.fake_secrets import FakeSecrets, Planted

REPO = Path(__file__).resolve().parents[2]
SMOKE_CONFIG = REPO / "src" / "rlark_acceptance" / "smoke" / "config"

# The parts of the checkout the suite reads; everything else (reports/) is the scratch copy's.
_SHARED = ("features", "fixtures", "steps", "profiles", "src", "testenv", "tests")
_COPIED = ("conftest.py", "pyproject.toml")


def plant(root: Path, fake: FakeSecrets) -> tuple[Path, list[Planted]]:
    """A copy of profiles/local.yaml (with its Job and RLinf config) holding every kind."""
    planted: list[Planted] = []

    def put(where: str, kind: str, value: str) -> str:
        planted.append(Planted(where, kind, value))
        return value

    profile = yaml.safe_load((REPO / "profiles" / "local.yaml").read_text())
    job = yaml.safe_load((REPO / "profiles" / "local" / "job.yaml").read_text())
    role = job["spec"]["roles"][0]
    for m in role["mounts"]:
        if m.get("type") == "hostPath":
            m["hostPath"] = str((REPO / "profiles" / "local" / m["hostPath"]).resolve())

    # Env values: one named secret, then one token per format rule under a neutral name.
    role["env"].append(
        {"name": "WANDB_API_KEY", "value": put("env value", "secret-variable", fake.rand("0123456789abcdef", 40))}  # noqa: E501
    )  # fmt: skip
    for i, (kind, token) in enumerate(fake.format_tokens().items()):
        value = token
        if kind == "azure-storage-key":
            value = f"DefaultEndpointsProtocol=https;AccountName=acct;Account{'Key'}={token};"
        put(f"env value ({kind})", kind, token)
        role["env"].append({"name": f"EXTRA_SETTING_{i}", "value": value})

    # Scripts: an assignment and a positional argument in the prepare script; a URL with
    # credentials in the run script.
    db_password = put("prepare script", "secret-variable", fake.mixed(18))
    api_key = put("prepare script (echo apikey X)", "secret-variable", fake.mixed(24))
    role["prepareScript"] = (
        f"export DB_PASSWORD={db_password}\necho apikey {api_key}\n" + role["prepareScript"]
    )
    url_pw = put("run script URL", "url-credentials", fake.mixed(16))
    # A Hydra override in the run script: RLinf prints it with its config at start-up.
    override = put("run script override", "secret-variable", fake.mixed(28))
    job["spec"]["runScript"] = (
        f"export PIP_EXTRA_INDEX_URL=https://rl:{url_pw}@mirror.invalid/simple\n"
        + job["spec"]["runScript"].rstrip("\n")
        + f" +runner.hub_token={override}\n"
    )

    # The image reference, in the Job and as prepared.
    image_pw = put("image reference", "registry-credentials", fake.mixed(16))
    image = f"rl:{image_pw}@registry.invalid/{role['image']}"
    role["image"] = image
    profile["runInfo"]["image"] = image
    profile["target"]["images"] = {image: {"environment": str(REPO / ".venv")}}

    # A mount's options string.
    mount_pw = put("mount options", "secret-variable", fake.mixed(14))
    role["mounts"][1]["options"] = f"vers=4,password={mount_pw},ro"

    # Secret-named keys in the RLinf config.
    config_dir = root / "config"
    shutil.copytree(SMOKE_CONFIG, config_dir, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    config_file = config_dir / "smoke_ppo_mlp.yaml"
    config = yaml.safe_load(config_file.read_text())
    wandb_key = put(
        "RLinf config wandb.api_key", "secret-variable", fake.rand("0123456789abcdef", 40)
    )
    hub_token = put("RLinf config *_token", "secret-variable", fake.mixed(30))
    config["runner"]["logger"]["wandb"] = {"project": "rlinf", "api_key": wandb_key}
    config["runner"]["hub_token"] = hub_token
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))

    # A Hydra override in the profile.
    profile_override = put("profile override", "secret-variable", fake.mixed(26))
    profile["rlinf"]["overrides"] = [f"+runner.notify_token={profile_override}"]

    profile["rlinf"]["config"] = str(config_file)
    profile["job"] = "job.yaml"
    (root / "job.yaml").write_text(yaml.safe_dump(job, sort_keys=False, width=1 << 20))
    path = root / "profile.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False, width=1 << 20))
    return path, planted


def encodings(needle: str) -> set[str]:
    """The needle as a writer could encode it: raw, URL-encoded, JSON-escaped, base64."""
    forms = {needle, urllib.parse.quote(needle, safe=""), urllib.parse.quote_plus(needle)}
    forms.add(json.dumps(needle)[1:-1])
    raw = needle.encode()
    for pad in range(3):
        # base64 of a text holding the needle at any alignment contains this core.
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            b = enc(b"\0" * pad + raw).decode()
            core = b[4 if pad else 0 :]
            core = core[: len(core) - 4]
            if len(core) >= 12:
                forms.add(core)
    return {f for f in forms if f}


def leaks(planted: list[Planted], blobs: dict[str, bytes]) -> dict[str, list[str]]:
    """Where each planted secret shows up: ``{where planted: [artefact, ...]}``."""
    found: dict[str, list[str]] = {}
    for p in planted:
        forms = {f.encode() for n in p.needles() for f in encodings(n)}
        hits = [name for name, data in blobs.items() if any(f in data for f in forms)]
        if hits:
            found[p.where] = hits
    return found


def read_tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def planted_profile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Planted]]:
    return plant(tmp_path_factory.mktemp("planted"), FakeSecrets())


def test_the_planted_profile_holds_every_kind_and_the_scan_sees_each(
    planted_profile: tuple[Path, list[Planted]],
) -> None:
    """The end-to-end test below proves something only if every plant is a detected secret."""
    path, planted = planted_profile
    job = yaml.safe_load((path.parent / "job.yaml").read_text())
    config = yaml.safe_load((path.parent / "config" / "smoke_ppo_mlp.yaml").read_text())
    kinds = {h.kind for _, h in scan_tree(job)} | {h.kind for _, h in scan_tree(config)}
    kinds |= {h.kind for h in scan_value("image", str(job["spec"]["roles"][0]["image"]))}
    assert {p.kind for p in planted} <= kinds


def test_no_planted_secret_in_any_report_or_console_output(
    planted_profile: tuple[Path, list[Planted]], tmp_path: Path
) -> None:
    profile, planted = planted_profile
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in _SHARED:
        (checkout / name).symlink_to(REPO / name)
    for name in _COPIED:
        shutil.copy2(REPO / name, checkout / name)
    reports = checkout / "reports"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "features/",
            "-p",
            "no:cacheprovider",
            "-v",
            "--profile",
            str(profile),
            f"--junitxml={reports / 'junit.xml'}",
            f"--alluredir={reports / 'allure-results'}",
        ],
        cwd=checkout,
        env=env,
        capture_output=True,
        timeout=1800,
    )
    console = proc.stdout + proc.stderr
    assert reports.is_dir() and any(reports.rglob("*.json")), console.decode()[-3000:]
    blobs = read_tree(reports)
    blobs["<console>"] = console
    found = leaks(planted, blobs)
    files = sorted({f for where in found.values() for f in where})
    summary = "\n".join(
        f"  {where}: {len(arts)} artefacts, e.g. {sorted(arts)[:3]}"
        for where, arts in found.items()
    )
    assert not found, f"{len(files)} of {len(blobs)} artefacts leak a planted secret:\n{summary}"


def test_preflight_cli_names_every_kind_and_prints_no_value(
    planted_profile: tuple[Path, list[Planted]],
) -> None:
    profile, planted = planted_profile
    outputs: dict[str, bytes] = {}
    cli = [sys.executable, "-m", "rlark_acceptance.cli", "preflight", "--profile", str(profile)]
    for mode in ([], ["--json"]):
        proc = subprocess.run(
            [*cli, *mode],
            capture_output=True,
            timeout=300,
        )
        assert proc.returncode == 1, proc.stderr.decode()[-2000:]
        outputs[" ".join(["preflight", *mode])] = proc.stdout + proc.stderr
    assert not leaks(planted, outputs)
    report: dict[str, Any] = json.loads(outputs["preflight --json"])
    codes = {f["code"] for f in report["findings"] if f["check"] in ("3.6", "5.8")}
    assert {f"secret-{p.kind}" for p in planted} <= codes
    # A secret in the RLinf config is named by its key path and line, never by its value.
    config_file = profile.parent / "config" / "smoke_ppo_mlp.yaml"
    lines = config_file.read_text().splitlines()
    api_key_line = next(i for i, ln in enumerate(lines, 1) if ln.strip().startswith("api_key:"))
    assert {
        (f["check"], f["location"])
        for f in report["findings"]
        if f["message"].startswith("RLinf config runner.logger.wandb.api_key:")
    } == {("5.8", f"{config_file}:{api_key_line}")}


def test_the_worker_log_of_a_planted_job_is_redacted(
    planted_profile: tuple[Path, list[Planted]], target_environment: None
) -> None:
    """Step 6 on the planted Job (submitted despite its pre-flight, as the fault scenarios
    do): the Worker echoes ``apikey X`` and prints its config with the run script's
    ``+runner.hub_token=...``; what the run record attaches (log excerpt, printed config, Pods
    and events) shows none of it after the run's redaction (the pre-flight's ``Redactor``,
    which its scans of the Job filled)."""
    from rlark_acceptance.adapters import open_adapter
    from rlark_acceptance.model.profile import load_profile
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.acceptance import submit_and_confirm

    path, planted = planted_profile
    profile = load_profile(path)
    pre = preflight_profile(profile)
    assert pre.verdict == "fail"
    adapter = open_adapter(profile)
    try:
        rec = submit_and_confirm(adapter, pre)
    finally:
        adapter.close()
    echoed = next(p for p in planted if p.where.startswith("prepare script (echo"))
    raw = "\n".join(rec.log)
    assert echoed.value in raw, "the Worker never echoed the planted argument: nothing proven"
    printed = next(p for p in planted if p.where == "run script override").value
    assert printed in json.dumps(rec.printed_config), "RLinf never printed its config"
    evidence = [*(e.__dict__ for e in rec.events), *(p.__dict__ for p in rec.pods)]
    redactor = pre.redactor
    shown = {
        "log": redactor.redact(raw),
        "log excerpt": redactor.redact(rec.log_excerpt()),
        "printed config": json.dumps(redactor.redact_tree(rec.printed_config), default=str),
        "pods and events": redactor.redact(json.dumps(evidence, default=str)),
        "record": repr(rec),
    }
    assert not leaks(planted, {k: v.encode() for k, v in shown.items()})


def test_no_object_reachable_from_a_run_prints_a_planted_value(
    planted_profile: tuple[Path, list[Planted]], tmp_path: Path
) -> None:
    """A failure's traceback shows the repr() of step arguments: every object a step can
    receive, and every dataclass reachable from one, prints no planted value in its repr()
    or str()."""
    import dataclasses

    from fixtures.workspace import Workspace
    from rlark_acceptance.model.profile import load_profile
    from rlark_acceptance.preflight.entry import preflight_profile
    from rlark_acceptance.run.acceptance import AcceptanceRun

    path, planted = planted_profile
    profile = load_profile(path)
    pre = preflight_profile(profile)
    roots: list[object] = [
        profile,
        pre,
        AcceptanceRun(pre, None),
        Workspace.copy_of(path, tmp_path / "ws"),
    ]
    shown: dict[str, bytes] = {}
    seen: set[int] = set()

    def visit(obj: object, where: str) -> None:
        if id(obj) in seen or isinstance(obj, str | bytes | int | float | Path | type(None)):
            return
        seen.add(id(obj))
        if dataclasses.is_dataclass(obj):
            shown[f"repr {where}"] = repr(obj).encode()
            shown[f"str {where}"] = str(obj).encode()
            for f in dataclasses.fields(obj):
                visit(getattr(obj, f.name), f"{where}.{f.name}")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, f"{where}[{k!r}]")
        elif isinstance(obj, list | tuple | set):
            for i, v in enumerate(obj):
                visit(v, f"{where}[{i}]")

    for root in roots:
        visit(root, type(root).__name__)
    assert len(shown) > 40  # the walk reached the model, the findings and the config objects
    assert not leaks(planted, shown)
