"""The composition is Hydra's: the same result as Hydra's compose API on every real config."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from rlark_acceptance.rlinf.config import _CYCLE_MESSAGES, ConfigLoader, Override

CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "rlinf-configs"
EXAMPLES = CHECKOUT / "examples"

TOP_LEVEL = sorted(EXAMPLES.glob("embodiment/config/*.yaml")) + sorted(
    EXAMPLES.glob("reasoning/config/*/*.yaml")
)
# Configs that find their defaults through hydra.searchpath and ${oc.env:...}.
SEARCH_PATH = sorted(CHECKOUT.glob("evaluations/*/*.yaml")) + sorted(
    CHECKOUT.glob("tests/e2e_tests/*/*.yaml")
)


@pytest.fixture(autouse=True)
def launch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables RLinf's launch scripts export before Hydra starts."""
    monkeypatch.setenv("EMBODIED_PATH", str(EXAMPLES / "embodiment"))
    monkeypatch.setenv("REPO_PATH", str(CHECKOUT))


def hydra_compose(path: Path, overrides: list[str] = ()) -> dict[str, Any] | str:  # type: ignore[assignment]
    """Hydra's own answer: the composed config, or the first line of its error."""
    GlobalHydra.instance().clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with initialize_config_dir(config_dir=str(path.parent), version_base="1.1"):
                cfg = compose(config_name=path.stem, overrides=list(overrides))
        return OmegaConf.to_container(cfg, resolve=False)  # type: ignore[return-value]
    except Exception as exc:  # any: Hydra's refusal, compared by its first line
        return str(exc).splitlines()[0]
    finally:
        GlobalHydra.instance().clear()


def ours(path: Path, overrides: list[str] = ()) -> dict[str, Any] | str:  # type: ignore[assignment]
    cfg = ConfigLoader().load(path, overrides=[Override.cli(o) for o in overrides])
    fatal = [p.message for p in cfg.problems if p.fatal]
    return fatal[0] if fatal else cfg.data


def assert_same_as_hydra(path: Path, overrides: list[str] = ()) -> None:  # type: ignore[assignment]
    """Both compose the same config, or both refuse it."""
    expected, got = hydra_compose(path, overrides), ours(path, overrides)
    if isinstance(expected, str):
        assert isinstance(got, str), f"Hydra refuses ({expected}) but the loader accepted"
    else:
        assert got == expected


def test_the_sample_is_complete() -> None:
    assert len(TOP_LEVEL) >= 50
    assert len(SEARCH_PATH) >= 8


@pytest.mark.parametrize("path", TOP_LEVEL + SEARCH_PATH, ids=lambda p: p.name)
def test_composition_equals_hydra(path: Path) -> None:
    assert_same_as_hydra(path)


OVERRIDE_CASES = [
    ["cluster.num_nodes=2"],
    ["+runner.extra=5", "++runner.max_steps=3"],
    ["~runner.resume_dir"],  # Hydra refuses: a null value counts as missing
    ["~runner.logger.project_name"],
    ["runner.logger.log_path=/mnt/ckpt/logs", "algorithm.gamma=0.5"],
    ["cluster.component_placement={actor: 0-3, rollout: 4-7}"],
    ["runner.no_such_key=1"],  # Hydra refuses: not in struct
    ["+cluster.num_nodes=2"],  # Hydra refuses: already there
    ["model@actor.model=mlp_policy"],  # 'model/x@pkg' names a config, not a choice
    ["env=maniskill_pick_cube"],  # a group that is not in the defaults list
]


