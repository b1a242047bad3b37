"""The benchmark's aggregates (IQM by best baseline and by hindsight bound, probability of
improvement, stratified-bootstrap intervals, performance profile) on hand-made rows."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
from rliable import metrics

from mtgym.benchmark import aggregates, report, scoring
from mtgym.benchmark.runner import ScenarioRuns
from mtgym.benchmark.scoring import Bootstrap, score_split
from mtgym.benchmark.splits import Split, SuiteScenario
from mtgym.evaluate import PolicyRun
from mtgym.metrics import HEADLINE

SEEDS = [9000, 9001, 9002, 9003, 9004]
REPS = 300
SPLIT = Split(
    name="fake",
    description="hand-made rows",
    scenarios=tuple(SuiteScenario(s, quick_horizon_s=None) for s in "abc"),
    seed_start=9000,
    quick_seeds=5,
)


def _run(name: str, headline, bound=None) -> PolicyRun:
    rows = []
    for k, (s, h) in enumerate(zip(SEEDS, headline, strict=True)):
        row = {"seed": s, HEADLINE: float(h), "jct_common_mean": 100.0, "jobs_completed": 3.0}
        if bound is not None:
            row["hindsight_bound"] = float(bound[k])
            row["bound_fraction"] = float(h) / float(bound[k])
        rows.append(row)
    return PolicyRun(name, rows)


def _scenario(name: str, runs: list[PolicyRun], unsupported: dict | None = None) -> ScenarioRuns:
    return ScenarioRuns(name, SEEDS, None, runs, unsupported or {})


def _fake(with_bound: bool = True) -> list[ScenarioRuns]:
    """greedy is every scenario's reference; agent noisy around it; random dominated."""
    rng = np.random.default_rng(7)
    out = []
    for k, sc in enumerate("abc"):
        ref = rng.uniform(5, 10, len(SEEDS)) * (k + 1)
        bound = ref * 1.5 if with_bound else None
        agent = ref * rng.uniform(0.6, 1.3, len(SEEDS))
        runs = [
            _run("greedy", ref, bound),
            _run("agent", agent, bound),
            _run("random", ref * 0.4, bound),
        ]
        out.append(_scenario(sc, runs))
    return out


POLICIES = ["greedy", "agent", "random"]


def _score(runs, policies=POLICIES):
    return score_split(SPLIT, runs, policies, bootstrap=Bootstrap(n_boot=200, agg_reps=REPS))


def test_aggregates__iqm_is_the_trimmed_mean_of_paired_normalised_scores():
    runs = _fake()
    res = _score(runs)
    agg = res.aggregates
    assert agg.num_seeds == 5 and agg.num_scenarios == 3 and agg.reps == REPS
    for p in POLICIES:
        ratio = np.column_stack(
            [
                {r.name: r for r in sr.runs}[p].values(HEADLINE)
                / {r.name: r for r in sr.runs}["greedy"].values(HEADLINE)
                for sr in runs
            ]
        )
        assert agg.policies[p].iqm.point == pytest.approx(
            scipy.stats.trim_mean(ratio.ravel(), 0.25)
        )
        bound = np.column_stack(
            [{r.name: r for r in sr.runs}[p].values("bound_fraction") for sr in runs]
        )
        assert agg.policies[p].iqm_bound.point == pytest.approx(
            scipy.stats.trim_mean(bound.ravel(), 0.25)
        )
    g = agg.policies["greedy"]
    assert (g.iqm.point, g.iqm.ci_low, g.iqm.ci_high) == (1.0, 1.0, 1.0)  # the reference
    assert g.iqm_bound.point == pytest.approx(1 / 1.5)
    r = agg.policies["random"].iqm
    assert (r.point, r.ci_low, r.ci_high) == pytest.approx((0.4, 0.4, 0.4))


def test_aggregates__intervals_contain_the_point_and_are_reproducible():
    runs = _fake()
    np.random.seed(1)
    a = _score(runs).aggregates
    np.random.seed(2)
    before = np.random.random()
    np.random.seed(2)
    b = _score(runs).aggregates  # the global RNG's state does not matter, and is restored
    assert np.random.random() == before
    assert a == b  # bit for bit: every estimate and every profile
    for pa in a.policies.values():
        for e in (pa.iqm, pa.iqm_bound, *pa.probability_of_improvement.values()):
            assert e.defined and e.ci_low <= e.point <= e.ci_high
    agent = a.policies["agent"].iqm
    assert agent.ci_low < agent.point < agent.ci_high  # noisy: the interval has width
    # a policy's numbers depend neither on the other policies in the run nor on their order
    c = score_split(
        SPLIT, runs, ["agent", "greedy"], bootstrap=Bootstrap(n_boot=200, agg_reps=REPS)
    ).aggregates
    assert c.policies["agent"].iqm == agent
    for x, y in (("agent", "greedy"), ("greedy", "agent")):
        assert (
            c.policies[x].probability_of_improvement[y]
            == (a.policies[x].probability_of_improvement[y])
        )


