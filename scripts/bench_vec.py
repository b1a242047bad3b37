"""Benchmark: the batched env against a Python loop of single envs, next to CartPole.

Prints, side by side in one run, env steps per second (a step of B envs counts B):

- at B = 1, 8, 64, 256 on the ``default`` scenario (random legal actions drawn per
  dimension from the masks, a decision at every event): ``make_vec(...,
  vectorization_mode="vector_entry_point")`` (the batched core, ``mtgym.env.vector``), and
  ``SyncVectorEnv`` of the single env (``vectorization_mode="sync"``); CartPole-v1 under
  ``SyncVectorEnv`` and under Gymnasium's own ``vector_entry_point`` (random actions);
- the memory of a batched episode (``default-512``, B = 256: the process's resident memory
  before and after building and resetting it);
- PPO training steps per second: ``mtgym train``'s MaskablePPO (slot network, its default
  hyper-parameters, 8 envs) on ``BatchedPooledVecEnv`` against ``PooledVecEnv``, and the same
  trainer (MaskablePPO, same hyper-parameters, SB3's MLP) on 8 CartPoles (``DummyVecEnv``);
- RLlib's PPO on the same env settings and batch (``rllib_table``): sampling and training
  env steps/s with 0, 1 and 2 remote runners, the batched env against ``SyncVectorEnv``,
  beside the SB3 trainer's training rate of the same run.

Only the ``step`` calls are timed (drawing actions is not), in ``--blocks`` blocks run in
turn for every contender, so the ratios compare blocks timed side by side (a shared
machine's speed drifts by 2x over minutes); ratios are medians of the block-by-block ratios.
Untimed warm-up steps first load (or, on a fresh clone, compile) the kernels. Prints figures;
asserts nothing. With ``--record NAME`` it also writes them as a result file into the
registry (``results/NAME.json``, ``mtgym.results``; kind ``bench_vec``, ``result_file``):
one row per table row, and the options, the memory line and the raw training rates as
aggregates.

    .venv/bin/python scripts/bench_vec.py [--env-steps 4000] [--blocks 5] [--train-steps 4096]
        [--rllib-steps 2048] [--rllib-iters 3] [--record bench-vec]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

import mtgym  # noqa: F401  (registers the env ids)

SIZES = (1, 8, 64, 256)


#: job slots of the measured envs, pinned (left unset the env gives one per node:
#: ``mtgym.env.slots.slot_rule``), so the figures in ``docs/performance.md`` stay comparable
STEP_SLOTS = 16
MEMORY_SLOTS = 32


class Contender:
    """A vector env timed in blocks of ``step`` calls (actions drawn untimed)."""

    def __init__(self, envs: gym.vector.VectorEnv, masked: bool, seed: int = 0) -> None:
        self.envs, self.masked = envs, masked
        self.rng = np.random.default_rng(seed)
        self.obs, _ = envs.reset(seed=seed)
        envs.action_space.seed(seed)
        self.times: list[float] = []
        self.block(3)  # (warm-up: kernels loaded or compiled)
        self.times.clear()

    def _action(self) -> np.ndarray:
        if not self.masked:
            return self.envs.action_space.sample()
        nvec = self.envs.single_action_space.nvec
        m = self.obs["action_mask"].reshape(self.envs.num_envs, len(nvec), -1)
        return (self.rng.random(m.shape) * m).argmax(axis=2)

    def block(self, steps: int) -> float:
        """Env steps per second over ``steps`` calls of ``step``."""
        elapsed = 0.0
        for _ in range(steps):
            a = self._action()
            t0 = time.perf_counter()
            self.obs, *_ = self.envs.step(a)
            elapsed += time.perf_counter() - t0
        rate = steps * self.envs.num_envs / elapsed
        self.times.append(rate)
        return rate


def env_table(env_steps: int, blocks: int, sizes: tuple[int, ...]) -> Table:
    """Env steps/s of the four contenders at each B."""
    table = Table(title="env steps/s (default scenario; a step of B envs counts B)")
    for col in (
        "B",
        "batched",
        "Sync (single env)",
        "CartPole Sync",
        "CartPole vector",
        "batched / Sync",
        "batched / CartPole Sync",
    ):
        table.add_column(col, justify="right")
    for B in sizes:
        contenders = {
            "batched": Contender(
                gym.make_vec(
                    "mtgym/Scavenge-v0",
                    B,
                    vectorization_mode="vector_entry_point",
                    max_jobs=STEP_SLOTS,
                ),
                True,
            ),
            "sync": Contender(
                gym.make_vec(
                    "mtgym/Scavenge-v0", B, vectorization_mode="sync", max_jobs=STEP_SLOTS
                ),
                True,
            ),
            "cart": Contender(gym.make_vec("CartPole-v1", B, vectorization_mode="sync"), False),
            "cart_vec": Contender(
                gym.make_vec("CartPole-v1", B, vectorization_mode="vector_entry_point"), False
            ),
        }
        steps = max(env_steps // (blocks * B), 2)
        for _ in range(blocks):
            for c in contenders.values():
                c.block(steps if c is not contenders["cart_vec"] else 4 * steps)
        mean = {k: float(np.mean(c.times)) for k, c in contenders.items()}
        ratio = {
            k: float(np.median(np.divide(contenders["batched"].times, contenders[k].times)))
            for k in ("sync", "cart")
        }
        table.add_row(
            str(B),
            f"{mean['batched']:,.0f}",
            f"{mean['sync']:,.0f}",
            f"{mean['cart']:,.0f}",
            f"{mean['cart_vec']:,.0f}",
            f"{ratio['sync']:.1f}x",
            f"{ratio['cart']:.2f}x",
        )
        for c in contenders.values():
            c.envs.close()
    return table


def rss_mib() -> float:
    """The process's resident memory (MiB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def memory_line(B: int = 256, scenario: str = "default-512", slots: int = MEMORY_SLOTS) -> str:
    """Resident memory per batched episode of ``scenario`` at ``B``."""
    import gc

    gc.collect()
    before = rss_mib()
    envs = gym.make_vec(
        "mtgym/Scavenge-v0",
        B,
        vectorization_mode="vector_entry_point",
        scenario=scenario,
        max_jobs=slots,
    )
    envs.reset(seed=0)
    envs.step(np.stack(envs.unwrapped.call("noop")))
    after = rss_mib()
    envs.close()
    return (
        f"memory: {scenario} at B = {B}: {after - before:,.0f} MiB resident "
        f"({(after - before) / B * 1024:,.0f} KiB per episode)"
    )


