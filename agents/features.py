"""A permutation-invariant features extractor for ``mtgym/Scavenge-v0``'s Dict observation.

Nodes are a *set*: each node row goes through a shared MLP; the set is summarised by masked
mean and max pooling over the idle nodes, and each job slot gets the mean embedding of the
nodes it holds (a scatter through the ``node_job`` map). So the network never depends on the
number of nodes, and one set of weights runs on clusters of any size (with the same slot
count, count cap and topology depth). Job slots keep their order (FCFS admission), so their
embeddings are concatenated: the MultiDiscrete heads read slot i from position i.
"""

from __future__ import annotations

import itertools

import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear + ReLU layers.

    Args:
        sizes: the widths [in, hidden..., out]; one ``Linear`` per consecutive pair.

    Returns:
        A ``Sequential`` with a ReLU after every ``Linear``, the last one included (its
        outputs are >= 0; add a bare ``Linear`` for a signed output, as ``SlotValue``).
    """
    layers: list[nn.Module] = []
    for a, b in itertools.pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


class SetFeatures(BaseFeaturesExtractor):
    """DeepSets over nodes, per-slot job embeddings, global features (module docstring).

    ``features_dim`` is S*d + 2d + G (G: the env's global features).

    Args:
        observation_space: ``ScavengeEnv``'s Dict observation space: it fixes S, the
            feature widths and G, not the node count.
        embed_dim: d, the width of the node and slot embeddings (``mtgym train`` passes
            its ``--embed-dim``).
        context: each slot's embedding also sees the others (their mean) and the node
            pool (``mtgym train``'s default; ``--no-context`` turns it off).
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        embed_dim: int = 64,
        context: bool = False,
    ) -> None:
        node_dim = observation_space["nodes"].shape[-1]
        slots, job_dim = observation_space["jobs"].shape
        points = observation_space["job_curve"].shape[-1]
        glob = observation_space["global"].shape[0]
        d = embed_dim
        super().__init__(observation_space, features_dim=slots * d + 2 * d + glob)
        self.slots = slots
        self.node_net = mlp([node_dim, d, d])
        self.job_net = mlp([job_dim + 2 * points + d + 1, d, d])
        # ``context``: every slot's embedding also sees the others (their mean) and the idle
        # pool, so a slot's count can depend on the competing jobs and the supply (what an
        # allocator needs); without it only the policy MLP mixes the slots.
        self.context = context
        if context:
            self.ctx_net = mlp([3 * d + glob, d])
            self.mix_net = mlp([2 * d, d, d])

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """(batch, features_dim).

        Args:
            obs: the env's observation as (B, ...) float tensors by key: ``nodes``
                (B, N, node_dim), ``node_mask`` (B, N), ``node_job`` (B, N: the slot, -1
                none), ``jobs``, ``job_curve``, ``job_curve_known``, ``job_mask`` (B, S)
                and ``global`` (B, G); any N.

        Returns:
            (B, S*d + 2d + G): the slot embeddings in slot order (an empty slot's all
            zeros), the mean and the max node embedding over ``node_mask``'s nodes (zeros
            when there are none), then ``global``.
        """
        nodes, mask = obs["nodes"], obs["node_mask"]
        h = self.node_net(nodes)  # (B, N, d)
        m = mask.unsqueeze(-1)
        count = m.sum(dim=1).clamp(min=1.0)
        mean = (h * m).sum(dim=1) / count
        big_neg = torch.finfo(h.dtype).min
        mx = torch.where(m > 0, h, torch.full_like(h, big_neg)).max(dim=1).values
        mx = torch.where(count > 0, mx, torch.zeros_like(mx))
        mx = torch.where(mask.sum(dim=1, keepdim=True) > 0, mx, torch.zeros_like(mx))
        # nodes held by each slot: one-hot over slots (-1 = none drops out)
        idx = obs["node_job"].long().clamp(min=-1) + 1  # (B, N) in 0..S
        onehot = nn.functional.one_hot(idx, self.slots + 1)[..., 1:].to(h.dtype)  # (B, N, S)
        held = onehot.sum(dim=1)  # (B, S)
        per_slot = torch.einsum("bns,bnd->bsd", onehot, h) / held.clamp(min=1.0).unsqueeze(-1)
        n_nodes = nodes.shape[1]
        job_in = torch.cat(
            [
                obs["jobs"],
                obs["job_curve"],
                obs["job_curve_known"],
                per_slot,
                (held / n_nodes).unsqueeze(-1),
            ],
            dim=-1,
        )
        jm = obs["job_mask"].unsqueeze(-1)
        jobs = self.job_net(job_in) * jm
        if self.context:
            jobs_mean = jobs.sum(dim=1) / jm.sum(dim=1).clamp(min=1.0)
            ctx = self.ctx_net(torch.cat([jobs_mean, mean, mx, obs["global"]], dim=1))
            ctx = ctx.unsqueeze(1).expand(-1, self.slots, -1)
            jobs = self.mix_net(torch.cat([jobs, ctx], dim=-1)) * jm
        return torch.cat([jobs.flatten(1), mean, mx, obs["global"]], dim=1)
