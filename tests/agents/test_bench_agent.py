"""``scripts/bench_agent.py``'s measurements on a small cluster and a few steps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from agents.policy import PRETRAINED

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_agent.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_agent", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_measure_latency__times_agent_and_freetrain_on_the_same_views(bench):
    gen = bench.bench_generator(32)
    r = bench.measure_latency(str(PRETRAINED), gen, decisions=5, milp_decisions=1, hours=1.0)
    assert r["num_nodes"] == 32 and r["slots"] == 32  # one slot per node (slot_rule)
    assert r["agent"].shape == (5,) and r["freetrain"].shape == (5,)
    assert r["freetrain_milp"].shape == (1,) and len(r["milp_status"]) == 1
    for name in ("agent", "freetrain", "freetrain_milp"):  # measured times, not placeholders
        assert np.all(np.isfinite(r[name])) and np.all(r[name] > 0), name
    assert r["milp_status"][0] in ("optimal", "feasible")  # the MILP solved that view


def test_measure_training__interleaved_rates_for_both_envs(bench):
    rates = bench.measure_training(n_envs=2, train_steps=512, rounds=2)
    assert set(rates) == {"mtgym", "CartPole-v1"}
    for r in rates.values():
        assert len(r) == 2 and all(x > 0 for x in r)
    paired = bench.paired_ratios(rates)
    np.testing.assert_allclose(
        paired, np.array(rates["mtgym"]) / np.array(rates["CartPole-v1"]), rtol=1e-12
    )


def test_select_agent__scores_each_candidate_on_the_validation_sets(tmp_path):
    """``scripts/select_agent.py`` plays as ``play`` plays (same per-seed headline), scores by
    the geometric mean of the paired ratios to the reference, and ranks by that score."""
    import json
    import subprocess
    import sys

    from agents.policy import AgentPolicy
    from mtgym.generate.default import default_generator
    from mtgym.policy.play import play

    script = SCRIPT.with_name("select_agent.py")
    out = tmp_path / "sel.json"
    args = [str(PRETRAINED), "--temperature", "1.0", "0.5", "--limit", "1", "--out", str(out)]
    subprocess.run([sys.executable, str(script), *args], check=True, capture_output=True)
    got = json.loads(out.read_text())
    assert got["reference"] == "freetrain-speedup"
    assert got["seeds"] == {"family-64": [1000], "family-256": [1000], "default": [1000]}
    assert sorted(r["temperature"] for r in got["rows"]) == [0.5, 1.0]
    scores = [r["score"] for r in got["rows"]]
    assert scores == sorted(scores, reverse=True)
    for r in got["rows"]:
        ratios = [r["sets"][n]["ratio"] for n in got["seeds"]]
        assert r["score"] == pytest.approx(float(np.exp(np.mean(np.log(ratios)))), rel=1e-12)
        for n in got["seeds"]:
            x, ref = r["sets"][n]["per_seed"][0], got["ref_per_seed"][n][0]
            assert r["sets"][n]["ratio"] == pytest.approx(x / ref, rel=1e-12)
    one = next(r for r in got["rows"] if r["temperature"] == 1.0)
    played = play(default_generator()(1000), AgentPolicy(PRETRAINED)).metrics
    assert one["sets"]["default"]["per_seed"] == [played.normalized_throughput]
