"""Benchmark: ``agents.slot_dist.SlotCategorical`` against sb3-contrib's masked multi-categorical.

Issue 37 item 5 asks whether ``agents/net.py`` should use sb3-contrib's (or torch's) masked
distribution rather than its own. This script measures the difference on the shapes the
shipped agents use: S slots of K choices each (the ``shares`` agent's head, S = 64 and
K = 34; a ``counts``-sized head, S = 16 and K = 17), for batches of B = 256 (a PPO
minibatch) and B = 2048 observations, on CPU with one torch thread.

A third contender is plain torch (``TorchMasked``): one ``torch.distributions.Categorical``
over the (B, S, K) logits, masked as sb3-contrib masks (-1e8), with no per-slot objects.

For each shape the distributions get the same float32 logits (B, S*K) and the same float32
masks (B, S*K), as MaskablePPO's rollout buffer hands them to ``evaluate_actions`` (each
choice legal with probability 0.6, choice 0 always legal, so no slot is fully masked, as in
the env). Two costs per call are timed:

- ``call``: ``proba_distribution`` + ``apply_masking`` + ``sample`` + ``log_prob`` (of the
  draw) + ``entropy``, without gradients: every method MaskablePPO calls on the
  distribution, once each.
- ``train``: ``proba_distribution`` + ``apply_masking`` + ``log_prob`` (of given actions) +
  ``entropy`` + the backward pass of ``-log_prob.mean() - 0.01 * entropy.mean()`` into the
  logits: what one PPO minibatch step spends in the distribution.

Before timing, it checks that all three give the same ``log_prob`` (of legal actions) and
``entropy`` on the same logits and masks, to 1e-5 relative to the value's magnitude (at
least 1), and that the draws are legal. The contenders run in interleaved rounds; the
figures are the median time per call over the rounds, and the medians of the round-by-round
ratios (sb3-contrib / ours, torch / ours), steadier than the ratio of medians on a loaded
machine.

    .venv/bin/python scripts/bench_masked_dist.py [--rounds 15] [--block-s 0.2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from sb3_contrib.common.maskable.distributions import MaskableMultiCategoricalDistribution

from agents.slot_dist import SlotCategorical

#: (B, S, K) timed: batch, slots, choices per slot.
SHAPES = ((256, 64, 34), (2048, 64, 34), (256, 16, 17), (2048, 16, 17))
#: Probability that a choice other than 0 is legal.
LEGAL_P = 0.6


class TorchMasked:
    """The plain-torch alternative: one ``torch.distributions.Categorical`` over the
    (B, S, K) logits with illegal choices at -1e8 (sb3-contrib's masking), summed over the
    S slots; the calls ``SlotCategorical`` answers, nothing else.

    Args:
        num_slots: S.
        choices: K, the choices per slot.
    """

    def __init__(self, num_slots: int, choices: int) -> None:
        self.S, self.K = num_slots, choices
        self.raw: torch.Tensor | None = None
        self.dist: torch.distributions.Categorical | None = None

    def proba_distribution(self, action_logits: torch.Tensor) -> TorchMasked:
        """Keep the (B, S*K) logits as (B, S, K); unmasked until ``apply_masking``."""
        self.raw = action_logits.reshape(action_logits.shape[0], self.S, self.K)
        self.dist = torch.distributions.Categorical(logits=self.raw, validate_args=False)
        return self

    def apply_masking(self, masks: torch.Tensor) -> None:
        """``masks`` (B, S*K) of 0/1: a 0 puts its logit at -1e8."""
        legal = masks.reshape(self.raw.shape) > 0
        logits = torch.where(legal, self.raw, torch.tensor(-1e8, dtype=self.raw.dtype))
        self.dist = torch.distributions.Categorical(logits=logits, validate_args=False)

    def sample(self) -> torch.Tensor:
        """(B, S) draws."""
        return self.dist.sample()

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """(B,): summed over the slots."""
        return self.dist.log_prob(actions.reshape(-1, self.S)).sum(dim=1)

    def entropy(self) -> torch.Tensor:
        """(B,): summed over the slots (an illegal choice's p log p is 0 x -1e8 = 0)."""
        return self.dist.entropy().sum(dim=1)


def contenders(S: int, K: int) -> dict[str, object]:
    """The three distributions for S slots of K choices, ours first."""
    return {
        "ours": SlotCategorical(S, K),
        "sb3": MaskableMultiCategoricalDistribution([K] * S),
        "torch": TorchMasked(S, K),
    }


def inputs(
    B: int, S: int, K: int, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (B, S*K) float32 ~ N(0, 2^2), masks (B, S*K) float32 of 0/1 with choice 0 of
    every slot legal, and one legal action per slot (B, S) int64 drawn uniformly.
    """
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(B, S * K, generator=g)
    legal = torch.rand(B, S, K, generator=g) < LEGAL_P
    legal[..., 0] = True
    # a uniform legal action per slot: the argmax of uniform noise on the legal choices
    actions = torch.where(legal, torch.rand(B, S, K, generator=g), -1.0).argmax(dim=-1)
    return logits, legal.reshape(B, S * K).float(), actions


def call(dist, logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The ``call`` cost (module docstring) under ``no_grad``; returns the entropy."""
    with torch.no_grad():
        d = dist.proba_distribution(logits)
        d.apply_masking(masks)
        a = d.sample()
        d.log_prob(a)
        return d.entropy()


def train(dist, logits: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> None:
    """The ``train`` cost (module docstring): ``logits`` must require gradients."""
    d = dist.proba_distribution(logits)
    d.apply_masking(masks)
    loss = -d.log_prob(actions).mean() - 0.01 * d.entropy().mean()
    logits.grad = None
    loss.backward()


def check(S: int, K: int, logits: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> str:
    """The contenders' ``log_prob`` and ``entropy`` agree with sb3-contrib's (to 1e-5 of
    the value's magnitude, at least 1) and their draws are legal; returns ours' largest
    differences from sb3-contrib's.

    Raises:
        AssertionError: one disagrees, or draws an illegal choice.
    """
    out = {}
    with torch.no_grad():
        for name, dist in contenders(S, K).items():
            d = dist.proba_distribution(logits)
            d.apply_masking(masks)
            a = d.sample().reshape(-1, S, 1)
            drawn_legal = masks.reshape(-1, S, K).gather(-1, a.long())
            assert bool((drawn_legal == 1.0).all()), f"{name} drew an illegal choice"
            out[name] = (d.log_prob(actions), d.entropy())
    diffs = []
    for name in ("ours", "torch"):
        for i, what in enumerate(("log_prob", "entropy")):
            x, y = out[name][i], out["sb3"][i]
            err = ((x - y).abs() / y.abs().clamp(min=1.0)).max().item()
            assert err <= 1e-5, f"{name}'s {what} differs by {err:.2e} (relative)"
            if name == "ours":
                diffs.append(f"{what} {err:.1e}")
    return ", ".join(diffs)


def per_call(fn: Callable[[], object], n: int) -> float:
    """Seconds per call of ``fn``, over ``n`` calls."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def race(fns: dict[str, Callable[[], object]], rounds: int, block_s: float) -> dict[str, object]:
    """Interleaved rounds of blocks of calls (each block about ``block_s`` seconds).

    Returns:
        Each contender's median seconds per call, and for each other contender
        ``<name>/ours``: the median over rounds of its time over ours.
    """
    n = {k: max(1, int(block_s / per_call(f, 2))) for k, f in fns.items()}  # (warm too)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            times[k].append(per_call(f, n[k]))
    out = {k: statistics.median(v) for k, v in times.items()}
    for k in fns:
        if k != "ours":
            ratios = [t / o for t, o in zip(times[k], times["ours"], strict=True)]
            out[f"{k}/ours"] = statistics.median(ratios)
    return out


def bench(B: int, S: int, K: int, rounds: int, block_s: float) -> list[str]:
    """Both costs of one shape; returns its two table rows."""
    logits, masks, actions = inputs(B, S, K)
    agree = check(S, K, logits, masks, actions)
    dists = contenders(S, K)
    lg = logits.clone().requires_grad_(True)
    rows = []
    for what in ("call", "train"):
        if what == "call":
            fns = {k: lambda d=d: call(d, logits, masks) for k, d in dists.items()}
        else:
            fns = {k: lambda d=d: train(d, lg, masks, actions) for k, d in dists.items()}
        r = race(fns, rounds, block_s)
        ms = " | ".join(f"{r[k] * 1e3:.2f}" for k in dists)
        rows.append(
            f"| {B} | {S} | {K} | {what} | {ms} | {r['sb3/ours']:.1f}x "
            f"| {r['torch/ours']:.1f}x | {agree} |"
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    """Parse the arguments, run every shape of ``SHAPES``, print a markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds per cost")
    ap.add_argument("--block-s", type=float, default=0.2, help="seconds per block of calls")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, 1 thread; median ms per call over {args.rounds} rounds")
    print(
        "| B | S | K | cost | ours (ms) | sb3-contrib (ms) | torch (ms) | sb3 / ours "
        "| torch / ours | ours vs sb3: max rel. diff |"
    )
    print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for B, S, K in SHAPES:
        bench(B, S, K, args.rounds, args.block_s)


if __name__ == "__main__":
    main()
