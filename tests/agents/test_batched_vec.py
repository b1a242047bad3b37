"""``agents.batched_vec.BatchedPooledVecEnv`` against ``agents.vec.PooledVecEnv`` (the Python
loop it replaces), step for step through auto-resets, and under SB3's checks and MaskablePPO.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from agents.batched_vec import BatchedPooledVecEnv
from agents.train import Args, make_env_fn
from agents.vec import PooledVecEnv


def thunks(n: int, **kw):
    """Thunks as ``mtgym train`` builds them (``SeedOffset``, seeded by rank), with short
    episodes so that they end and reset within a few steps.
    """
    args = Args(n_envs=n, decision_interval_s=300.0, **kw)

    def with_horizon(i):
        make = make_env_fn(args, i, bare=True)

        def thunk():
            env = make()
            env.unwrapped.horizon_s = 1500.0  # (read at the next reset)
            env.reset(seed=i)
            return env

        return thunk

    return [with_horizon(i) for i in range(n)]


def same_infos(a: list[dict], b: list[dict]) -> bool:
    """Infos equal but for the episodes' wall-clock time."""
    for x, y in zip(a, b, strict=True):
        if set(x) != set(y):
            return False
        for k in x:
            if k == "episode":
                if {**x[k], "t": 0} != {**y[k], "t": 0}:
                    return False
            elif k == "terminal_observation":
                if not np.array_equal(x[k], y[k]):
                    return False
            elif x[k] != y[k] or type(x[k]) is not type(y[k]):
                return False
    return True


@pytest.mark.parametrize(
    ("num_nodes", "action_mode"), [((), "counts"), ((48, 64), "counts"), ((48, 64), "shares")]
)
def test_batched_vec__is_pooled_vec_env_step_for_step(num_nodes, action_mode):
    kw = {"num_nodes": num_nodes, "action_mode": action_mode}
    mine, theirs = BatchedPooledVecEnv(thunks(3, **kw)), PooledVecEnv(thunks(3, **kw))
    assert mine.layout.scale_free == (action_mode == "shares")
    assert mine.observation_space == theirs.observation_space
    assert mine.action_space == theirs.action_space
    mine.seed(5)
    theirs.seed(5)
    assert np.array_equal(mine.reset(), theirs.reset())
    rng = np.random.default_rng(0)
    nvec = mine.action_space.nvec
    ends = 0
    for i in range(12):
        masks = np.stack(mine.env_method("action_masks"))
        assert np.array_equal(masks, np.stack(theirs.env_method("action_masks")))
        m = masks.reshape(len(masks), len(nvec), -1)
        a = (rng.random(m.shape) * m).argmax(axis=2)
        got, want = mine.step(a), theirs.step(a)
        for k in range(3):
            assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]), (i, k)
        assert same_infos(got[3], want[3]), i
        ends += int(got[2].sum())
    assert ends >= 3
    assert mine.get_attr("layout") == theirs.get_attr("layout")
    noops = mine.env_method("noop")  # (a method of the ScavengeEnv under the wrappers)
    assert np.array_equal(np.stack(noops), np.stack([e.unwrapped.noop() for e in theirs.envs]))


def test_batched_vec__passes_sb3_checks_and_trains():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import VecCheckNan

    env = VecCheckNan(BatchedPooledVecEnv(thunks(2)), raise_exception=True)
    env.reset()
    assert get_action_masks(env).shape == (2, env.action_space.nvec.sum())
    model = MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, n_epochs=1, seed=0)
    model.learn(48)
    assert model.num_timesteps >= 48


def test_batched_vec__built_without_the_render_mode_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3 warned "render_mode ... not defined" on every run
        vec = BatchedPooledVecEnv(thunks(2))
    assert vec.render_mode is None and vec.get_attr("render_mode") == [None, None]
