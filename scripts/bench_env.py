"""Benchmark: env steps per second with random valid actions at three sizes, next to a
CartPole step measured in the same run. Both envs are built with ``gym.make`` (same
wrappers) and only ``env.step`` is timed (drawing the random valid action is not). A few
untimed warm-up steps first load (or, on a fresh clone, compile) the numba kernels.
Steps are timed in ``--blocks`` blocks, each next to a block of CartPole steps, so the
ratio compares steps timed side by side (a shared machine's speed drifts by 2x over
minutes). The table shows means over all blocks, the fastest block, and the median of the
block-by-block ratios. Prints figures; asserts nothing.

    .venv/bin/python scripts/bench_env.py [--steps 2000] [--mode counts]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

import mtgym  # noqa: F401  (registers the env ids)
from mtgym.core.names import ACTION_MODES
from mtgym.generate.supply import SyntheticSupply
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.generate.workload import JobMix


@dataclass
class Args:
    steps: int = 5000
    blocks: int = 10
    mode: str = "counts"
    sizes: tuple[tuple[int, int], ...] = ((64, 8), (512, 32), (4734, 64))


def generator(nodes: int, slots: int) -> SyntheticGenerator:
    """A synthetic scenario with ``nodes`` nodes and enough jobs to keep ``slots`` slots busy."""
    return SyntheticGenerator(
        name=f"bench-{nodes}x{slots}",
        num_nodes=nodes,
        group_size=18,
        supply=SyntheticSupply(idle_fraction=0.25),
        horizon_s=30 * 86400.0,
        jobs=replace(
            JobMix(),
            num_jobs=slots * 20,
            arrival_rate_per_h=60.0,
            min_nodes=(1, 2),
            max_nodes=(8, 16, 32, 64),
            work_hours=(2.0, 8.0),
        ),
    )


def random_valid(mask: np.ndarray, nvec: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One legal action per dimension, uniformly (vectorised over dimensions of equal size)."""
    k = int(nvec[0])
    m = mask.reshape(len(nvec), k).astype(bool)
    r = rng.random(m.shape) * m
    return r.argmax(axis=1)


class Timer:
    """Times ``env.step`` in blocks of steps (random valid actions; resets untimed)."""

    def __init__(self, env: gym.Env, rng: np.random.Generator, masked: bool, warmup: int = 10):
        self.env, self.rng, self.masked = env, rng, masked
        self.nvec = getattr(env.action_space, "nvec", None)
        env.reset(seed=0)
        for _ in range(warmup):  # untimed: one-off JIT loading/compilation
            env.step(self._action())
        env.reset(seed=0)

    def _action(self) -> np.ndarray:
        if self.masked:
            return random_valid(self.env.unwrapped.action_masks(), self.nvec, self.rng)
        return self.env.action_space.sample()

    def block(self, steps: int) -> float:
        """Mean seconds per step over ``steps`` steps."""
        elapsed = 0.0
        for _ in range(steps):
            a = self._action()
            t0 = time.perf_counter()
            _, _, term, trunc, _ = self.env.step(a)
            elapsed += time.perf_counter() - t0
            if term or trunc:
                self.env.reset()
        return elapsed / steps


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--steps", type=int, default=Args.steps)
    p.add_argument("--blocks", type=int, default=Args.blocks)
    p.add_argument("--mode", default=Args.mode, choices=ACTION_MODES)
    ns = p.parse_args()
    args = Args(steps=ns.steps, blocks=ns.blocks, mode=ns.mode)
    rng = np.random.default_rng(0)
    cart_env = gym.make("CartPole-v1")
    cart_env.action_space.seed(0)
    cart = Timer(cart_env, rng, masked=False)
    table = Table(title=f"bench_env: random valid actions, action_mode={args.mode}")
    for col in (
        "nodes x slots",
        "steps",
        "us/step mean",
        "us/step best block",
        "steps/s mean",
        "CartPole us/step",
        "x CartPole mean",
        "x CartPole median block",
    ):
        table.add_column(col, justify="right")
    per_block = max(args.steps // args.blocks, 1)
    cart_all = []
    for nodes, slots in args.sizes:
        env = gym.make(
            "mtgym/Scavenge-v0",
            scenario=generator(nodes, slots),
            action_mode=args.mode,
            max_jobs=slots,
        )
        timer = Timer(env, rng, masked=True)
        # CartPole blocks interleaved with the env's: the ratio is taken between blocks
        # measured side by side, so the machine's drift in speed cancels out.
        ours, theirs = [], []
        for _ in range(args.blocks):
            theirs.append(cart.block(4 * per_block))
            ours.append(timer.block(per_block))
        cart_all += theirs
        mean, c_mean = float(np.mean(ours)), float(np.mean(theirs))
        ratios = [o / c for o, c in zip(ours, theirs, strict=True)]
        table.add_row(
            f"{nodes} x {slots}",
            f"{per_block * args.blocks}",
            f"{1e6 * mean:.1f}",
            f"{1e6 * min(ours):.1f}",
            f"{1 / mean:,.0f}",
            f"{1e6 * c_mean:.1f}",
            f"{mean / c_mean:.1f}",
            f"{float(np.median(ratios)):.1f}",
        )
    c = float(np.mean(cart_all))
    table.add_row(
        "CartPole-v1",
        f"{4 * per_block * len(cart_all)}",
        f"{1e6 * c:.1f}",
        f"{1e6 * min(cart_all):.1f}",
        f"{1 / c:,.0f}",
        f"{1e6 * c:.1f}",
        "1.0",
        "1.0",
    )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
