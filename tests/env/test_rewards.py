"""Rewards are registered classes: a reward defined in one file (here, at test time) runs in
the env's compiled step, the batched core and the vector env, and PPO trains on it, with no
change anywhere else."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mtgym.core.names import REWARD_NAMES
from mtgym.env import ScavengeEnv
from mtgym.env.reward import INPUTS, REWARDS, Reward, make_reward, register, unregister


# -- a toy reward: node-hours held by jobs over the step, minus a cost per job stopped -------
@njit(cache=True)
def _held_node_hours(n_nodes, n_nodes0, time, t0, scale):  # pragma: no cover - jit
    held = 0.0
    stopped = 0
    for j in range(n_nodes.shape[0]):
        held += n_nodes[j]
        if n_nodes0[j] > 0 and n_nodes[j] == 0:
            stopped += 1
    return held * (time - t0) / 3600.0 - scale * stopped


class HeldNodeHours(Reward):
    name = "toy-held-node-hours"
    doc = "node-hours held by jobs over the step, minus 0.5 per job stopped (a test's toy)"
    inputs = ("n_nodes", "n_nodes0", "time", "t0", "scale")
    kernel = _held_node_hours

    def scale(self, instance):
        return 0.5


@pytest.fixture
def toy():
    register(HeldNodeHours)
    yield HeldNodeHours.name
    unregister(HeldNodeHours.name)


KW = dict(horizon_s=4 * 3600.0, decision_interval_s=600.0, max_jobs=8)


def test_rewards__a_reward_in_one_file_is_the_steps_reward(toy):
    env = ScavengeEnv("default", reward=toy, **KW)
    env.reset(seed=2)
    rng = np.random.default_rng(0)
    done, steps, seen = False, 0, 0.0
    while not done:
        before, t0 = env.state.n_nodes.copy(), env.state.time
        _, r, term, trunc, _ = env.step(env.sample_valid(rng))
        after = env.state.n_nodes
        stopped = int(np.count_nonzero((before > 0) & (after == 0)))
        want = float(after.sum()) * (env.state.time - t0) / 3600.0 - 0.5 * stopped
        assert r == pytest.approx(want, rel=1e-12, abs=1e-12)
        seen += abs(r)
        done, steps = term or trunc, steps + 1
    assert steps > 10 and seen > 0


def test_rewards__a_reward_in_one_file_trains_one_ppo_update(toy):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: ScavengeEnv("default", reward=toy, obs_layout="flat", **KW)])
    model = MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=16, n_epochs=1, seed=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(16)
    assert model.num_timesteps >= 16
    assert np.abs(model.rollout_buffer.rewards).sum() > 0  # the toy reward was collected
    assert any(
        not bool((a == b).all()) for a, b in zip(before, model.policy.parameters(), strict=True)
    )


def test_rewards__a_reward_in_one_file_agrees_in_the_batched_core_and_the_vector_env(toy):
    """The lockstep checks of ``test_batched`` and ``test_vector`` (which run every built-in
    reward) on the toy reward."""
    from test_batched import lockstep
    from test_vector import check_lockstep

    kws = [
        dict(reward=toy, horizon_s=1200.0 * (k + 1), decision_interval_s=300.0) for k in range(2)
    ]
    assert lockstep(kws, 12, seed=3)[0] > 0
    check_lockstep(reward=toy)


def test_rewards__the_registry_checks_its_entries(toy):
    assert tuple(REWARDS)[: len(REWARD_NAMES)] == REWARD_NAMES and toy in REWARDS
    assert isinstance(make_reward(toy), HeldNodeHours)
    register(HeldNodeHours)  # the same class again: a no-op
    twin = type("Twin", (HeldNodeHours,), {})
    with pytest.raises(ValueError, match="registered already"):
        register(twin)
    bad = type("Bad", (HeldNodeHours,), {"name": "toy-bad", "inputs": ("money",)})
    with pytest.raises(ValueError, match=r"unknown inputs \['money'\]"):
        register(bad)
    with pytest.raises(ValueError, match="reward 'nope' is not one of"):
        make_reward("nope")
    with pytest.raises(ValueError, match="reward 'nope' is not one of"):
        ScavengeEnv("default", reward="nope")
    assert set(INPUTS) >= {"progress", "progress0", "weight", "scale", "active_job_s"}