def test_aggregates__probability_of_improvement_dominated_and_equal():
    runs = _fake()
    agg = _score(runs).aggregates
    poi = {p: agg.policies[p].probability_of_improvement for p in POLICIES}
    assert set(poi["agent"]) == {"greedy", "random"}
    g_r, r_g = poi["greedy"]["random"], poi["random"]["greedy"]
    assert (g_r.point, g_r.ci_low, g_r.ci_high) == (1.0, 1.0, 1.0)  # dominates everywhere
    assert (r_g.point, r_g.ci_low, r_g.ci_high) == (0.0, 0.0, 0.0)
    # equal policies: 0.5, inside the interval
    twin = [
        _scenario(sr.scenario, [*sr.runs, PolicyRun("twin", sr.runs[0].per_seed)]) for sr in runs
    ]
    t = _score(twin, [*POLICIES, "twin"]).aggregates.policies["twin"].probability_of_improvement
    assert t["greedy"].point == 0.5 and t["greedy"].ci_low <= 0.5 <= t["greedy"].ci_high
    # the reverse is 1 - the pair's, and the point is rliable's own
    a_g, g_a = poi["agent"]["greedy"], poi["greedy"]["agent"]
    assert g_a.point == pytest.approx(1 - a_g.point)
    assert (g_a.ci_low, g_a.ci_high) == pytest.approx((1 - a_g.ci_high, 1 - a_g.ci_low))
    x, _ = scoring.score_matrices(runs, _score(runs).scenarios, POLICIES, "reference")
    assert a_g.point == metrics.probability_of_improvement(x["agent"], x["greedy"])


def test_aggregates__vectorised_statistics_match_rliable():
    from rliable import library

    rng = np.random.default_rng(3)
    for shape_y in ((5, 4), (7, 4)):
        x = rng.integers(0, 4, (5, 4)).astype(float)  # many ties
        y = rng.integers(0, 4, shape_y).astype(float)
        y[:, 0] = x[:, 0] if shape_y == x.shape else y[:, 0]  # one identical column
        want = metrics.probability_of_improvement(x, y)
        assert aggregates._poi_vectorised(x, y)[0] == pytest.approx(want, abs=1e-12)
    taus = np.linspace(0, 4, 9)
    assert np.array_equal(aggregates._profile_func(x, taus), library.score_distributions(x, taus))


def test_aggregates__unsupported_policies_and_missing_bounds_get_none():
    runs = _fake()
    runs[1] = _scenario(
        "b",
        [r for r in runs[1].runs if r.name != "agent"],
        {"agent": "policy 'agent' cannot run on scenario 'b': x"},
    )
    res = _score(runs)
    agent = res.aggregates.policies["agent"]
    assert not agent.iqm.defined and math.isnan(agent.iqm.point)
    assert agent.iqm.reason == "not defined: did not run on b" and not agent.iqm_bound.defined
    assert all(not e.defined for e in agent.probability_of_improvement.values())
    assert res.aggregates.policies["greedy"].probability_of_improvement["agent"].reason == (
        "agent: not defined: did not run on b"
    )
    assert res.aggregates.policies["greedy"].iqm.defined
    assert "agent" not in res.aggregates.profiles["reference"].curves
    # rows without bound_fraction: that aggregate is not available, the rest is there
    nob = _score(_fake(with_bound=False)).aggregates
    for pa in nob.policies.values():
        assert pa.iqm.defined and not pa.iqm_bound.defined
        assert pa.iqm_bound.reason == "not available: the rows carry no bound_fraction"
    assert not nob.profiles["bound"].curves and nob.profiles["bound"].reason


def test_aggregates__report_json_markdown_tensorboard_and_png(tmp_path):
    runs = _fake()
    runs[2] = _scenario("c", runs[2].runs[:2], {"random": "policy 'random' cannot run: y"})
    res = _score(runs)
    report.write(tmp_path, res)
    data = json.loads((tmp_path / "results.json").read_text())
    json.dumps(data, allow_nan=False)
    assert "suite" in data and "scenarios" in data  # the existing keys stay
    agg = data["aggregates"]
    assert agg["reps"] == REPS and agg["level"] == 0.95 and agg["bootstrap_seed"] == 0
    agent = agg["policies"]["agent"]
    assert set(agent) == {"iqm", "iqm_bound", "iqm_clairvoyant", "probability_of_improvement"}
    assert agent["iqm"]["point"] == pytest.approx(res.aggregates.policies["agent"].iqm.point)
    assert set(agent["iqm"]) == {"point", "ci_low", "ci_high", "reason"}
    assert agent["probability_of_improvement"]["greedy"]["reason"] is None
    assert agent["probability_of_improvement"]["random"]["point"] is None
    assert agg["policies"]["random"]["iqm"]["reason"] == "not defined: did not run on c"
    md = (tmp_path / "results.md").read_text()
    assert "## Aggregates" in md and "| P(row > column) | greedy | agent |" in md
    assert "| random | not defined: did not run on c | not defined: did not run on c |" in md
    png = tmp_path / aggregates.PROFILE_FILE
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ev = EventAccumulator(str(tmp_path / "tb" / "agent"))
    ev.Reload()
    tags = ev.Tags()["scalars"]
    assert {"benchmark/iqm", "benchmark/iqm_bound", "benchmark/suite_score"} <= set(tags)
    assert ev.Scalars("benchmark/iqm")[0].value == pytest.approx(agent["iqm"]["point"])
    ev = EventAccumulator(str(tmp_path / "tb" / "random"))
    ev.Reload()
    assert "benchmark/iqm" not in ev.Tags()["scalars"]
