"""Behaviour cloning from a baseline, to start PPO from a competent policy.

``collect(...)`` plays episodes in the env while an *expert* (any registered view-based
policy, e.g. FreeTrain's MILP) decides; its allocation is turned into the env's action
(the codec's ``encode``: ``counts``, each slot's node count; ``delta``, shrink / keep /
grow towards it; ``assign``, each node's slot; ``shares``, keep, stop or a level near the
count) and the (observation, action, mask) triples are kept. ``pretrain(model, data)``
maximises the masked log-likelihood of the expert's actions under the policy (a few
supervised epochs), then PPO fine-tunes as usual. This is the standard "imitate, then
improve" recipe; the expert only ever sees its own information-limited view.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np

from mtgym.env.actions.budget import prefix_feasible
from mtgym.env.env import ScavengeEnv
from mtgym.policy.registry import make_policy
from mtgym.sim.view import ViewBuilder


@dataclass
class Demonstrations:
    """Stacked observations (dict of arrays, or one array when pooled), actions and masks.

    Row i of each is one labelled state; only states whose expert action the masks allow
    are kept (``collect``).

    Attributes:
        obs: the env's observations stacked per key, each (n, ...), or (n, size) pooled
            vectors (``agents.pooled``).
        actions: (n, A) the expert's env actions.
        masks: (n, sum of nvec) the env's legal-action masks at those states.
    """

    obs: dict[str, np.ndarray] | np.ndarray
    actions: np.ndarray
    masks: np.ndarray

    def __len__(self) -> int:
        """n, the labelled states."""
        return int(self.actions.shape[0])


def expert_action(env: ScavengeEnv, node_job: np.ndarray) -> np.ndarray:
    """The env action that realises (as closely as the mode allows) an expert's node map.

    Args:
        env: the (unwrapped) env in the state the expert decided on.
        node_job: (N,) the expert's job index per node, -1 = idle (``Allocation``).

    Returns:
        (A,) the action in the env's mode (its codec's ``encode``).
    """
    return env.codec.encode(node_job, env.state, env.instance, env.slots)


def collect(
    scenario: Any,
    expert: str,
    seeds: list[int],
    env_kwargs: dict,
    *,
    actor=None,
    pooled: bool = False,
    budget: bool = False,
) -> Demonstrations:
    """Episodes on ``seeds`` labelled by the expert.

    Without ``actor`` the env follows the expert (behaviour cloning); with a model as
    ``actor`` the env follows the model's draws (``predict(deterministic=False)``: the
    agent plays by sampling, and its most likely action alone is a different, much weaker
    policy) while the expert labels the states it visits (DAgger), which corrects the
    drift of a cloned policy into states the expert never saw.

    Args:
        scenario: a scenario name or file, a seeded generator, or a list of either with
            one entry per seed (e.g. one cluster size per seed).
        expert: the registered policy that labels, configured as ``mtgym evaluate`` runs
            it on each scenario (its T_fwd).
        seeds: the episodes' seeds.
        env_kwargs: ``ScavengeEnv`` keywords (the agent's action mode, slots, interval).
        actor: None (the expert drives) or an SB3 model (it drives; DAgger).
        pooled: keep ``agents.pooled``'s flat vectors rather than the Dict observations.
        budget: keep the envs' budget masks (``mtgym.env.actions.budget``; ``shares``) for
            a policy that draws the slots in order, each label lowered to what that order
            allows (``prefix_feasible``: a grow that needs the nodes a later slot's stop
            frees gets what is left) while the env still follows the expert's own action,
            and the actor given them.

    Returns:
        The labelled states whose expert action the masks allow (with ``budget``, every
        state: its label is made feasible).

    Raises:
        ValueError: a list of scenarios whose length is not that of ``seeds``, or a seed
            of the benchmark's test split (``mtgym.benchmark.splits.refuse_test_seeds``).
    """
    from mtgym.benchmark.splits import refuse_test_seeds
    from mtgym.evaluate import configure_policy, scenario_defaults

    what = "behaviour cloning" if actor is None else "DAgger"
    refuse_test_seeds(seeds, what=f"{what} (agents.imitation.collect)")
    gens = _generators(scenario, len(seeds))
    obs_list: list[dict[str, np.ndarray]] = []
    acts, masks = [], []
    for seed, gen in zip(seeds, gens, strict=True):
        defaults = scenario_defaults(gen)  # (the expert as evaluate runs it: its T_fwd)
        inst = gen(seed)
        env = ScavengeEnv(inst, **env_kwargs)
        obs, _ = env.reset(seed=seed)
        if pooled:
            from agents.pooled import PooledLayout

            layout = PooledLayout.for_env(env)
            obs = layout.pool(obs)
        policy = configure_policy(make_policy(expert), defaults)
        views = ViewBuilder(env.instance, policy.info_mode, policy_name=policy.name)
        policy.reset(views(env.state))
        while True:
            alloc = policy.decide(views(env.state))
            action, label, mask = _labelled(env, np.asarray(alloc.node_job), budget)
            if _allowed(env, label, mask):
                obs_list.append(obs)
                acts.append(label)
                masks.append(mask)
            if actor is not None:
                action, _ = actor.predict(obs, action_masks=mask, deterministic=False)
            obs, _, term, trunc, _ = env.step(action)
            if pooled:
                obs = layout.pool(obs)
            if term or trunc:
                break
    if pooled:
        return Demonstrations(np.stack(obs_list), np.stack(acts), np.stack(masks))
    stacked = {k: np.stack([o[k] for o in obs_list]) for k in obs_list[0]}
    return Demonstrations(stacked, np.stack(acts), np.stack(masks))


def _labelled(
    env: ScavengeEnv, node_job: np.ndarray, budget: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the expert's action, its label, the mask) at the env's state: with ``budget`` the
    label is what the slot order allows (``prefix_feasible``) and the mask the budget mask,
    while the env still follows the expert's own action; else the action is its label.
    """
    action = expert_action(env, node_job)
    if not budget:
        return action, action, env.action_masks()
    mask = env.budget_masks()
    label = action.copy()
    prefix_feasible(mask, label, int(env.action_space.nvec[0]))
    return action, label, mask


def _allowed(env: ScavengeEnv, label: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the masks allow every entry of ``label`` (joint limits are the env's repair:
    only demonstrations the masks allow are kept).
    """
    off, ok = 0, True
    for k, a in zip(env.action_space.nvec, label, strict=True):
        ok &= bool(mask[off + int(a)] > 0)
        off += int(k)
    return ok


def _generators(scenario: Any, n: int) -> list[Any]:
    """``collect``'s ``scenario`` as one seeded generator per episode (a name or file is
    read once, not once per episode); ``ValueError`` when a list has not ``n`` entries.
    """
    from mtgym.scenario.registry import get_generator

    def generator(sc: Any) -> Any:
        return get_generator(sc) if isinstance(sc, str | PathLike) else sc

    if not isinstance(scenario, list):
        return [generator(scenario)] * n
    gens = [generator(sc) for sc in scenario]
    if len(gens) != n:
        raise ValueError(f"{len(gens)} scenarios for {n} seeds")
    return gens


def merge(a: Demonstrations, b: Demonstrations) -> Demonstrations:
    """Concatenate two demonstration sets (``a``'s rows first), e.g. the cloning set and a
    DAgger round's.

    Args:
        a: one set.
        b: another, of the same observation kind (both pooled or both Dict, same keys).
    """
    if isinstance(a.obs, np.ndarray):
        obs: dict[str, np.ndarray] | np.ndarray = np.concatenate([a.obs, b.obs])
    else:
        obs = {k: np.concatenate([a.obs[k], b.obs[k]]) for k in a.obs}
    return Demonstrations(
        obs, np.concatenate([a.actions, b.actions]), np.concatenate([a.masks, b.masks])
    )


def pretrain(
    model,
    data: Demonstrations,
    *,
    epochs: int = 10,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
) -> list[float]:
    """Supervised epochs on the masked log-likelihood; returns the loss per epoch.

    Each minibatch takes a step of a fresh Adam (not the model's optimizer) on minus the
    mean log-probability of the expert's actions under the masked policy.

    Args:
        model: an SB3 model whose policy's ``get_distribution`` takes ``action_masks``
            (MaskablePPO), trained in place.
        data: the demonstrations, of the observation kind the model reads.
        epochs: passes over ``data``.
        batch_size: states per minibatch (the last one may be smaller).
        lr: Adam's learning rate.
        seed: the minibatch order's seed (a permutation per epoch).

    Returns:
        One value per epoch: the mean over states of minus the log-probability of the
        action (summed over its dimensions), in nats.
    """
    import torch

    policy = model.policy
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    n = len(data)
    losses = []
    for _ in range(epochs):
        order = rng.permutation(n)
        total = 0.0
        for i in range(0, n, batch_size):
            idx = order[i : i + batch_size]
            if isinstance(data.obs, np.ndarray):
                obs = torch.as_tensor(data.obs[idx], dtype=torch.float32)
            else:
                obs = {k: torch.as_tensor(v[idx], dtype=torch.float32) for k, v in data.obs.items()}
            act = torch.as_tensor(data.actions[idx])
            dist = policy.get_distribution(obs, action_masks=data.masks[idx])
            loss = -dist.log_prob(act).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * idx.size
        losses.append(total / n)
    return losses
