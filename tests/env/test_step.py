"""The env's step (``mtgym.env.step``) against the general Python reference
(``tests/reference/step.py``): bit for bit, in every action, reward and information mode,
with timers, decision intervals and resets, repairs, other dtypes and a replaced state.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from reference.compare import identical
from reference.step import ReferenceEnv

from mtgym.core.instance import CostModel
from mtgym.core.types import EventKind, PreemptionMode, RescaleMode
from mtgym.env import ScavengeEnv
from mtgym.scenario.registry import get_generator


def lockstep(
    scenario, steps: int, seed: int, timers: bool = False, masked: bool = True, **kw
) -> int:
    """Step the env and the reference with the same random actions (valid under the mask,
    or anywhere in the space when not ``masked``: repairs); assert every output and the
    final states agree. Returns how many steps reported a repair.
    """
    fast, ref = ScavengeEnv(scenario, **kw), ReferenceEnv(scenario, **kw)
    rng = np.random.default_rng(seed)
    assert identical(fast.reset(seed=seed), ref.reset(seed=seed))
    repaired = 0
    for i in range(steps):
        if timers and i % 7 == 0:  # the engine hands due timers back to Python
            for env in (fast, ref):
                env.state.timers.push(env.state.time + 37.0 * (1 + i % 3), payload=i)
        if masked:
            m = fast.action_masks().reshape(len(fast.action_space.nvec), -1)
            a = (rng.random(m.shape) * m).argmax(axis=1)
        else:
            a = rng.integers(0, fast.action_space.nvec)
        if i % 5 == 4:
            a = a.astype(np.int32)  # cast once by the validation
        out_f, out_r = fast.step(a), ref.step(a)
        repaired += out_f[4]["repaired"]
        assert identical(out_f, out_r), f"step {i} differs"
        if out_f[2] or out_f[3]:
            assert identical(fast.reset(), ref.reset())
    for name in ("progress", "debt", "node_job", "n_nodes", "stall_until", "node_s"):
        assert np.array_equal(getattr(fast.state, name), getattr(ref.state, name))
    assert fast.state.productive_node_s == ref.state.productive_node_s
    assert fast.state.events == ref.state.events and len(fast.state.timers) == len(ref.state.timers)
    assert np.array_equal(fast.profiler.rate, ref.profiler.rate, equal_nan=True)
    return repaired


@pytest.mark.parametrize(
    ("info_mode", "reward"),
    [("user", "progress"), ("profiled", "throughput"), ("oracle", "jct")],
)
@pytest.mark.parametrize("action_mode", ["counts", "delta", "assign"])
def test_step__is_the_reference_step_bit_for_bit(action_mode, info_mode, reward):
    lockstep("default", 120, 3, action_mode=action_mode, info_mode=info_mode, reward=reward)


@pytest.mark.parametrize("action_mode", ["counts", "assign"])
def test_step__repairs_agree_with_the_reference(action_mode):
    # Unmasked actions: empty slots, counts over the maximum or idle nodes, busy nodes
    # (``delta`` targets are capped by construction: random ones need no repair).
    assert lockstep("default", 80, 8, masked=False, action_mode=action_mode) > 0


def test_step__timers_intervals_and_cost_modes_agree():
    inst = get_generator("default")(1)
    bft = replace(inst, costs=CostModel(RescaleMode.BFTRAINER, PreemptionMode.CHECKPOINT))
    lockstep(inst, 150, 4, timers=True)
    lockstep(bft, 150, 5, timers=True, decision_interval_s=300.0)
    lockstep("nas-campaign", 150, 6, max_jobs=8)  # campaign rungs and stops


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (lambda env: np.zeros(env.num_slots + 1, dtype=np.int64), r"shape \(17,\)"),
        (lambda env: np.full(env.num_slots, 0.5), "non-integer"),
        (lambda env: np.eye(1, env.num_slots, 2, dtype=np.int64)[0] * 99, r"action\[2\].*0\.\."),
        (
            lambda env: -np.eye(1, env.num_slots, 3, dtype=np.int32)[0],
            r"action\[3\] \(slot 3\) = -1",
        ),
    ],
)
def test_step__invalid_actions_raise_before_anything_changes(action, match):
    env = ScavengeEnv("default", max_jobs=16)
    env.reset(seed=0)
    env.step(env.noop())
    s = env.state.copy()
    with pytest.raises(ValueError, match=match):
        env.step(action(env))
    assert identical(vars(env.state) | {"timers": 0}, vars(s) | {"timers": 0})  # untouched


def test_step__a_state_set_from_outside_rebuilds_the_step():
    env, ref = ScavengeEnv("default"), ReferenceEnv("default")
    env.reset(seed=0)
    ref.reset(seed=0)
    for _ in range(5):
        a = env.noop()
        env.step(a)
        ref.step(a)
    old = env.state
    env.state, ref.state = old.copy(), old.copy()  # a checkpoint restored
    a = env.noop()
    assert identical(env.step(a), ref.step(a))
    assert env._step.state is env.state and env.state.time > old.time
    assert np.array_equal(env.state.progress, ref.state.progress)


def test_step__env_pickles_and_deep_copies_for_look_ahead():
    import copy
    import pickle

    env = ScavengeEnv("default")
    env.reset(seed=2)
    env.step(env.noop())
    twin, clone = copy.deepcopy(env), pickle.loads(pickle.dumps(env))
    assert twin._step is None and twin.state is not env.state
    a = env.noop()
    out = env.step(a)
    assert identical(twin.step(a), out) and identical(clone.step(a), out)
    assert twin._step is not None and twin._step.state is twin.state


def test_step__rendering_and_debug_checks_see_the_same_steps():
    envs = [
        cls("default", render_mode="rgb_array", debug=True) for cls in (ScavengeEnv, ReferenceEnv)
    ]
    for env in envs:
        env.reset(seed=7)
        for _ in range(15):
            env.step(env.noop())
    assert len(envs[0].history.steps) == len(envs[1].history.steps) > 0
    assert np.array_equal(envs[0].render(), envs[1].render())


def test_step__counters_are_declared_once_and_events_is_a_deprecated_alias():
    """``STEP_COUNTERS`` and the batched core's columns come from ``sim.kernel.COUNTERS``;
    ``info["events"]`` repeats ``info["event_kinds"]``, the step's ``EventKind`` bits."""
    from mtgym.env.batched import COUNTER_COLUMNS, FLOAT_COUNTERS, INT_COUNTERS
    from mtgym.env.step import INFO_ALIASES, STEP_COUNTERS
    from mtgym.sim.kernel import COUNTERS, RESULTS

    names = [name for name, _ in COUNTERS]
    assert list(STEP_COUNTERS) == [*names, "elapsed_s"] and names[0] == "event_kinds"
    assert RESULTS[: len(COUNTERS)] == COUNTERS
    assert sorted(INT_COUNTERS + FLOAT_COUNTERS) == sorted(names)
    assert len(set(COUNTER_COLUMNS)) == len(COUNTER_COLUMNS) == len(STEP_COUNTERS)
    assert INFO_ALIASES == {"dt": "elapsed_s", "events": "event_kinds"}
    env = ScavengeEnv("default", horizon_s=1800.0)
    env.reset(seed=0)
    seen, done = 0, False
    while not done:
        _, _, term, trunc, info = env.step(env.noop())
        done = term or trunc
        keys = list(info)[6 : 6 + len(STEP_COUNTERS) + len(INFO_ALIASES)]
        assert keys == [*STEP_COUNTERS, *INFO_ALIASES]  # (after time ... repaired)
        assert type(info["event_kinds"]) is int and info["events"] == info["event_kinds"]
        assert info["dt"] == info["elapsed_s"]
        seen |= info["event_kinds"]
    assert seen & int(EventKind.JOB_ARRIVED)
