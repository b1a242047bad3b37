"""Benchmark: FreeTrain's allocation at growing sizes: node-level MILP (HiGHS, CBC) vs the
exact count-level DP. Instances: BFTrainer-like jobs (ImageNet-shaped curves at 0,1,2,...,64
nodes, jmin 1, jmax 64, R_up ~18 s, R_down ~12 s) half running on random current maps.
Prints solve time, status and objective; asserts nothing.

    .venv/bin/python scripts/bench_milp.py [--time-limit 30] [--max-milp-vars 40000]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from baselines.milp.problem import AllocProblem
from baselines.milp.solvers import solve_counts_dp, solve_node_milp


@dataclass
class Args:
    time_limit: float = 30.0
    max_milp_vars: int = 40_000  # larger node-level models are not built (PuLP alone takes minutes)
    sizes: tuple[tuple[int, int], ...] = (
        (4, 32),
        (6, 64),
        (8, 128),
        (10, 200),
        (10, 400),
        (64, 4734),
    )
    seed: int = 0
    dp_repeats: int = 20


def problem(rng: np.random.Generator, J: int, N: int) -> AllocProblem:
    nodes = np.array([0, 1, 2, 4, 8, 16, 32, 64], dtype=float)
    eff = rng.uniform(0.45, 0.95, J)  # parallel efficiency at 64 nodes, as in the ImageNet table
    one = rng.uniform(1000, 7000, J)
    curves = [one[j] * nodes * eff[j] ** (np.log2(np.maximum(nodes, 1)) / 6) for j in range(J)]
    cur = np.zeros((J, N), bool)
    running = rng.random(J) < 0.5
    perm = rng.permutation(N)
    pos = 0
    for j in np.flatnonzero(running):
        k = int(min(rng.integers(1, 65), max((N - pos) // 2, 0)))
        cur[j, perm[pos : pos + k]] = True
        pos += k
    C = cur.sum(1)
    rate = np.array([np.interp(C[j], nodes, curves[j]) if C[j] >= 1 else 0.0 for j in range(J)])
    return AllocProblem(
        np.arange(J),
        np.arange(N),
        cur,
        np.ones(J, int),
        np.full(J, 64),
        [nodes] * J,
        curves,
        rng.uniform(17, 19, J),
        rng.uniform(11, 13, J),
        rate,
        10.0,
    )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--time-limit", type=float, default=Args.time_limit)
    p.add_argument("--max-milp-vars", type=int, default=Args.max_milp_vars)
    ns = p.parse_args()
    args = Args(time_limit=ns.time_limit, max_milp_vars=ns.max_milp_vars)
    rng = np.random.default_rng(args.seed)
    table = Table(title=f"bench_milp: FreeTrain allocation, time limit {args.time_limit:.0f} s")
    for col in ("jobs x nodes", "solver", "binaries", "status", "time ms", "objective", "vs DP"):
        table.add_column(col, justify="right")
    for J, N in args.sizes:
        prob = problem(rng, J, N)
        t0 = time.perf_counter()
        for _ in range(args.dp_repeats):
            dp = solve_counts_dp(prob)
        dp_ms = 1e3 * (time.perf_counter() - t0) / args.dp_repeats
        table.add_row(
            f"{J} x {N}", "count DP", "-", dp.status, f"{dp_ms:.2f}", f"{dp.objective:,.1f}", "1"
        )
        nvars = 2 * J * N + 5 * J
        for solver in ("highs", "cbc"):
            if nvars > args.max_milp_vars:
                table.add_row(
                    f"{J} x {N}", f"MILP {solver}", f"{nvars:,}", "not built", "-", "-", "-"
                )
                continue
            res = solve_node_milp(prob, solver=solver, time_limit_s=args.time_limit)
            rel = res.objective / dp.objective if dp.objective else float("nan")
            table.add_row(
                f"{J} x {N}",
                f"MILP {solver}",
                f"{nvars:,}",
                res.status,
                f"{1e3 * res.solve_s:,.0f}",
                f"{res.objective:,.1f}",
                f"{rel:.4f}",
            )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
