"""Givens about the Job YAML the console shows (Steps 2–5)."""

from __future__ import annotations

import secrets
import string

from pytest_bdd import given, parsers

from fixtures.workspace import Workspace


@given(parsers.parse('the task is named "{name}"'))
def task_name(workspace: Workspace, name: str) -> None:
    assert workspace.job is not None
    workspace.job["metadata"]["name"] = name


@given(parsers.parse('the task type is "{task_type}"'))
def task_type(workspace: Workspace, task_type: str) -> None:
    assert workspace.job is not None
    workspace.job["spec"]["taskType"] = task_type


@given(parsers.parse('the role is named "{name}"'))
def role_name(workspace: Workspace, name: str) -> None:
    workspace.role["name"] = name


@given(parsers.parse('the job has a second role "{name}" with image "{image}"'))
def second_role(workspace: Workspace, name: str, image: str) -> None:
    assert workspace.job is not None
    role = dict(workspace.role, name=name, header=False, image=image)
    workspace.job["spec"]["roles"].append(role)


@given("the worker role is not the Header")
def not_header(workspace: Workspace) -> None:
    workspace.role["header"] = False


@given(parsers.parse("the worker role has {n:d} replicas"))
def replicas(workspace: Workspace, n: int) -> None:
    workspace.role["replicas"] = n


@given(parsers.parse('the worker role declares the resources "{fields}"'))
def resources(workspace: Workspace, fields: str) -> None:
    values = {"cpu": "16", "memory": "64Gi", "shm": "32Gi"}
    workspace.role["resources"] = {f.strip(): values.get(f.strip(), "1") for f in fields.split(",")}


@given("the worker role names no cluster")
def no_cluster(workspace: Workspace) -> None:
    workspace.role.pop("cluster", None)


@given(parsers.parse('the node selection is "{selector}"'))
def node_selection(workspace: Workspace, selector: str) -> None:
    key, _, value = selector.partition("=")
    workspace.role["nodeSelector"] = {key: value}


@given(parsers.parse("the Worker requests {n:d} GPUs"))
def worker_gpus(workspace: Workspace, n: int) -> None:
    workspace.role["gpus"] = n


@given("the Worker requests a GPU count other than the prepared one")
def worker_gpus_differ(workspace: Workspace) -> None:
    # One more than runInfo.gpus: a fixed count would equal what some profiles prepare
    # (real RLinf's takes 1), and the scenario could then catch nothing.
    prepared = workspace.run_info.get("gpus")
    workspace.role["gpus"] = (prepared if isinstance(prepared, int) else 0) + 1


@given(parsers.parse('the Worker\'s image is "{image}"'))
def worker_image(workspace: Workspace, image: str) -> None:
    workspace.role["image"] = image


@given("the prepare script is empty")
def empty_prepare(workspace: Workspace) -> None:
    workspace.role["prepareScript"] = ""


@given(parsers.parse('the prepare script ends with "{command}"'))
def prepare_ends_with(workspace: Workspace, command: str) -> None:
    script = (workspace.role.get("prepareScript") or "").rstrip("\n")
    workspace.role["prepareScript"] = f"{script}\n{command}\n"


@given(parsers.parse('the "{name}" mount names no bucket'))
def mount_without_bucket(workspace: Workspace, name: str) -> None:
    workspace.mount(name).pop("bucket", None)


@given(parsers.parse('the "{name}" mount is read-only'))
def mount_read_only(workspace: Workspace, name: str) -> None:
    workspace.mount(name)["readOnly"] = True


@given(parsers.parse('the "{name}" mount is removed'))
def mount_removed(workspace: Workspace, name: str) -> None:
    workspace.role["mounts"] = [m for m in workspace.role["mounts"] if m.get("name") != name]


@given(parsers.parse('the run script is "{script}"'))
def run_script(workspace: Workspace, script: str) -> None:
    workspace.set_run_script(script, also_start_command=False)


@given(parsers.parse('the run script and the start command are "{script}"'))
def run_script_and_start(workspace: Workspace, script: str) -> None:
    workspace.set_run_script(script, also_start_command=True)


@given(parsers.parse('the head role is "{name}"'))
def head_role(workspace: Workspace, name: str) -> None:
    assert workspace.job is not None
    workspace.job["spec"]["headRole"] = name


@given(parsers.parse('the job uses the cross-cluster network "{name}"'))
def cross_cluster(workspace: Workspace, name: str) -> None:
    assert workspace.job is not None
    workspace.job["spec"]["crossClusterNetwork"] = name


@given("an SSH public key is chosen")
def ssh_key(workspace: Workspace) -> None:
    assert workspace.job is not None
    workspace.job["spec"]["sshPublicKey"] = "ssh-ed25519 " + "A" * 68 + " release@example"


@given(parsers.parse('the TensorBoard path is "{path}"'))
def tensorboard(workspace: Workspace, path: str) -> None:
    assert workspace.job is not None
    workspace.job["spec"]["tensorboard"] = {"logDir": path}


# -- secrets: made up at run time, so no secret-looking literal lives in the repository --


def _token(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _env(workspace: Workspace, name: str, value: str) -> None:
    env = workspace.role.setdefault("env", [])
    env[:] = [e for e in env if e.get("name") != name] + [{"name": name, "value": value}]


@given(parsers.parse('the environment variable "{name}" holds a literal key'))
def env_literal_key(workspace: Workspace, name: str) -> None:
    value = _token(40, "0123456789abcdef")
    workspace.secrets.append(value)
    _env(workspace, name, value)


@given(parsers.parse('the environment variable "{name}" refers to "{ref}"'))
def env_reference(workspace: Workspace, name: str, ref: str) -> None:
    _env(workspace, name, ref)


@given(parsers.parse('the environment variable "{name}" is "{value}"'))
def env_plain(workspace: Workspace, name: str, value: str) -> None:
    _env(workspace, name, value)


def _fake_secret(what: str) -> tuple[str, str]:
    """(text to plant, the secret part that must never show up in a report)."""
    if what == "a private key":
        body = _token(64, string.ascii_letters + string.digits + "+/")
        begin, end = (
            "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
            "-----END " + "OPENSSH PRIVATE KEY-----",
        )
        return f"cat > ~/.ssh/id_ed25519 <<'EOF'\n{begin}\n{body}\n{end}\nEOF", body
    if what == "an object-storage key":
        secret = _token(40, string.ascii_letters + string.digits + "/+")
        return f"export AWS_SECRET_ACCESS_KEY={secret}", secret
    if what == "a password in a URL":
        password = _token(16)
        return f"git clone https://release:{password}@git.example.com/team/rlinf.git", password
    if what == "an access token":
        token = "hf_" + _token(34)
        return token, token
    raise AssertionError(f"unknown secret kind {what}")


@given(parsers.re(r"the (?P<where>prepare script|run script|environment) holds (?P<what>.+)"))
def plant_secret(workspace: Workspace, where: str, what: str) -> None:
    text, secret = _fake_secret(what)
    workspace.secrets.append(secret)
    if where == "prepare script":
        workspace.role["prepareScript"] = (workspace.role.get("prepareScript") or "") + text + "\n"
    elif where == "run script":
        assert workspace.job is not None
        workspace.job["spec"]["runScript"] = text + "\n" + workspace.job["spec"]["runScript"]
    elif where == "environment":
        _env(workspace, "HUGGING_FACE_HUB_TOKEN", text)
    else:
        raise AssertionError(f"unknown place {where}")
