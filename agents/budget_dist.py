"""The slots drawn in order within the node budget: ``SlotCategorical`` on budget masks.

``mtgym.env.actions.budget`` has the why and the encoding: each legal choice carries its node
delta and every keep entry the budget. Here slot s's choices are masked by what slots
0..s-1 left, so a draw never needs the env's repair, and the action's probability is the
product of the slots' conditional ones:

    log p(a) = sum_s log p_s(a_s | a_0..a_{s-1}),

p_s the softmax of slot s's logits over its choices that still fit. The logits are the
network's as before (one head per slot: the conditioning is in the mask alone), so
``log_prob`` of a stored action needs only the stored mask and the action itself:
MaskablePPO's rollout buffer keeps both, and ``evaluate_actions`` recomputes the same
conditional masks. ``entropy`` is the sum of the slots' conditional entropies along the
action given to ``log_prob`` (or drawn last): an unbiased estimate of the joint entropy
over the policy's own draws, the usual one for autoregressive action heads.
"""

from __future__ import annotations

from typing import Any

import torch

from agents.slot_dist import SlotCategorical
from mtgym.env.actions.budget import KEEP, OFFSET, check_encoded


def split(masks: Any, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A budget mask's parts as tensors (``mtgym.env.actions.budget.split``).

    Args:
        masks: (B, S*K) budget masks, any array type.
        like: (B, S, K) logits: the shape, dtype and device to take.

    Returns:
        (legal (B, S, K) bool, delta (B, S, K) with 0 at keep and illegal entries,
        budget (B,)), delta and budget in ``like``'s float dtype (whole numbers, exact).

    Raises:
        ValueError: not budget masks (``mtgym.env.actions.budget.check_encoded``).
    """
    e = torch.as_tensor(masks, device=like.device).to(torch.float32).reshape(like.shape)
    legal = e > 0
    if bool((legal & (e <= OFFSET / 2)).any()):
        check_encoded(e.cpu().numpy())  # (raises: not budget masks)
    delta = torch.where(legal, e - OFFSET, torch.zeros_like(e))
    budget = delta[:, 0, KEEP].clone() if e.shape[1] else e.new_zeros(e.shape[0])
    delta[..., KEEP] = 0.0
    return legal, delta.to(like.dtype), budget.to(like.dtype)


def conditional(
    legal: torch.Tensor, delta: torch.Tensor, budget: torch.Tensor, actions: torch.Tensor
) -> torch.Tensor:
    """Each slot's feasible choices given the earlier slots' ``actions``.

    Args:
        legal, delta, budget: ``split``'s.
        actions: (B, S) choices (any integer dtype; read as B rows of S).

    Returns:
        (B, S, K) bool: legal, and keep or a delta within what slots 0..s-1 left.
    """
    a = actions.long().reshape(legal.shape[:2]).unsqueeze(-1)
    drawn = delta.gather(-1, a).squeeze(-1)
    left = budget.unsqueeze(1) - (torch.cumsum(drawn, dim=1) - drawn)
    ok = legal & (delta <= left.unsqueeze(-1))
    ok[..., KEEP] = legal[..., KEEP]
    return ok


def draw(
    logits: torch.Tensor,
    legal: torch.Tensor,
    delta: torch.Tensor,
    budget: torch.Tensor,
    uniforms: torch.Tensor | None,
) -> torch.Tensor:
    """Slots in order, each from its logits over the choices that still fit: Gumbel-max
    with ``uniforms`` (as ``SlotCategorical.sample``), or each slot's most likely choice.

    Args:
        logits: (B, S, K).
        legal, delta, budget: ``split``'s.
        uniforms: (B, S, K) in [0, 1); None: the mode (the first of a tie).

    Returns:
        (B, S) int64 choices, each feasible given the ones before it.
    """
    B, S, _K = logits.shape
    out = torch.zeros((B, S), dtype=torch.long, device=logits.device)
    left = budget.clone()
    rows = torch.arange(B, device=logits.device)
    for s in range(S):
        ok = legal[:, s] & (delta[:, s] <= left.unsqueeze(1))
        ok[:, KEEP] = legal[:, s, KEEP]
        ok = ok | ~ok.any(dim=1, keepdim=True)  # (no legal choice: all, as SlotCategorical)
        v = logits[:, s].masked_fill(~ok, float("-inf"))
        if uniforms is not None:
            v = v - torch.log(-torch.log(uniforms[:, s]))
        pick = v.argmax(dim=1)
        out[:, s] = pick
        left = left - delta[rows, s, pick]
    return out


class BudgetSlotCategorical(SlotCategorical):
    """``SlotCategorical`` whose masks are budget masks (module docstring).

    ``apply_masking`` takes the (B, S*K) budget masks; ``log_prob(actions)`` conditions
    each slot on the actions' earlier slots, ``sample`` and ``mode`` draw in slot order,
    and ``entropy`` is along the last conditioned action. Unmasked (``None``), it is
    ``SlotCategorical``.
    """

    def __init__(self, num_slots: int, choices: int) -> None:
        super().__init__(num_slots, choices)
        self._budget: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self._conditioned = False

    def proba_distribution(self, action_logits: torch.Tensor) -> BudgetSlotCategorical:
        """``SlotCategorical.proba_distribution``; drops the budget masks too."""
        super().proba_distribution(action_logits)
        self._budget, self._conditioned = None, False
        return self

    def apply_masking(self, masks: Any) -> None:
        """Keeps the budget masks' parts; the per-slot legal choices mask the slots until an
        action conditions them (applied only if ``logp`` is read first: PPO's update
        conditions at once, and masking twice cost a pass over (B, S, K) per minibatch).

        Args:
            masks: (B, S*K) budget masks (``mtgym.env.actions.budget``); None: unmasked.
        """
        self._conditioned = False
        super().apply_masking(None)
        self._budget = None if masks is None else split(masks, self._raw)

    @property
    def logp(self) -> torch.Tensor:
        """``SlotCategorical.logp``; before any action conditioned the budget masks, under
        the per-slot legal choices.
        """
        if self._budget is not None and not self._conditioned and self.masks is None:
            super().apply_masking(self._budget[0].to(self._raw.dtype))
        return super().logp

    def _condition(self, actions: torch.Tensor) -> None:
        """Mask every slot by what the earlier slots of ``actions`` left."""
        if self._budget is None:
            return
        ok = conditional(*self._budget, actions)
        super().apply_masking(ok.to(self._raw.dtype))
        self._conditioned = True

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """Sum over the slots of each one's conditional log-probability (module docstring).

        Args:
            actions: (B, S) choices.

        Returns:
            (B,), differentiable in the logits; an infeasible choice's is about -1e8.
        """
        self._condition(actions)
        return super().log_prob(actions)

    def entropy(self) -> torch.Tensor:
        """The slots' conditional entropies along the action last given to ``log_prob`` or
        drawn, summed: (B,).

        Raises:
            RuntimeError: budget masks, and no action conditioned them yet.
        """
        if self._budget is not None and not self._conditioned:
            raise RuntimeError("call log_prob(actions) or sample() before entropy()")
        return super().entropy()

    def _drawn(self, uniforms: torch.Tensor | None) -> torch.Tensor:
        """``draw`` on the budget masks, then conditioned on what it drew."""
        assert self._budget is not None and self._raw is not None
        with torch.no_grad():
            actions = draw(self._raw.detach(), *self._budget, uniforms)
        self._condition(actions)
        return actions

    def sample(self) -> torch.Tensor:
        """(B, S) drawn in slot order, each within what the earlier slots left (torch's
        global generator, B*S*K uniforms as ``SlotCategorical.sample``).
        """
        if self._budget is None:
            return super().sample()
        return self._drawn(torch.rand_like(self._raw))

    def mode(self) -> torch.Tensor:
        """(B, S): in slot order, each slot's most likely choice that still fits."""
        if self._budget is None:
            return super().mode()
        return self._drawn(None)
