"""The pooled observation and the per-slot network: shapes, permutation symmetries, the
vectorised masked distribution against sb3_contrib's, determinism, and a pooled agent
driven by ``play`` taking the decisions its model takes in the env."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

from agents.net import SlotFeatures, SlotPolicy
from agents.pooled import (
    SLOT_COUNT,
    SLOT_MASK,
    SLOT_PARTS,
    PooledLayout,
    PooledObservation,
    SlimInfo,
)
from agents.slot_dist import SlotCategorical
from mtgym.env.env import ScavengeEnv
from mtgym.generate.default import default_generator


def env_obs(seed: int = 3, steps: int = 40, **kw):
    """An env observation some way into an episode (jobs holding nodes)."""
    env = ScavengeEnv(kw.pop("scenario", "default"), **kw)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, *_ = env.step(rng.integers(0, env.action_space.nvec))
    return env, obs


def reference_pool(obs: dict, layout: PooledLayout) -> np.ndarray:
    """The pooled vector written plainly in numpy (the module docstring's definition)."""
    S, C = layout.num_slots, layout.max_count
    slot, lent = obs["node_job"].astype(int), obs["node_mask"] > 0
    rows = []
    for s in range(S):
        held = obs["nodes"][slot == s]
        mean = held.mean(axis=0) if len(held) else np.zeros(layout.node_dim)
        rows.append(
            np.concatenate(
                [
                    [obs["job_mask"][s]],
                    obs["jobs"][s],
                    obs["job_curve"][s],
                    obs["job_curve_known"][s],
                    mean,
                    [min(len(held) / C, 8.0)],
                ]
            )
        )
    g = [obs["global"]]
    for sel in (lent, lent & (slot < 0)):
        r = obs["nodes"][sel]
        z = np.zeros(layout.node_dim)
        g += [r.mean(axis=0) if len(r) else z, r.max(axis=0) if len(r) else z]
    g += [[min(lent.sum() / C, 8.0), min((lent & (slot < 0)).sum() / C, 8.0)]]
    return np.concatenate(rows + g).astype(np.float32)


def test_pooled__matches_its_definition_and_ignores_node_order():
    env, obs = env_obs()
    layout = PooledLayout.of(env.observation_space, env.max_count)
    v = layout.pool(obs)
    assert v.shape == (layout.size,) and v.dtype == np.float32
    assert (obs["node_job"] >= 0).sum() > 0 and obs["job_mask"].sum() > 1
    np.testing.assert_allclose(v, reference_pool(obs, layout), rtol=1e-6, atol=1e-6)
    perm = np.random.default_rng(0).permutation(env.num_nodes)
    shuffled = dict(obs)
    for k in ("nodes", "node_mask", "node_job"):
        shuffled[k] = obs[k][perm]
    np.testing.assert_allclose(layout.pool(shuffled), v, rtol=1e-6, atol=1e-7)


def test_pooled__slot_parts_by_name():
    env, obs = env_obs(steps=10)
    layout = PooledLayout.of(env.observation_space, env.max_count)
    parts = layout.slot_features
    assert list(parts) == list(SLOT_PARTS) and parts["held_count"].stop == layout.slot_dim
    row = layout.pool(obs)[: layout.slot_dim]
    cols = np.arange(layout.slot_dim)
    assert (
        cols[SLOT_MASK] == parts["job_mask"].start and cols[SLOT_COUNT] == parts["held_count"].start
    )
    assert (
        np.array_equal(row[parts["jobs"]], obs["jobs"][0]) and row[SLOT_MASK] == obs["job_mask"][0]
    )


def test_pooled__same_size_on_any_cluster_and_wrapper_space():
    small = PooledObservation(ScavengeEnv("default", max_jobs=16))
    big_env = ScavengeEnv(replace(default_generator(), num_nodes=256)(1), max_jobs=16)
    big = PooledObservation(big_env)
    assert small.observation_space.shape == big.observation_space.shape
    obs, _ = big.reset(seed=1)
    assert big.observation_space.contains(obs)
    slim = SlimInfo(small)
    slim.reset(seed=2)
    _, _, _, _, info = slim.step(np.zeros(len(small.action_space.nvec), dtype=np.int64))
    assert set(info) == {"dt", "samples"}
    assert slim.action_masks().shape == small.env.action_masks().shape


def make_policy(seed: int = 0) -> tuple[SlotPolicy, PooledLayout, PooledObservation]:
    env = PooledObservation(ScavengeEnv("default"))
    lay = env.layout
    torch.manual_seed(seed)
    pol = SlotPolicy(
        env.observation_space,
        env.action_space,
        lambda _: 3e-4,
        features_extractor_kwargs={
            "num_slots": lay.num_slots,
            "slot_dim": lay.slot_dim,
            "max_count": lay.max_count,
        },
    )
    return pol, lay, env


def test_slot_policy__shapes_equivariance_over_slots_and_determinism():
    pol, lay, _env = make_policy()
    S, K = lay.num_slots, lay.max_count + 1
    obs = []
    for seed in (3, 4):
        _e, o = env_obs(seed=seed)
        obs.append(lay.pool(o))
    x = torch.as_tensor(np.stack(obs))
    with torch.no_grad():
        feats = pol.extract_features(x, pol.pi_features_extractor)
        logits = pol.action_net(feats).reshape(2, S, K)
        value = pol.value_net(feats)
    assert isinstance(pol.features_extractor, SlotFeatures)
    assert feats.shape == (2, S * 32 + 32 + S) and value.shape == (2, 1)
    # permuting the slot rows permutes the logits and leaves the value alone
    perm = np.random.default_rng(1).permutation(S)
    table = x[:, : S * lay.slot_dim].reshape(2, S, lay.slot_dim)[:, perm]
    xp = torch.cat([table.reshape(2, -1), x[:, S * lay.slot_dim :]], dim=1)
    with torch.no_grad():
        fp = pol.extract_features(xp, pol.pi_features_extractor)
        lp = pol.action_net(fp).reshape(2, S, K)
        vp = pol.value_net(fp)
    torch.testing.assert_close(lp, logits[:, perm], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(vp, value, rtol=1e-5, atol=1e-5)
    # the keep bonus: at initialisation a running job's current count is its likeliest choice
    current = torch.round(table[..., -1] * lay.max_count).long()
    running = current > 0
    assert running.sum() >= 2 and (~running).sum() >= 2
    assert torch.equal(lp.argmax(dim=-1)[running], current[running])
    probs = torch.softmax(lp, dim=-1)
    assert torch.all(probs[~running].max(dim=-1).values < 0.2)  # idle slots: no bonus
    # same seed, same weights and outputs; another seed differs
    again, _, _ = make_policy(seed=0)
    other, _, _ = make_policy(seed=1)
    with torch.no_grad():
        f2 = again.extract_features(x, again.pi_features_extractor)
        f3 = other.extract_features(x, other.pi_features_extractor)
    assert torch.equal(f2, feats) and not torch.equal(f3, feats)


def test_slot_categorical__is_sb3_contribs_multicategorical():
    S, K, B = 5, 7, 64
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(B, S * K, generator=g) * 3
    masks = torch.rand(B, S * K, generator=g) > 0.4
    masks.view(B, S, K)[..., 0] = True  # one legal choice per slot at least
    ours, ref = SlotCategorical(S, K), MaskableMultiCategoricalDistribution([K] * S)
    ours.proba_distribution(logits)
    ref.proba_distribution(logits)
    ours.apply_masking(masks.numpy())
    ref.apply_masking(masks.numpy())
    acts = ref.sample()
    torch.testing.assert_close(ours.log_prob(acts), ref.log_prob(acts), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ours.entropy(), ref.entropy(), rtol=1e-5, atol=1e-4)
    bad = acts.clone()  # an illegal choice in a slot: about -1e8, as sb3-contrib's
    bad[:, 1] = (~masks.view(B, S, K)[:, 1]).float().argmax(-1)
    has_illegal = (~masks.view(B, S, K)[:, 1]).any(-1)
    assert has_illegal.any()
    assert (ours.log_prob(bad)[has_illegal] < -1e7).all()
    assert (ref.log_prob(bad)[has_illegal] < -1e7).all()
    assert torch.equal(ours.mode(), ref.mode())
    torch.manual_seed(5)
    draws = ours.sample()
    assert draws.shape == (B, S)
    assert masks.view(B, S, K).gather(-1, draws.unsqueeze(-1)).all()  # only legal draws
    torch.manual_seed(5)
    assert torch.equal(ours.sample(), draws)  # seeded: deterministic
    ours.apply_masking(None)
    torch.testing.assert_close(ours.logp.exp().sum(-1), torch.ones(B, S), rtol=1e-6, atol=1e-6)


def reference_heads(pol: SlotPolicy, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, S, K) logits and (B, 1) values written plainly from the module docstring with
    the policy's parameters (no code shared with ``agents/net.py``'s passes)."""
    fx, head, val = pol.features_extractor, pol.action_net, pol.value_net
    S, D, C = fx.num_slots, fx.slot_dim, fx.max_count
    relu, lin = torch.relu, torch.nn.functional.linear
    table, glob = x[:, : S * D].reshape(-1, S, D), x[:, S * D :]
    mask = table[..., :1]
    l1, l2 = fx.slot_net[0], fx.slot_net[2]
    h = relu(lin(relu(lin(table, l1.weight, l1.bias)), l2.weight, l2.bias)) * mask
    mean = h.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
    c1, c2 = fx.ctx_net[0], fx.ctx_net[2]
    ctx = relu(lin(relu(lin(torch.cat([mean, glob], 1), c1.weight, c1.bias)), c2.weight, c2.bias))
    mix_w = torch.cat([fx.mix_slot.weight, fx.mix_ctx.weight], dim=1)
    pair = torch.cat([h, ctx.unsqueeze(1).expand(-1, S, -1)], dim=2)
    z = relu(lin(pair, mix_w, fx.mix_slot.bias)) * mask
    current = torch.round(table[..., -1] * C).long()
    K = head.choices
    keep = torch.nn.functional.one_hot(current.clamp(0, K - 1), K).bool() & (current > 0)[..., None]
    head_w = torch.cat([head.head_slot.weight, head.head_ctx.weight], dim=1)
    pair = torch.cat([z, ctx.unsqueeze(1).expand(-1, S, -1)], dim=2)
    logits = lin(pair, head_w, head.head_slot.bias) + head.stay * keep
    v1, v2 = val.net[0][0], val.net[1]
    value = lin(
        relu(lin(torch.cat([z.mean(dim=1), ctx], 1), v1.weight, v1.bias)), v2.weight, v2.bias
    )
    return logits, value


def test_slot_policy__its_passes_compute_the_documented_function():
    """``forward``, ``evaluate_actions``, ``get_distribution`` and ``predict_values`` (the
    passes MaskablePPO calls) against the plain reference: logits, values, masked
    log-probabilities and entropies (torch's Categorical with illegal choices at -inf) and
    the gradients of a PPO-like loss."""
    pol, lay, _env = make_policy()
    with torch.no_grad():  # away from the near-uniform initial head
        g = torch.Generator().manual_seed(7)
        for p in pol.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    S, K = lay.num_slots, lay.max_count + 1
    xs, ms = [], []
    for seed, steps in ((3, 40), (4, 40), (5, 0)):  # (at reset: a job without nodes)
        env, o = env_obs(seed=seed, steps=steps)
        xs.append(lay.pool(o))
        ms.append(env.action_masks())
    x = torch.as_tensor(np.stack(xs))
    masks = np.stack(ms)
    legal = torch.as_tensor(masks).reshape(-1, S, K)
    assert (~legal).any() and (legal.sum(-1) > 1).any()
    table = x[:, : S * lay.slot_dim].reshape(3, S, -1)
    held = table[..., -1] > 0
    assert held.any() and ((table[..., 0] > 0) & ~held).any()  # running and waiting jobs
    logits, value = reference_heads(pol, x)
    ref = torch.distributions.Categorical(logits=logits.masked_fill(~legal, float("-inf")))
    torch.manual_seed(11)
    actions, values, log_prob = pol(x, action_masks=masks)
    assert actions.shape == (3, S) and legal.gather(-1, actions[..., None]).all()
    torch.testing.assert_close(values, value, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(log_prob, ref.log_prob(actions).sum(1), rtol=1e-5, atol=1e-4)
    v2, lp2, ent = pol.evaluate_actions(x, actions, action_masks=masks)
    torch.testing.assert_close(lp2, log_prob)
    torch.testing.assert_close(v2, values)
    torch.testing.assert_close(ent, ref.entropy().sum(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(pol.predict_values(x), values)
    dist = pol.get_distribution(x, action_masks=masks)
    torch.testing.assert_close(dist.log_prob(actions), log_prob)
    # the gradients of a PPO-like loss match the reference's
    adv = torch.tensor([1.0, -0.5, 2.0])
    loss = -(adv * lp2).mean() + 0.5 * (v2.squeeze(1) ** 2).mean() - 0.01 * ent.mean()
    grads = torch.autograd.grad(loss, list(pol.parameters()))
    logits, value = reference_heads(pol, x)
    ref = torch.distributions.Categorical(logits=logits.masked_fill(~legal, float("-inf")))
    ref_loss = (
        -(adv * ref.log_prob(actions).sum(1)).mean()
        + 0.5 * (value.squeeze(1) ** 2).mean()
        - 0.01 * ref.entropy().sum(1).mean()
    )
    ref_grads = torch.autograd.grad(ref_loss, list(pol.parameters()))
    for (name, _), a, b in zip(pol.named_parameters(), grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def test_slot_policy__numpy_rollout_pass_is_the_torch_pass():
    """Without gradients ``forward`` and ``predict_values`` run ``agents.rollout``'s numpy
    pass: the torch pass's values and log-probabilities to float32 rounding and, from the
    same torch seed, the same draws (sampled and deterministic), also for a slot with no legal choice; after
    an optimizer step it reads the updated weights (views, not copies)."""
    pol, lay, _env = make_policy()
    with torch.no_grad():
        g = torch.Generator().manual_seed(7)
        for p in pol.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    S, K = lay.num_slots, lay.max_count + 1
    xs, ms = [], []
    for seed, steps in ((3, 40), (4, 40), (5, 0), (6, 80)):
        env, o = env_obs(seed=seed, steps=steps)
        xs.append(lay.pool(o))
        ms.append(env.action_masks())
    x = torch.as_tensor(np.stack(xs))
    masks = np.stack(ms)
    masks[3, :K] = False  # a slot with no legal choice: all count as legal
    assert ((x[:, : S * lay.slot_dim].reshape(4, S, -1)[..., 0]) == 0).any()  # an empty slot

    def both(deterministic: bool, m=masks):
        out = []
        for grad in (True, False):  # the torch pass with gradients, the numpy one without
            torch.manual_seed(11)
            with torch.set_grad_enabled(grad):
                out.append([t.detach() for t in pol(x, deterministic, m)])
        return out

    for det, m in ((False, masks), (True, masks), (False, None)):
        (a, v, lp), (a2, v2, lp2) = both(det, m)
        assert a2.dtype == a.dtype and a2.shape == a.shape == (4, S)
        assert torch.equal(a2, a)
        torch.testing.assert_close(v2, v, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lp2, lp, rtol=1e-5, atol=1e-5)
    assert torch.isfinite(lp2).all()
    with torch.no_grad():  # predict_values (SB3's bootstrap of truncated episodes) too
        v_np = pol.predict_values(x)
    torch.testing.assert_close(v_np, pol.predict_values(x).detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(v_np, v2)
    with torch.no_grad():  # fresh draws at each call
        assert not torch.equal(*[pol(x, action_masks=masks)[0] for _ in range(2)])
    # the optimizer updates the parameters in place: the numpy pass sees the new weights
    loss = pol.evaluate_actions(x, a, action_masks=masks)[0].sum()
    pol.optimizer.zero_grad()
    loss.backward()
    pol.optimizer.step()
    (_, v, lp), (_, v2, lp2) = both(True)
    torch.testing.assert_close(v2, v, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lp2, lp, rtol=1e-5, atol=1e-5)
    pol.to("cpu").float()  # (re-binds its views)
    torch.testing.assert_close(both(True)[1][1], v2)


def test_legal_top__is_the_masked_amax_with_the_no_legal_fallback():
    """``_legal_top`` (the distribution's per-slot shift, CPU): torch's amax over the legal
    entries (illegal at -1e8), over all entries in a slot without a legal one, NaN kept."""
    from agents.slot_dist import _legal_top

    g = torch.Generator().manual_seed(3)
    raw = torch.randn(6, 4, 5, generator=g) * 50
    legal = (torch.rand(6, 4, 5, generator=g) > 0.5).float()
    legal[..., 4] = 1.0
    legal[0, 1] = 0.0  # the one slot without a legal choice
    legal[1, 2] = 1.0
    raw[2, 0, 3] = float("nan")
    legal[2, 0, 3] = 1.0
    top = torch.empty(6, 4, 1)
    assert _legal_top(raw.numpy(), legal.numpy(), top.numpy())
    eff = legal + (legal.sum(-1, keepdim=True) == 0)
    ref = (raw + (eff - 1.0) * 1e8).amax(-1, keepdim=True)
    assert torch.isnan(top[2, 0]).all() and torch.isnan(ref[2, 0]).all()
    ok = ~torch.isnan(ref)
    assert torch.equal(top[ok], ref[ok])
    legal[0, 1, 0] = 1.0
    assert not _legal_top(raw.numpy(), legal.numpy(), top.numpy())


def test_slot_categorical__exact_and_finite_at_extreme_logits():
    """Illegal choices far above the legal ones and legal ones far below their slot's best:
    the masked log-probabilities, entropy and gradients stay finite and exact (float64
    reference), and no illegal choice is drawn."""
    S, K = 3, 6
    raw = torch.tensor(
        [[0.0, 1.0, 300.0, -250.0, 2.0, 500.0], [5.0, -400.0, 0.0, 0.0, 0.0, 0.0], [0.0] * K],
    ).reshape(1, S * K)
    legal = torch.tensor(
        [[1, 1, 0, 1, 1, 0], [1, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=torch.bool
    ).reshape(1, S * K)
    raw.requires_grad_(True)
    dist = SlotCategorical(S, K).proba_distribution(raw)
    dist.apply_masking(legal.numpy())
    acts = torch.tensor([[3, 1, 0]])
    ent = dist.entropy()
    lp = dist.log_prob(acts)
    (lp + ent).sum().backward()
    r64 = raw.detach().double().reshape(S, K).masked_fill(~legal.reshape(S, K), float("-inf"))
    ref = torch.distributions.Categorical(logits=r64)
    assert torch.isfinite(lp).all() and torch.isfinite(ent).all()
    assert torch.isfinite(raw.grad).all()
    np.testing.assert_allclose(lp.item(), ref.log_prob(acts[0]).sum().item(), rtol=1e-6)
    np.testing.assert_allclose(ent.item(), ref.entropy().sum().item(), rtol=1e-5, atol=1e-6)
    assert (raw.grad.reshape(S, K)[~legal.reshape(S, K)] == 0).all()
    torch.manual_seed(0)
    for _ in range(50):
        assert legal.reshape(S, K).gather(-1, dist.sample().reshape(S, 1)).all()
    # a slot with no legal choice (never from the env) is treated as all legal: finite, and
    # uniform on equal logits as sb3-contrib's -1e8 masking makes it (whose float32
    # log-probability there comes out 0 rather than -log K)
    none = legal.clone().reshape(S, K)
    none[2] = False
    ours = SlotCategorical(S, K).proba_distribution(raw.detach())
    ours.apply_masking(none.reshape(1, -1).numpy())
    eff = none.clone()
    eff[2] = True
    raw64 = raw.detach().double().reshape(S, K)
    ref = torch.distributions.Categorical(logits=raw64.masked_fill(~eff, float("-inf")))
    np.testing.assert_allclose(
        ours.log_prob(acts).item(), ref.log_prob(acts[0]).sum().item(), rtol=1e-6
    )
    np.testing.assert_allclose(ours.entropy().item(), ref.entropy().sum().item(), rtol=1e-5)
    assert abs(ours.logp[0, 2, 0].item() + np.log(K)) < 1e-6


@pytest.fixture(scope="module")
def pooled_agent(tmp_path_factory, tiny_train) -> Path:
    return tiny_train(tmp_path_factory.mktemp("pooled"))


def test_pooled_agent__play_takes_the_env_and_predict_decisions(pooled_agent):
    from agents.policy import AgentPolicy
    from mtgym.policy.play import play

    agent = AgentPolicy(pooled_agent, deterministic=True)  # predict's mode, to compare
    assert agent.config.observation == "pooled" and agent.config.sample
    kw = agent.config.env_kwargs() | {"horizon_s": 2 * 3600}
    env = PooledObservation(ScavengeEnv("default", **kw))
    obs, _ = env.reset(seed=300)
    actions = []
    while True:
        a, _ = agent.model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        actions.append(np.asarray(a, dtype=np.int64))
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    seen = []
    decide = agent.decide

    class Spy:
        name, info_mode = agent.name, agent.info_mode
        decision_interval_s = agent.decision_interval_s  # the env's (from agent.json)

        def reset(self, view):
            agent.reset(view)

        def decide(self, view):
            alloc = decide(view)
            o = agent.observer.observe(view)
            seen.append(agent.act(o, agent.observer.mask))
            return alloc

    res = play(env.unwrapped.instance, Spy())
    assert res.decisions == len(actions) > 10
    for k, (a, b) in enumerate(zip(actions, seen, strict=True)):
        assert np.array_equal(a, b), f"decision {k}"
    assert res.metrics.samples == info["metrics"]["samples"]


def test_pooled_agent__sampling_is_seeded_per_episode(pooled_agent):
    from agents.policy import AgentPolicy
    from mtgym.policy.play import play

    inst = replace(default_generator(), horizon_s=2 * 3600.0)(7)
    sampled = AgentPolicy(pooled_agent)
    assert not sampled.deterministic  # agent.json: sample
    first, second = play(inst, sampled), play(inst, sampled)
    key = (first.metrics.samples, first.metrics.rescales, first.decisions)
    assert (second.metrics.samples, second.metrics.rescales, second.decisions) == key
    mode = play(inst, AgentPolicy(pooled_agent, deterministic=True))
    assert (mode.metrics.samples, mode.metrics.rescales) != key[:2]


def test_slot_categorical__draws_follow_the_masked_probabilities():
    S, K, B = 3, 5, 20_000
    g = torch.Generator().manual_seed(1)
    logits = (torch.randn(1, S * K, generator=g) * 2).expand(B, -1)
    masks = torch.ones(B, S * K, dtype=torch.bool)
    masks.view(B, S, K)[:, 1, 2] = False
    dist = SlotCategorical(S, K)
    dist.proba_distribution(logits)
    dist.apply_masking(masks.numpy())
    torch.manual_seed(0)
    draws = dist.sample()
    freq = torch.nn.functional.one_hot(draws, K).double().mean(0)
    probs = dist.logp[0].exp().double()
    assert freq[1, 2] == 0.0
    # binomial standard error at B = 20,000 is <= 0.0036: 5 of them
    torch.testing.assert_close(freq, probs, rtol=0.0, atol=0.018)


def test_slot_policy__loads_weights_saved_before_the_concat_layers_were_split():
    """Models saved with ``mix_net`` and ``head`` (one Linear of [slot, context]) load into
    the split layers and compute the same logits."""
    pol, lay, _env = make_policy()
    _e, o = env_obs(seed=3)
    x = torch.as_tensor(lay.pool(o)).unsqueeze(0)
    sd = pol.state_dict()
    old = {}
    for k, v in sd.items():
        for new, first, second in (
            ("mix_net.0", "mix_slot", "mix_ctx"),
            ("head", "head_slot", "head_ctx"),
        ):
            if k.endswith(first + ".weight"):
                other = sd[k.replace(first, second)]
                old[k.replace(first, new)] = torch.cat([v, other], dim=1)
                break
            if k.endswith(first + ".bias"):
                old[k.replace(first, new)] = v
                break
            if k.endswith(second + ".weight"):
                break
        else:
            old[k] = v
    assert any("mix_net.0.weight" in k for k in old) and any("head.weight" in k for k in old)
    fresh, _, _ = make_policy(seed=7)
    fresh.load_state_dict(old)
    with torch.no_grad():
        a = pol.action_net(pol.extract_features(x, pol.pi_features_extractor))
        b = fresh.action_net(fresh.extract_features(x, fresh.pi_features_extractor))
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_pooled_vec_env__gives_what_the_wrapped_dummy_vec_env_gives():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.train import Args, make_env_fn, make_vec_env
    from agents.vec import PooledVecEnv

    args = Args(n_envs=3, seed=2)
    fast = make_vec_env(args)
    assert isinstance(fast, PooledVecEnv)
    ref = DummyVecEnv([make_env_fn(args, i) for i in range(args.n_envs)])
    for v in (fast, ref):
        v.seed(11)
    o1, o2 = fast.reset(), ref.reset()
    np.testing.assert_array_equal(o1, o2)
    assert fast.get_attr("layout")[0] == ref.get_attr("layout")[0]
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(420):  # 180 steps per episode: every env ends twice
        m1 = np.stack(fast.env_method("action_masks"))
        np.testing.assert_array_equal(m1, np.stack(ref.env_method("action_masks")))
        acts = np.stack([e.unwrapped.sample_valid(rng) for e in fast.envs])
        (a, r1, d1, i1), (b, r2, d2, i2) = fast.step(acts), ref.step(acts)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(d1, d2)
        for x, y in zip(i1, i2, strict=True):
            assert x["TimeLimit.truncated"] == y["TimeLimit.truncated"]
            assert x["dt"] == y["dt"] and x["samples"] == y["samples"]
            assert ("episode" in x) == ("episode" in y)
            if "episode" in x:
                episodes += 1
                assert (x["episode"]["r"], x["episode"]["l"]) == (
                    y["episode"]["r"],
                    y["episode"]["l"],
                )
                np.testing.assert_array_equal(x["terminal_observation"], y["terminal_observation"])
    assert episodes >= 6
    assert fast.has_attr("action_masks")


def test_slot_policy__resumes_adam_state_saved_before_the_split():
    """A pre-split checkpoint's optimizer state (one moment tensor per concat weight) loads
    into the split layers: each takes its columns, the rest passes unchanged."""
    pol, lay, _env = make_policy()
    _e, o = env_obs(seed=3)
    x = torch.as_tensor(lay.pool(o)).unsqueeze(0)
    pol.optimizer.zero_grad()
    pol.value_net(pol.extract_features(x, pol.pi_features_extractor)).sum().backward()
    (pol.action_net(pol.extract_features(x, pol.pi_features_extractor)) ** 2).sum().backward()
    pol.optimizer.step()
    new = pol.optimizer.state_dict()
    names = [n for n, _ in pol.named_parameters()]
    old_state, pos = {}, 0
    for i, n in enumerate(names):
        if n.endswith(("mix_ctx.weight", "head_ctx.weight")):
            continue
        st = dict(new["state"][i])
        for first, second in (("mix_slot", "mix_ctx"), ("head_slot", "head_ctx")):
            if n.endswith(f"{first}.weight"):
                j = names.index(n.replace(first, second))
                for k in ("exp_avg", "exp_avg_sq"):
                    st[k] = torch.cat([st[k], new["state"][j][k]], dim=1)
        old_state[pos] = st
        pos += 1
    old = {
        "state": old_state,
        "param_groups": [{**new["param_groups"][0], "params": list(range(pos))}],
    }
    fresh, _, _ = make_policy(seed=7)
    fresh.optimizer.load_state_dict(old)
    got = fresh.optimizer.state_dict()
    assert len(got["state"]) == len(names)
    for i in range(len(names)):
        for k in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(got["state"][i][k], new["state"][i][k], rtol=0, atol=0)


def test_pooled_vec_env__mixes_cluster_sizes_under_one_layout():
    from agents.train import Args, make_vec_env

    v = make_vec_env(Args(n_envs=4, num_nodes=(32, 96)))
    assert [e.unwrapped.num_nodes for e in v.envs] == [32, 96, 32, 96]
    obs = v.reset()
    assert obs.shape == (4, v.layout.size)
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, rew, _, _ = v.step(np.stack([e.unwrapped.sample_valid(rng) for e in v.envs]))
    assert np.isfinite(obs).all() and np.isfinite(rew).all()
    with pytest.raises(ValueError, match="num_nodes"):
        make_vec_env(Args(scenario="hetero-mix", n_envs=2, num_nodes=(32,)))
