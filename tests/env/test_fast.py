"""The compiled step (``mtgym.env.step``) against the general path: bit for bit, in every
action, reward and information mode, with timers, decision intervals and resets, and the
fall-backs (out-of-range actions, allocations to repair, other dtypes, a replaced state).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mtgym.core.instance import CostModel
from mtgym.core.types import PreemptionMode, RescaleMode
from mtgym.env import ScavengeEnv
from mtgym.scenario.registry import get_generator


def identical(a, b) -> bool:
    """Same values, same types, NaN equal to NaN, through dicts and arrays."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    return a == b


class GeneralOnly(ScavengeEnv):
    """The env with its fast path switched off."""

    compiled_step = False


def lockstep(scenario, steps: int, seed: int, timers: bool = False, **kw) -> int:
    """Step the env and its general-path twin with the same random valid actions; assert
    every output and the final states agree. Returns how many steps took the fast path.
    """
    fast, ref = ScavengeEnv(scenario, **kw), GeneralOnly(scenario, **kw)
    rng = np.random.default_rng(seed)
    assert identical(fast.reset(seed=seed), ref.reset(seed=seed))
    used = 0
    for i in range(steps):
        if timers and i % 7 == 0:  # the engine hands due timers back to Python
            for env in (fast, ref):
                env.state.timers.push(env.state.time + 37.0 * (1 + i % 3), payload=i)
        m = fast.action_masks().reshape(len(fast.action_space.nvec), -1)
        a = (rng.random(m.shape) * m).argmax(axis=1)
        out_f, out_r = fast.step(a), ref.step(a)
        used += fast._fast is not None and fast._fast.usable(a)
        assert identical(out_f, out_r), f"step {i} differs"
        if out_f[2] or out_f[3]:
            assert identical(fast.reset(), ref.reset())
    for name in ("progress", "debt", "node_job", "n_nodes", "stall_until", "node_s"):
        assert np.array_equal(getattr(fast.state, name), getattr(ref.state, name))
    assert fast.state.productive_node_s == ref.state.productive_node_s
    assert fast.state.events == ref.state.events and len(fast.state.timers) == len(ref.state.timers)
    assert np.array_equal(fast.profiler.rate, ref.profiler.rate, equal_nan=True)
    return used


@pytest.mark.parametrize(
    ("info_mode", "reward"),
    [("user", "progress"), ("profiled", "throughput"), ("oracle", "jct")],
)
@pytest.mark.parametrize("action_mode", ["counts", "delta", "assign"])
def test_fast__step_is_the_general_step_bit_for_bit(action_mode, info_mode, reward):
    used = lockstep("default", 120, 3, action_mode=action_mode, info_mode=info_mode, reward=reward)
    assert used == 120


def test_fast__timers_intervals_and_cost_modes_agree():
    inst = get_generator("default")(1)
    bft = replace(inst, costs=CostModel(RescaleMode.BFTRAINER, PreemptionMode.CHECKPOINT))
    assert lockstep(inst, 150, 4, timers=True) == 150
    assert lockstep(bft, 150, 5, timers=True, decision_interval_s=300.0) == 150
    assert lockstep("nas-campaign", 150, 6, max_jobs=8) == 150  # campaign rungs and stops


def test_fast__falls_back_to_the_general_path_unchanged():
    env = ScavengeEnv("default")
    env.reset(seed=0)
    t0, prog = env.state.time, env.state.progress.copy()
    bad = np.zeros(env.num_slots, dtype=np.int64)
    bad[2] = env.max_count + 1
    with pytest.raises(ValueError, match=r"action\[2\]"):
        env.step(bad)
    assert env.state.time == t0 and np.array_equal(env.state.progress, prog)  # untouched
    assert not env._fast.usable(env.noop().astype(np.int32))  # another dtype: general path
    env.step(env.noop().astype(np.int32))
    assert env._fast.state is env.state
    old, ref = env.state, GeneralOnly("default")
    ref.reset(seed=0)
    ref.state, ref.slots.job[:], ref.slots._next = old.copy(), env.slots.job, env.slots._next
    ref.profiler.rate[:] = env.profiler.rate
    env.state = old.copy()  # a state set from outside (a checkpoint): the bag is rebuilt
    assert not env._fast.usable(env.noop())
    a = env.noop()
    assert identical(env.step(a), ref.step(a))
    assert env._fast.state is env.state and env._fast.usable(a)
    assert env.state.time > old.time


def test_fast__env_pickles_and_deep_copies_for_look_ahead():
    import copy
    import pickle

    env = ScavengeEnv("default")
    env.reset(seed=2)
    env.step(env.noop())
    twin, clone = copy.deepcopy(env), pickle.loads(pickle.dumps(env))
    assert twin._fast is None and twin.state is not env.state
    a = env.noop()
    out = env.step(a)
    assert identical(twin.step(a), out) and identical(clone.step(a), out)
    assert twin._fast is not None and twin._fast.state is twin.state


def test_fast__rendering_and_debug_checks_see_the_same_steps():
    envs = [
        cls("default", render_mode="rgb_array", debug=True) for cls in (ScavengeEnv, GeneralOnly)
    ]
    for env in envs:
        env.reset(seed=7)
        for _ in range(15):
            env.step(env.noop())
    assert envs[0]._fast is not None and envs[1]._fast is None
    assert len(envs[0].history.steps) == len(envs[1].history.steps) > 0
    assert np.array_equal(envs[0].render(), envs[1].render())
