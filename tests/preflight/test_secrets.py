"""Tests for rlark_acceptance.secrets (checks 3.6 / 5.8).

Every fake secret is assembled at run time from pieces and random characters, so that no
realistic secret literal sits in the repository (secret scanners on the repo would flag it).
AWS's documented example key ID is the one exception.

Over ~400 lines: one test per kind the scanner knows and per false positive it must not
raise, which read best side by side.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from detect_secrets.settings import transient_settings

from rlark_acceptance.model.keypath import dotted
from rlark_acceptance.secrets import (
    Redactor,
    SecretHit,
    scan_script,
    scan_tree,
    scan_value,
    secret_name_kind,
)


def redact(text: str, extra_values: tuple[str, ...] | list[str] = ()) -> str:
    """One text redacted by a run of its own: only what the text itself reveals."""
    return Redactor().redact(text, extra_values)


AWS_DOC_KEY_ID = (
    "AKIA" + "IOSFODNN7EXAMPLE"
)  # AWS documentation example  # pragma: allowlist secret
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
_rng = random.Random(20261130)


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def mixed(n: int) -> str:
    """Random alnum with at least one upper, lower and digit, like real keys."""
    return rand(ALNUM, n - 3) + rand(string.ascii_uppercase, 1) + rand("abcdefgh", 1) + "7"


def b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def pem(label: str = "RSA PRIVATE KEY") -> str:
    dash = "-" * 5
    body = "\n".join(rand(ALNUM + "+/", 64) for _ in range(6))
    return f"{dash}BEGIN {label}{dash}\n{body}\n{dash}END {label}{dash}\n"


# (id, variable name, value factory, expected kind). Names are plausible for the kind.
POSITIVES: list[tuple[str, str, Callable[[], str], str]] = [
    ("aws-doc-key-id", "AWS_ACCESS_KEY_ID", lambda: AWS_DOC_KEY_ID, "aws-access-key"),
    ("aws-key-id", "S3_ACCESS", lambda: "AK" + "IA" + rand(string.ascii_uppercase, 16), "aws-access-key"),  # noqa: E501
    ("aws-secret", "AWS_SECRET_ACCESS_KEY", lambda: rand(ALNUM + "/+", 40), "cloud-secret-key"),
    # Base64 keys may start with "/": a key, not a path (no "+" in it, to prove the shape).
    ("aws-secret-slash", "AWS_SECRET_ACCESS_KEY", lambda: "/" + mixed(39), "cloud-secret-key"),
    ("minio-secret", "MINIO_SECRET_KEY", lambda: rand(ALNUM, 32), "cloud-secret-key"),
    ("s3-camel", "secretAccessKey", lambda: rand(ALNUM, 40), "cloud-secret-key"),
    ("github-classic", "GH_AUTH", lambda: "gh" + "p_" + rand(ALNUM, 36), "github-token"),
    ("github-fine", "GIT_CRED", lambda: "github" + "_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59), "github-token"),  # noqa: E501
    ("gitlab", "CI_JOB", lambda: "gl" + "pat-" + rand(ALNUM, 20), "gitlab-token"),
    ("slack", "NOTIFY", lambda: "xo" + "xb-" + rand(string.digits, 12) + "-" + rand(string.digits, 12) + "-" + rand(string.ascii_lowercase + string.digits, 24), "slack-token"),  # noqa: E501
    ("huggingface", "HF_TOKEN", lambda: "h" + "f_" + rand(string.ascii_letters, 32) + "aB", "huggingface-token"),  # noqa: E501
    ("openai", "LLM", lambda: "s" + "k-proj-" + mixed(48), "openai-key"),
    ("google", "MAPS", lambda: "AI" + "za" + rand(ALNUM + "_-", 35), "google-api-key"),
    ("stripe", "BILLING", lambda: "sk" + "_live_" + rand(ALNUM, 24), "stripe-key"),
    ("jwt", "SESSION", lambda: b64url({"alg": "HS256", "typ": "JWT"}) + "." + b64url({"sub": rand(ALNUM, 8)}) + "." + rand(ALNUM + "-_", 43), "jwt"),  # noqa: E501
    ("azure", "AZURE_CONN", lambda: "DefaultEndpointsProtocol=https;AccountName=acct;Account" + "Key=" + rand(ALNUM + "+/", 86) + "==;EndpointSuffix=core.windows.net", "azure-storage-key"),  # noqa: E501
    ("url-https", "DATABASE_URL", lambda: "postgresql://rl:" + mixed(12) + "@db.internal:5432/runs", "url-credentials"),  # noqa: E501
    ("url-s3", "CKPT_URI", lambda: "s3://" + rand(string.ascii_uppercase, 16) + ":" + rand(ALNUM, 40) + "@rlinf-ckpt/team-a", "url-credentials"),  # noqa: E501
    ("pem-rsa", "SSH_PRIVATE_KEY", pem, "private-key"),
    ("pem-openssh", "deployKey", lambda: pem("OPENSSH PRIVATE KEY"), "private-key"),
    ("pem-pkcs8-encrypted", "TLS_MATERIAL", lambda: pem("ENCRYPTED PRIVATE KEY"), "private-key"),
    ("pem-base64", "KEY_B64", lambda: base64.b64encode(pem().encode()).decode(), "private-key"),
    ("db-password", "DB_PASSWORD", lambda: "hunter" + "2", "secret-variable"),
    ("word-password", "password", lambda: "let" + "me" + "in", "secret-variable"),
    ("numeric-password", "REDIS_PASSWORD", lambda: rand(string.digits, 8), "secret-variable"),
    ("wandb", "WANDB_API_KEY", lambda: rand(HEX, 40), "secret-variable"),
    ("hf-literal", "HF_TOKEN", lambda: rand(ALNUM, 24), "secret-variable"),
    ("client-secret", "OAUTH_CLIENT_SECRET", lambda: rand(ALNUM, 30), "secret-variable"),
    ("bare-token", "token", lambda: rand(ALNUM, 20), "secret-variable"),
    ("camel-api-key", "apiKey", lambda: rand(ALNUM, 20), "secret-variable"),
    ("hydra-key", "runner.logger.wandb.api_key", lambda: rand(HEX, 40), "secret-variable"),
]  # fmt: skip


def secret_part(kind: str, value: str) -> str:
    """The part of a generated value that is secret (not the connection-string keywords)."""
    if kind == "azure-storage-key":
        return value.split("AccountKey=")[1].split(";")[0]
    if kind == "url-credentials":
        return value.split("://")[1].split("@")[0].split(":")[1]
    return value


@pytest.fixture(params=POSITIVES, ids=[p[0] for p in POSITIVES])
def positive(request: pytest.FixtureRequest) -> tuple[str, str, str, str]:
    """(name, value, secret part of the value, kind)."""
    _id, name, make, kind = request.param
    value = make()
    return name, value, secret_part(kind, value), kind


def kinds(hits: list[SecretHit]) -> set[str]:
    return {h.kind for h in hits}


def assert_clean(hits: list[SecretHit], secret: str) -> None:
    for h in hits:
        assert secret not in h.description
        assert h.name is None or secret not in h.name
        # No 8-character piece of the value either.
        for i in range(0, max(1, len(secret) - 7)):
            assert secret[i : i + 8] not in h.description


# --------------------------------------------------------------------------- positives


def test_value_positive(positive: tuple[str, str, str, str]) -> None:
    name, value, secret, kind = positive
    hits = scan_value(name, value)
    assert kind in kinds(hits), hits
    assert all(h.line == 0 for h in hits if "\n" not in value)
    assert any(h.name == name for h in hits)
    assert_clean(hits, secret)


FORMAT_POSITIVES = [p for p in POSITIVES if p[3] not in ("secret-variable", "cloud-secret-key")]


@pytest.mark.parametrize("case", FORMAT_POSITIVES, ids=[p[0] for p in FORMAT_POSITIVES])
def test_value_positive_by_format_alone(case: tuple[str, str, Callable[[], str], str]) -> None:
    """Format kinds need no variable name: a token pasted anywhere is found."""
    _id, _name, make, kind = case
    assert kind in kinds(scan_value(None, make()))
    assert kind in kinds(scan_value("args", make()))


def test_script_positive(positive: tuple[str, str, str, str]) -> None:
    name, value, secret, kind = positive
    if "\n" in value:  # a PEM key arrives through a heredoc
        script = f"set -e\ncat > /root/.ssh/id <<'EOF'\n{value}EOF\nchmod 600 /root/.ssh/id\n"
    elif "." in name:  # Hydra override on the command line
        script = f"set -e\ncd /workspace/RLinf\nbash run.sh {name}={value}\n"
    else:
        script = f'set -e\n\nexport {name}="{value}"\npython train.py\n'
    line = 2
    hits = scan_script(script)
    assert kind in kinds(hits), hits
    assert any(h.line == line for h in hits if h.kind == kind)
    assert_clean(hits, secret)
    redacted = redact(script)
    assert secret not in redacted
    assert redacted.startswith("set -e\n")


@pytest.mark.parametrize(
    ("template", "name"),
    [
        ("python train.py --password {s} --epochs 3", "--password"),
        ("python train.py --api-key={s}", "--api-key"),
        ("huggingface-cli login --token '{s}'", "--token"),
        ("DB_PASSWORD={s} python migrate.py", "DB_PASSWORD"),
        ('docker run -e "HF_TOKEN={s}" img', "HF_TOKEN"),
        ("curl -H 'X-Api-Key: {s}' https://api.example.com", "X-Api-Key"),
        ("sshpass -p {s} ssh node", "sshpass -p"),
        ("cat > cfg.yaml <<EOF\nwandb:\n  api_key: {s}\nEOF", "api_key"),
        ('echo \'{{"password": "{s}"}}\' > creds.json', "password"),
    ],
)
def test_script_literal_forms(template: str, name: str) -> None:
    secret = mixed(16)
    script = template.format(s=secret)
    hits = scan_script(script)
    assert [h.name for h in hits] == [name], hits
    assert_clean(hits, secret)
    assert secret not in redact(script)


def test_authorization_header() -> None:
    secret = mixed(30)
    script = f'curl -H "Authorization: Bearer {secret}" https://api.example.com'
    hits = scan_script(script)
    assert kinds(hits) == {"auth-header"}
    assert redact(script) == 'curl -H "Authorization: Bearer ***" https://api.example.com'


def test_known_format_inside_named_variable_keeps_the_name() -> None:
    token = "gh" + "p_" + rand(ALNUM, 36)
    (hit,) = scan_script(f"export GITHUB_TOKEN={token}")
    assert (hit.kind, hit.name) == ("github-token", "GITHUB_TOKEN")


def test_pem_as_yaml_block_scalar() -> None:
    key = pem("OPENSSH PRIVATE KEY")
    indented = "".join("        " + line + "\n" for line in key.splitlines())
    doc = (
        "apiVersion: rlark.io/v1alpha1\nkind: Job\nspec:\n  roles:\n  - name: worker\n"
        "    env:\n    - name: GIT_SSH_KEY\n      value: |\n" + indented + "    gpus: 8\n"
    )
    hits = scan_tree(yaml.safe_load(doc))
    assert [(dotted(p), h.kind, h.name) for p, h in hits] == [
        ("spec.roles[0].env[0].value", "private-key", "GIT_SSH_KEY")
    ]
    out = redact(doc)
    body_line = key.splitlines()[1]
    assert body_line not in out and "BEGIN" not in out
    assert out.startswith(doc[: doc.index("-----")]) and out.endswith("\n    gpus: 8\n")


def test_url_credentials_redact_user_and_password() -> None:
    pw = mixed(14)
    text = f"git clone https://deploy:{pw}@git.example.com/rl.git && ls"
    assert redact(text) == "git clone https://***@git.example.com/rl.git && ls"


def test_base64_encoded_key_is_found_and_redacted() -> None:
    blob = base64.b64encode(pem().encode()).decode()
    text = f"echo {blob} | base64 -d > /root/.ssh/id_rsa"
    (hit,) = scan_script(text)
    assert hit.kind == "private-key" and "base64" in hit.description
    assert redact(text) == "echo *** | base64 -d > /root/.ssh/id_rsa"


# --------------------------------------------------------------------------- negatives

SHA256 = rand(HEX, 64)
GIT_SHA = rand(HEX, 40)
RUN_UUID = str(uuid.UUID(int=_rng.getrandbits(128)))
ORDINARY_B64 = base64.b64encode(
    json.dumps({"algorithm": {"adv_type": "gae", "gamma": 0.99}, "runner": {"epochs": 3}}).encode()
).decode()

NEGATIVE_VALUES: list[tuple[str | None, str]] = [
    ("TOKENIZERS_PARALLELISM", "false"),
    ("RAY_DEDUP_LOGS", "0"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("HF_HUB_ENABLE_HF_TRANSFER", "1"),
    ("PYTHONPATH", "/workspace/RLinf:/opt/extra"),
    (None, "/mnt/secrets/hf_token"),
    ("HF_TOKEN_FILE", "/mnt/secrets/hf_token"),
    ("HF_TOKEN_PATH", "/var/run/secrets/token"),
    ("KEY_FILE", "/etc/ssl/key.pem"),
    ("SSL_KEY_PATH", "/etc/ssl/private/tls.key"),
    ("SECRETS_DIR", "/var/run/secrets"),
    ("HF_TOKEN", "/var/run/secrets/hf/token"),
    ("HF_TOKEN", "/opt/MyApplicationSecrets/token"),
    ("HF_TOKEN", "/mnt/models/Qwen2.5-VL-7B-Instruct/tokenizer.json"),
    ("HF_TOKEN", "secrets/hf_token.txt"),
    ("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json"),
    ("HF_TOKEN", "${HF_TOKEN}"),
    ("WANDB_API_KEY", "$WANDB_API_KEY"),
    ("DB_PASSWORD", "$(cat /run/secrets/x)"),
    ("HF_TOKEN", "$(HF_TOKEN)"),  # Kubernetes dependent variable
    ("AWS_SECRET_ACCESS_KEY", "${AWS_SECRET_ACCESS_KEY:-}"),
    ("DB_PASSWORD", ""),
    ("HF_TOKEN", "   "),
    ("HF_TOKEN", "<your-hf-token>"),
    ("HF_TOKEN", "***"),
    ("USE_TOKEN", "true"),
    ("MAX_TOKENS", "4096"),
    ("max_tokens", "4096"),
    ("max_new_tokens", "512"),
    ("num_tokens", "128"),
    ("SSH_KEY_BITS", "4096"),
    ("TOKEN_TTL_SECONDS", "3600"),
    ("tokenizer", "Qwen/Qwen2.5-VL-3B-Instruct"),
    ("tokenizer_path", "/mnt/models/tokenizer"),
    ("pad_token", "<|endoftext|>"),
    ("eos_token", "</s>"),
    ("prompt_key", "prompt"),
    ("reward_key", "score"),
    ("key", "token"),  # secretKeyRef.key
    ("secretName", "hf-token"),
    ("sshPublicKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(ALNUM, 43) + " me@laptop"),
    (None, "runner.logger.log_path=/mnt/ckpt/logs"),
    ("runScript", "cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh "
     "maniskill_ppo_openvlaoft runner.logger.log_path=/mnt/ckpt/logs"),
    ("image", f"registry.example.com/rlinf@sha256:{SHA256}"),
    ("image", "registry.example.com/rlinf:v0.3.0-cuda12.4"),
    ("GIT_COMMIT", GIT_SHA),
    ("revision", GIT_SHA),
    ("RUN_ID", RUN_UUID),
    ("WANDB_RUN_ID", RUN_UUID),
    ("kubernetes.io/hostname", "gpu-node-07"),
    (None, "kubernetes.io/hostname"),
    ("CONFIG_B64", ORDINARY_B64),
    ("WANDB_BASE_URL", "https://api.wandb.ai"),
    ("RAY_ADDRESS", "http://localhost:8265"),
    ("AWS_ENDPOINT_URL", "http://minio.rlinf.svc:9000"),
    ("AWS_REGION", "us-east-1"),
    ("AWS_ACCESS_KEY_ID", "${AWS_ACCESS_KEY_ID}"),
    ("repo", "git@github.com:RLinf/RLinf.git"),
    ("repo", "ssh://git@git.example.com:22/rl/RLinf.git"),
    ("model", "sk-learn-baseline-policy-v2-final"),
    ("HF_ENDPOINT", "https://hf-mirror.com"),
    ("bucket", "rlinf-ckpt"),
    ("prefix", "team-a/maniskill"),
    ("firstSignal", "Global Step"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "value"), NEGATIVE_VALUES)
def test_value_negative(name: str | None, value: str) -> None:
    assert scan_value(name, value) == []
    assert redact(value) == value


NEGATIVE_SCRIPT = f"""#!/usr/bin/env bash
set -euo pipefail
export TOKENIZERS_PARALLELISM=false
export RAY_DEDUP_LOGS=0 NCCL_SOCKET_IFNAME=eth0
export HF_TOKEN=${{HF_TOKEN}}
export WANDB_API_KEY=$WANDB_API_KEY
export DB_PASSWORD="$(cat /run/secrets/db_password)"
export HF_TOKEN_PATH=/var/run/secrets/token KEY_FILE=/etc/ssl/key.pem
export EMPTY_SECRET=
huggingface-cli login --token "$HF_TOKEN"
docker login -u bob --password-stdin < /run/secrets/registry
python train.py --max-tokens 4096 --tokenizer Qwen/Qwen2.5 --use-token true
cd /workspace/RLinf && bash examples/embodiment/run_embodiment.sh maniskill_ppo_openvlaoft \\
    runner.logger.log_path=/mnt/ckpt/logs data.prompt_key=prompt
