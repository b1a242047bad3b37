"""``SlotRLModule``: a scale-free per-slot PPO module for RLlib (``--rllib-module slot``).

RLlib's default MLP reads the flat vector of one machine: its input width is tied to the
node and slot counts, so the agent runs only where it trained. This module reads, from the
``"masked"`` layout of the ``shares`` mode, only what means the same on every machine (the
``ScavengeEnv`` docstring): each slot's ``job_scale`` and ``job_shape`` rows and presence,
and the pool's ``global_scale``. One network, shared by every slot, embeds a slot (with the
pool's summary and the mean of the present slots' embeddings, so a slot sees the others)
and gives its 34 logits; the critic reads the mean embedding and the pool. The weights do
not depend on S or N: ``rllib-agent`` rebuilds the module for another machine and loads
them (``for_machine``).

The observation's slices come in ``model_config["slices"]`` (``mtgym.env.layout.ObsLayout``
of the env the module serves); illegal choices get RLlib's ``FLOAT_MIN`` logit (as its
masking example), so they are never drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import (
    TorchCategorical,
    TorchDeterministic,
)
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN
from torch import nn

from mtgym.env.layout import MASK_KEY, OBSERVATIONS_KEY, ObsLayout

#: The flat observation's keys the module reads (all scale-free).
SLOT_KEYS = ("job_scale", "job_shape", "job_mask")
GLOBAL_KEY = "global_scale"


def slot_model_config(layout: ObsLayout, embed_dim: int = 32) -> dict[str, Any]:
    """``model_config`` for a ``SlotRLModule`` serving envs of this layout.

    Args:
        layout: the env's ``ObsLayout`` (``"masked"``, ``shares`` mode).
        embed_dim: the slot embedding's width.

    Returns:
        ``{"slices": key -> (start, stop, shape), "embed_dim": ...}`` (plain Python: it is
        pickled into checkpoints).

    Raises:
        ValueError: the layout has no scale-free keys (not the ``shares`` mode).
    """
    missing = [k for k in (*SLOT_KEYS, GLOBAL_KEY) if k not in layout.slices]
    if missing:
        raise ValueError(f"the slot module needs the shares mode's scale-free keys {missing}")
    slices = {
        k: (layout.slices[k].start, layout.slices[k].stop, tuple(layout.shapes[k]))
        for k in (*SLOT_KEYS, GLOBAL_KEY)
    }
    return {"slices": slices, "embed_dim": int(embed_dim)}


class SlotCategorical(TorchCategorical):
    """One categorical per slot, every slot with ``choices`` choices, as one torch
    ``Categorical`` of batch shape (B, S): the logits (B, S x choices) are viewed as
    (B, S, choices); log-probabilities, entropies and KLs are summed over the slots, as
    RLlib's ``TorchMultiCategorical`` sums its S distributions (the same values,
    ``tests/agents/test_rllib.py``), without building S objects at every step.

    Args:
        logits: (..., S x choices) unnormalised log-probabilities (masked ones at
            ``FLOAT_MIN``).
        choices: the choices per slot.
    """

    def __init__(self, logits: Any = None, probs: Any = None, choices: int = 34) -> None:
        super().__init__(logits=logits.reshape(*logits.shape[:-1], -1, choices))

    def logp(self, value: Any, **kwargs: Any) -> Any:
        """Log P(value), (B,): the slots' log-probabilities summed."""
        return self._dist.log_prob(value).sum(-1)

    def entropy(self) -> Any:
        """The slots' entropies summed, (B,)."""
        return self._dist.entropy().sum(-1)

    def kl(self, other: Any) -> Any:
        """KL(self || other) summed over the slots, (B,)."""
        return torch.distributions.kl.kl_divergence(self._dist, other._dist).sum(-1)

    def to_deterministic(self) -> Any:
        """Each slot's most likely choice."""
        return TorchDeterministic(loc=torch.argmax(self.logits, dim=-1))


class SlotRLModule(TorchRLModule, ValueFunctionAPI):
    """The per-slot module (module docstring); ``model_config``: ``slot_model_config``."""

    def setup(self) -> None:
        """Build the slot encoder, the per-slot policy head and the critic."""
        cfg = self.model_config
        self.slices = cfg["slices"]
        self.choices = int(np.asarray(self.action_space.nvec).reshape(-1)[0])
        d = int(cfg.get("embed_dim", 32))
        scale, shape = self.slices["job_scale"][2][-1], self.slices["job_shape"][2][-1]
        glob = self.slices[GLOBAL_KEY][2][-1]
        self.encoder = nn.Sequential(
            nn.Linear(scale + shape + 1 + glob, d), nn.Tanh(), nn.Linear(d, d)
        )
        self.head = nn.Sequential(
            nn.Tanh(), nn.Linear(2 * d, d), nn.Tanh(), nn.Linear(d, self.choices)
        )
        self.critic = nn.Sequential(nn.Linear(d + glob, d), nn.Tanh(), nn.Linear(d, 1))
        # every slot's categorical in one distribution (RLlib has no default for a
        # MultiDiscrete space; its TorchMultiCategorical builds S of them per step)
        self.action_dist_cls = SlotCategorical.get_partial_dist_cls(choices=self.choices)

    def _embed(self, obs: dict[str, Any]) -> tuple[Any, Any, Any]:
        """Slot embeddings (B, S, d), their present-slot mean (B, d) and the pool (B, G) of
        a batch of observations.
        """
        flat = obs[OBSERVATIONS_KEY]
        part = {
            k: flat[..., a:b].reshape(flat.shape[0], *shp) for k, (a, b, shp) in self.slices.items()
        }
        present, pool = part["job_mask"], part[GLOBAL_KEY]
        slots = present.shape[1]
        x = torch.cat(
            (
                part["job_scale"],
                part["job_shape"],
                present[..., None],
                pool[:, None, :].expand(-1, slots, -1),
            ),
            dim=-1,
        )
        h = self.encoder(x)
        weight = present / present.sum(dim=1, keepdim=True).clamp(min=1.0)
        return h, (h * weight[..., None]).sum(dim=1), pool

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The masked per-slot logits, laid out as the mask (S x choices)."""
        obs = batch[Columns.OBS]
        h, mean, _ = self._embed(obs)
        context = mean[:, None, :].expand(-1, h.shape[1], -1)
        logits = self.head(torch.cat((h, context), dim=-1)).reshape(h.shape[0], -1)
        illegal = torch.clamp(torch.log(obs[MASK_KEY]), min=FLOAT_MIN)
        return {Columns.ACTION_DIST_INPUTS: logits + illegal}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        """The critic's value of each observation, (B,)."""
        _, mean, pool = self._embed(batch[Columns.OBS])
        return self.critic(torch.cat((mean, pool), dim=-1)).squeeze(-1)


def for_machine(module: Any, layout: ObsLayout, action_space: Any) -> Any:
    """The same weights in a ``SlotRLModule`` sized for another machine (another S, N).

    Args:
        module: a trained ``SlotRLModule``.
        layout: the other machine's ``"masked"`` ``ObsLayout``.
        action_space: its action space (``MultiDiscrete([34] * S)``).

    Returns:
        A new module (inference only) with ``module``'s weights.
    """
    cfg = slot_model_config(layout, module.model_config.get("embed_dim", 32))
    new = SlotRLModule(observation_space=layout.space, action_space=action_space, model_config=cfg)
    new.load_state_dict(module.state_dict())
    new.eval()
    return new
