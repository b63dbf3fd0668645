"""A remedy is given only where it is the right one: a check whose failures differ gets
the remedy of the failure it has."""

from __future__ import annotations

import pytest

from rlark_acceptance.model.doc_checks import BY_ID, remedy


@pytest.mark.parametrize(
    ("message", "names", "not_names"),
    [
        ("image a:1 differs from prepared a:2", "runInfo.image", "mount"),
        ("the run script differs from the prepared start command", "startCommand", "mount"),
        ("the prepare script lacks the prepared command", "prepareCommand", "mount"),
        ("no mount holds the prepared checkpoint path /mnt/ckpt", "mount", "image"),
    ],
)
def test_each_way_5_6_fails_has_its_own_remedy(message: str, names: str, not_names: str) -> None:
    got = remedy("5.6", message)
    assert names in got and not_names not in got
    assert got != BY_ID["5.6"].remedy


def test_1_1_on_a_config_rlinf_cannot_compose_does_not_say_num_nodes() -> None:
    unset = "RLinf would not start: hydra.searchpath entry 'x' reads R, and the Job never sets R"
    assert "prepareScript" in remedy("1.1", unset)
    assert "num_nodes" not in remedy("1.1", "RLinf would not start: default env/x not found")
    assert "num_nodes" in remedy("1.1", "the config the run command loads has num_nodes 2")
