"""``SlotPolicy``'s rollout pass in numpy: actions, values and log-probabilities for a batch
of observations, without gradients.

MaskablePPO runs the policy once per vector-env step on a batch of n_envs (8) observations.
At that size each torch operation costs a few microseconds of dispatch whatever its work,
and the torch pass is some 80 of them: ~360 us per batch on the development machine, about
45 us per env step, as much as half the env's own step. Here the network's products run in
numpy on float32 views of the parameters (no copies: the optimizer updates them in place)
and the per-slot tail (keep bonus, masked log-probabilities, draw) in one numba loop:
~100 us per batch.

It is the function ``SlotPolicy``'s torch passes compute (tested to float32 rounding): the
rollout's values and log-probabilities match ``evaluate_actions``' to about 1e-6, which is
all PPO's first-epoch ratio sees. The draws use the same ``torch.rand`` numbers as
``SlotCategorical.sample`` (torch's seeded global generator, same shape), so the actions are
the torch pass's unless a Gumbel-max comparison is tied to float rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numba import njit
from torch import nn

from agents.pooled import SLOT_COUNT, SLOT_MASK
from mtgym.env.actions.budget import KEEP, OFFSET, check_encoded


def _layer_views(seq: nn.Sequential) -> list[tuple[np.ndarray, np.ndarray | None] | None]:
    """A ``Linear``/``ReLU`` stack as (W^T, b) numpy views and ``None`` for each ReLU.

    Args:
        seq: the stack; nested ``Sequential``s are flattened in order.

    Returns:
        One entry per layer, in order: ``_linear_view`` of a ``Linear``, None of a ReLU.

    Raises:
        TypeError: a layer of another kind (the numpy pass would compute another function).
    """
    out: list[tuple[np.ndarray, np.ndarray | None] | None] = []
    for m in seq:
        if isinstance(m, nn.Sequential):
            out += _layer_views(m)
        elif isinstance(m, nn.Linear):
            out.append(_linear_view(m))
        elif isinstance(m, nn.ReLU):
            out.append(None)
        else:
            raise TypeError(f"the numpy pass has no {type(m).__name__} layer")
    return out


def _linear_view(m: nn.Linear) -> tuple[np.ndarray, np.ndarray | None]:
    """(W^T, b) of ``m`` as numpy views of its parameters.

    Args:
        m: a CPU float32 ``Linear``.

    Returns:
        (in_features, out_features) W^T and the (out_features,) bias (None without one):
        views sharing the parameters' memory, so the optimizer's in-place updates show.
    """
    b = None if m.bias is None else m.bias.detach().numpy()
    return m.weight.detach().numpy().T, b


def _dense(x: np.ndarray, wb: tuple[np.ndarray, np.ndarray | None]) -> np.ndarray:
    """``x @ W^T + b`` for (n, in) ``x`` and ``_linear_view``'s ``wb``: a new (n, out)."""
    y = x @ wb[0]
    if wb[1] is not None:
        y += wb[1]
    return y


def _apply(stack: list, x: np.ndarray) -> np.ndarray:
    """The stack on ``x`` (never written to: ReLUs work in place on the layers' outputs).

    Args:
        stack: ``_layer_views``' list.
        x: (n, the first layer's in_features) float32.

    Returns:
        (n, the last layer's out_features); ``x`` itself for an empty stack.
    """
    fresh = False
    for wb in stack:
        if wb is None:
            x = np.maximum(x, 0.0, out=x) if fresh else np.maximum(x, 0.0)
        else:
            x = _dense(x, wb)
        fresh = True
    return x


