"""Baselines' knobs: precedence, the scaled admission cap, the sweep's rule and its record."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from mtgym.core.types import JobStatus
from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.policy.registry import make_policy
from mtgym.policy.tunable import (
    MAX_JOBS_MILP,
    MAX_JOBS_PAPER,
    admission_cap,
    admit,
    cap_grid,
    widen_caps,
)
from mtgym.scenario import tuning as rec_mod
from mtgym.scenario.registry import get_generator
from mtgym.scenario.schema import EpisodeSpec
from mtgym.scenario.tuning import PolicyTuning, TuningRecord, load_record, save_record
from mtgym.tuning import sweep


def _view(n_idle: int, min_nodes: list[int], running: list[int] = ()) -> SimpleNamespace:
    J = len(min_nodes)
    n_nodes = np.zeros(J, dtype=np.int64)
    n_nodes[list(running)] = 1
    return SimpleNamespace(
        available=np.ones(n_idle, dtype=bool),
        status=np.full(J, JobStatus.ACTIVE, dtype=np.int8),
        n_nodes=n_nodes,
        min_nodes=np.asarray(min_nodes, dtype=np.int64),
    )


def test_admission_cap_scales_with_the_idle_pool():
    # 100 idle nodes, jobs of min 4: 25 jobs fill it, so 25 are admitted (not BFTrainer's 10)
    v = _view(100, [4] * 60)
    assert admission_cap(v, None) == 25
    # a small pool never admits fewer than the paper's maxJ
    assert admission_cap(_view(8, [4] * 60), None) == MAX_JOBS_PAPER
    # never more than the active jobs; an explicit cap wins
    assert admission_cap(_view(1000, [1] * 30), None) == 30
    # no ceiling by default: 900 idle nodes admit 900 of 1,000 one-node jobs (issue [refs])
    assert admission_cap(_view(900, [1] * 1000), None) == 900
    assert admission_cap(_view(5000, [1] * 4096), None) == 4096
    # a solver's ceiling (the node-level MILP's) binds the scaled cap, never a fixed one
    assert admission_cap(_view(900, [1] * 1000), None, MAX_JOBS_MILP) == MAX_JOBS_MILP
    assert admission_cap(_view(8, [4] * 60), None, MAX_JOBS_MILP) == MAX_JOBS_PAPER
    assert admission_cap(_view(900, [1] * 1000), 500, MAX_JOBS_MILP) == 500
    assert admission_cap(v, 7) == 7


def test_admission_keeps_running_jobs_first():
    v = _view(4, [1] * 20, running=[15, 17])
    assert admit(v, 3).tolist() == [15, 17, 0]


def test_cap_grid_starts_at_the_default_and_scales_with_the_slots():
    g = cap_grid(None, EpisodeSpec(max_jobs=16))
    assert g[0] is None and g[1:] == [10, 16, 32, 64, 128]


def test_widen_caps_reaches_the_job_count():
    g = cap_grid(None, EpisodeSpec(max_jobs=16))
    assert widen_caps(g, 1001) == [None, 10, 16, 32, 64, 128, 256, 512, 1001]
    assert widen_caps(g, 128) == g  # already there: nothing added
    assert widen_caps(g, 40) == [None, 10, 16, 32, 40]  # caps above the job count dropped
    assert widen_caps([None, 10], 4096)[-3:] == [1280, 2560, 4096]
    assert widen_caps([None], 3) == [None, 3]


def test_the_sweep_grid_reaches_the_scenarios_job_count():
    _, grid = sweep.policy_knobs("default-512", "freetrain")
    jobs = get_generator("default-512")(sweep.TUNE_SEEDS[0]).num_jobs
    assert grid["max_jobs"][0] is None and grid["max_jobs"][-1] == jobs > 128


def test_freetrain_milp_keeps_its_ceiling_and_the_dp_has_none():
    v = _view(900, [1] * 1000)
    milp = make_policy("freetrain-milp", tuned=False)
    dp = make_policy("freetrain", tuned=False)
    assert admit(v, milp.max_jobs, milp.cap_ceiling).size == MAX_JOBS_MILP
    assert admit(v, dp.max_jobs, dp.cap_ceiling).size == 900


def test_knob_precedence_given_then_scenario_then_default():
    ep = EpisodeSpec(t_fwd_s=120.0, baselines={"freetrain": {"max_jobs": 64, "t_fwd": 30.0}})
    p = configure_policy(make_policy("freetrain"), ep)
    assert p.max_jobs == 64 and p.t_fwd == 30.0
    p = configure_policy(make_policy("freetrain", max_jobs=12), ep)  # given wins
    assert p.max_jobs == 12 and p.t_fwd == 30.0
    p = configure_policy(make_policy("freetrain", tuned=False), ep)  # untuned: scenario T_fwd
    assert p.max_jobs is None and p.t_fwd == 120.0
    # the untuned paper setting stays reachable by name
    p = configure_policy(make_policy("freetrain-paper"), ep)
    assert (p.max_jobs, p.t_fwd, p.objective, p.name) == (10, 10.0, "throughput", "freetrain-paper")


def test_a_factory_keeps_its_name_and_fixed_knob():
    ep = EpisodeSpec(baselines={"freetrain-speedup": {"max_jobs": 32, "objective": "throughput"}})
    p = configure_policy(make_policy("freetrain-speedup"), ep)
    assert (p.name, p.max_jobs, p.objective) == ("freetrain-speedup", 32, "speedup")


def test_unknown_or_bad_knob_is_a_clear_error():
    with pytest.raises(ValueError, match="no knob round_s"):
        configure_policy(make_policy("greedy"), EpisodeSpec(baselines={"greedy": {"round_s": 1.0}}))
    with pytest.raises(ValueError, match=r"'pal'.*round_s"):
        configure_policy(make_policy("pal"), EpisodeSpec(baselines={"pal": {"round_s": -1.0}}))


def test_every_tunable_baseline_declares_a_grid_whose_first_values_are_its_knobs():
    ep = EpisodeSpec(t_fwd_s=60.0)
    for name in ("freetrain", "freetrain-speedup", "malletrain", "greedy", "equal-share"):
        default, grid = sweep.policy_knobs("default", name)
        assert "max_jobs" in grid and default["max_jobs"] is None, name
    for name in ("pal", "pm-first", "packed", "random"):
        pol = make_policy(name, tuned=False)
        grid = pol.tuning_grid(ep)
        assert {k: v[0] for k, v in grid.items()} == pol.knobs, name


def _tuning(default_mean: float, chosen_mean: float) -> PolicyTuning:
    return PolicyTuning(
        default={"max_jobs": None},
        chosen={"max_jobs": 32},
        default_mean=default_mean,
        chosen_mean=chosen_mean,
        sweep=[],
        wall_s=1.0,
    )


def test_record_round_trip_and_reference(tmp_path):
    r = TuningRecord(scenario="x", seeds=[1], horizon_s=None, rule="r")
    r.policies["greedy"] = _tuning(1.0, 2.0)
    r.policies["freetrain"] = _tuning(1.0, 3.0)
    r.reference = r.best()
    path = save_record(r, tmp_path / "x.json")
    back = TuningRecord.model_validate_json(path.read_text())
    assert back == r and back.reference == "freetrain"
    assert back.choices() == {"greedy": {"max_jobs": 32}, "freetrain": {"max_jobs": 32}}


def test_a_broken_record_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(rec_mod, "tuning_dir", lambda: tmp_path)
    (tmp_path / "default.json").write_text(json.dumps({"scenario": "default"}))
    with pytest.raises(ValueError, match="not a valid tuning record"):
        load_record("default")


def test_scenario_defaults_merge_the_record_under_the_files_own(tmp_path, monkeypatch):
    monkeypatch.setattr(rec_mod, "tuning_dir", lambda: tmp_path)
    r = TuningRecord(scenario="default", seeds=[1], horizon_s=None, rule="r")
    r.policies["greedy"] = _tuning(1.0, 2.0)
    save_record(r, tmp_path / "default.json")
    ep = scenario_defaults(get_generator("default"))
    assert ep.baselines["greedy"] == {"max_jobs": 32}
    p = configure_policy(make_policy("greedy"), ep)
    assert p.max_jobs == 32
    assert configure_policy(make_policy("greedy", tuned=False), ep).max_jobs is None


def test_sweep_follows_its_rule_and_never_ends_below_the_default(monkeypatch):
    # the default scenario has 30 jobs: the grid stops there (widen_caps)
    means = {None: 1.0, 10: 1.005, 16: 1.5, 30: 1.49}
    calls = []

    def fake(scenario, policy, params, seed, horizon_s):
        calls.append((params["max_jobs"], seed))
        return means[params["max_jobs"]] + 0.001 * seed, 3.0, 0.0

    monkeypatch.setattr(sweep, "play_point", fake)
    res = sweep.tune_policy("default", "greedy", seeds=[0, 1])
    assert res.chosen == {"max_jobs": 16}
    assert res.chosen_mean >= res.default_mean
    assert len(calls) == 2 * len(means)  # every point once per seed, the default not twice
    # a gain below MIN_GAIN does not move the knob
    monkeypatch.setattr(sweep, "play_point", lambda *a: (1.0 if a[2]["max_jobs"] else 0.995, 1, 0))
    assert sweep.tune_policy("default", "greedy", seeds=[0]).chosen == {"max_jobs": None}


def test_tune_plays_real_episodes_and_records_them(tmp_path):
    from mtgym.cli import main

    out = tmp_path / "toy.json"
    args = ["tune", "--policy", "packed", "--scenario", "toy-two-jobs", "--out", str(out)]
    assert main(args) == 0
    r = TuningRecord.model_validate_json(out.read_text())
    t = r.policies["packed"]
    assert r.reference == "packed" and r.seeds == list(sweep.TUNE_SEEDS)
    assert len(t.sweep) == 4  # default, sticky=False, order=las, order=srtf
    assert t.chosen_mean >= t.default_mean and all(len(p.headline) == 3 for p in t.sweep)
    # the point replays bit for bit
    pt = t.sweep[0]
    again = sweep.play_point("toy-two-jobs", "packed", pt.params, r.seeds[0], None)
    assert again[0] == pt.headline[0]


def test_tuning_seeds_are_disjoint_from_every_used_range():
    from mtgym.benchmark.splits import TEST, USED_SEEDS, is_test_seed

    for s in sweep.TUNE_SEEDS:
        assert not is_test_seed(s, TEST)
        assert not any(lo <= s <= hi for lo, hi in USED_SEEDS)


def _shipped() -> list[TuningRecord]:
    recs = [load_record(p.stem) for p in sorted(rec_mod.tuning_dir().glob("*.json"))]
    return [r for r in recs if r is not None]


def test_shipped_records_exist_and_keep_their_rule():
    recs = _shipped()
    assert {r.scenario for r in recs} >= {"default", "default-128", "nas-campaign"}
    for r in recs:
        assert r.rule == sweep.RULE and r.seeds == list(sweep.TUNE_SEEDS), r.scenario
        assert r.reference == r.best(), r.scenario
        for name, t in r.policies.items():
            # a tuned baseline never scores below its untuned default on the tuning seeds
            assert t.chosen_mean >= t.default_mean, (r.scenario, name)
            means = {json.dumps(p.params, sort_keys=True): p.mean for p in t.sweep}
            assert means[json.dumps(t.default, sort_keys=True)] == t.default_mean
            assert means[json.dumps(t.chosen, sort_keys=True)] == t.chosen_mean
            assert t.chosen_mean >= max(means.values()) / (1 + sweep.MIN_GAIN), (r.scenario, name)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["nas-campaign", "swf-lublin"])
def test_shipped_record_replays_bit_for_bit(scenario):
    """The code still gives the recorded numbers (else: re-tune, docs/baselines.md)."""
    r = load_record(scenario)
    assert r is not None
    for name, t in r.policies.items():
        pt = next(p for p in t.sweep if p.params == t.chosen)
        got = sweep.play_point(scenario, name, pt.params, r.seeds[0], r.horizon_s)
        assert got[0] == pt.headline[0], (scenario, name)
