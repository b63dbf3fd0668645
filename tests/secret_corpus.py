# ruff: noqa: E501  (a table of cases reads best one case a line)
"""A labelled corpus for the secret scan (3.6 / 5.8): fake secrets in every place a Job holds
them, and benign lookalikes, each a whole Job YAML or RLinf config built at run time.

Every secret comes from ``FakeSecrets`` (pieces and random characters), so the corpus holds no
secret-looking literal. A positive names the line its secret is on and the kinds a finding
may give it; a benign case must give none. Used by ``tests/preflight/test_secret_corpus.py``
(recall and false positives, asserted) and ``bench/secret_scan.py`` (figures).
"""

from __future__ import annotations

import base64
import json
import string
from dataclasses import dataclass
from pathlib import Path

from tests.fake_secrets import FakeSecrets

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "profiles" / "local" / "job.yaml"
CONFIG = ROOT / "src" / "rlark_acceptance" / "smoke" / "config" / "smoke_ppo_mlp.yaml"


@dataclass(frozen=True)
class Case:
    label: str
    file: str  # "job" or "config": which file the text replaces
    text: str
    kinds: frozenset[str]  # empty: a benign lookalike
    line: int | None  # 1-based line of the secret
    planted: str | None  # what must never be echoed


def _job_with(place: str, snippet: str) -> tuple[str, int]:
    """The default Job YAML with ``snippet`` in ``place``; the line the snippet's last line is on."""
    lines = JOB.read_text().splitlines()
    anchors = {
        "env": '    - {name: RAY_DEDUP_LOGS, value: "0"}',
        "runScript": "  runScript: |",
        "prepareScript": "    prepareScript: |",
        "image": "    image: rlark-acceptance/smoke:0.1.0",
    }
    i = lines.index(anchors[place])
    if place == "image":
        lines[i] = f"    image: {snippet}"
        return "\n".join(lines) + "\n", i + 1
    indent = "      " if place == "prepareScript" else "    "
    new = [indent + s for s in snippet.splitlines()]
    lines[i + 1 : i + 1] = new
    return "\n".join(lines) + "\n", i + 1 + len(new)


def _config_with(key_line: str) -> tuple[str, int]:
    lines = CONFIG.read_text().splitlines()
    i = lines.index('    logger_backends: ["tensorboard"]')
    lines.insert(i + 1, key_line)
    return "\n".join(lines) + "\n", i + 2


def _env(name: str, value: str) -> str:
    return f"- {{name: {name}, value: {json.dumps(value)}}}"


