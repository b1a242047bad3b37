"""The env docstring's promises about masks and the return: ``action_masks()`` through
Gymnasium's wrappers (``get_wrapper_attr``, sb3-contrib's ``get_action_masks``), the same 0/1
values in every dtype (int8 in ``obs`` and ``info``, bool from ``action_masks()``, float32 in
the ``masked`` layout, the batched env's too), and return = headline x hours / nodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.vec_env import DummyVecEnv

import mtgym  # noqa: F401  (registers the id)

ID = "mtgym/Scavenge-v0"


def test_masks__reachable_through_the_standard_wrappers():
    env = RecordEpisodeStatistics(TimeLimit(gym.make(ID, action_mode="shares"), 50))
    env.reset(seed=0)
    want = env.unwrapped.action_masks()
    assert np.array_equal(env.get_wrapper_attr("action_masks")(), want)
    assert is_masking_supported(env) and np.array_equal(get_action_masks(env), want)
    vec = DummyVecEnv([lambda: env])  # what MaskablePPO wraps a gym env in
    assert np.array_equal(get_action_masks(vec), want[None])


@pytest.mark.parametrize("mode", ["counts", "shares", "delta", "assign"])
def test_masks__one_set_of_values_in_every_dtype(mode):
    env = gym.make(ID, action_mode=mode)
    masked = gym.make(ID, action_mode=mode, obs_layout="masked")
    rng = np.random.default_rng(1)
    (obs, info), (mobs, _) = env.reset(seed=2), masked.reset(seed=2)
    for _ in range(5):
        bools = env.get_wrapper_attr("action_masks")()
        assert obs["action_mask"].dtype == np.int8 and info["action_mask"].dtype == np.int8
        assert bools.dtype == bool and mobs["action_mask"].dtype == np.float32
        for m in (obs["action_mask"], info["action_mask"], mobs["action_mask"]):
            assert set(np.unique(m)) <= {0, 1} and np.array_equal(m.astype(bool), bools)
        action = env.unwrapped.sample_valid(rng)
        obs, _, _, _, info = env.step(action)
        mobs, *_ = masked.step(action)


def test_masks__the_batched_env_has_the_same_values():
    envs = gym.make_vec(ID, num_envs=2, vectorization_mode="vector_entry_point")
    obs, info = envs.reset(seed=3)
    bools = envs.action_masks()
    assert bools.dtype == bool and obs["action_mask"].dtype == np.int8
    assert np.array_equal(obs["action_mask"].astype(bool), bools)
    assert np.array_equal(info["action_mask"].astype(bool), bools)
    single = gym.make(ID)
    single.reset(seed=3)
    assert np.array_equal(bools[0], single.unwrapped.action_masks())


@pytest.mark.parametrize("scenario", ["toy-two-jobs", "default"])
def test_return__is_the_headline_times_hours_over_nodes(scenario):
    env = gym.make(
        ID, scenario=scenario, action_mode="shares", horizon_s=7200.0, decision_interval_s=300.0
    )
    env.reset(seed=4)
    ret, done, rng = 0.0, False, np.random.default_rng(0)
    while not done:
        _, reward, terminated, truncated, info = env.step(env.unwrapped.sample_valid(rng))
        ret += reward
        done = terminated or truncated
    m = info["metrics"]
    head, hours = m["normalized_throughput"], m["duration_s"] / 3600.0
    assert head > 0 and ret == pytest.approx(head * hours / env.unwrapped.num_nodes, rel=1e-9)
