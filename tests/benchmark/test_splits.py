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
        "summit-manyjobs",
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
    assert TRAIN.scenarios == ("default-family", "summit-manyjobs-train")
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


def test_splits__the_many_jobs_sibling_differs_from_its_test_scenario_only_in_its_day():
    """summit-manyjobs-train (train split) is summit-manyjobs on a trace window that overlaps
    no test scenario's."""
    import yaml

    from mtgym.benchmark.splits import TRAIN
    from mtgym.scenario.registry import PRESETS_DIR

    assert "summit-manyjobs-train" in TRAIN.scenarios
    test = yaml.safe_load((PRESETS_DIR / "summit-manyjobs.yaml").read_text())
    train = yaml.safe_load((PRESETS_DIR / "summit-manyjobs-train.yaml").read_text())
    t0, t1 = (d["generator"]["supply"].pop("trace_start_s") for d in (test, train))
    horizon = test["generator"]["horizon_s"]
    assert test["generator"] == train["generator"]
    replay = yaml.safe_load((PRESETS_DIR / "summit-replay-2d.yaml").read_text())["generator"]
    windows = [(t, t + horizon) for t in (t0, t1)] + [(replay["t_start_s"], replay["t_end_s"])]
    for i, (a, b) in enumerate(windows):
        for c, d in windows[i + 1 :]:
            assert b <= c or d <= a, "trace windows overlap"


@pytest.mark.slow
def test_splits__the_many_jobs_scenario_keeps_over_1000_jobs_active(shared_data, monkeypatch):
    """The suite's many-jobs scenario holds more than 1,000 active jobs at once (issue
    [refs]) on a machine of at least 4,000 nodes, so an admission cap that binds shows."""
    import numpy as np

    from mtgym.core.types import JobStatus
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    monkeypatch.setenv("MTGYM_DATA", str(shared_data))
    inst = get_generator("summit-manyjobs")(TEST.seed_start)
    assert inst.num_nodes >= 4000 and inst.num_jobs == 2000
    pol, active = make_policy("equal-share", tuned=False), []
    decide = pol.decide

    def spy(view):
        active.append(int(np.count_nonzero(view.status == JobStatus.ACTIVE)))
        return decide(view)

    pol.decide = spy
    play(inst, pol)
    assert max(active) > 1500 and np.mean(np.array(active) > 1000) > 0.4