@pytest.mark.parametrize("overrides", OVERRIDE_CASES, ids=lambda o: " ".join(o))
def test_overrides_equal_hydra(overrides: list[str]) -> None:
    assert_same_as_hydra(EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml", overrides)


def test_unresolvable_env_interpolation_is_reported_not_raised(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(
        "cluster:\n  num_nodes: 1\nrunner:\n  logger:\n"
        "    log_path: ${oc.env:RLARK_TEST_UNSET_VARIABLE}/logs\n"
    )
    os.environ.pop("RLARK_TEST_UNSET_VARIABLE", None)
    cfg = ConfigLoader().load(cfg_file)
    resolved = cfg.resolved("runner")
    assert resolved["logger"]["log_path"].startswith("${oc.env:")
    assert any("RLARK_TEST_UNSET_VARIABLE" in p.message for p in cfg.problems)
    assert cfg.problems[0].location is not None and cfg.problems[0].location.line == 5


def test_location_names_the_override_that_set_a_value(tmp_path: Path) -> None:
    from rlark_acceptance.model.findings import Location

    path = EXAMPLES / "embodiment/config/maniskill_ppo_openvlaoft.yaml"
    where = Location("job.yaml", 12)
    cfg = ConfigLoader().load(path, overrides=[Override("cluster.num_nodes=2", where)])
    assert cfg.select("cluster.num_nodes") == 2
    assert cfg.location("cluster.num_nodes") == where
    # A value that only a default brings in is located in that default's file.
    loc = cfg.location("actor.fsdp_config.sharding_strategy")
    assert loc.file.endswith("hybrid_engines/fsdp.yaml") and loc.line == 7


def test_scientific_floats_are_floats_as_in_omegaconf(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("actor:\n  optim:\n    lr: 1e-05\n")
    assert ConfigLoader().load(f).select("actor.optim.lr") == pytest.approx(1e-05)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


SYNTHETIC = {
    "app.yaml": "defaults:\n  - db: mysql\n  - optional extra: none\n  - server/apache@web\n"
    "  - _self_\n  - glob: g\nrunner:\n  port: 1\ndb:\n  port: 3307\n",
    "db/mysql.yaml": "host: mysql.local\nport: 3306\n",
    "db/postgres.yaml": "defaults:\n  - pool: small\nhost: pg.local\nport: 5432\n",
    "db/pool/small.yaml": "size: 4\n",
    "server/apache.yaml": "name: apache\n",
    "glob/g.yaml": "# @package _global_\nrunner:\n  port: 9\n",
}


@pytest.mark.parametrize(
    "overrides",
    [[], ["db=postgres"], ["db=postgres", "db.port=1"], ["db=nope"], ["runner.port=2"]],
    ids=lambda o: " ".join(o) or "no overrides",
)
def test_group_choices_and_packages_equal_hydra(tmp_path: Path, overrides: list[str]) -> None:
    _tree(tmp_path, SYNTHETIC)
    assert_same_as_hydra(tmp_path / "app.yaml", overrides)


def _leaf_keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k, v in tree.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out += _leaf_keys(v, key) if isinstance(v, dict) and v else [key]
    return out


@pytest.mark.parametrize("path", TOP_LEVEL, ids=lambda p: p.name)
def test_every_value_resolves_as_omegaconf_resolves_it(path: Path) -> None:
    cfg = ConfigLoader().load(path)  # a refused config still has what did compose
    reference = OmegaConf.create(cfg.data)
    for key in _leaf_keys(cfg.data):
        try:
            want: Any = OmegaConf.select(reference, key, throw_on_resolution_failure=True)
            if OmegaConf.is_config(want):
                want = OmegaConf.to_container(want)
        except Exception:  # any: OmegaConf's refusal is the expected answer
            want = "<unresolvable>"
        try:
            got: Any = cfg.select(key)
        except Exception:  # any: the loader's refusal, compared with OmegaConf's
            got = "<unresolvable>"
        assert got == want, key


SEARCH_PATH_OVERRIDES = [
    ["cluster.num_nodes=2"],
    ["env@env.eval=libero_goal"],  # a group option found only on the search path
    ["model@rollout.model=openvla"],
    ["env@env.eval=no_such_env"],  # Hydra refuses: nowhere on the search path
    ["hydra.run.dir=/tmp/x", "hydra.job.chdir=true"],
    ["hydra.searchpath=[]"],  # Hydra refuses: the defaults are not found without it
]


@pytest.mark.parametrize("overrides", SEARCH_PATH_OVERRIDES, ids=lambda o: " ".join(o))
def test_overrides_on_the_search_path_equal_hydra(overrides: list[str]) -> None:
    assert_same_as_hydra(CHECKOUT / "evaluations/libero/libero_10_openvlaoft_eval.yaml", overrides)


# -- interpolations that never resolve: the same verdict as OmegaConf's full resolution ---

_NAMES = ["a", "b", "c"]
_refs = st.sampled_from(
    ["${a}", "${b}", "${c.d}", "${c}", "${.d}", "${..a}", "p_${b}", "${oc.select:a,1}", "7"]
)


@st.composite
def _ref_configs(draw: st.DrawFn) -> dict[str, Any]:
    cfg: dict[str, Any] = {n: draw(_refs) for n in _NAMES[:2]}
    cfg["c"] = {"d": draw(_refs), "e": draw(_refs)}
    cfg["cluster"] = {"num_nodes": 1, "component_placement": {"actor": "0"}}
    return cfg


@settings(max_examples=100, deadline=None)
@given(_ref_configs())
def test_a_never_resolving_interpolation_is_found_exactly_when_omegaconf_fails_on_it(
    data: dict[str, Any],
) -> None:
    """RLinf prints ``OmegaConf.to_container(cfg, resolve=True)`` at start-up: where that fails
    for a reason no environment can fix, the pre-flight must fail; where it succeeds, not."""
    expected = False
    omega = OmegaConf.create(data)
    for key in ("a", "b", "c.d", "c.e"):  # each leaf, as printing the whole config reaches it
        try:
            OmegaConf.select(omega, key, throw_on_resolution_failure=True)
        except Exception as exc:  # any: OmegaConf's refusal, judged by its message
            expected = expected or any(m in str(exc) for m in _CYCLE_MESSAGES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(yaml.safe_dump(data))
        cfg = ConfigLoader().load(path)
        cfg.cycles()
    found = [p for p in cfg.problems if p.fatal and "never resolves" in p.message]
    assert bool(found) == expected, (data, [p.message for p in cfg.problems])
    assert all(p.location is not None and p.location.line for p in found)
