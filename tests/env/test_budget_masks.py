"""Budget masks (``mtgym.env.actions.budget``): the per-slot masks with each choice's node
delta and the budget, and draws in slot order within them that the env never repairs."""

from __future__ import annotations

import numpy as np
import pytest

from mtgym.env.actions import budget
from mtgym.env.actions.shares import CHOICES, KEEP, STOP, level_counts
from mtgym.env.env import ScavengeEnv


def _draw_in_order(enc: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform over each slot's choices that fit what the earlier slots left."""
    legal, delta, left = budget.split(enc, CHOICES)
    left = int(left)
    out = np.zeros(legal.shape[0], dtype=np.int64)
    for s in range(legal.shape[0]):
        ok = legal[s] & (delta[s] <= left)
        ok[KEEP] = True
        out[s] = rng.choice(np.flatnonzero(ok))
        left -= int(delta[s, out[s]])
    return out


@pytest.mark.parametrize("scenario", ["default", "hetero-mix"])
def test_budget_masks__encode_the_mask_the_deltas_and_the_budget(scenario):
    env = ScavengeEnv(scenario, action_mode="shares", decision_interval_s=60.0)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(40):
        enc = env.budget_masks()
        assert enc.dtype == np.float32 and enc.shape == env.action_masks().shape
        legal, delta, b = budget.split(enc, CHOICES)
        np.testing.assert_array_equal(legal.reshape(-1), env.action_masks())
        st, jobs, slots = env.state, env.instance.jobs, env.slots
        held = sum(int(st.n_nodes[j]) for j in slots.job if j >= 0)
        assert int(b) == int(np.count_nonzero(st.available)) - held
        for s in np.flatnonzero(slots.job >= 0):
            j = int(slots.job[s])
            cur = int(st.n_nodes[j])
            grid = level_counts(max(int(jobs.min_nodes[j]), 1), int(jobs.max_nodes[j]))
            for k in np.flatnonzero(legal[s]):
                want = 0 if k == KEEP else -cur if k == STOP else int(grid[k - 2]) - cur
                assert delta[s, k] == want
        env.step(env.sample_valid(rng))


@pytest.mark.parametrize("scenario", ["default", "summit-replay"])
def test_budget_masks__draws_in_slot_order_are_never_repaired(scenario):
    """Per-slot draws from the same masks are repaired on most steps; in order, on none."""
    env = ScavengeEnv(scenario, action_mode="shares", decision_interval_s=60.0)
    rng = np.random.default_rng(1)
    env.reset(seed=2)
    repaired = {"per_slot": 0, "in_order": 0}
    for t in range(120):
        enc = env.budget_masks()
        if t % 2:
            a, kind = _draw_in_order(enc, rng), "in_order"
            ok = budget.conditional_legal(enc[None], a[None], CHOICES)[0]
            assert ok[np.arange(a.size), a].all()
        else:
            legal = budget.split(enc, CHOICES)[0]
            a = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
            kind = "per_slot"
        *_, term, trunc, info = env.step(a)
        repaired[kind] += bool(info["repaired"])
        if term or trunc:
            env.reset(seed=t)
    assert repaired["in_order"] == 0
    assert repaired["per_slot"] > 20


def test_prefix_feasible__lowers_a_grow_that_needs_a_later_stop():
    """Budget 0: slot 0 grows by 4 with the 4 nodes slot 1's stop frees; in slot order the
    grow cannot come first, so the label keeps slot 0 and stops slot 1."""
    K = CHOICES
    enc = np.zeros(2 * K, dtype=np.float32)
    enc[[KEEP, K + KEEP]] = budget.OFFSET + 0  # budget 0
    enc[3] = budget.OFFSET + 4  # slot 0: a level 4 nodes up
    enc[2] = budget.OFFSET + 2  # slot 0: a level 2 nodes up
    enc[K + STOP] = budget.OFFSET - 4  # slot 1: stop frees 4
    a = np.array([3, STOP], dtype=np.int64)
    assert budget.prefix_feasible(enc, a, K) == 1
    np.testing.assert_array_equal(a, [KEEP, STOP])
    enc[KEEP] = enc[K + KEEP] = budget.OFFSET + 3  # budget 3: the 2-node level fits
    a = np.array([3, STOP], dtype=np.int64)
    assert budget.prefix_feasible(enc, a, K) == 1
    np.testing.assert_array_equal(a, [2, STOP])
    b = a.copy()
    assert budget.prefix_feasible(enc, b, K) == 0  # feasible already: unchanged
    np.testing.assert_array_equal(a, b)


def test_budget_masks__other_modes_refuse_and_need_a_reset():
    env = ScavengeEnv("default", action_mode="counts")
    with pytest.raises(RuntimeError, match="reset"):
        env.budget_masks()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no budget mask: use action_mode 'shares'"):
        env.budget_masks()


def test_budget_masks__batched_envs_give_the_single_envs_masks():
    """The batched core steps the envs' arrays in place: their budget masks are the single
    env's on the same seed and actions."""
    from mtgym.env.batched import BatchedCore

    def make():
        return ScavengeEnv("default", action_mode="shares", decision_interval_s=60.0)

    single, batched = make(), make()
    core = BatchedCore([batched])
    single.reset(seed=7)
    core.reset(0, seed=7)
    rng = np.random.default_rng(3)
    for _ in range(30):
        enc = single.budget_masks()
        np.testing.assert_array_equal(batched.budget_masks(), enc)
        a = _draw_in_order(enc, rng)
        *_, term, trunc, _ = single.step(a)
        core.step(a[None])
        if term or trunc:
            break
