"""Baseline tuning refuses a seed of the benchmark's test split before playing anything."""

from __future__ import annotations

import functools

import pytest

from mtgym.cli import main
from mtgym.tuning import cli as tune_cli
from mtgym.tuning import sweep


def test_tune_policy__refuses_a_test_seed_before_any_episode(monkeypatch):
    def played(*_a, **_k):
        raise AssertionError("an episode was played")

    monkeypatch.setattr(sweep, "play_point", played)
    with pytest.raises(ValueError, match=r"^seed 9000 is in the test split 'test' .*mtgym tune"):
        sweep.tune_policy("default", "freetrain", seeds=[6000, 9000])


def test_mtgym_tune__a_test_seed_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    """``mtgym tune`` has no seed flag (``TUNE_SEEDS``): the sweep it calls is given 9000."""
    monkeypatch.setattr(
        tune_cli, "tune_policy", functools.partial(sweep.tune_policy, seeds=(9000,))
    )
    out = tmp_path / "rec.json"
    argv = ["tune", "--policy", "freetrain", "--scenario", "default", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: seed 9000 is in the test split 'test'") and "\n" not in err
    assert not out.exists()


def test_tune_seeds__are_not_test_seeds():
    from mtgym.benchmark.splits import refuse_test_seeds

    refuse_test_seeds(sweep.TUNE_SEEDS, what="mtgym tune")
