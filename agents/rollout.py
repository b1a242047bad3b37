"""``SlotPolicy``'s rollout pass in numpy: actions, values and log-probabilities for a batch
of observations, without gradients.

MaskablePPO runs the policy once per vector-env step on a batch of n_envs (8) observations.
At that size each torch operation costs a few microseconds of dispatch whatever its work,
and the pass is some 80 of them (about 45 us per env step on the development machine,
as much as the env's own step). The same function in numpy, on float32 views of the
parameters (no copies: the optimizer updates them in place), costs about half.

It is the function ``SlotPolicy``'s torch passes compute (tested to float32 rounding): the
rollout's values and log-probabilities match ``evaluate_actions``' to about 1e-7, which is
all PPO's first-epoch ratio sees. The draws use the same ``torch.rand`` numbers as
``SlotCategorical.sample`` (torch's seeded global generator, same shape), so the actions are
the torch pass's unless a Gumbel-max comparison is tied to the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


def _layer_views(seq: nn.Sequential) -> list[tuple[np.ndarray, np.ndarray | None] | None]:
    """A ``Linear``/``ReLU`` stack as (W^T, b) numpy views and ``None`` for each ReLU."""
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
    """(W^T, b) of ``m`` as numpy views of its parameters."""
    b = None if m.bias is None else m.bias.detach().numpy()
    return m.weight.detach().numpy().T, b


def _dense(x: np.ndarray, wb: tuple[np.ndarray, np.ndarray | None]) -> np.ndarray:
    y = x @ wb[0]
    if wb[1] is not None:
        y += wb[1]
    return y


def _apply(stack: list, x: np.ndarray) -> np.ndarray:
    """The stack on ``x`` (never written to: ReLUs work in place on the layers' outputs)."""
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
        self.value_net = _layer_views(policy.value_net.net)

    def __call__(
        self, obs: np.ndarray, masks: np.ndarray | None, deterministic: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(actions (B, S) int64, values (B, 1), log-probabilities (B,)) for float32
        observations (B, size) and masks (B, S*K) of 0/1 (or ``None``: all legal).
        """
        S, D, d, K = self.S, self.D, self.d, self.K
        B = obs.shape[0]
        table = obs[:, : S * D].reshape(B * S, D)
        mask = table[:, :1]
        h = _apply(self.slot_net, table)
        h *= mask
        count = np.maximum(mask.reshape(B, S).sum(axis=1, keepdims=True), 1.0)
        mean = h.reshape(B, S, d).sum(axis=1) / count
        ctx = _apply(self.ctx_net, np.concatenate([mean, obs[:, S * D :]], axis=1))
        mixed = _dense(h, self.mix_slot).reshape(B, S, d) + (ctx @ self.mix_ctx[0])[:, None]
        z = np.maximum(mixed, 0.0, out=mixed)
        z *= mask.reshape(B, S, 1)
        values = _apply(self.value_net, np.concatenate([z.mean(axis=1), ctx], axis=1))
        logits = _dense(z.reshape(B * S, d), self.head_slot).reshape(B, S, K)
        logits += (ctx @ self.head_ctx[0])[:, None]
        # a running job's current count gets the keep bonus (``SlotHead.logits``)
        current = np.round(table[:, -1] * np.float32(self.max_count)).astype(np.int64)
        idx = np.clip(current, 0, K - 1)
        flat = logits.reshape(-1)
        flat[np.arange(B * S) * K + idx] += self.stay * (idx > 0)
        logp = _masked_logp(logits, masks)
        if deterministic:
            actions = logp.argmax(axis=-1)
        else:  # ``SlotCategorical.sample``'s Gumbel-max, on the same uniform draws
            u = torch.rand(B, S, K).numpy()
            with np.errstate(divide="ignore"):  # a draw of exactly 0: noise -inf, as torch's
                actions = (logp - np.log(-np.log(u))).argmax(axis=-1)
        log_prob = np.take_along_axis(logp, actions[..., None], axis=-1)[..., 0].sum(axis=1)
        return actions, values, log_prob


def _masked_logp(logits: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
    """``SlotCategorical._normalise``'s log-probabilities (illegal choices at about -1e8; a
    slot with no legal choice counts as all legal), in numpy.
    """
    if masks is None:
        x, m = logits, None
    else:
        m = np.asarray(masks, dtype=np.float32).reshape(logits.shape)
        none = m.sum(axis=-1, keepdims=True) == 0
        if none.any():
            m = m + none
        x = logits + (m - 1.0) * np.float32(1e8)
    y = x - x.max(axis=-1, keepdims=True)
    e = np.exp(np.maximum(y, np.float32(-87.0)))
    if m is not None:
        e *= m
    return y - np.log(e.sum(axis=-1, keepdims=True))
