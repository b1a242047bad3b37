"""Benchmark: a learned agent's decision latency at 512 nodes, and RL training throughput.

1. Latency. The agent (the shipped one by default) decides as a ``Policy`` on views of a
   512-node synthetic cluster (same slot count and count cap it was trained with: the
   set-based extractor does not depend on the node count): ``AgentPolicy.decide`` = the
   env's observation of the view + the network (torch one thread, inference mode) + the
   env's action decoding. FreeTrain decides on the same views with the exact count-level
   solver and the node-level MILP (HiGHS). Target: the agent <= 1.5 ms.
2. Training throughput. MaskablePPO (the ``mtgym train`` model: set-based extractor, same
   n_steps, batch and epochs) learns for ``--train-steps`` env steps on the default
   scenario and, in the same run, on CartPole-v1 (MlpPolicy, same n_steps/batch/epochs;
   the env is wrapped to accept MaskablePPO's masks); prints steps per CPU second and
   their ratio (target >= 1/2).

Prints the figures; asserts nothing. The machine is shared: repeat and report the spread.

    .venv/bin/python scripts/bench_agent.py [--agent agents/pretrained/default] [--decisions 30]
        [--train-steps 4096]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import gymnasium as gym
import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from agents.policy import PRETRAINED, AgentPolicy
from baselines.milp.freetrain import FreeTrainPolicy
from mtgym.generate.default import default_generator
from mtgym.generate.supply import SyntheticSupply
from mtgym.policy.play import play
from mtgym.sim.view import ViewBuilder


def latency(ns: argparse.Namespace, console: Console) -> None:
    """Median decision latency of the agent and FreeTrain at 512 nodes."""
    gen = replace(
        default_generator(),
        name="bench-512",
        num_nodes=512,
        group_size=16,
        supply=SyntheticSupply(idle_fraction=0.35),
        jobs=replace(default_generator().jobs, num_jobs=60, arrival_rate_per_h=30.0),
    )
    agent = AgentPolicy(ns.agent)
    inst = gen(0)
    views = ViewBuilder(inst, agent.info_mode)
    states, t_agent = [], []

    def on_step(state, info) -> None:
        states.append(state.copy())

    class Timed:
        name, info_mode = agent.name, agent.info_mode

        def reset(self, view):
            agent.reset(view)

        def decide(self, view):
            t0 = time.perf_counter()
            alloc = agent.decide(view)
            t_agent.append(time.perf_counter() - t0)
            return alloc

    play(inst, Timed(), on_step=on_step, until=inst.t_start + 3 * 3600)
    t_agent = t_agent[1 : ns.decisions + 1]  # (the first call warms the kernels up)
    t_dp, t_milp, status = [], [], []
    dp, milp = FreeTrainPolicy(), FreeTrainPolicy(solver="milp", time_limit_s=60.0)
    for i, s in enumerate(states[: ns.decisions]):
        v = views(s)
        t0 = time.perf_counter()
        dp.decide(v)
        t_dp.append(time.perf_counter() - t0)
        if i < ns.milp_decisions:
            t0 = time.perf_counter()
            milp.decide(v)
            t_milp.append(time.perf_counter() - t0)
            status.append(milp.last.status)
    a, d = (1e3 * float(np.median(x)) for x in (t_agent, t_dp))
    m = 1e3 * float(np.median(t_milp)) if t_milp else float("nan")
    table = Table(
        title=f"decision latency at {inst.num_nodes} nodes, {agent.config.max_jobs} job slots "
        f"(median of {len(t_agent)}; p90 agent {1e3 * np.percentile(t_agent, 90):.2f} ms)"
    )
    for col in ("decider", "ms / decision", "agent is x faster"):
        table.add_column(col, justify="right")
    table.add_row("agent (AgentPolicy.decide, CPU, 1 thread)", f"{a:.2f}", "1")
    table.add_row("FreeTrain count-level exact solver", f"{d:.2f}", f"{d / a:.1f}")
    table.add_row(
        f"FreeTrain node-level MILP (HiGHS; {', '.join(status)})", f"{m:,.0f}", f"{m / a:,.0f}"
    )
    console.print(table)


class _Maskable(gym.Wrapper):
    """CartPole with MaskablePPO's ``action_masks`` (every action legal)."""

    def action_masks(self) -> np.ndarray:
        return np.ones(self.action_space.n, dtype=bool)


def _train_rate(model, steps: int) -> float:
    """Env steps per CPU second of ``model.learn(steps)``."""
    c0 = time.process_time()
    model.learn(total_timesteps=steps, progress_bar=False)
    return steps / (time.process_time() - c0)


def training(ns: argparse.Namespace, console: Console) -> None:
    """MaskablePPO steps per CPU second: the default scenario vs CartPole-v1."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.train import Args, build_model, make_env_fn

    args = Args(n_envs=ns.n_envs, progress=False, eval_freq=0)
    env = DummyVecEnv([make_env_fn(args, i) for i in range(args.n_envs)])
    mt = build_model(args, env, None)
    cp_env = DummyVecEnv([lambda: _Maskable(gym.make("CartPole-v1"))] * args.n_envs)
    cp = MaskablePPO(
        "MlpPolicy",
        cp_env,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        seed=0,
        device="cpu",
    )
    rates = {"mtgym default": [], "CartPole-v1": []}
    for _ in range(ns.rounds):  # interleaved: the machine's drift hits both alike
        rates["CartPole-v1"].append(_train_rate(cp, ns.train_steps))
        rates["mtgym default"].append(_train_rate(mt, ns.train_steps))
    table = Table(
        title=f"MaskablePPO training throughput ({args.n_envs} envs, n_steps {args.n_steps}, "
        f"{ns.rounds} x {ns.train_steps} steps each, interleaved; CPU time, 1 torch thread)"
    )
    for col in ("env", "steps / CPU s (median)", "per round"):
        table.add_column(col, justify="right")
    for name, r in rates.items():
        table.add_row(name, f"{np.median(r):,.0f}", ", ".join(f"{x:,.0f}" for x in r))
    console.print(table)
    ratio = np.median(rates["mtgym default"]) / np.median(rates["CartPole-v1"])
    console.print(f"training-throughput ratio mtgym/CartPole = {ratio:.3f} (1/{1 / ratio:.1f})")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--agent", default=str(PRETRAINED))
    p.add_argument("--decisions", type=int, default=30)
    p.add_argument("--milp-decisions", type=int, default=3)
    p.add_argument("--train-steps", type=int, default=4096, help="per round and env kind")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--n-envs", type=int, default=8)
    p.add_argument("--skip", choices=("latency", "training"), default=None)
    ns = p.parse_args()
    torch.set_num_threads(1)
    console = Console(width=120)
    if ns.skip != "latency":
        latency(ns, console)
    if ns.skip != "training":
        training(ns, console)


if __name__ == "__main__":
    main()
