"""Benchmark: decision latency of a learned agent vs FreeTrain's MILP at 512 nodes.

The agent (the shipped one by default) decides on observations of a 512-node synthetic
cluster (same slot count and count cap it was trained with: the set-based extractor does
not depend on the node count); the MILP decides on the same states through its view, with
the node-level formulation (HiGHS) and the exact count-level solver. Prints per-decision
latency and the ratios; asserts nothing.

    .venv/bin/python scripts/bench_agent.py [--agent agents/pretrained/default] [--decisions 30]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from agents.policy import PRETRAINED, AgentPolicy
from baselines.milp.freetrain import FreeTrainPolicy
from mtgym.env.env import ScavengeEnv
from mtgym.generate.default import default_generator
from mtgym.generate.supply import SyntheticSupply
from mtgym.sim.view import ViewBuilder


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--agent", default=str(PRETRAINED))
    p.add_argument("--decisions", type=int, default=30)
    p.add_argument("--milp-decisions", type=int, default=3)
    ns = p.parse_args()
    torch.set_num_threads(1)
    gen = replace(
        default_generator(),
        name="bench-512",
        num_nodes=512,
        group_size=16,
        supply=SyntheticSupply(idle_fraction=0.35),
        jobs=replace(default_generator().jobs, num_jobs=60, arrival_rate_per_h=30.0),
    )
    agent = AgentPolicy(ns.agent)
    env = ScavengeEnv(gen(0), **agent.config.env_kwargs())
    obs, _ = env.reset(seed=0)
    states, t_agent = [], []
    for _ in range(ns.decisions):
        t0 = time.perf_counter()
        action = agent.act(env, obs)
        t_agent.append(time.perf_counter() - t0)
        states.append(env.state.copy())
        obs, *_ = env.step(action)
    views = ViewBuilder(env.instance)
    t_dp, t_milp, status = [], [], []
    dp, milp = FreeTrainPolicy(), FreeTrainPolicy(solver="milp", time_limit_s=60.0)
    for i, s in enumerate(states):
        v = views(s)
        t0 = time.perf_counter()
        dp.decide(v)
        t_dp.append(time.perf_counter() - t0)
        if i < ns.milp_decisions:
            t0 = time.perf_counter()
            milp.decide(v)
            t_milp.append(time.perf_counter() - t0)
            status.append(milp.last.status)
    a, d, m = (1e3 * float(np.median(x)) for x in (t_agent, t_dp, t_milp))
    table = Table(
        title=f"decision latency at {env.num_nodes} nodes, {env.num_slots} job slots (median)"
    )
    for col in ("decider", "ms / decision", "agent is x faster"):
        table.add_column(col, justify="right")
    table.add_row("agent (MaskablePPO, CPU, 1 thread)", f"{a:.2f}", "1")
    table.add_row("FreeTrain count-level exact solver", f"{d:.2f}", f"{d / a:.1f}")
    table.add_row(
        f"FreeTrain node-level MILP (HiGHS; {', '.join(status)})", f"{m:,.0f}", f"{m / a:,.0f}"
    )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