echo "image rlinf@sha256:{SHA256} commit {GIT_SHA} run {RUN_UUID}"
curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com
git clone https://github.com/RLinf/RLinf.git
mkdir -p /mnt/ckpt && ssh -p 22 gpu-node-07 hostname
echo "token: read from the mounted file"
kubectl get pods -l kubernetes.io/hostname=gpu-node-07
"""


def test_script_negative() -> None:
    assert scan_script(NEGATIVE_SCRIPT) == []
    assert redact(NEGATIVE_SCRIPT) == NEGATIVE_SCRIPT


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("AWS_SECRET_ACCESS_KEY", "cloud-secret-key"),
        ("secretKey", "cloud-secret-key"),
        ("HF_TOKEN", "secret-variable"),
        ("AWS_SESSION_TOKEN", "cloud-secret-key"),
        ("--password", "secret-variable"),
        ("DB_PASS", "secret-variable"),
        ("AWS_ACCESS_KEY_ID", None),  # an ID alone is not secret; AKIA IDs match by format
        ("HF_TOKEN_PATH", None),
        ("SSH_KEY_BITS", None),
        ("sshPublicKey", None),
        ("monkey", None),
        ("FIRST_PASS", None),
        ("BYPASS", None),
    ],
)
def test_secret_name_kind(name: str, kind: str | None) -> None:
    assert secret_name_kind(name) == kind


# --------------------------------------------------------------------------- redaction


def test_redact_keeps_other_bytes_and_removes_every_secret(
    positive: tuple[str, str, str, str],
) -> None:
    name, value, secret, _kind = positive
    before = "2026-11-30T12:00:00Z INFO  starting worker 0\t→ ünïcode ok\r\n"
    after = "\nGlobal Step 1 loss=0.25\n"
    text = f"{before}{name}={value}{after}"
    if "." in name:
        text = f"{before}bash run.sh {name}={value}{after}"
    out = redact(text)
    assert secret not in out
    assert out.startswith(before)
    assert out.endswith(after)
    assert "***" in out


def test_redact_repeated_value_and_extra_values() -> None:
    pw = mixed(12)
    known = rand(ALNUM, 10)
    text = f"export DB_PASSWORD={pw}\nmysql -p{pw} -e 'select 1' # uses {known}\n"
    out = redact(text, extra_values=[known, ""])
    assert pw not in out and known not in out
    assert out == "export DB_PASSWORD=***\nmysql -p*** -e 'select 1' # uses ***\n"


def test_redact_is_identity_without_secrets() -> None:
    text = "".join(f"{n}={v}\n" for n, v in NEGATIVE_VALUES if n and "\n" not in v)
    assert redact(text) == text


def test_no_description_contains_a_value(positive: tuple[str, str, str, str]) -> None:
    name, value, secret, _kind = positive
    for hits in (scan_value(name, value), scan_value(None, value), scan_script(f"{name}={value}")):
        assert_clean(hits, secret)
        assert all(h.description for h in hits)


# --------------------------------------------------------------------------- engine properties


def test_independent_of_detect_secrets_global_settings() -> None:
    token = "gh" + "p_" + rand(ALNUM, 36)
    with transient_settings({"plugins_used": []}):
        assert kinds(scan_value(None, token)) == {"github-token"}


def test_thread_safe() -> None:
    corpus = [(name, make()) for _id, name, make, _kind in POSITIVES] + NEGATIVE_VALUES
    expected = [scan_value(n, v) for n, v in corpus]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(lambda nv: scan_value(*nv), corpus)) == expected


def _job_yaml(n_env: int) -> dict[str, object]:
    env = [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(n_env)]
    env += [{"name": "HF_TOKEN", "value": "${HF_TOKEN}"}, {"name": "RAY_DEDUP_LOGS", "value": "0"}]
    return {
        "apiVersion": "rlark.io/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "rlinf-maniskill-ppo", "namespace": "rlinf-acceptance"},
        "spec": {
            "taskType": "custom",
            "headRole": "worker",
            "runScript": NEGATIVE_SCRIPT,
            "tensorboard": {"logDir": "/mnt/ckpt/logs/tensorboard"},
            "roles": [
                {
                    "name": "worker",
                    "cluster": "gpu-a",
                    "nodeSelector": {"kubernetes.io/hostname": "gpu-node-07"},
                    "image": f"registry.example.com/rlinf@sha256:{SHA256}",
                    "prepareScript": "source /opt/venv/bin/activate\n",
                    "env": env,
                    "mounts": [
                        {
                            "name": "ckpt",
                            "type": "objectStorage",
                            "bucket": "rlinf-ckpt",
                            "prefix": "team-a/maniskill",
                            "containerPath": "/mnt/ckpt",
                        },
                    ],
                }
            ],
        },
    }


def test_scan_tree_job_is_clean_and_fast() -> None:
    job = _job_yaml(80)  # ~100 strings plus a 20-line run script
    assert scan_tree(job) == []
    scan_tree(job)  # warm: plugin instances are built once
    runs = 20
    start = time.perf_counter()
    for _ in range(runs):
        scan_tree(job)
    ms = (time.perf_counter() - start) * 1000 / runs
    print(f"secret scan: {ms:.2f} ms per Job YAML")
    assert ms < 100  # generous for slow CI; measured at a few ms


def test_scan_tree_reports_paths_and_env_names() -> None:
    job = _job_yaml(3)
    secret = mixed(20)
    job["spec"]["roles"][0]["env"].append({"name": "DB_PASSWORD", "value": secret})  # type: ignore[index]
    hits = scan_tree(job)
    assert [(p, h.kind, h.name) for p, h in hits] == [
        (("spec", "roles", 0, "env", 5, "value"), "secret-variable", "DB_PASSWORD")
    ]
    assert dotted(hits[0][0]) == "spec.roles[0].env[5].value"


@pytest.mark.parametrize(
    "line",
    [
        'api_key=os.environ.get("OPENAI_API_KEY", "")',
        "secret_key=creds['SecretAccessKey'],",
        "aws_session_token=aws_session_token,",
        'headers = {"Authorization": f"Bearer {self.api_key}"}',
        "access_key: str,",
        "password=password",
        'client = Client(api_key="sk-placeholder")',
        'grep -q "BEGIN OPENSSH ' + 'PRIVATE KEY" ~/.ssh/id_ed25519',
    ],
)
def test_code_references_and_placeholders_are_not_literals(line: str) -> None:
    assert scan_script(line) == []


def test_truncated_pem_redacts_body_only() -> None:
    key = pem()
    head = "\n".join(key.splitlines()[:4])  # BEGIN line and three body lines, no END
    text = f"log start\n{head}\n\nGlobal Step 1\n"
    (hit,) = scan_script(text)
    assert hit.kind == "private-key" and hit.line == 1
    assert redact(text) == "log start\n***\nGlobal Step 1\n"


def test_pathological_input_stays_fast() -> None:
    start = time.perf_counter()
    begin = "-" * 5 + "BEGIN RSA " + "PRIVATE KEY" + "-" * 5 + "\n"
    for text in ("glpat-" * 5000, begin * 2000, "a-" * 20000):
        redact(text)
    assert time.perf_counter() - start < 5


# --------------------------------------------------------------------------- image references,
# option strings, positional arguments, what was found before, trees


@pytest.mark.parametrize(
    "template",
    ["rl:{pw}@registry.invalid/team/smoke:0.1.0", "bob:{pw}@localhost:5000/smoke", "u:{pw}@10.0.0.7:5000/a/b@sha256:" + SHA256],  # noqa: E501
)  # fmt: skip
def test_image_reference_with_credentials(template: str) -> None:
    pw = mixed(16)
    image = template.format(pw=pw)
    hits = scan_value("image", image)
    assert kinds(hits) == {"registry-credentials"}
    assert_clean(hits, pw)
    user = image.split(":")[0]
    shown = redact(image)
    assert pw not in shown and not shown.startswith(user)
    assert shown.startswith("***@")


@pytest.mark.parametrize(
    "image",
    [
        "rlinf/rlinf@sha256:" + SHA256,
        "ubuntu:22.04@sha256:" + SHA256,
        "registry.invalid:5000/team/smoke:0.1.0",
        "git@github.com:RLinf/RLinf.git",
        "user:${REGISTRY_PASSWORD}@registry.invalid/team/smoke:1",
    ],
)
def test_image_reference_without_credentials(image: str) -> None:
    assert scan_value("image", image) == []
    assert redact(image) == image


def test_password_inside_mount_options() -> None:
    pw = mixed(14)
    options = f"vers=4,password={pw},ro"
    hits = scan_value("options", options)
    assert [(h.kind, h.name) for h in hits] == [("secret-variable", "options")]
    assert redact(options) == "vers=4,password=***,ro"
    tree = {"mounts": [{"name": "data", "options": options}]}
    [(path, hit)] = scan_tree(tree)
    assert (dotted(path), hit.kind) == ("mounts[0].options", "secret-variable")
    for clean in ("vers=4,ro,credentials=/etc/smb-creds", "uid=1000,gid=1000,noatime"):
        assert scan_value("options", clean) == []


def test_secret_named_positional_argument() -> None:
    key = mixed(24)
    script = f"export PYTHONUNBUFFERED=1\necho apikey {key}\nrun"
    [hit] = scan_script(script)
    assert (hit.kind, hit.name, hit.line) == ("secret-variable", "apikey", 1)
    assert redact(script) == "export PYTHONUNBUFFERED=1\necho apikey ***\nrun"
    # Prose and counts are not arguments of that kind.
    prose = "echo token budget exceeded\necho password reset required\necho token 12345678\n"
    assert scan_script(prose) == []


def test_a_value_found_once_is_redacted_wherever_it_shows_up() -> None:
    """The Worker prints ``echo apikey X`` as a bare ``X``: the run's scan of the Job found
    X, so the run's redaction removes it from the log; a bare scan remembers nothing."""
    key = mixed(24)
    log = f"step 3\n{key}\nstep 4"
    run = Redactor()
    assert run.redact(log) == log  # nothing around it says it is a secret
    assert scan_script(f"echo apikey {key}")
    assert run.redact(log) == log  # the pure scan told no one
    assert run.scan_script(f"echo apikey {key}")
    assert run.redact(log) == "step 3\n***\nstep 4"
    assert Redactor().redact(log) == log  # another run never learnt it


