"""Training, imitation, DAgger and agent selection refuse a seed of the benchmark's test
split (9000-9009) with one line naming the split, before any env or model is built."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mtgym.cli import main

SELECT = Path(__file__).resolve().parents[2] / "scripts" / "select_agent.py"
LINE = "error: seed 9000 is in the test split 'test' (seeds 9000-9009): "


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    return err


def test_mtgym_train__eval_seeds_9000_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--eval-seeds", "1000", "9000", "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert err.startswith(LINE) and "--eval-seeds" in err
    assert not out.exists()  # refused before the out folder (and any env or model)


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--seed", "9000"], "--seed"),
        (["--bc-expert", "freetrain", "--bc-episodes", "8990"], "--bc-episodes"),
        (["--backend", "ray", "--seed", "8999", "--ray-seeds", "2"], "--ray-seeds"),
        (["--algo", "rllib-ppo", "--eval-seeds", "9000"], "--eval-seeds"),
        (["--algo", "rllib-ppo", "--seed", "9000"], "--seed"),
        # RLlib's runners reset with --seed + their index: 8999 with 2 runners reaches 9000
        (["--algo", "rllib-ppo", "--seed", "8999", "--env-runners", "2"], "--seed 8999"),
    ],
)
def test_mtgym_train__every_seed_flag_is_guarded(tmp_path, capsys, extra, flag):
    out = tmp_path / "run"
    assert main(["train", *extra, "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert "in the test split 'test' (seeds 9000-9009)" in err and flag in err
    assert not out.exists()


def test_train__python_api_refuses_test_seeds_before_writing(tmp_path):
    from agents.train import Args, check_seeds, dagger_seeds, train

    out = tmp_path / "run"
    with pytest.raises(ValueError, match=r"^seed 9003 is in the test split 'test'"):
        train(Args(out=out, eval_seeds=(9003,)))
    assert not out.exists()
    with pytest.raises(ValueError, match=r"test split.*behaviour cloning"):
        check_seeds(Args(bc_expert="freetrain", bc_seeds=(11, 9000)))
    check_seeds(Args(bc_expert="freetrain"))  # the defaults pass
    check_seeds(Args(bc_seeds=(9000,)))  # no expert: bc_seeds unused
    assert dagger_seeds(Args(bc_seeds=(1, 2)), 1) == [10_100, 10_101]


def test_imitation_collect__refuses_a_test_seed_for_cloning_and_dagger():
    from agents.imitation import collect

    with pytest.raises(ValueError, match=r"^seed 9000 is in the test split 'test'.*cloning"):
        collect("default", "freetrain", [11, 9000], {})
    with pytest.raises(ValueError, match=r"^seed 9009 is in the test split 'test'.*DAgger"):
        collect("default", "freetrain", [9009], {}, actor=object())


@pytest.fixture(scope="module")
def select():
    spec = importlib.util.spec_from_file_location("select_agent", SELECT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_select_agent__validation_sets_refuse_a_test_seed(select):
    sets = select.validation_sets(select.SETS, 2)
    assert [s for _, _, s in sets] == [[1000, 1001]] * 3  # the shipped sets pass
    bad = (("family-64", None, [1000, 9000]),)
    with pytest.raises(SystemExit, match=r"^error: seed 9000 is in the test split 'test'"):
        select.validation_sets(bad, None)
    assert select.validation_sets(bad, 1) == [("family-64", None, [1000])]


def test_select_agent__main_exits_with_one_line_before_playing(select, monkeypatch):
    def played(*_a, **_k):
        raise AssertionError("an episode was played")

    monkeypatch.setattr(select, "SETS", (("default", None, [9005]),))
    monkeypatch.setattr(select, "headline", played)
    monkeypatch.setattr(sys, "argv", ["select_agent.py", "runs/none", "--limit", "3"])
    with pytest.raises(SystemExit) as exc:
        select.main()
    msg = str(exc.value.code)
    assert msg.startswith("error: seed 9005 is in the test split 'test'") and "\n" not in msg
    assert "agent selection (validation set 'default')" in msg
