"""The scale-free agent: the ``shares`` pooled layout has the same slot rows and global part
on any machine, and one ``SlotPolicy`` (keep at choice 0) runs on any number of slots, its
numpy rollout pass equal to its torch pass there."""

from __future__ import annotations

import numpy as np
import torch

from agents.net import SlotPolicy
from agents.pooled import PooledLayout, PooledObservation
from mtgym.env.actions.shares import CHOICES, KEEP
from mtgym.env.env import ScavengeEnv


def shares_obs(scenario: str, seed: int, steps: int, **kw):
    env = ScavengeEnv(scenario, action_mode="shares", **kw)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, *_ = env.step(env.sample_valid(rng))
    return env, obs


def test_layout__same_rows_on_64_and_4734_nodes():
    small, o_small = shares_obs("default", 3, 30)
    large, o_large = shares_obs("summit-replay-2d", 3, 30)
    a, b = PooledLayout.for_env(small), PooledLayout.for_env(large)
    assert a.scale_free and b.scale_free and a.points == b.points == 0
    assert (a.slot_dim, a.global_dim) == (b.slot_dim, b.global_dim)
    assert (a.num_slots, b.num_slots) == (64, 4734)  # one slot per node
    for lay, obs, env in ((a, o_small, small), (b, o_large, large)):
        x = lay.pool(obs)
        assert lay.space().contains(x)
        rows = x[: lay.num_slots * lay.slot_dim].reshape(lay.num_slots, lay.slot_dim)
        running = env.state.n_nodes[env.slots.job] > 0
        assert np.array_equal(rows[:, -1] > 0, running & (env.slots.job >= 0))  # a flag
        assert rows.max() <= 8.0  # no count in nodes anywhere
    # the counts layout keeps its cap-divided columns
    assert not PooledLayout.for_env(ScavengeEnv("default", max_jobs=16)).scale_free


def policy_on(env: ScavengeEnv, seed: int = 0) -> tuple[SlotPolicy, PooledLayout]:
    wrapped = PooledObservation(env)
    lay = wrapped.layout
    torch.manual_seed(seed)
    pol = SlotPolicy(
        wrapped.observation_space,
        env.action_space,
        lambda _: 3e-4,
        features_extractor_kwargs={
            "num_slots": lay.num_slots,
            "slot_dim": lay.slot_dim,
            "max_count": lay.max_count,
        },
        keep_at_zero=True,
    )
    return pol, lay


def test_slot_policy__one_set_of_weights_for_any_number_of_slots():
    pol, _ = policy_on(ScavengeEnv("default", action_mode="shares", max_jobs=16))
    with torch.no_grad():  # perturbed weights: not only the initial near-uniform logits
        g = torch.Generator().manual_seed(7)
        for p in pol.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
        pol.action_net.stay.fill_(50.0)
    for scenario, S in (("default", 64), ("pal-philly-64gpu", 64)):
        xs, ms, envs = [], [], []
        for seed in (3, 4):
            env, obs = shares_obs(scenario, seed, 25)
            lay = PooledLayout.for_env(env)
            xs.append(lay.pool(obs))
            ms.append(env.action_masks())
            envs.append(env)
        x, masks = torch.as_tensor(np.stack(xs)), np.stack(ms)
        for det in (True, False):
            out = []
            for grad in (True, False):  # the torch pass, then the numpy rollout pass
                torch.manual_seed(11)
                with torch.set_grad_enabled(grad):
                    out.append([t.detach() for t in pol(x, det, masks)])
            (a, v, lp), (a2, v2, lp2) = out
            assert a.shape == a2.shape == (2, S) and torch.equal(a, a2)
            torch.testing.assert_close(v2, v, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(lp2, lp, rtol=1e-4, atol=1e-4)
        # the keep bonus sits on choice 0 of every running slot; every choice is legal
        for b, env in enumerate(envs):
            running = (env.slots.job >= 0) & (env.state.n_nodes[env.slots.job] > 0)
            assert running.any()
            assert np.all(a[b].numpy()[running] == KEEP)
            legal = masks[b].reshape(S, CHOICES)
            assert legal[np.arange(S), a[b].numpy()].all()