def test_redact_tree_keeps_the_structure_and_removes_secret_values() -> None:
    api_key, pw, token = rand(HEX, 40), rand(string.digits, 9), mixed(30)
    config = {
        "runner": {"logger": {"wandb": {"project": "rlinf", "api_key": api_key}}},
        "db": {"password": int(pw), "port": 5432},
        "hub_token": token,
        "env": [{"name": "RAY_DEDUP_LOGS", "value": "0"}, {"name": "HF_TOKEN", "value": token}],
        "model": "Qwen/Qwen2.5-7B",
    }
    out = Redactor().redact_tree(config)
    assert out == {
        "runner": {"logger": {"wandb": {"project": "rlinf", "api_key": "***"}}},
        "db": {"password": "***", "port": 5432},
        "hub_token": "***",
        "env": [{"name": "RAY_DEDUP_LOGS", "value": "0"}, {"name": "HF_TOKEN", "value": "***"}],
        "model": "Qwen/Qwen2.5-7B",
    }
    assert {(dotted(p), h.kind) for p, h in scan_tree(config)} == {
        ("runner.logger.wandb.api_key", "secret-variable"),
        ("db.password", "secret-variable"),
        ("hub_token", "secret-variable"),
        ("env[1].value", "secret-variable"),
    }


# ------------------------------------------------- well-known tools and Docker's auth config


