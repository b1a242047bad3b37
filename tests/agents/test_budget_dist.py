"""Learner-side budget masks (``agents.budget_dist``): the slots drawn in order within the
node budget, their log-probability the sum of the conditional ones in torch and in the numpy
rollout pass, a trained agent that plays without repairs, and the options that refuse it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.budget_dist import BudgetSlotCategorical
from agents.net import SlotPolicy
from agents.pooled import PooledObservation
from mtgym.env.actions import budget
from mtgym.env.actions.shares import CHOICES
from mtgym.env.env import ScavengeEnv


def _states(n: int, seed: int = 5):
    """n (pooled observation, budget mask) pairs along a valid random episode, from its
    80th decision (by then the queue holds more than the idle nodes)."""
    env = PooledObservation(ScavengeEnv("default", action_mode="shares", decision_interval_s=60.0))
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rows, masks = [], []
    for t in range(80 + n):
        if t >= 80:
            rows.append(obs)
            masks.append(env.unwrapped.budget_masks())
        obs, *_ = env.step(env.unwrapped.sample_valid(rng))
    return env, np.stack(rows), np.stack(masks)


def _policy(env, stay: float = 0.0, seed: int = 0) -> SlotPolicy:
    lay = env.layout
    torch.manual_seed(seed)
    return SlotPolicy(
        env.observation_space,
        env.action_space,
        lambda _: 3e-4,
        features_extractor_kwargs={
            "num_slots": lay.num_slots,
            "slot_dim": lay.slot_dim,
            "max_count": lay.max_count,
        },
        keep_at_zero=True,
        stay_init=stay,
        budget_masks=True,
    )


def test_log_prob__is_the_sum_of_each_slots_conditional_log_softmax():
    env, obs, masks = _states(12)
    pol = _policy(env)
    x = torch.as_tensor(obs)
    with torch.no_grad():
        dist = pol.get_distribution(x, action_masks=masks)
        acts = dist.sample()
        lp = dist.log_prob(acts).numpy()
        logits = dist._raw.numpy().astype(np.float64)
    ok = budget.conditional_legal(masks, acts.numpy(), CHOICES)
    assert ok[np.arange(12)[:, None], np.arange(ok.shape[1]), acts.numpy()].all()
    z = np.where(ok, logits, -np.inf)
    ref = z - np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True))
    ref -= z.max(-1, keepdims=True)
    want = np.take_along_axis(ref, acts.numpy()[..., None], -1)[..., 0].sum(-1)
    np.testing.assert_allclose(lp, want, rtol=1e-5, atol=1e-4)
    # per-slot masks alone would allow more: the conditioning removed some choices
    assert ok.sum() < budget.split(masks, CHOICES)[0].sum()


def test_numpy_rollout_pass__draws_and_scores_as_the_torch_pass():
    env, obs, masks = _states(16, seed=9)
    pol = _policy(env, stay=2.0)
    x = torch.as_tensor(obs)
    for det in (False, True):
        torch.manual_seed(3)
        with torch.no_grad():
            a_np, v_np, lp_np = pol(x, deterministic=det, action_masks=masks)
        torch.manual_seed(3)
        with torch.enable_grad():
            a_t, v_t, lp_t = pol(x, deterministic=det, action_masks=masks)
        np.testing.assert_array_equal(a_np.numpy(), a_t.numpy())
        np.testing.assert_allclose(lp_np.numpy(), lp_t.detach().numpy(), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(v_np.numpy(), v_t.detach().numpy(), rtol=1e-5, atol=1e-5)
        with torch.no_grad():  # what PPO's update recomputes from the buffer
            _, lp_e, ent = pol.evaluate_actions(x, a_np, action_masks=masks)
        np.testing.assert_allclose(lp_e.numpy(), lp_np.numpy(), rtol=1e-5, atol=1e-4)
        assert torch.isfinite(ent).all() and (ent >= 0).all()


def test_entropy__needs_an_action_to_condition_on():
    env, obs, masks = _states(2)
    dist = _policy(env).get_distribution(torch.as_tensor(obs), action_masks=masks)
    assert isinstance(dist, BudgetSlotCategorical)
    with pytest.raises(RuntimeError, match="log_prob"):
        dist.entropy()
    dist.mode()
    assert dist.entropy().shape == (2,)


def test_training_envs__an_untrained_policy_is_repaired_only_without_budget_masks():
    """The vector env gives budget masks; the decoder's repair counts (the batched core's)
    stay zero for the budget policy and not for the per-slot one (same weights)."""
    from agents.train import Args, build_model, make_vec_env

    repaired = {}
    for flag in (False, True):
        args = Args(action_mode="shares", max_jobs=16, n_envs=2, budget_masks=flag, stay_init=0.0)
        venv = make_vec_env(args)
        pol = build_model(args, venv, None).policy
        obs, hits = venv.reset(), 0
        torch.manual_seed(0)
        for _ in range(40):
            masks = np.stack(venv.env_method("action_masks"))
            assert masks.dtype == (np.float32 if flag else np.bool_)
            with torch.no_grad():
                a, _, _ = pol(torch.as_tensor(obs), action_masks=masks)
            obs, *_ = venv.step(a.numpy())
            hits += sum(int((core.decoded.sum(axis=1) > 0).sum()) for _, core in venv._groups)
        repaired[flag] = hits
    assert repaired[True] == 0
    assert repaired[False] > 20


def test_trained_budget_agent__saves_the_option_and_plays_without_repairs(tiny_train, tmp_path):
    from agents.policy import AgentPolicy, load_model

    path = tiny_train(tmp_path / "b", action_mode="shares", max_jobs=16, budget_masks=True)
    model, config = load_model(path)
    assert config.budget_masks and model.policy.budget_masks
    agent = AgentPolicy(path)
    env = ScavengeEnv("default", **config.env_kwargs())
    obs, _ = env.reset(seed=1000)
    with pytest.raises(ValueError, match="budget mask"):
        agent.act(obs, env.action_masks(), features=env.features)
    for _ in range(60):
        a = agent.act(obs, env.budget_masks(), features=env.features)
        obs, _, term, trunc, info = env.step(a)
        assert not info["repaired"]
        if term or trunc:
            break


def test_train__refuses_budget_masks_outside_shares_and_the_slot_net():
    from agents.train import Args, _check

    with pytest.raises(ValueError, match="budget masks need action_mode 'shares'"):
        _check(Args(action_mode="counts", budget_masks=True))
    with pytest.raises(ValueError, match="cannot clone a dataset"):
        _check(Args(action_mode="shares", budget_masks=True, from_dataset="x/y-v0"))


def test_imitation__budget_labels_fit_in_slot_order():
    from agents.imitation import collect

    kw = {"action_mode": "shares", "max_jobs": 16, "decision_interval_s": 120.0}
    data = collect("default", "freetrain-speedup", [11], kw, pooled=True, budget=True)
    assert data.masks.dtype == np.float32 and len(data) > 100
    ok = budget.conditional_legal(data.masks, data.actions, CHOICES)
    n, S = data.actions.shape
    assert ok[np.arange(n)[:, None], np.arange(S), data.actions].all()


def test_per_slot_masks_where_budget_masks_belong_are_refused():
    """A 0/1 mask would read as deltas of -2**21 that fit any budget: refused, not drawn."""
    env, obs, masks = _states(2)
    pol = _policy(env)
    plain = budget.split(masks, CHOICES)[0].reshape(2, -1)
    for m in (plain, plain.astype(np.float32)):
        with pytest.raises(ValueError, match="not a budget mask"):
            pol.get_distribution(torch.as_tensor(obs), action_masks=m)
        with pytest.raises(ValueError, match="not a budget mask"), torch.no_grad():
            pol(torch.as_tensor(obs), action_masks=m.astype(np.float32))
    with pytest.raises(ValueError, match="not a budget mask"):
        budget.split(plain.astype(np.float32), CHOICES)


def test_a_slot_with_no_feasible_choice_draws_over_all_in_both_passes():
    """Not a state the env makes (keep always fits), but the two passes must agree on it,
    as ``SlotCategorical`` does: such a slot is drawn over all its choices."""
    env, obs, masks = _states(4, seed=11)
    masks = masks.copy()
    masks[:, CHOICES : 2 * CHOICES] = 0.0  # slot 1: nothing legal
    pol = _policy(env, stay=1.0)
    x = torch.as_tensor(obs)
    torch.manual_seed(5)
    with torch.no_grad():
        a_np, _, lp_np = pol(x, action_masks=masks)
    torch.manual_seed(5)
    with torch.enable_grad():
        a_t, _, lp_t = pol(x, action_masks=masks)
    np.testing.assert_array_equal(a_np.numpy(), a_t.numpy())
    np.testing.assert_allclose(lp_np.numpy(), lp_t.detach().numpy(), rtol=1e-5, atol=1e-4)
    assert np.isfinite(lp_np.numpy()).all()


def test_select_agent_draws_refuse_an_agent_of_another_mode_before_playing():
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "select_draws", root / "scripts" / "select_agent.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    counts = root / "agents" / "pretrained" / "counts"
    mod.check_draws([counts], ["trained"])  # as trained: any agent
    with pytest.raises(SystemExit, match="needs a shares agent, not 'counts'"):
        mod.check_draws([root / "agents" / "pretrained" / "default", counts], ["budget"])
