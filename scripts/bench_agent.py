"""Benchmark: a learned agent's decision latency at 512 nodes, and RL training throughput.

1. Latency. The agent (the shipped one by default) decides as a ``Policy`` on views of a
   512-node synthetic cluster (same slot count and count cap it was trained with; neither
   the pooled observation nor the set-based extractor depends on the node count), at every
   event: ``AgentPolicy.decide`` = the env's observation of the view + the network (torch
   one thread, inference mode) + the env's action decoding. FreeTrain decides on the same
   views with the exact count-level solver and the node-level MILP (HiGHS). Target: the
   agent <= 1.5 ms.
2. Training throughput. MaskablePPO (the ``mtgym train`` model and settings: the per-slot
   network on the pooled observation, a step every ``--train-interval`` simulated seconds,
   the rewards scaled by ``VecNormalize`` as ``agents.train.training_env`` does)
   learns for ``--train-steps`` env steps on the default scenario and, in the same run, on
   CartPole-v1 (MlpPolicy, same n_steps/batch/epochs; the env is wrapped to accept
   MaskablePPO's masks); prints steps per CPU second, the ratio of the medians and the
   round-by-round ratios (adjacent in time; target >= 1/2). A 120 s step covers several
   events, so it costs more than a step at every event.

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
from agents.train import Args
from baselines.milp.freetrain import FreeTrainPolicy
from mtgym.generate.default import default_generator
from mtgym.generate.supply import SyntheticSupply
from mtgym.policy.play import play
from mtgym.sim.view import ViewBuilder

DEFAULT_INTERVAL = Args().decision_interval_s


def bench_generator(num_nodes: int = 512):
    """The default scenario's generator scaled to ``num_nodes`` (35 % idle, 60 jobs)."""
    return replace(
        default_generator(),
        name=f"bench-{num_nodes}",
        num_nodes=num_nodes,
        group_size=16,
        supply=SyntheticSupply(idle_fraction=0.35),
        jobs=replace(default_generator().jobs, num_jobs=60, arrival_rate_per_h=30.0),
    )


def measure_latency(
    agent_path: str, gen, decisions: int, milp_decisions: int, *, hours: float = 3.0
) -> dict:
    """Decision times (s) of the agent through ``play``, and of FreeTrain's count-level
    solver and node-level MILP on the same views; the first agent call (warm-up) dropped.
    """
    agent = AgentPolicy(agent_path)
    inst = gen(0)
    views = ViewBuilder(inst, agent.info_mode)
    states, t_agent = [], []

    def on_step(state, info) -> None:
        states.append(state.copy())

    class Timed:
        name, info_mode = agent.name, agent.info_mode
        decision_interval_s = None  # every event, whatever the agent was trained with

        def reset(self, view):
            agent.reset(view)

        def decide(self, view):
            t0 = time.perf_counter()
            alloc = agent.decide(view)
            t_agent.append(time.perf_counter() - t0)
            return alloc

    play(inst, Timed(), on_step=on_step, until=inst.t_start + hours * 3600)
    t_agent = t_agent[1 : decisions + 1]
    t_dp, t_milp, status = [], [], []
    dp, milp = FreeTrainPolicy(), FreeTrainPolicy(solver="milp", time_limit_s=60.0)
    for i, s in enumerate(states[:decisions]):
        v = views(s)
        t0 = time.perf_counter()
        dp.decide(v)
        t_dp.append(time.perf_counter() - t0)
        if i < milp_decisions:
            t0 = time.perf_counter()
            milp.decide(v)
            t_milp.append(time.perf_counter() - t0)
            status.append(milp.last.status)
    return {
        "num_nodes": inst.num_nodes,
        "slots": agent.observer.num_slots,  # (a scale-free agent's: the cluster's rule)
        "agent": np.array(t_agent),
        "freetrain": np.array(t_dp),
        "freetrain_milp": np.array(t_milp),
        "milp_status": status,
    }


