"""The named splits: the test split is the issue's scenarios, its seeds touch nothing agents
were trained or selected on, and the train split is named without importing its generator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mtgym.benchmark.splits import (
    TEST,
    TRAIN,
    TRAIN_SEED_MIN,
    USED_SEEDS,
    get_split,
    is_test_seed,
)
from mtgym.scenario.registry import preset_names

REPO = Path(__file__).resolve().parents[2]


def test_splits__test_split_is_the_issues_scenarios_and_each_is_shipped():
    assert set(TEST.names) == {
        "polaris",
        "nas-campaign",
        "swf-lublin",
        "hetero-mix",
        "pal-philly-64gpu",
        "summit-replay-2d",
        "default-128",
        "default-512",
    }
    assert set(TEST.names) <= set(preset_names())
    assert all(s.quick_horizon_s is None or s.quick_horizon_s > 0 for s in TEST.scenarios)
    # the quick run plays whole episodes: prefixes ranked baselines unlike the full run
    # (docs/benchmark.md) and a prefix of pal-philly-64gpu hid starvation
    assert all(TEST.horizon_s(s, quick=True) is None for s in TEST.scenarios)
    assert all(TEST.horizon_s(s) is None for s in TEST.scenarios)  # full run: own horizon


def test_splits__test_seeds_are_disjoint_from_used_and_training_seeds():
    full, quick = TEST.seeds(), TEST.seeds(quick=True)
    assert full == list(range(9000, 9010)) and quick == full[:2]
    for lo, hi in USED_SEEDS:
        assert not set(full) & set(range(lo, hi + 1))
    assert max(full) < TRAIN_SEED_MIN
    assert all(is_test_seed(s) for s in full) and not is_test_seed(4000)


def test_splits__train_split_refuses_test_seeds_and_is_named_only():
    assert TRAIN.scenarios == ("default-family",)
    assert TRAIN.check_seed(2**30) == 2**30
    with pytest.raises(ValueError, match="seed 9000 is not a training seed"):
        TRAIN.check_seed(9000)
    code = (
        "import sys, mtgym.benchmark.splits, mtgym.benchmark.runner, mtgym.benchmark.report, "
        "mtgym.benchmark.cli, mtgym.cli; mtgym.cli.build_parser(); "
        "print('mtgym.benchmark.family' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_splits__unknown_split_names_the_known_ones():
    with pytest.raises(KeyError, match="unknown split 'dev'; known splits: test"):
        get_split("dev")