@pytest.mark.parametrize(
    ("template", "kind", "name"),
    [
        ("aws configure set aws_secret_access_key {s}", "cloud-secret-key", None),
        ("wandb login {s}", "command-argument", "wandb login"),
        (
            "wandb login --relogin --host https://wandb.example.com {s}",
            "command-argument",
            "wandb login",
        ),
        ("docker login -u bob -p {s} registry.example.com", "command-argument", "docker login -p"),
        ("npm config set //npm.example.com/:_authToken={s}", "command-argument", None),
        ("pip config set global.password {s}", "command-argument", "pip config set password"),
        ("poetry config http-basic.internal bob {s}", "command-argument", None),
        ("mc alias set ckpt http://minio:9000 user {s}", "cloud-secret-key", "mc alias set"),
        ("echo {s} | docker login -u bob --password-stdin", "command-argument", None),
        ("gh auth login --with-token <<< {s}", "command-argument", None),
    ],
)
def test_a_literal_credential_of_a_well_known_tool_is_found_and_redacted(
    template: str, kind: str, name: str | None
) -> None:
    secret = mixed(40)
    script = f"set -e\n{template.format(s=secret)}\n"
    hits = scan_script(script)
    assert [(h.kind, h.line) for h in hits] == [(kind, 1)], hits
    assert name is None or hits[0].name == name
    assert_clean(hits, secret)
    assert redact(script) == f"set -e\n{template.format(s='***')}\n"


