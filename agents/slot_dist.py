"""The masked categorical over job slots that ``agents.net.SlotPolicy`` samples from.

``SlotCategorical`` is a masked categorical of its own rather than sb3-contrib's
``MaskableMultiCategoricalDistribution`` or one torch ``Categorical`` because it is faster
with the same values (issue 37; ``scripts/bench_masked_dist.py``, ``docs/performance.md``).
On the 2-core development VM, one torch thread, a minibatch of 256 with the ``shares`` head
(64 slots x 34 choices) spent 9 ms in it (masking, log-probabilities, entropy, backward)
against 69 ms in sb3-contrib's and 27 ms in torch's; over the shapes measured (B 256 and
2048, S x K 64 x 34 and 16 x 17, with or without the backward) it was 2.4 to 8.9 times as
fast as sb3-contrib's and 1.6 to 3.2 times as torch's (medians, two trainings loading the
cores), log-probabilities and entropies equal to 3e-7 (relative).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numba import njit
from sb3_contrib.common.maskable.distributions import MaskableDistribution
from torch import nn


@njit(cache=True)
def _legal_top(raw: np.ndarray, legal: np.ndarray, top: np.ndarray) -> bool:  # pragma: no cover
    """Into ``top`` (B, S, 1): each slot's largest legal entry of ``raw`` (B, S, K), over all
    entries in a slot without a legal one (NaN if one is NaN, as ``amax``); returns whether
    any slot had no legal entry.

    Args:
        raw: (B, S, K) float32 logits, C-contiguous.
        legal: (B, S, K) float32, nonzero for a legal choice.
        top: (B, S, 1) float32, written.
    """
    B, S, K = raw.shape
    none_any = False
    for b in range(B):
        for s in range(S):
            any_legal = False
            for k in range(K):
                if legal[b, s, k] != 0.0:
                    any_legal = True
                    break
            none_any = none_any or not any_legal
            best = -np.inf
            for k in range(K):
                if any_legal and legal[b, s, k] == 0.0:
                    continue
                v = raw[b, s, k]
                if v > best or v != v:
                    best = v
                    if v != v:
                        break
            top[b, s, 0] = best
    return none_any


class SlotCategorical(MaskableDistribution):
    """S independent masked categoricals over K choices each, as one (B, S, K) tensor.

    The same distribution as sb3_contrib's ``MaskableMultiCategoricalDistribution`` for
    equal slot sizes (illegal choices at logit -1e8, entropy over the legal ones), without
    its S ``torch.distributions.Categorical`` objects per call, which cost more than the
    network in training.

    Args:
        num_slots: S of the training env (``proba_distribution`` reads S from the logits'
            width: any S).
        choices: K, the choices per slot.

    Attributes:
        masks: (B, S, K) float, 1.0 legal and 0.0 illegal (a slot with no legal choice
            all 1.0: uniform over its logits); None until ``apply_masking``, or unmasked.
    """

    def __init__(self, num_slots: int, choices: int) -> None:
        super().__init__()
        self.S, self.K = num_slots, choices
        self.masks: torch.Tensor | None = None
        self._raw: torch.Tensor | None = None
        self._logp: torch.Tensor | None = None
        self._parts: tuple[torch.Tensor, ...] | None = None
        self._neg: torch.Tensor | None = None
        self._top: torch.Tensor | None = None  # each slot's largest legal logit (B, S, 1)

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        """A flat ``Linear`` to S*K logits; ``SlotPolicy`` replaces it by ``SlotHead``."""
        return nn.Linear(latent_dim, self.S * self.K)

    def proba_distribution(self, action_logits: torch.Tensor) -> SlotCategorical:
        """Keeps (B, S*K) logits as (B, S, K), S from their width; drops masks and caches."""
        self._raw = action_logits.reshape(action_logits.shape[0], -1, self.K)  # any S
        self.masks = self._logp = self._parts = self._neg = self._top = None
        return self

    def apply_masking(self, masks: Any) -> None:
        """Keeps the masks as a float (B, S, K) (any array type; None: unmasked); on CPU
        float32 a numba pass also finds each slot's largest legal logit for ``_normalise``.
        """
        self._logp = self._parts = self._neg = self._top = None
        if masks is None:
            self.masks = None
            return
        raw = self._raw
        m = torch.as_tensor(masks, dtype=raw.dtype, device=raw.device).reshape(raw.shape)
        if raw.device.type == "cpu" and raw.dtype == torch.float32 and m.is_contiguous():
            # (1.0 legal, 0.0 illegal) each slot's largest legal logit, and whether a slot
            # has no legal choice, in one pass: a tenth of torch's reductions along K
            self._top = torch.empty((*raw.shape[:-1], 1), dtype=raw.dtype)
            raw_np = raw.detach().contiguous().numpy()
            none_any = _legal_top(raw_np, m.numpy(), self._top.numpy())
        else:
            none_any = bool((m.sum(dim=-1) == 0).any())
        if none_any:  # a slot with no legal choice: all of them, as sb3-contrib's -1e8
            m = m + (m.sum(dim=-1, keepdim=True) == 0)  # masking makes it (uniform over its
            # logits); the env never does this
        self.masks = m

    def _normalise(self) -> tuple[torch.Tensor, ...]:
        """(y, e, T, log T): the logits less each slot's largest legal one, their
        exponentials (illegal ones 0), each slot's sum T and its log, so that the legal
        log-probabilities are y - log T. Once per distribution (SB3 masks after building
        it), in plain arithmetic. On CPU ``torch.where`` over a boolean mask, and ``exp`` or
        ``log_softmax`` of values whose exponential underflows (the -1e8 of illegal
        choices), each cost several times the rest of this pass; so the mask is a float and
        an illegal choice's exponent is multiplied by it (e^0, then times 0). ``log_prob``
        and ``entropy`` work from these per-slot parts, with no (B, S, K) table of
        log-probabilities or probabilities: the broadcast divisions along K dominated a
        training pass.
        """
        if self._parts is None:
            raw, m = self._raw, self.masks
            top = self._top
            if top is None:
                x = raw.detach() if m is None else raw.detach() + self._offset()
                top = x.amax(dim=-1, keepdim=True)
            y = raw - top
            e = torch.exp(y) if m is None else torch.exp(y * m) * m
            total = e.sum(dim=-1)
            self._parts = (y, e, total, torch.log(total))
        return self._parts

    def _offset(self) -> torch.Tensor:
        """-1e8 for an illegal choice, 0 for a legal one (sb3-contrib's masked logits)."""
        if self._neg is None:
            self._neg = (self.masks - 1.0) * 1e8
        return self._neg

    @property
    def logp(self) -> torch.Tensor:
        """The masked log-probabilities (B, S, K), illegal choices at about -1e8."""
        if self._logp is None:
            y, _e, _t, log_t = self._normalise()
            if self.masks is not None:
                y = y + self._offset()
            self._logp = y - log_t.unsqueeze(-1)
        return self._logp

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """Summed over the slots; an illegal choice's is about -1e8, as sb3-contrib's.

        Args:
            actions: (B, S), or any shape of B*S choice indices (read as B rows of S).

        Returns:
            (B,), differentiable in the logits.
        """
        y, _e, _t, log_t = self._normalise()
        a = actions.long().reshape(self._raw.shape[0], -1, 1)
        lp = y.gather(-1, a).squeeze(-1) - log_t
        if self.masks is not None:
            lp = lp + (self.masks.gather(-1, a).squeeze(-1) - 1.0) * 1e8
        return lp.sum(dim=1)

    def entropy(self) -> torch.Tensor:
        """Per slot, -sum p log p = log T - sum(e y) / T with p = e / T over the legal
        choices (an illegal one has e = 0 exactly and adds nothing), summed over the slots.

        Returns:
            (B,) in nats, differentiable in the logits.
        """
        y, e, total, log_t = self._normalise()
        return (log_t - (e * y).sum(dim=-1) / total).sum(dim=1)

    def sample(self) -> torch.Tensor:
        """A draw per slot by the Gumbel-max trick: the argmax of the log-probabilities
        plus Gumbel noise (a tenth of ``torch.multinomial``'s cost on (B*S, K); an illegal
        choice, at about -1e8, is never drawn: the noise is below 20 in float32).

        Returns:
            (B, S) int64 choices, from torch's global generator (``torch.manual_seed``).
        """
        u = torch.rand_like(self.logp)
        return (self.logp - torch.log(-torch.log(u))).argmax(dim=-1)

    def mode(self) -> torch.Tensor:
        """(B, S): each slot's most likely legal choice, the first of a tie."""
        return self.logp.argmax(dim=-1)

    def actions_from_params(
        self, action_logits: torch.Tensor, deterministic: bool = False
    ) -> torch.Tensor:
        """(B, S) actions of (B, S*K) logits, unmasked."""
        self.proba_distribution(action_logits)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(
        self, action_logits: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Drawn (B, S) actions of (B, S*K) logits, unmasked, and their (B,) log-probs."""
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)
