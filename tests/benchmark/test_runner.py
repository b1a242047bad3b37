"""Scoring of the benchmark (best baseline, paired ratios, suite geomean and its interval) on
hand-made rows, and a tiny split run end to end (local; Ray gives the same rows)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mtgym.benchmark import report
from mtgym.benchmark.runner import ScenarioRuns, is_baseline, run_split
from mtgym.benchmark.scoring import (
    Bootstrap,
    best_baseline,
    score_scenario,
    score_split,
    suite_scores,
)
from mtgym.benchmark.splits import Split, SuiteScenario
from mtgym.evaluate import PolicyRun, configure_policy, scenario_defaults
from mtgym.metrics import HEADLINE
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator

SEEDS = [9000, 9001, 9002, 9003]
N_BOOT = 2000


def _run(name: str, headline: list[float], jct: list[float] | None = None) -> PolicyRun:
    jct = jct or [100.0] * len(headline)
    rows = [
        {"seed": s, HEADLINE: h, "jct_common_mean": j, "jobs_completed": 3.0}
        for s, h, j in zip(SEEDS, headline, jct, strict=True)
    ]
    return PolicyRun(name, rows)


def _scenario(name: str, runs: list[PolicyRun], unsupported: dict | None = None) -> ScenarioRuns:
    return ScenarioRuns(name, SEEDS, None, runs, unsupported or {})


def test_runner__learned_agents_are_never_the_reference():
    assert not is_baseline("agent") and not is_baseline("agent:runs/a/model.zip")
    assert is_baseline("freetrain") and is_baseline("my_pkg.policy:make")
    runs = [_run("agent", [9, 9, 9, 9]), _run("greedy", [4, 5, 6, 5]), _run("freetrain", [5] * 4)]
    assert best_baseline(runs) == "greedy"  # mean 5.0 ties freetrain's: the first wins
    runs[2] = _run("freetrain", [5.5] * 4)
    assert best_baseline(runs) == "freetrain"
    assert best_baseline([_run("agent", [1] * 4)]) is None


def test_runner__ratio_is_paired_against_the_best_baseline():
    sr = _scenario(
        "s",
        [
            _run("greedy", [4, 6, 8, 6], jct=[100, 200, 300, 200]),
            _run("freetrain", [5, 5, 5, 5], jct=[100] * 4),
            _run("agent", [8, 12, 16, 12], jct=[200, 400, 600, 400]),
        ],
    )
    sc = score_scenario(sr, ["greedy", "freetrain", "agent"], n_boot=N_BOOT)
    assert sc.reference == "greedy"  # mean 6 > 5
    assert sc.policies["greedy"].ratio.ratio == 1.0
    assert sc.policies["freetrain"].ratio.ratio == pytest.approx(5 / 6)
    a = sc.policies["agent"]
    assert a.ratio.ratio == pytest.approx(2.0)
    assert a.ratio.ratio_ci_low == pytest.approx(2.0) and a.ratio.ratio_ci_high == pytest.approx(
        2.0
    )
    assert a.headline.mean == pytest.approx(12.0) and a.headline.ci_low < 12 < a.headline.ci_high
    assert a.jct_common_ratio == pytest.approx(2.0) and a.jobs_completed.mean == 3.0


def test_runner__suite_score_is_the_geomean_with_a_joint_seed_bootstrap():
    # scenario 1: agent exactly 2x the reference seed by seed; scenario 2: 0.5x -> geomean 1
    s1 = _scenario("a", [_run("greedy", [1, 2, 3, 4]), _run("agent", [2, 4, 6, 8])])
    s2 = _scenario("b", [_run("greedy", [4, 1, 3, 2]), _run("agent", [2, 0.5, 1.5, 1])])
    # scenario 3: noisy ratios, so the interval has width
    s3 = _scenario("c", [_run("greedy", [1, 1, 1, 1]), _run("agent", [0.5, 1.5, 1.0, 2.0])])
    runs = [s1, s2, s3]
    pols = ["greedy", "agent"]
    scores = [score_scenario(s, pols, n_boot=N_BOOT) for s in runs]
    suite = suite_scores(runs, scores, pols, n_boot=N_BOOT)
    assert suite["greedy"].score == 1.0 and suite["greedy"].ci_low == 1.0
    want = (2.0 * 0.5 * 1.25) ** (1 / 3)
    assert suite["agent"].score == pytest.approx(want)
    assert suite["agent"].ci_low < want < suite["agent"].ci_high
    # two scenarios of exact ratios: resampling seeds jointly keeps the ratio exact
    exact = suite_scores(runs[:2], scores[:2], pols, n_boot=N_BOOT)["agent"]
    assert (exact.score, exact.ci_low, exact.ci_high) == pytest.approx((1.0, 1.0, 1.0))
    again = suite_scores(runs, scores, pols, n_boot=N_BOOT)["agent"]
    assert (again.ci_low, again.ci_high) == (suite["agent"].ci_low, suite["agent"].ci_high)


def test_runner__a_policy_missing_a_scenario_has_no_suite_score():
    s1 = _scenario("a", [_run("greedy", [1, 2, 3, 4]), _run("agent", [2, 4, 6, 8])])
    s2 = _scenario("b", [_run("greedy", [1] * 4)], {"agent": "policy 'agent' cannot run: x"})
    pols = ["greedy", "agent"]
    scores = [score_scenario(s, pols, n_boot=N_BOOT) for s in (s1, s2)]
    assert scores[1].policies["agent"].unsupported == "policy 'agent' cannot run: x"
    suite = suite_scores([s1, s2], scores, pols, n_boot=N_BOOT)
    assert suite["greedy"].complete and suite["greedy"].score == 1.0
    assert not suite["agent"].complete and suite["agent"].missing == ["b"]
    assert math.isnan(suite["agent"].score)  # not the geomean over scenario a alone


TINY = Split(
    name="tiny",
    description="two small scenarios for tests",
    scenarios=(
        SuiteScenario("default", quick_horizon_s=1800.0),
        SuiteScenario("toy-two-jobs", quick_horizon_s=1800.0),
    ),
    seed_start=9000,
    quick_seeds=2,
)
#: the retired ``counts`` agent: it refuses the 4-node toy (the shipped ``shares`` agent runs)
COUNTS_AGENT = "agent:" + str(Path(__file__).resolve().parents[2] / "agents/pretrained/counts")
POLICIES = ["equal-share", "freetrain", COUNTS_AGENT]


@pytest.fixture(scope="module")
def tiny_runs():
    return run_split(TINY, POLICIES, quick=True)


def test_runner__tiny_split_rows_are_the_episodes_of_play(tiny_runs):
    default, toy = tiny_runs
    assert [r.name for r in default.runs] == POLICIES and default.seeds == [9000, 9001]
    assert [r.name for r in toy.runs] == ["equal-share", "freetrain"]
    assert set(toy.unsupported) == {COUNTS_AGENT}
    line = toy.unsupported[COUNTS_AGENT]
    assert "\n" not in line and "'toy-two-jobs'" in line and "4 nodes" in line
    gen = get_generator("default")
    inst = gen(9001)
    policy = configure_policy(make_policy("freetrain"), scenario_defaults(gen))  # T_fwd 120 s
    res = play(inst, policy, until=inst.t_start + 1800.0)
    row = default.runs[1].per_seed[1]
    assert row["seed"] == 9001
    assert row[HEADLINE] == res.metrics.normalized_throughput > 0
    assert row["jobs_completed"] == res.metrics.jobs_completed


def test_runner__tiny_split_report_shows_reasons_and_no_partial_score(tiny_runs, tmp_path):
    res = score_split(TINY, tiny_runs, POLICIES, quick=True, bootstrap=Bootstrap(n_boot=N_BOOT))
    assert res.scenarios[0].reference in ("equal-share", "freetrain")
    agent = res.suite[COUNTS_AGENT]
    assert not agent.complete and agent.missing == ["toy-two-jobs"]
    assert res.suite["freetrain"].complete
    md = report.markdown(res)
    assert "policy 'agent' cannot run on scenario 'toy-two-jobs'" in md
    assert f"{report.UNDEFINED_SCORE} toy-two-jobs" in md
    report.write(tmp_path, res)
    data = json.loads((tmp_path / "results.json").read_text())
    json.dumps(data, allow_nan=False)  # undefined numbers are null
    assert data["suite"][COUNTS_AGENT]["score"] is None
    pol = data["scenarios"][0]["policies"]["freetrain"]
    assert pol["ratio"]["ratio"] == pytest.approx(
        res.scenarios[0].policies["freetrain"].ratio.ratio
    )
    unsupported = data["scenarios"][1]["policies"][COUNTS_AGENT]["unsupported"]
    assert unsupported.startswith("policy 'agent'")
    assert (tmp_path / "results.md").read_text() == md
    assert len(list((tmp_path / "tb" / "freetrain").glob("events.out.tfevents.*"))) == 1


def test_runner__benchmark_cli_runs_a_split_and_errors_in_one_line(monkeypatch, tmp_path, capsys):
    from mtgym.benchmark import splits
    from mtgym.cli import main

    monkeypatch.setitem(splits.SPLITS, "tiny", TINY)
    argv = ["benchmark", "--split", "tiny", "--quick", "--no-progress", "--out", str(tmp_path)]
    assert main([*argv, "--policy", "equal-share", "--policy", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown policy 'nope'") and err.count("\n") == 1
    assert main([*argv, "--policy", "equal-share", "--address", "auto"]) == 2
    assert "--address needs --backend ray" in capsys.readouterr().err
    assert main([*argv, "--policy", "equal-share", "--policy", "greedy"]) == 0
    out = capsys.readouterr().out
    assert "## toy-two-jobs" in out and "| greedy |" in out
    data = json.loads((tmp_path / "results.json").read_text())
    assert [s["scenario"] for s in data["scenarios"]] == ["default", "toy-two-jobs"]
    assert data["suite"]["greedy"]["complete"] and data["suite"]["equal-share"]["complete"]


def test_runner__unknown_backend_and_duplicates_are_refused():
    with pytest.raises(ValueError, match="unknown backend 'dask'"):
        run_split(TINY, ["greedy"], backend="dask")
    with pytest.raises(ValueError, match="named twice"):
        run_split(TINY, ["greedy", "greedy"])


@pytest.mark.slow
def test_runner__ray_backend_gives_the_local_rows(tiny_runs):
    pytest.importorskip("ray")
    from mtgym.backends.ray_backend import strip_timing

    remote = run_split(TINY, POLICIES, quick=True, backend="ray")
    for loc, rem in zip(tiny_runs, remote, strict=True):
        assert rem.unsupported == loc.unsupported
        assert [r.name for r in rem.runs] == [r.name for r in loc.runs]
        for a, b in zip(loc.runs, rem.runs, strict=True):
            same = [json.dumps(strip_timing(r), sort_keys=True) for r in a.per_seed]  # NaN == NaN
            assert same == [json.dumps(strip_timing(r), sort_keys=True) for r in b.per_seed]
    assert np.isfinite(remote[0].runs[0].values(HEADLINE)).all()