def latency(ns: argparse.Namespace, console: Console) -> None:
    """Median decision latency of the agent and FreeTrain at 512 nodes."""
    r = measure_latency(ns.agent, bench_generator(512), ns.decisions, ns.milp_decisions)
    t_agent = r["agent"]
    a, d = (1e3 * float(np.median(x)) for x in (t_agent, r["freetrain"]))
    m = 1e3 * float(np.median(r["freetrain_milp"])) if r["freetrain_milp"].size else float("nan")
    table = Table(
        title=f"decision latency at {r['num_nodes']} nodes, {r['slots']} job slots "
        f"(median of {len(t_agent)}; p90 agent {1e3 * np.percentile(t_agent, 90):.2f} ms)"
    )
    for col in ("decider", "ms / decision", "agent is x faster"):
        table.add_column(col, justify="right")
    table.add_row("agent (AgentPolicy.decide, CPU, 1 thread)", f"{a:.2f}", "1")
    table.add_row("FreeTrain count-level exact solver", f"{d:.2f}", f"{d / a:.1f}")
    table.add_row(
        f"FreeTrain node-level MILP (HiGHS; {', '.join(r['milp_status'])})",
        f"{m:,.0f}",
        f"{m / a:,.0f}",
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


def measure_training(
    n_envs: int,
    train_steps: int,
    rounds: int,
    *,
    scenario: str = "default",
    decision_interval_s: float | None = DEFAULT_INTERVAL,
    **overrides: object,
) -> dict[str, list[float]]:
    """MaskablePPO steps per CPU second, ``rounds`` interleaved rounds each: the ``mtgym
    train`` model (its defaults) on ``scenario`` and ``MlpPolicy`` on CartPole-v1 with the
    same n_steps, batch and epochs; both warmed up by one rollout first.
    ``decision_interval_s``: the mtgym env's (``None``: a step at every event);
    ``overrides``: other ``agents.train.Args`` fields (n_steps, batch_size, n_epochs).
    """
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.train import build_model, training_env

    args = Args(
        scenario=scenario,
        n_envs=n_envs,
        progress=False,
        eval_freq=0,
        decision_interval_s=decision_interval_s,
        **overrides,
    )
    env = training_env(args)  # what ``mtgym train`` trains on (reward scaling included)
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
    rates: dict[str, list[float]] = {"mtgym": [], "CartPole-v1": []}
    cp.learn(total_timesteps=args.n_steps * args.n_envs)  # warm-up: compiled kernels, caches
    mt.learn(total_timesteps=args.n_steps * args.n_envs)
    for _ in range(rounds):  # interleaved: the machine's drift hits both alike
        rates["CartPole-v1"].append(_train_rate(cp, train_steps))
        rates["mtgym"].append(_train_rate(mt, train_steps))
    env.close()
    return rates


def training(ns: argparse.Namespace, console: Console) -> None:
    """MaskablePPO steps per CPU second: the default scenario vs CartPole-v1."""
    from agents.train import Args

    interval = ns.train_interval if ns.train_interval > 0 else None
    rates = measure_training(ns.n_envs, ns.train_steps, ns.rounds, decision_interval_s=interval)
    args = Args(n_envs=ns.n_envs)
    every = f"a step every {interval:g} s" if interval else "a step at every event"
    table = Table(
        title=f"MaskablePPO training throughput (mtgym: {every}; {args.n_envs} envs, "
        f"n_steps {args.n_steps}, batch {args.batch_size}, {args.n_epochs} epochs, "
        f"{ns.rounds} x {ns.train_steps} steps each, interleaved; CPU time, 1 torch thread)"
    )
    for col in ("env", "steps / CPU s (median)", "per round"):
        table.add_column(col, justify="right")
    for name, r in rates.items():
        label = "mtgym default" if name == "mtgym" else name
        table.add_row(label, f"{np.median(r):,.0f}", ", ".join(f"{x:,.0f}" for x in r))
    console.print(table)
    ratio = np.median(rates["mtgym"]) / np.median(rates["CartPole-v1"])
    paired = paired_ratios(rates)
    console.print(
        f"training-throughput ratio mtgym/CartPole = {ratio:.3f} (1/{1 / ratio:.1f}); "
        f"round by round {np.median(paired):.3f} (median; "
        f"{', '.join(f'{x:.3f}' for x in paired)})"
    )


def paired_ratios(rates: dict[str, list[float]]) -> np.ndarray:
    """mtgym's rate over CartPole's, round by round: each round's two runs are adjacent in
    time, so the machine's drift (up to 2x over minutes here) mostly cancels in each ratio.
    """
    return np.asarray(rates["mtgym"]) / np.asarray(rates["CartPole-v1"])


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
    p.add_argument(
        "--train-interval",
        type=float,
        default=DEFAULT_INTERVAL,
        help="the mtgym env's decision interval in the training benchmark, s; 0: every "
        "event (default: mtgym train's, %(default)s)",
    )
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
