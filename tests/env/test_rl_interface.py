"""The env as RL researchers use it: evaluator seeds, a reward aligned with the headline
metric over semi-MDP steps, ``info["dt"]`` and the time-discount wrapper.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pytest
from reference.step import RewardFn, StepDelta

from mtgym.core.instance import Instance
from mtgym.core.names import DEFAULT_REWARD
from mtgym.env.env import ScavengeEnv
from mtgym.env.wrappers import TRAIN_SEED_OFFSET, SeedOffset, TimeDiscount
from mtgym.evaluate import evaluate
from mtgym.generate.default import default_generator
from mtgym.metrics import EpisodeMetrics
from mtgym.policy.equal_share import EqualShare
from mtgym.policy.play import play
from mtgym.policy.registry import default_policies, make_policy
from mtgym.scenario.registry import get_generator
from mtgym.sim.dynamics import initial_state


@pytest.fixture(scope="module")
def small_gen():
    g = default_generator()
    return replace(
        g,
        name="small",
        num_nodes=16,
        group_size=4,
        horizon_s=3 * 3600.0,
        jobs=replace(g.jobs, num_jobs=8),
        campaigns=(),
    )


def assert_same_instance(a: Instance, b: Instance) -> None:
    """Every array and scalar of the two instances, bit for bit."""
    assert (a.t_start, a.t_end) == (b.t_start, b.t_end)
    for part in ("cluster", "supply", "jobs", "costs"):
        pa, pb = getattr(a, part), getattr(b, part)
        for f in fields(pa):
            va, vb = getattr(pa, f.name), getattr(pb, f.name)
            if isinstance(va, np.ndarray):
                assert va.dtype == vb.dtype and va.tobytes() == vb.tobytes(), f"{part}.{f.name}"
            elif hasattr(va, "__dataclass_fields__"):
                for g in fields(va):
                    x, y = getattr(va, g.name), getattr(vb, g.name)
                    same = np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                    assert same, f"{part}.{f.name}.{g.name}"
            else:
                assert va == vb, f"{part}.{f.name}"


# -- seeds --------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [300, 301])
def test_seed__env_reset_plays_the_evaluators_instance(seed):
    gen = get_generator("default")
    env = ScavengeEnv("default")
    env.reset(seed=seed)
    assert_same_instance(env.instance, gen(seed))
    # and ``mtgym evaluate --seed s`` plays that instance: the same episode as play() on it
    runs = evaluate(gen, [("equal-share", EqualShare)], [seed], progress=False)
    direct = play(env.instance, EqualShare()).metrics.as_dict()
    row = runs[0].per_seed[0]
    for k in ("samples", "throughput", "utilisation", "rescales"):
        assert row[k] == direct[k], k


def test_seed__unseeded_resets_are_deterministic_and_differ(small_gen):
    a, b = ScavengeEnv(small_gen), ScavengeEnv(small_gen)
    a.reset(seed=4)
    b.reset(seed=4)
    a.reset()
    b.reset()
    assert_same_instance(a.instance, b.instance)
    with pytest.raises(AssertionError):
        assert_same_instance(a.instance, small_gen(4))


def test_seed__training_offset_keeps_evaluation_instances_apart(small_gen):
    env = SeedOffset(ScavengeEnv(small_gen))
    env.reset(seed=3)
    assert_same_instance(env.unwrapped.instance, small_gen(3 + TRAIN_SEED_OFFSET))


# -- reward -------------------------------------------------------------------------------
def test_reward__default_is_normalized_and_info_reports_dt(small_gen):
    env = ScavengeEnv(small_gen)
    assert env.reward_name == "normalized" == DEFAULT_REWARD
    env.reset(seed=0)
    t, total_dt = env.state.time, 0.0
    for _ in range(30):
        _, _, term, trunc, info = env.step(env.noop())
        assert info["dt"] == info["elapsed_s"] == pytest.approx(info["time"] - t, abs=0.0)
        total_dt += info["dt"]
        t = info["time"]
        if term or trunc:
            break
    assert total_dt == pytest.approx(env.state.time - env.instance.t_start)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties), numpy only."""

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        r = np.empty(v.size)
        r[order] = np.arange(v.size, dtype=float)
        for u in np.unique(v):  # ties share their mean rank
            tie = v == u
            r[tie] = r[tie].mean()
        return r

    rx, ry = ranks(np.asarray(x, float)), ranks(np.asarray(y, float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / math.sqrt((rx * rx).sum() * (ry * ry).sum()))


def episode_returns(
    instance: Instance, policy, rewards: tuple[str, ...]
) -> tuple[dict[str, float], EpisodeMetrics]:
    """(the env's episode return of each reward, the evaluator's metrics) of one played
    episode: each reward function summed over the same semi-MDP steps (one per decision).
    """
    fns = {r: RewardFn(r, instance) for r in rewards}
    s0 = initial_state(instance)
    before = [StepDelta(s0.progress.copy(), s0.active_job_s)]
    total = dict.fromkeys(rewards, 0.0)

    def on_step(state, info):
        for r, fn in fns.items():
            total[r] += fn(before[0], state)
        before[0] = StepDelta(state.progress.copy(), state.active_job_s)

    res = play(instance, policy, on_step=on_step)
    return total, res.metrics


#: each reward and the evaluator's metric its episode return must rank policies by
RANKED = {"normalized": "normalized_throughput", "throughput": "throughput"}


def test_reward__episode_return_ranks_the_baselines_as_the_headline_does(small_gen):
    """The default reward ranks the baselines as the headline, ``normalized_throughput``,
    does (and ``throughput`` as raw samples/s does), per seed and on the means.
    """
    assert RANKED[DEFAULT_REWARD] == "normalized_throughput"
    names = default_policies(learned=False)
    assert len(names) >= 6
    seeds = range(10)
    ret = {r: np.zeros((len(names), len(seeds))) for r in RANKED}
    metric = {r: np.zeros((len(names), len(seeds))) for r in RANKED}
    for i, name in enumerate(names):
        for k, seed in enumerate(seeds):
            inst = small_gen(seed)
            total, m = episode_returns(inst, make_policy(name), tuple(RANKED))
            for r, key in RANKED.items():
                ret[r][i, k], metric[r][i, k] = total[r], getattr(m, key)
            # the default reward's return is the headline's integral, in machine-hours
            assert total["normalized"] == pytest.approx(
                m.normalized_samples / (inst.num_nodes * 3600.0), rel=1e-9
            )
    for r in RANKED:
        rho_mean = spearman(ret[r].mean(axis=1), metric[r].mean(axis=1))
        rho_seed = [spearman(ret[r][:, k], metric[r][:, k]) for k in range(len(seeds))]
        assert rho_mean >= 0.9, (r, names, ret[r].mean(axis=1), metric[r].mean(axis=1))
        assert min(rho_seed) >= 0.9, (r, rho_seed)


# -- time discount ------------------------------------------------------------------------
def test_time_discount__per_step_and_cumulative(small_gen):
    gamma = 0.8
    env = TimeDiscount(ScavengeEnv(small_gen), gamma_per_hour=gamma)
    ref = ScavengeEnv(small_gen)
    env.reset(seed=1)
    ref.reset(seed=1)
    elapsed, discounted, semi_mdp = 0.0, 0.0, []
    greedy = ref.action_space.nvec - 1  # every slot asks its cap (the env repairs)
    while True:
        _, r, term, trunc, info = env.step(greedy)
        _, r_ref, *_ = ref.step(greedy)
        assert info["raw_reward"] == r_ref
        assert info["discount"] == pytest.approx(gamma ** (info["dt"] / 3600), rel=1e-12)
        assert info["cumulative_discount"] == pytest.approx(gamma ** (elapsed / 3600), rel=1e-12)
        assert r == pytest.approx(r_ref * gamma ** (elapsed / 3600), rel=1e-12)
        elapsed += info["dt"]
        discounted += r
        semi_mdp.append((r_ref, info["discount"]))
        if term or trunc:
            break
    # the plain sum of the wrapped rewards is the semi-MDP return G_0 with per-step discounts
    g = 0.0
    for r_k, d_k in reversed(semi_mdp):
        g = r_k + d_k * g
    assert discounted == pytest.approx(g, rel=1e-9)
    assert 0 < discounted < sum(r for r, _ in semi_mdp)
    with pytest.raises(ValueError, match="gamma_per_hour"):
        TimeDiscount(ScavengeEnv(small_gen), gamma_per_hour=1.5)
