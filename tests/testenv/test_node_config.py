"""The real node's config files, written from testenv/templates: every placeholder filled
(a missing value is an error, never a ``${...}`` left in a file the node reads), the JSON
files valid, and the values the tests depend on where the programs read them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from testenv import node_config
from testenv.node_host import POD_BRIDGE, sock
from testenv.state import NodeState


def test_every_config_file_is_written_whole_from_its_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLARK_TESTENV_STATE", str(tmp_path))
    files = node_config.write_configs(NodeState(node_ip="10.200.0.2"), tmp_path / "ca.crt")

    node = tmp_path / "node"
    written = [p for p in node.rglob("*") if p.is_file()]
    assert len(written) == 4, written
    for p in written:
        assert "${" not in p.read_text(), p
    containerd = tomllib.loads(files["containerd"].read_text())
    assert containerd["grpc"]["address"] == str(sock())
    kubelet = json.loads(files["kubelet"].read_text())
    assert (kubelet["address"], kubelet["port"]) == ("10.200.0.2", node_config.KUBELET_PORT)
    assert (kubelet["containerLogMaxSize"], kubelet["containerLogMaxFiles"]) == ("10Mi", 2)
    assert kubelet["authentication"]["x509"]["clientCAFile"] == str(tmp_path / "ca.crt")
    cni = json.loads((node / "cni" / "net.d" / "10-pods.conflist").read_text())
    (plugin,) = cni["plugins"]
    assert (plugin["bridge"], plugin["isGateway"], plugin["ipMasq"]) == (POD_BRIDGE, False, False)


def test_a_placeholder_without_a_value_is_an_error() -> None:
    with pytest.raises(KeyError, match="registry"):
        node_config.render("hosts.toml")