class NumpySlotPass:
    """``SlotPolicy``'s no-gradient forward (module docstring), bound to one policy's
    parameters. Rebuild it if the parameter tensors are replaced (``SlotPolicy`` drops it
    in ``_apply``, which ``.to()``/``.float()`` go through).

    Args:
        policy: an ``agents.net.SlotPolicy`` with float32 parameters on the CPU (the
            views need CPU memory); its layers are read, never copied.
    """

    def __init__(self, policy: Any) -> None:
        fx, head = policy.features_extractor, policy.action_net
        self.S, self.D, self.d = fx.num_slots, fx.slot_dim, fx.embed_dim
        self.K, self.max_count = head.choices, fx.max_count
        self.slot_net = _layer_views(fx.slot_net)
        self.ctx_net = _layer_views(fx.ctx_net)
        self.mix_slot, self.mix_ctx = _linear_view(fx.mix_slot), _linear_view(fx.mix_ctx)
        self.head_slot, self.head_ctx = _linear_view(head.head_slot), _linear_view(head.head_ctx)
        self.stay = head.stay.detach().numpy()
        self.keep_at_zero = bool(getattr(head, "keep_at_zero", False))
        self.glob_dim = fx.glob_dim
        self.value_net = _layer_views(policy.value_net.net)
        self.budget = bool(getattr(policy, "budget_masks", False))

    def encode(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``SlotFeatures.encode``: slot embeddings (B, S, d), context (B, d), the slot
        table (B*S, slot_dim: ``obs``'s slot part, a view for B = 1, else a copy, as the
        global part lies between two observations' slots).

        Args:
            obs: (B, S*slot_dim + glob_dim) float32 pooled observations; any S.

        Returns:
            (z, ctx, table); the current counts are read from ``table`` by the caller.
        """
        D, d = self.D, self.d
        B = obs.shape[0]
        S = (obs.shape[1] - self.glob_dim) // D  # any S, as ``SlotFeatures.encode``
        table = obs[:, : S * D].reshape(B * S, D)
        mask = table[:, SLOT_MASK : SLOT_MASK + 1]
        h = _apply(self.slot_net, table)
        h *= mask
        count = np.maximum(mask.reshape(B, S).sum(axis=1, keepdims=True), 1.0)
        mean = h.reshape(B, S, d).sum(axis=1) / count
        ctx = _apply(self.ctx_net, np.concatenate([mean, obs[:, S * D :]], axis=1))
        mixed = _dense(h, self.mix_slot).reshape(B, S, d) + (ctx @ self.mix_ctx[0])[:, None]
        z = np.maximum(mixed, 0.0, out=mixed)
        z *= mask.reshape(B, S, 1)
        return z, ctx, table

    def value(self, z: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """``SlotValue.value``: (B, 1).

        Args:
            z: (B, S, d) slot embeddings.
            ctx: (B, d) context.
        """
        return _apply(self.value_net, np.concatenate([z.mean(axis=1), ctx], axis=1))

    def __call__(
        self, obs: np.ndarray, masks: np.ndarray | None, deterministic: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(actions (B, S) int64, values (B, 1), log-probabilities (B,)) for float32
        observations (B, size) and masks (B, S*K) of 0/1 (or ``None``: all legal).

        Args:
            obs: (B, S*slot_dim + glob_dim) float32 pooled observations.
            masks: (B, S*K) bool, MaskablePPO's ``action_masks`` (a budget policy's: float32
                budget masks, drawn in slot order by ``_draw_budget``); None: all legal.
            deterministic: each slot's most likely legal choice; else a draw, which
                consumes B*S*K numbers of torch's global generator as
                ``SlotCategorical.sample`` does.

        Returns:
            The actions, the values (float32) and the actions' log-probabilities summed
            over the slots (float32).
        """
        d, K = self.d, self.K
        B = obs.shape[0]
        z, ctx, table = self.encode(obs)
        S = z.shape[1]
        values = self.value(z, ctx)
        logits = _dense(z.reshape(B * S, d), self.head_slot).reshape(B, S, K)
        logits += (ctx @ self.head_ctx[0])[:, None]
        current = np.round(table[:, SLOT_COUNT] * np.float32(self.max_count)).astype(np.int64)
        current = current.reshape(B, S)
        # ``SlotCategorical.sample``'s Gumbel-max on the same uniform draws (none needed for
        # the mode; a draw of exactly 0 gives noise -inf, as torch's)
        u = logits if deterministic else torch.rand(B, S, K).numpy()
        actions = np.empty((B, S), dtype=np.int64)
        log_prob = np.empty(B, dtype=np.float32)
        if self.budget and masks is not None:  # (budget masks: ``agents.budget_dist``)
            enc = np.ascontiguousarray(masks, dtype=np.float32).reshape(B, S, K)
            check_encoded(enc)
            _draw_budget(logits, current, float(self.stay), enc, u, deterministic, actions,
                         log_prob)  # fmt: skip
            return actions, values, log_prob
        legal = np.ones((B, S, K), dtype=np.bool_) if masks is None else np.asarray(masks)
        _draw(logits, current, float(self.stay), legal.reshape(B, S, K), u, deterministic,
              actions, log_prob, self.keep_at_zero)  # fmt: skip
        return actions, values, log_prob


@njit(cache=True, error_model="numpy")
def _draw(
    logits: np.ndarray,
    current: np.ndarray,
    stay: float,
    legal: np.ndarray,
    u: np.ndarray,
    deterministic: bool,
    actions: np.ndarray,
    log_prob: np.ndarray,
    keep_at_zero: bool = False,
) -> None:  # pragma: no cover - jit
    """Per slot (one loop, where numpy took some 25 small operations): the keep bonus on
    the current count (``SlotHead.logits``), the masked log-probabilities
    (``SlotCategorical``: a slot with no legal choice counts as all legal), the draw
    (Gumbel-max with the uniforms ``u``, or the mode) into ``actions`` and the sum of the
    drawn log-probabilities into ``log_prob``.

    Args:
        logits: (B, S, K) float32, without the bonus; the bonus is added in place.
        current: (B, S) int64 current node counts (clamped to 0..K-1).
        stay: ``SlotHead.stay``, the bonus logit.
        legal: (B, S, K) bool.
        u: (B, S, K) uniforms in [0, 1) (ignored when ``deterministic``).
        deterministic: take each slot's most likely legal choice, the first of a tie.
        actions: (B, S) int64, written.
        log_prob: (B,) float32, written.
        keep_at_zero: the bonus on choice 0 (``shares``), else on choice ``current``.
    """
    B, S, K = logits.shape
    for b in range(B):
        total_lp = 0.0
        for s in range(S):
            row, ok = logits[b, s], legal[b, s]
            c = min(max(current[b, s], 0), K - 1)
            if c > 0:  # a running job keeps its count; none for staying without nodes
                row[0 if keep_at_zero else c] += stay
            best, lp = _pick(row, ok, u[b, s], deterministic)
            actions[b, s] = best
            total_lp += lp
        log_prob[b] = total_lp


@njit(cache=True, error_model="numpy", inline="always")
def _pick(
    row: np.ndarray, ok: np.ndarray, u: np.ndarray, deterministic: bool
) -> tuple[int, float]:  # pragma: no cover - jit
    """One slot's choice among the ``ok`` ones (all of them when none is: a slot with no
    legal choice, as ``SlotCategorical``) and its log-probability there: Gumbel-max with the
    uniforms ``u``, or the mode (the first of a tie).

    Args:
        row: (K,) the slot's logits (its bonus added).
        ok: (K,) bool, the choices allowed.
        u: (K,) uniforms in [0, 1) (ignored when ``deterministic``).
        deterministic: the most likely allowed choice.

    Returns:
        (choice, its log-probability under the softmax over the allowed choices).
    """
    K = row.shape[0]
    any_ok = False
    for k in range(K):
        any_ok = any_ok or ok[k]
    top = -np.inf
    for k in range(K):
        if (ok[k] or not any_ok) and row[k] > top:
            top = row[k]
    t = 0.0
    for k in range(K):
        if ok[k] or not any_ok:
            t += np.exp(row[k] - top)
    log_t = np.log(t)
    best, best_v = -1, -np.inf
    for k in range(K):
        if ok[k] or not any_ok:
            v = row[k] - top - log_t
            if not deterministic:
                v -= np.log(-np.log(u[k]))
            if best < 0 or v > best_v:
                best, best_v = k, v
    return best, row[best] - top - log_t


@njit(cache=True, error_model="numpy")
def _draw_budget(
    logits: np.ndarray,
    current: np.ndarray,
    stay: float,
    encoded: np.ndarray,
    u: np.ndarray,
    deterministic: bool,
    actions: np.ndarray,
    log_prob: np.ndarray,
) -> None:  # pragma: no cover - jit
    """``_draw`` on budget masks (``agents.budget_dist``, ``shares``: the bonus on keep):
    the slots in order, each over its legal choices whose node delta fits what the earlier
    slots left (keep always); ``log_prob`` sums the slots' conditional log-probabilities.

    Args:
        logits: (B, S, K) float32, without the bonus; the bonus is added in place.
        current: (B, S) int64 current node counts (a running job: > 0).
        stay: ``SlotHead.stay``.
        encoded: (B, S, K) float32 budget masks (``mtgym.env.actions.budget``).
        u: (B, S, K) uniforms (ignored when ``deterministic``).
        deterministic: each slot's most likely feasible choice.
        actions: (B, S) int64, written.
        log_prob: (B,) float32, written.
    """
    B, S, K = logits.shape
    ok = np.empty(K, dtype=np.bool_)  # (one slot's feasible choices, reused)
    for b in range(B):
        total_lp = 0.0
        left = encoded[b, 0, KEEP] - OFFSET if S > 0 else 0.0
        for s in range(S):
            row, enc = logits[b, s], encoded[b, s]
            if current[b, s] > 0:
                row[KEEP] += stay
            for k in range(K):  # legal, and keep or a delta within what is left
                ok[k] = enc[k] > 0 and (k == KEEP or enc[k] - OFFSET <= left)
            best, lp = _pick(row, ok, u[b, s], deterministic)
            actions[b, s] = best
            total_lp += lp
            if best != KEEP and enc[best] > 0:  # (an illegal choice moves no node)
                left -= enc[best] - OFFSET
        log_prob[b] = total_lp
