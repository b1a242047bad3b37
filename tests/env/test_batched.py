"""The batched core (``mtgym.env.batched``) against the single env: episode b of a batch is
the single ``ScavengeEnv`` on the same seed and actions, bit for bit (observation, reward,
end flags, info, resets), in every registered action mode and every built-in reward
(``tests/env/test_rewards.py`` runs the same check on a reward defined there).
"""

from __future__ import annotations

import numpy as np
import pytest
from reference.compare import identical

from mtgym.core.names import DEFAULT_ACTION_MODE, DEFAULT_REWARD, REWARD_NAMES
from mtgym.env import ScavengeEnv
from mtgym.env.actions import CODECS
from mtgym.env.batched import BatchedCore


def lockstep(kws: list[dict], steps: int, seed: int, masked: bool = True) -> tuple[int, int]:
    """A batch of envs built with ``kws`` and as many single envs, stepped with the same
    random actions; asserts every output agrees. Returns (episodes ended, repairs).
    """
    core = BatchedCore([ScavengeEnv("default", **kw) for kw in kws])
    singles = [ScavengeEnv("default", **kw) for kw in kws]
    B = len(kws)
    for b in range(B):
        assert identical(core.reset(b, seed=seed + b), singles[b].reset(seed=seed + b))
    rng = np.random.default_rng(seed)
    ended = repaired = 0
    for i in range(steps):
        actions = []
        for env in singles:
            nvec = env.action_space.nvec
            if masked:
                m = env.action_masks().reshape(len(nvec), -1)
                actions.append((rng.random(m.shape) * m).argmax(axis=1))
            else:
                actions.append(rng.integers(0, nvec))
        actions = np.array(actions, dtype=np.int64)
        done = core.step(core.check_actions(actions))
        for b, env in enumerate(singles):
            want = env.step(actions[b])
            got = (
                core.observation(b),
                float(core.rewards[b]),
                bool(core.terminated[b]),
                bool(core.truncated[b]),
                core.info(b),
            )
            assert identical(got, want), f"step {i}, episode {b} differs"
            repaired += want[4]["repaired"]
            assert (b in done) == (want[2] or want[3])
            if want[2] or want[3]:
                ended += 1
                assert identical(core.reset(b), env.reset())
    for b, env in enumerate(singles):
        mine = core.env(b)  # (synced: its Python state is the batch's)
        for name in ("time", "progress", "node_job", "n_nodes", "debt", "events"):
            assert identical(getattr(mine.state, name), getattr(env.state, name))
        assert identical(mine.noop(), env.noop())
    return ended, repaired


#: every action mode with the default reward, and every reward with the default mode (the
#: step is compiled per mode and the reward per reward: the whole product tests no more code)
PAIRS = sorted(
    {(m, DEFAULT_REWARD) for m in CODECS} | {(DEFAULT_ACTION_MODE, r) for r in REWARD_NAMES}
)


@pytest.mark.parametrize(("action_mode", "reward"), PAIRS)
def test_batched__each_episode_is_the_single_env_bit_for_bit(action_mode, reward):
    # short horizons of different lengths, so that episodes end and reset mid-run
    kws = [
        dict(
            action_mode=action_mode,
            reward=reward,
            horizon_s=1200.0 * (k + 1),
            decision_interval_s=300.0,
        )
        for k in range(3)
    ]
    ended, _ = lockstep(kws, 30, seed=3)
    assert ended > 0


def test_batched__information_modes_intervals_and_repairs_agree():
    kws = [dict(info_mode="profiled", horizon_s=300.0)] * 2  # a decision at every event
    assert lockstep(kws, 40, seed=5)[0] > 0
    kws = [dict(info_mode="oracle", action_mode="assign", horizon_s=3600.0)] * 2
    assert lockstep(kws, 30, seed=6, masked=False)[1] > 0  # the engine repairs nodes


def test_batched__checks_actions_and_sizes():
    envs = [ScavengeEnv("default", max_jobs=16) for _ in range(2)]
    core = BatchedCore(envs)
    with pytest.raises(RuntimeError, match="reset"):
        core.step(np.zeros((2, 16), dtype=np.int64))
    for b in range(2):
        core.reset(b, seed=b)
    a = np.zeros((2, 16), dtype=np.int64)
    a[1, 3] = 999
    with pytest.raises(ValueError, match=r"env 1: action\[3\]"):
        core.check_actions(a)
    assert core.check_actions(a[:, :].clip(0, 0).astype(np.int32)).dtype == np.int64
    with pytest.raises(ValueError, match="differ"):
        BatchedCore([ScavengeEnv("default"), ScavengeEnv("default", action_mode="delta")])
    with pytest.raises(ValueError, match="reward"):
        BatchedCore([ScavengeEnv("default"), ScavengeEnv("default", reward="jct")])
