"""Benchmark: env steps per second with random valid actions at three sizes, next to a
CartPole step measured in the same run. Both envs are built with ``gym.make`` (same
wrappers) and only ``env.step`` is timed (drawing the random valid action is not). A few
untimed warm-up steps first load (or, on a fresh clone, compile) the numba kernels.
Steps are timed in ``--blocks`` blocks; the table shows the mean over all steps and the
mean of the fastest block (as ``timeit`` reports its best repeat: shared machines add
noise, never speed), for both envs alike. Prints figures; asserts nothing.

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
from mtgym.generate.supply import SyntheticSupply
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.generate.workload import JobMix


@dataclass
class Args:
    steps: int = 5000
    blocks: int = 5
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


def time_env(
    env: gym.Env,
    steps: int,
    rng: np.random.Generator,
    masked: bool,
    blocks: int = 5,
    warmup: int = 10,
) -> tuple[float, float, int]:
    """Seconds per step: (mean over all steps, mean of the fastest block, steps)."""
    env.reset(seed=0)
    nvec = getattr(env.action_space, "nvec", None)
    for _ in range(warmup):  # untimed: one-off JIT loading/compilation
        a = random_valid(env.unwrapped.action_masks(), nvec, rng) if masked else None
        env.step(env.action_space.sample() if a is None else a)
    env.reset(seed=0)
    per_block = max(steps // blocks, 1)
    times = []
    for _ in range(blocks):
        elapsed = 0.0
        for _ in range(per_block):
            if masked:
                a = random_valid(env.unwrapped.action_masks(), nvec, rng)
            else:
                a = env.action_space.sample()
            t0 = time.perf_counter()
            _, _, term, trunc, _ = env.step(a)
            elapsed += time.perf_counter() - t0
            if term or trunc:
                env.reset()
        times.append(elapsed / per_block)
    return float(np.mean(times)), min(times), per_block * blocks


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--steps", type=int, default=Args.steps)
    p.add_argument("--blocks", type=int, default=Args.blocks)
    p.add_argument("--mode", default=Args.mode, choices=["counts", "assign", "delta"])
    ns = p.parse_args()
    args = Args(steps=ns.steps, blocks=ns.blocks, mode=ns.mode)
    rng = np.random.default_rng(0)
    cart = gym.make("CartPole-v1")
    cart.action_space.seed(0)
    c_mean, c_best, c_n = time_env(cart, max(args.steps, 20000), rng, False, args.blocks)
    table = Table(title=f"bench_env: random valid actions, action_mode={args.mode}")
    for col in (
        "nodes x slots",
        "steps",
        "us/step mean",
        "us/step best block",
        "steps/s mean",
        "x CartPole mean",
        "x CartPole best",
    ):
        table.add_column(col, justify="right")
    table.add_row(
        "CartPole-v1",
        f"{c_n}",
        f"{1e6 * c_mean:.1f}",
        f"{1e6 * c_best:.1f}",
        f"{1 / c_mean:,.0f}",
        "1.0",
        "1.0",
    )
    for nodes, slots in args.sizes:
        env = gym.make(
            "mtgym/Scavenge-v0",
            scenario=generator(nodes, slots),
            action_mode=args.mode,
            max_jobs=slots,
        )
        mean, best, n = time_env(env, args.steps, rng, True, args.blocks)
        table.add_row(
            f"{nodes} x {slots}",
            f"{n}",
            f"{1e6 * mean:.1f}",
            f"{1e6 * best:.1f}",
            f"{1 / mean:,.0f}",
            f"{mean / c_mean:.1f}",
            f"{best / c_best:.1f}",
        )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