def build(seed: int = 15) -> list[Case]:
    f = FakeSecrets(seed)
    r, m = f.rand, f.mixed
    hexs = "0123456789abcdef"
    cases: list[Case] = []

    def job(label: str, place: str, snippet: str, kinds: set[str], secret: str | None) -> None:
        text, line = _job_with(place, snippet)
        cases.append(Case(label, "job", text, frozenset(kinds), line if kinds else None, secret))

    def config(label: str, key_line: str, kinds: set[str], secret: str | None) -> None:
        text, line = _config_with(key_line)
        cases.append(Case(label, "config", text, frozenset(kinds), line if kinds else None, secret))

    # -- formats, as env values and in scripts
    for kind, token in f.format_tokens().items():
        if kind == "private-key":
            b64 = base64.b64encode(token.encode()).decode()
            job("private key, base64, env", "env", _env("SSH_KEY_B64", b64), {kind}, b64)
            job(
                "private key, base64, script",
                "prepareScript",
                f"echo {b64} | base64 -d > /root/.ssh/id",
                {kind},
                b64,
            )
            continue
        if kind == "azure-storage-key":  # the key, as it comes in a connection string
            token = f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={token};EndpointSuffix=core.windows.net"
        job(
            f"{kind}, env",
            "env",
            _env("SETTING", token),
            {kind},
            token.split("AccountKey=")[-1].split(";")[0],
        )
        job(
            f"{kind}, script",
            "prepareScript",
            f"export SETTING='{token}'",
            {kind},
            token.split("AccountKey=")[-1].split(";")[0],
        )
    # -- literal values of secret-named variables and keys
    named: list[tuple[str, str, str]] = [
        ("DB_PASSWORD", "hunter" + r(string.digits, 4), "secret-variable"),
        ("HF_TOKEN", m(24), "secret-variable"),
        ("WANDB_API_KEY", r(hexs, 40), "secret-variable"),
        ("AWS_SECRET_ACCESS_KEY", r(string.ascii_letters + string.digits + "/+", 40), "cloud-secret-key"),
        ("MINIO_SECRET_KEY", m(32), "cloud-secret-key"),
    ]  # fmt: skip
    for name, value, kind in named:
        job(f"{name}, env", "env", _env(name, value), {kind}, value)
        job(f"{name}, script", "runScript", f"export {name}={value}", {kind}, value)
    config(
        "wandb.api_key in the RLinf config",
        f"    api_key: {r(hexs, 40)}",
        {"secret-variable"},
        None,
    )
    # -- URLs, images, headers, flags
    pw = m(14)
    job(
        "URL credentials",
        "runScript",
        f"git clone https://deploy:{pw}@git.example.com/rl.git",
        {"url-credentials"},
        pw,
    )
    job(
        "image credentials",
        "image",
        f"rl:{pw}@registry.example.com/rlinf:v1",
        {"registry-credentials"},
        pw,
    )
    job(
        "Authorization header",
        "runScript",
        f'curl -H "Authorization: Bearer {m(30)}" https://api.example.com',
        {"auth-header"},
        None,
    )
    job(
        "long password option",
        "runScript",
        f"python train.py --password {pw}",
        {"secret-variable"},
        pw,
    )
    job(
        "sshpass with -p",
        "prepareScript",
        f"sshpass -p {pw} ssh node true",
        {"secret-variable"},
        pw,
    )
    job(
        ".netrc literal",
        "prepareScript",
        f'echo "machine h login u password {pw}" > ~/.netrc',
        {"secret-variable"},
        pw,
    )
    # -- credentials as positional arguments of well-known tools
    key40 = r(string.ascii_letters + string.digits + "/+", 39) + "7"
    cli: list[tuple[str, str, set[str], str | None]] = [
        ("aws configure set", f"aws configure set aws_secret_access_key {key40}", {"cloud-secret-key"}, key40),
        ("aws configure set, profile", f"aws configure set --profile ckpt aws_session_token {key40}", {"cloud-secret-key"}, key40),
        ("wandb login", f"wandb login {r(hexs, 40)}", {"command-argument"}, None),
        ("wandb login --relogin", f"wandb login --relogin {r(hexs, 40)}", {"command-argument"}, None),
        ("docker login -p", f"docker login -u bob -p {pw} registry.example.com", {"command-argument"}, pw),
        ("podman login -p", f"podman login registry.example.com -u bob -p {pw}", {"command-argument"}, pw),
        ("huggingface-cli login --token", f"huggingface-cli login --token {m(34)}", {"secret-variable"}, None),
        ("npm _authToken", f"npm config set //npm.example.com/:_authToken {m(36)}", {"command-argument"}, None),
        ("pip config password", f"pip config set global.password {pw}", {"command-argument"}, pw),
        ("poetry http-basic", f"poetry config http-basic.internal bob {pw}", {"command-argument"}, pw),
        ("mc alias set", f"mc alias set ckpt http://minio:9000 ckptuser {key40}", {"cloud-secret-key"}, key40),
        ("kubectl --from-literal", f"kubectl create secret generic db --from-literal=password={pw}", {"command-argument", "secret-variable"}, pw),
        ("echo | docker login --password-stdin", f"echo {pw} | docker login -u bob --password-stdin registry.example.com", {"command-argument"}, pw),
        ("gh auth login <<<", f"gh auth login --with-token <<< {m(40)}", {"command-argument"}, None),
    ]  # fmt: skip
    for label, line, kinds, secret in cli:
        job(label, "runScript", line, kinds, secret)
    # -- Docker's auth config
    auth = base64.b64encode(f"bob:{pw}".encode()).decode()
    docker_cfg = json.dumps({"auths": {"registry.example.com": {"auth": auth}}})
    docker_b64 = base64.b64encode(docker_cfg.encode()).decode()
    job(
        "docker auth JSON, env",
        "env",
        _env("DOCKER_AUTH_CONFIG", docker_cfg),
        {"docker-auth"},
        auth,
    )
    job(
        "docker auth base64, env",
        "env",
        _env("DOCKER_CONFIG_B64", docker_b64),
        {"docker-auth"},
        docker_b64,
    )
    job(
        "docker auth JSON, script",
        "prepareScript",
        f"echo '{docker_cfg}' > ~/.docker/config.json",
        {"docker-auth"},
        auth,
    )
    job(
        "docker auth base64, script",
        "prepareScript",
        f"echo {docker_b64} | base64 -d > ~/.docker/config.json",
        {"docker-auth"},
        docker_b64,
    )

    # -- benign lookalikes: references, files, settings, ids
    sha, git_sha = r(hexs, 64), r(hexs, 40)
    benign_env = [
        ("TOKENIZERS_PARALLELISM", "false"), ("HF_TOKEN", "${HF_TOKEN}"), ("HF_TOKEN_PATH", "/var/run/secrets/hf/token"),
        ("WANDB_API_KEY", "$(WANDB_API_KEY)"), ("MAX_TOKENS", "4096"), ("GIT_COMMIT", git_sha),
        ("DOCKER_AUTH_CONFIG", json.dumps({"auths": {"registry.example.com": {"auth": "${REGISTRY_AUTH}"}}})),
        ("DOCKER_CONFIG_JSON", json.dumps({"credsStore": "ecr-login", "auths": {"registry.example.com": {}}})),
        ("CONFIG_B64", base64.b64encode(json.dumps({"auths": {}, "runner": {"epochs": 3}}).encode()).decode()),
    ]  # fmt: skip
    for name, value in benign_env:
        job(f"benign env {name}", "env", _env(name, value), set(), None)
    benign_scripts = [
        'echo "machine api.wandb.ai login user password $(cat /var/run/secrets/wandb/key)" > ~/.netrc',
        'echo "machine api.wandb.ai login user password "$(< /var/run/secrets/wandb/key)"" > ~/.netrc',
        'echo "machine api.wandb.ai login user password ${WANDB_API_KEY}" > ~/.netrc',
        "printf 'machine %s login %s password %s\\n' api.wandb.ai user \"$(cat /var/run/secrets/wandb/key)\" > ~/.netrc",
        "cat > ~/.netrc <<EOF\nmachine api.wandb.ai\n  login user\n  password $(cat /var/run/secrets/wandb/key)\nEOF",
        'aws configure set aws_secret_access_key "$(cat /var/run/secrets/aws/secret)"',
        'aws configure set region us-east-1 && aws configure set aws_access_key_id "$AWS_ACCESS_KEY_ID"',
        'wandb login "$WANDB_API_KEY"',
        "wandb login --relogin $(cat /var/run/secrets/wandb/key)",
        'docker login -u bob -p "$REGISTRY_PASSWORD" registry.example.com',
        "docker login -u bob --password-stdin registry.example.com < /var/run/secrets/registry",
        'echo "$GH_TOKEN" | gh auth login --with-token',
        "gh auth login --with-token < /var/run/secrets/gh-token",
        'npm config set //npm.example.com/:_authToken "${NPM_TOKEN}"',
        "pip config set global.index-url https://pypi.example.com/simple",
        'mc alias set ckpt http://minio:9000 "$S3_KEY" "$S3_SECRET"',
        "kubectl create secret generic db --from-file=password=/var/run/secrets/db",
        f"echo image rlinf@sha256:{sha} commit {git_sha}",
        "python train.py --max-tokens 4096 --tokenizer Qwen/Qwen2.5 --use-token true",
        "echo login done; echo token budget 4096 tokens",
    ]
    for i, line in enumerate(benign_scripts):
        job(f"benign script {i}: {line[:40]}", "runScript", line, set(), None)
    job("benign image digest", "image", f"registry.example.com/rlinf@sha256:{sha}", set(), None)
    config("benign config key reference", "    api_key: ${oc.env:WANDB_API_KEY}", set(), None)
    return cases


def positives(cases: list[Case]) -> list[Case]:
    return [c for c in cases if c.kinds]