def train_rates(train_steps: int, blocks: int) -> tuple[Table, dict[str, list[float]]]:
    """PPO training steps/s: ``mtgym train``'s trainer on the batched and the loop vec env,
    the same trainer on CartPole.
    """
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from agents.batched_vec import BatchedPooledVecEnv
    from agents.train import Args, build_model, make_env_fn
    from agents.vec import PooledVecEnv

    args = Args(progress=False)

    def ours(cls):
        env = cls([make_env_fn(args, i, bare=True) for i in range(args.n_envs)])
        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=args.gamma)
        return build_model(args, env, None)

    def cartpole():
        env = DummyVecEnv([lambda: gym.make("CartPole-v1") for _ in range(args.n_envs)])
        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=args.gamma)
        return MaskablePPO(
            "MlpPolicy",
            env,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            gae_lambda=args.gae_lambda,
            learning_rate=args.learning_rate,
            gamma=args.gamma,
            ent_coef=args.ent_coef,
            seed=args.seed,
            device="cpu",
            policy_kwargs={"optimizer_kwargs": {"eps": 1e-5, "fused": True}},
        )

    models = {
        "batched": ours(BatchedPooledVecEnv),
        "loop": ours(PooledVecEnv),
        "cartpole": cartpole(),
    }
    rates: dict[str, list[float]] = {k: [] for k in models}
    rollout = args.n_envs * args.n_steps
    per_block = max(train_steps // rollout, 1) * rollout
    masking = {"batched": True, "loop": True, "cartpole": False}  # (CartPole has no masks)
    for name, m in models.items():  # (warm-up: one rollout and update)
        m.learn(rollout, reset_num_timesteps=False, use_masking=masking[name])
    for _ in range(blocks):
        for name, m in models.items():
            t0 = time.perf_counter()
            m.learn(per_block, reset_num_timesteps=False, use_masking=masking[name])
            rates[name].append(per_block / (time.perf_counter() - t0))
    table = Table(
        title=(
            f"PPO training steps/s (MaskablePPO, {args.n_envs} envs, n_steps {args.n_steps}, "
            f"batch {args.batch_size}, {args.n_epochs} epochs)"
        )
    )
    for col in ("trainer", "steps/s", "vs PooledVecEnv", "vs CartPole"):
        table.add_column(col, justify="right")
    for name, label in (
        ("batched", "slot net, BatchedPooledVecEnv"),
        ("loop", "slot net, PooledVecEnv"),
        ("cartpole", "MLP, CartPole DummyVecEnv"),
    ):
        table.add_row(
            label,
            f"{np.mean(rates[name]):,.0f}",
            f"{np.median(np.divide(rates[name], rates['loop'])):.2f}x",
            f"{np.median(np.divide(rates[name], rates['cartpole'])):.2f}x",
        )
    return table, rates


def rllib_table(sample_steps: int, train_iters: int, sb3: list[float] | None) -> Table:
    """RLlib's PPO on the same env settings and PPO batch as ``mtgym train`` (its
    ``Args`` defaults: 8 envs per runner, 1,024-step updates, 256-step minibatches, 4 epochs;
    RLlib's masking module on the ``"masked"`` layout, its default 256x256 MLP): env steps/s
    of ``EnvRunner.sample`` and training steps/s of ``Algorithm.train``, with 0 (the driver
    samples), 1 and 2 remote runners, each stepping its envs in one compiled call
    (``vector_entry_point``) or through ``SyncVectorEnv``; beside the SB3 trainer's rate from
    ``train_rates`` (``sb3``, measured in this run). Each figure is the median of 3 timed
    calls after one untimed warm-up call.
    """
    import os

    from agents.rllib_train import RLlibArgs
    from agents.train import Args
    from mtgym.backends.ray_backend import ray_session

    base = Args(progress=False)
    table = Table(
        title=(
            f"RLlib PPO ({base.n_envs} envs per runner, batch {base.n_envs * base.n_steps}, "
            f"minibatch {base.batch_size}, {base.n_epochs} epochs; {os.cpu_count()} cores)"
        )
    )
    for col in ("runners", "envs stepped by", "sample env steps/s", "train steps/s", "vs SB3"):
        table.add_column(col, justify="right")
    sb3_rate = float(np.median(sb3)) if sb3 else float("nan")
    with ray_session(num_cpus=max(os.cpu_count() or 1, 2)):  # (a CPU per runner, 2 at most)
        for runners in (0, 1, 2):
            for vec in ("vector_entry_point", "sync"):
                args = RLlibArgs(
                    action_mode=base.action_mode,
                    max_jobs=base.max_jobs,
                    max_count=base.max_count,
                    decision_interval_s=base.decision_interval_s,
                    num_env_runners=runners,
                    envs_per_runner=base.n_envs,
                    vectorize=vec,
                    train_batch=base.n_envs * base.n_steps * max(runners, 1),
                    minibatch=base.batch_size,
                    num_epochs=base.n_epochs,
                    eval_freq=0,
                )
                sample, train = _rllib_rates(args, sample_steps, train_iters)
                table.add_row(
                    str(runners),
                    vec,
                    f"{sample:,.0f}",
                    f"{train:,.0f}",
                    f"{train / sb3_rate:.2f}x",
                )
    table.add_row("SB3", "BatchedPooledVecEnv", "", f"{sb3_rate:,.0f}", "1.00x")
    return table


def _rllib_rates(args, sample_steps: int, train_iters: int) -> tuple[float, float]:
    """(sample env steps/s, training env steps/s) of one RLlib configuration."""
    from agents.rllib_train import ppo_config

    algo = ppo_config(args).build_algo()
    group = algo.env_runner_group
    local = args.num_env_runners == 0

    def sample() -> float:
        t0 = time.perf_counter()
        chunks = group.foreach_env_runner(
            lambda r: sum(len(e) for e in r.sample(num_timesteps=sample_steps)),
            local_env_runner=local,
        )
        return sum(chunks) / (time.perf_counter() - t0)

    def train() -> float:
        t0 = time.perf_counter()
        result = algo.train()
        return result["env_runners"]["num_env_steps_sampled"] / (time.perf_counter() - t0)

    sample(), train()  # (warm-up: the kernels, the module, the runners' first resets)
    rates = [sample() for _ in range(3)], [train() for _ in range(max(train_iters, 1))]
    algo.stop()
    return float(np.median(rates[0])), float(np.median(rates[1]))


def _cell(text: str) -> Any:
    """A table cell as a number where it is one (``"12,345"`` -> 12345, ``"3.1x"`` -> 3.1),
    else its text.
    """
    t = text.replace(",", "").strip()
    t = t[:-1] if t.endswith("x") else t
    for kind in (int, float):
        try:
            return kind(t)
        except ValueError:
            pass
    return text


def table_rows(table: Table) -> list[dict[str, Any]]:
    """Each row of ``table`` as ``{"table": its title, header: cell, ...}`` (``_cell``)."""
    columns = [(str(c.header), list(c.cells)) for c in table.columns]
    return [
        {"table": str(table.title), **{h: _cell(str(cells[i])) for h, cells in columns}}
        for i in range(table.row_count)
    ]


#: the options recorded in the result file's aggregates
OPTIONS = (
    "env_steps",
    "blocks",
    "sizes",
    "train_steps",
    "train_blocks",
    "no_memory",
    "rllib_steps",
    "rllib_iters",
)


def result_file(
    provenance: dict[str, Any],
    tables: list[Table],
    measured: dict[str, Any],
    options: dict[str, Any],
    wall_s: float,
) -> Any:
    """The run's result file (kind ``bench_vec``).

    Args:
        provenance: ``mtgym.results.provenance.capture``'s dict, taken at the start.
        tables: the tables printed, in order; each row becomes a row (``table_rows``).
        measured: ``memory`` (the memory line, or None) and ``train_rates`` (per trainer
            the steps/s of each block, or None).
        options: the command's options (``OPTIONS``).
        wall_s: the run's wall seconds.
    """
    from mtgym.results import hashes, store

    scenarios = ["default"] + ([] if options.get("no_memory") else ["default-512"])
    return store.build(
        "bench_vec",
        provenance,
        seeds=[0],  # the contenders' and the memory episode's reset seed, the trainers' seed
        scenarios=hashes.scenario_entries(scenarios),
        wall_s=wall_s,
        rows=[row for t in tables for row in table_rows(t)],
        aggregates={
            "options": options,
            "tables": [str(t.title) for t in tables],
            "memory": measured.get("memory"),
            "train_rates": measured.get("train_rates"),
        },
    )


def main() -> None:
    from mtgym.results import cli as results_cli
    from mtgym.results.provenance import command_line

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env-steps", type=int, default=4000, help="env steps per contender and B")
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="none: no env table")
    p.add_argument("--train-steps", type=int, default=4096, help="per block (0: no training)")
    p.add_argument("--train-blocks", type=int, default=3)
    p.add_argument("--no-memory", action="store_true")
    p.add_argument(
        "--rllib-steps", type=int, default=2048, help="env steps per sample call (0: no RLlib)"
    )
    p.add_argument("--rllib-iters", type=int, default=3, help="timed RLlib train() calls")
    results_cli.add_record_options(p)
    ns = p.parse_args()
    provenance = None
    if ns.record is not None:  # (a taken name: refused before any measurement)
        try:
            provenance = results_cli.start(ns)
        except (ValueError, FileExistsError) as exc:
            raise SystemExit(f"error: {exc}") from None
        provenance["command"] = command_line(["scripts/bench_vec.py", *sys.argv[1:]], "python")
    t0, console = time.perf_counter(), Console()
    tables: list[Table] = []
    measured: dict[str, Any] = {"memory": None, "train_rates": None}
    if ns.sizes:
        tables.append(env_table(ns.env_steps, ns.blocks, tuple(ns.sizes)))
        console.print(tables[-1])
    if not ns.no_memory:
        measured["memory"] = memory_line()
        console.print(measured["memory"])
    sb3 = None
    if ns.train_steps:
        table, measured["train_rates"] = train_rates(ns.train_steps, ns.train_blocks)
        tables.append(table)
        console.print(table)
        sb3 = measured["train_rates"]["batched"]
    if ns.rllib_steps:
        tables.append(rllib_table(ns.rllib_steps, ns.rllib_iters, sb3))
        console.print(tables[-1])
    if provenance is not None:
        options = {k: getattr(ns, k) for k in OPTIONS}
        wall_s = time.perf_counter() - t0
        results_cli.save(ns, result_file(provenance, tables, measured, options, wall_s), None)


if __name__ == "__main__":
    main()
