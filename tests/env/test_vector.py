"""``gymnasium.make_vec("mtgym/Scavenge-v0", vectorization_mode="vector_entry_point")``
(``mtgym.env.vector``) against ``SyncVectorEnv`` of the single env, step for step, through
auto-resets, in Gymnasium's three auto-reset modes.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

import mtgym  # noqa: F401  (registers the ids)
from mtgym.core.names import ACTION_MODES, REWARD_NAMES
from mtgym.env.vector import ScavengeVectorEnv

KW = dict(horizon_s=900.0, decision_interval_s=300.0)  # 3-step episodes: many resets


def same(a, b) -> bool:
    """Same values and dtypes through dicts (any key order) and object arrays."""
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return b.dtype == object and a.shape == b.shape and all(map(same, a, b))
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and np.isnan(a):  # (metrics: a JCT with no job completed)
        return isinstance(b, float) and np.isnan(b)
    return data_equivalence(a, b, exact=True)


def pair(num_envs: int, mode: AutoresetMode, **kw):
    """The batched vector env and ``SyncVectorEnv`` of the single env, same keywords."""
    mine = gym.make_vec(
        "mtgym/Scavenge-v0",
        num_envs=num_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=mode,
        **kw,
    )
    theirs = gym.make_vec(
        "mtgym/Scavenge-v0",
        num_envs=num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        **kw,
    )
    return mine, theirs


def masked_actions(masks: np.ndarray, nvec: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random legal value per dimension, per env."""
    m = masks.reshape(len(masks), len(nvec), -1)
    return (rng.random(m.shape) * m).argmax(axis=2)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector__is_sync_vector_env_step_for_step(mode):
    mine, theirs = pair(3, mode, **KW)
    assert isinstance(mine.unwrapped, ScavengeVectorEnv) and isinstance(theirs, SyncVectorEnv)
    assert mine.metadata["autoreset_mode"] is mode
    assert mine.single_observation_space == theirs.single_observation_space
    assert mine.single_action_space == theirs.single_action_space
    assert mine.observation_space == theirs.observation_space
    assert mine.action_space == theirs.action_space
    out = mine.reset(seed=7)
    assert same(out, theirs.reset(seed=7))
    assert mine.observation_space.contains(out[0])
    rng = np.random.default_rng(0)
    nvec = mine.single_action_space.nvec
    ends = 0
    for i in range(14):
        a = masked_actions(mine.unwrapped.action_masks(), nvec, rng)
        out = mine.step(a)
        assert same(out, theirs.step(a)), f"step {i} differs"
        assert mine.observation_space.contains(out[0])
        assert np.array_equal(out[0]["action_mask"].astype(bool), mine.unwrapped.action_masks())
        ends += int((out[2] | out[3]).sum())
    assert ends >= 3


def check_lockstep(steps: int = 8, **kw) -> None:
    """The vector env and ``SyncVectorEnv`` agree step for step with ``kw`` (and ``KW``)."""
    mine, theirs = pair(2, AutoresetMode.NEXT_STEP, **{**KW, **kw})
    assert same(mine.reset(seed=3), theirs.reset(seed=3))
    rng = np.random.default_rng(1)
    nvec = mine.single_action_space.nvec
    for i in range(steps):
        a = masked_actions(mine.unwrapped.action_masks(), nvec, rng)
        assert same(mine.step(a), theirs.step(a)), f"step {i} differs"


@pytest.mark.parametrize("reward", REWARD_NAMES)
def test_vector__every_reward_is_sync_vector_envs(reward):
    check_lockstep(reward=reward)


@pytest.mark.parametrize("action_mode", ACTION_MODES)
def test_vector__every_action_mode_is_sync_vector_envs(action_mode):
    check_lockstep(action_mode=action_mode)


def test_vector__disabled_autoreset_resets_by_mask():
    mine, theirs = pair(2, AutoresetMode.DISABLED, **KW)
    assert same(mine.reset(seed=1), theirs.reset(seed=1))
    rng = np.random.default_rng(1)
    nvec = mine.single_action_space.nvec
    for _ in range(7):
        a = masked_actions(mine.unwrapped.action_masks(), nvec, rng)
        out = mine.step(a)
        assert same(out, theirs.step(a))
        done = out[2] | out[3]
        if done.any():
            opts = {"reset_mask": done}
            assert same(mine.reset(options=dict(opts)), theirs.reset(options=dict(opts)))


def test_vector__seeds_actions_and_helpers():
    envs = gym.make_vec("mtgym/Scavenge-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(envs, VectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(np.zeros((2, 16), dtype=np.int64))
    a, _ = envs.reset(seed=3)
    b, _ = envs.reset(seed=3)
    assert data_equivalence(a, b, exact=True)
    noop = np.stack(envs.unwrapped.call("noop"))
    obs, rewards, *_ = envs.step(noop)
    assert rewards.dtype == np.float64 and obs["nodes"].shape[0] == 2
    bad = noop.copy()
    bad[1, 0] = 10**6
    with pytest.raises(ValueError, match="env 1"):
        envs.step(bad)
    envs.close()


def test_vector__gymnasium_vector_wrappers_see_the_same_episodes():
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    mine, theirs = (RecordEpisodeStatistics(e) for e in pair(2, AutoresetMode.NEXT_STEP, **KW))
    assert mine.unwrapped.spec.id == "mtgym/Scavenge-v0"
    mine.reset(seed=4)
    theirs.reset(seed=4)
    rng = np.random.default_rng(4)
    nvec = mine.single_action_space.nvec
    episodes = 0
    for _ in range(8):
        a = masked_actions(mine.unwrapped.action_masks(), nvec, rng)
        got, want = mine.step(a)[4], theirs.step(a)[4]
        assert ("episode" in got) == ("episode" in want)
        if "episode" in got:
            episodes += int(got["_episode"].sum())
            for k in ("r", "l"):
                assert np.array_equal(got["episode"][k], want["episode"][k])
    assert episodes >= 2