@pytest.mark.parametrize(
    "line",
    [
        'aws configure set aws_secret_access_key "$(cat /var/run/secrets/aws/key)"',
        "aws configure set region us-east-1",
        'wandb login "$WANDB_API_KEY"',
        "wandb login --relogin",
        'docker login -u bob -p "${REGISTRY_PASSWORD}" registry.example.com',
        'echo "$GH_TOKEN" | gh auth login --with-token',
        "gh auth login --with-token < /var/run/secrets/gh",
        'mc alias set ckpt http://minio:9000 "$KEY" "$SECRET"',
        "printf 'machine %s login %s password %s\\n' h u \"$(cat /var/run/secrets/k)\" > ~/.netrc",
        'echo "machine h login u password $(< /var/run/secrets/k)" > ~/.netrc',
    ],
)
def test_a_credential_read_at_run_time_is_not_a_secret(line: str) -> None:
    assert scan_script(line) == []


def _docker_config(password: str) -> str:
    auth = base64.b64encode(f"bob:{password}".encode()).decode()
    return json.dumps({"auths": {"registry.example.com": {"auth": auth}}})


def test_docker_auth_config_credentials_are_found_raw_or_base64() -> None:
    pw = mixed(14)
    raw = _docker_config(pw)
    auth = json.loads(raw)["auths"]["registry.example.com"]["auth"]
    encoded = base64.b64encode(raw.encode()).decode()
    assert [(h.kind, h.name) for h in scan_value("DOCKER_AUTH_CONFIG", raw)] == [
        ("docker-auth", "DOCKER_AUTH_CONFIG")
    ]
    assert [h.kind for h in scan_value("CFG", encoded)] == ["docker-auth"]
    script = f"echo '{raw}' > ~/.docker/config.json"
    assert auth not in redact(script) and "registry.example.com" in redact(script)
    (hit,) = scan_script(f"echo {encoded} | base64 -d > ~/.docker/config.json")
    assert hit.kind == "docker-auth" and "base64" in hit.description
    assert hit.name is None  # the blob's "==" end reads as NAME==: never a name
    assert_clean([hit], encoded)
    for benign in ('{"auths": {"r.io": {"auth": "${AUTH}"}}}', '{"credsStore": "ecr-login"}'):
        assert scan_value("DOCKER_AUTH_CONFIG", benign) == []


def test_a_findings_own_words_are_no_secret() -> None:
    """A finding says where a value was withheld; read again (a report redacted, a message
    scanned), those words are found by no rule, so the process never learns "(value" as a
    secret and blanks it in every later message."""
    run = Redactor()
    for text in (
        "secret-variable in sshpass -p (value withheld); remove it and rotate it",
        "secret-huggingface-token — environment variable HF_TOKEN (value withheld)",
        "--password (value withheld); read it from a mounted file",
    ):
        assert run.scan_script(text) == [], text
        assert run.redact(text) == text
    assert run.remembered() == []
