"""Train a learned scheduler on an mtgym scenario (MaskablePPO by default; PPO and A2C too).

``train(Args)``: vectorised envs (``agents.vec.PooledVecEnv`` for the pooled observation,
else ``DummyVecEnv``; ``SubprocVecEnv`` with ``vec="subproc"``),
SB3's TensorBoard logging plus the shared ``eval/*`` tags at evaluation points on fixed
evaluation seeds (the same tags ``mtgym evaluate`` writes for the baselines), checkpoints,
hyper-parameters logged as a table, a progress bar, and ``resume`` from a checkpoint.
Writes ``out/model.zip``, ``out/agent.json``, ``out/checkpoints/``, ``out/tb/``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.policy import AgentConfig, AgentPolicy
from mtgym.core.names import DEFAULT_REWARD
from mtgym.stats import mean_ci

ALGOS = ("maskable_ppo", "ppo", "a2c")


@dataclass
class Args:
    """Training configuration (CleanRL-style: every knob in one typed place; ``mtgym train``
    sets each from its flag of the same name, and ``out/args.json`` records them all).

    Attributes:
        scenario: the scenario trained on (a name, preset or file); also where the
            evaluation points and imitation play.
        algo: ``"maskable_ppo"`` (masks honoured), ``"ppo"`` or ``"a2c"``.
        timesteps: env steps of RL after imitation and the critic's warm-up.
        seed: the model's and the training envs' seed (env rank i resets with
            ``seed * 1000 + i``; ``SeedOffset`` keeps them apart from evaluation seeds).
        out: the run's folder (model.zip, agent.json, args.json, train.json,
            checkpoints/, tb/).
        n_envs: envs stepped together (one batched compiled call for the pooled layout).
        vec: ``"dummy"`` (one process) or ``"subproc"`` (one process per env).
        action_mode, reward, info_mode: the env's keywords (``ScavengeEnv``).
        max_jobs: the training envs' job slots S (a scale-free agent then runs on any S).
        max_count: the ``counts`` head's count cap (the other modes ignore it).
        decision_interval_s: a decision every that many simulated seconds (None: at every
            event). Steps of equal length (a plain MDP, 180 per 6-hour episode at 120 s)
            learnt far better than a decision at every event (``agents/pretrained``).
        n_steps, batch_size, n_epochs: PPO's rollout length per env, minibatch size and
            epochs per rollout.
        learning_rate: Adam's step size at the start.
        lr_schedule: ``"linear"`` (to 0 at the end of ``timesteps``) or ``"constant"``.
        gamma, gae_lambda: the per-step discount and GAE's lambda.
        ent_coef, ent_coef_final: the entropy bonus at the start and at the end (linear
            schedule; ``ent_coef_final`` None: constant).
        target_kl: stop a PPO update's epochs once the approximate KL to the rollout
            policy passes this (None: never); fine-tuning a clone blew up at the first
            update without it (KL 1.75, round 5).
        critic_warmup: env steps after imitation that fit only the value head, the actor
            frozen (``frozen_actor``): imitation trains no critic, and PPO's first updates
            from an unfitted one follow noise.
        norm_reward: scale rewards by VecNormalize's running return spread (rewards only:
            the observation is O(1) by construction).
        observation: ``"pooled"`` (``agents.pooled``: fixed size whatever the node count)
            or ``"dict"`` (every node).
        net: ``"slot"`` (``agents.net``: per-slot shared head, pooled observation) or
            ``"set"`` (``agents.features``: the Dict observation).
        embed_dim: slot and context embedding width.
        sample: the saved agent acts by drawing from its policy (seeded per episode)
            rather than by its mode: the mode of a clone rarely changes a count (its
            draws carry the expert's changes; round 6 measured 0.61 vs 0.82).
        stay_init: ``"slot"`` net: the initial logit bonus for keeping a running job's
            count.
        budget_masks: ``shares`` with the ``"slot"`` net: the policy draws the slots in
            order within the node budget (``agents.budget_dist``; the envs give budget
            masks), so no draw needs the env's repair; imitation labels are lowered to
            what that order allows (``mtgym.env.actions.budget.prefix_feasible``).
        context: ``"set"`` net: slot embeddings see the other jobs and the pool.
        eval_seeds: the evaluation points' seeds; they also pick the kept weights
            (``keep_best``).
        eval_freq: env steps between evaluation points (0: none).
        checkpoint_freq: env steps between checkpoints.
        resume: a checkpoint to continue from (no imitation, no warm-up).
        progress: show SB3's progress bar.
        bc_expert: imitate this registered policy first (e.g. ``"freetrain-speedup"``);
            None: RL from scratch.
        bc_seeds: the expert's episodes (episode i on the i-th training size).
        dagger_rounds: rounds of DAgger after behaviour cloning (the agent drives, the
            expert labels), each on as many episodes as ``bc_seeds``.
        bc_epochs: supervised epochs of the first cloning (half in each DAgger round), and
            of cloning ``from_dataset``.
        from_dataset: clone this Minari dataset's episodes first (``mtgym dataset
            collect``; ``agents.offline``), instead of an expert played live; None: none.
        num_nodes: mixed cluster sizes: env rank i trains on the scenario resized to
            ``num_nodes[i % len]`` nodes (synthetic generators only; (): its own size).
        extra: free-form notes recorded in args.json.
    """

    scenario: str = "default"
    algo: str = "maskable_ppo"
    timesteps: int = 100_000
    seed: int = 0
    out: Path = Path("runs/agent")
    n_envs: int = 8
    vec: str = "dummy"
    action_mode: str = "counts"
    reward: str = DEFAULT_REWARD
    info_mode: str = "user"
    max_jobs: int = 16
    max_count: int = 16
    decision_interval_s: float | None = 120.0
    n_steps: int = 128
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 3e-3
    lr_schedule: str = "linear"
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.003
    ent_coef_final: float | None = 0.0
    target_kl: float | None = None
    critic_warmup: int = 0
    norm_reward: bool = True
    observation: str = "pooled"
    net: str = "slot"
    embed_dim: int = 32
    sample: bool = True
    stay_init: float = 5.0
    budget_masks: bool = False
    context: bool = True
    eval_seeds: tuple[int, ...] = tuple(range(1000, 1008))
    eval_freq: int = 20_000
    checkpoint_freq: int = 20_000
    resume: Path | None = None
    progress: bool = True
    bc_expert: str | None = None
    bc_seeds: tuple[int, ...] = (11, 12, 13, 14)
    dagger_rounds: int = 3
    bc_epochs: int = 30
    from_dataset: str | None = None
    num_nodes: tuple[int, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scale_free(self) -> bool:
        """The action mode's agent reads the scale-free layout (``agents.pooled``)."""
        from agents.pooled import SCALE_FREE_MODES

        return self.action_mode in SCALE_FREE_MODES

    def env_kwargs(self) -> dict[str, Any]:
        """The training envs' keywords: the agent's, with ``max_jobs`` slots (one S for
        every env of the vector env, even where the agent's config leaves S to each cluster).
        """
        return {**self.config().env_kwargs(), "max_jobs": self.max_jobs}

    def config(self) -> AgentConfig:
        """The agent.json written beside the model (the features it reads included)."""
        from agents.pooled import current_features

        features, version = current_features(self.scale_free)
        return AgentConfig(
            algo=self.algo,
            action_mode=self.action_mode,
            reward=self.reward,
            info_mode=self.info_mode,
            # a scale-free agent serves any number of slots: each cluster's own (slot_rule)
            max_jobs=None if self.scale_free else self.max_jobs,
            max_count=self.max_count,
            decision_interval_s=self.decision_interval_s,
            scenario=self.scenario,
            observation=self.observation,
            sample=self.sample,
            budget_masks=self.budget_masks,
            features=features,
            features_version=version,
        )


#: action modes with one equal-size choice per slot, which the per-slot net heads
SLOT_NET_MODES = ("counts", "shares")


def make_env_fn(args: Args, rank: int, *, bare: bool = False):  # a thunk for the vec env
    """A thunk that builds one monitored env (seeded by rank); ``bare``: without the
    observation, info and monitor wrappers (``agents.vec.PooledVecEnv`` does their work).
    """

    def thunk():
        from stable_baselines3.common.monitor import Monitor

        from mtgym.env.env import ScavengeEnv
        from mtgym.env.wrappers import SeedOffset

        # training instances never coincide with the evaluator's (seed s -> instance s)
        env = SeedOffset(ScavengeEnv(scenario_of(args, rank), **args.env_kwargs()))
        if bare:
            env.reset(seed=args.seed * 1000 + rank)
            return env
        if args.observation == "pooled":
            from agents.pooled import PooledObservation, SlimInfo

            env = SlimInfo(PooledObservation(env))
        env.reset(seed=args.seed * 1000 + rank)
        return Monitor(env)

    return thunk


def scenario_of(args: Args, rank: int) -> Any:
    """The scenario env ``rank`` trains on: ``args.scenario``, resized to
    ``args.num_nodes[rank % len]`` nodes when sizes are mixed.
    """
    if not args.num_nodes:
        return args.scenario
    from dataclasses import fields, is_dataclass, replace

    from mtgym.scenario.registry import get_generator

    gen = get_generator(args.scenario)
    if not is_dataclass(gen) or "num_nodes" not in {f.name for f in fields(gen)}:
        raise ValueError(f"scenario {args.scenario!r} has no num_nodes to mix sizes over")
    return replace(gen, num_nodes=int(args.num_nodes[rank % len(args.num_nodes)]))


def make_vec_env(args: Args) -> Any:
    """The training vector env: ``PooledVecEnv`` for the pooled observation in one process
    (``vec="dummy"``), else SB3's ``DummyVecEnv`` or ``SubprocVecEnv`` of monitored envs.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    if args.vec not in ("dummy", "subproc"):
        raise ValueError(f"vec {args.vec!r} is not 'dummy' or 'subproc'")
    if args.vec == "dummy" and args.observation == "pooled":
        from agents.batched_vec import BatchedPooledVecEnv as PooledVecEnv

        fns = [make_env_fn(args, i, bare=True) for i in range(args.n_envs)]
        return PooledVecEnv(fns, budget_masks=args.budget_masks)
    fns = [make_env_fn(args, i) for i in range(args.n_envs)]
    return SubprocVecEnv(fns) if args.vec == "subproc" else DummyVecEnv(fns)


def training_env(args: Args) -> Any:
    """What ``train`` learns on: ``make_vec_env``, its rewards scaled by a running estimate
    of the return's spread (``norm_reward``: SB3's ``VecNormalize``, rewards only).
    """
    env = make_vec_env(args)
    if args.norm_reward:
        from stable_baselines3.common.vec_env import VecNormalize

        # rewards only: the observation is already O(1) by construction, and leaving it
        # alone keeps the saved model usable without the running statistics
        env = VecNormalize(env, norm_obs=False, norm_reward=True, gamma=args.gamma)
    return env


def _check(args: Args) -> None:
    if args.algo not in ALGOS:
        raise ValueError(f"algo {args.algo!r} is not one of {ALGOS}")
    if args.observation not in ("pooled", "dict"):
        raise ValueError(f"observation {args.observation!r} is not 'pooled' or 'dict'")
    if args.net not in ("slot", "set"):
        raise ValueError(f"net {args.net!r} is not 'slot' or 'set'")
    if (args.net == "slot") != (args.observation == "pooled"):
        raise ValueError(
            f"net {args.net!r} needs observation {'pooled' if args.net == 'slot' else 'dict'!r}"
            f", got {args.observation!r}"
        )
    if args.net == "slot" and (
        args.algo != "maskable_ppo" or args.action_mode not in SLOT_NET_MODES
    ):
        raise ValueError(
            f"net 'slot' needs algo 'maskable_ppo' and an action_mode in {SLOT_NET_MODES}"
        )
    if args.lr_schedule not in ("linear", "constant"):
        raise ValueError(f"lr_schedule {args.lr_schedule!r} is not 'linear' or 'constant'")
    if args.bc_expert and args.from_dataset:
        raise ValueError("clone an expert (bc_expert) or a dataset (from_dataset), not both")
    if args.budget_masks and (
        args.action_mode != "shares" or args.net != "slot" or args.vec != "dummy"
    ):
        raise ValueError(
            "budget masks need action_mode 'shares', net 'slot' and vec 'dummy', got "
            f"{args.action_mode!r}, {args.net!r}, {args.vec!r}"
        )
    if args.budget_masks and args.from_dataset:
        raise ValueError("budget masks cannot clone a dataset: its masks are per-slot ones")


def build_model(args: Args, env: Any, tb: str | None) -> Any:
    """A fresh model for ``args.algo``: the per-slot network on the pooled observation
    (``net="slot"``) or the set-based extractor on the Dict one (``net="set"``).
    """
    _check(args)
    if args.net == "slot":
        from agents.net import SlotPolicy

        # a vec env of PooledObservation envs, or one such env
        layout = env.get_attr("layout")[0] if hasattr(env, "get_attr") else env.layout
        policy: Any = SlotPolicy
        policy_kwargs: dict[str, Any] = {
            "features_extractor_kwargs": {
                "num_slots": layout.num_slots,
                "slot_dim": layout.slot_dim,
                "max_count": layout.max_count,
                "embed_dim": args.embed_dim,
            },
            "stay_init": args.stay_init,
            "keep_at_zero": args.scale_free,  # (``shares``: choice 0 keeps the allocation)
            "budget_masks": args.budget_masks,
            # SB3's Adam (eps 1e-5) as one fused kernel over the parameter list: 4x faster
            # than Adam's default per-tensor loop on CPU, the same update
            "optimizer_kwargs": {"eps": 1e-5, "fused": True},
        }
    else:
        from agents.features import SetFeatures

        policy = "MultiInputPolicy"
        policy_kwargs = {
            "features_extractor_class": SetFeatures,
            "features_extractor_kwargs": {"embed_dim": args.embed_dim, "context": args.context},
            # with context each slot's embedding already carries what its count depends on,
            # so the action head reads it directly (a shared hidden layer was a 128-wide
            # bottleneck for 16 slots x 17 counts)
            "net_arch": {"pi": [] if args.context else [128], "vf": [128]},
        }
    lr: Any = args.learning_rate
    if args.lr_schedule == "linear":
        lr0 = args.learning_rate

        def lr(progress_remaining: float) -> float:  # SB3: 1 at the start, 0 at the end
            return lr0 * progress_remaining

    common = {
        "policy": policy,
        "env": env,
        "learning_rate": lr,
        "gamma": args.gamma,
        "ent_coef": args.ent_coef,
        "seed": args.seed,
        "device": "cpu",
        "tensorboard_log": tb,
        "policy_kwargs": policy_kwargs,
        "verbose": 0,
    }
    if args.algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO(
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.n_epochs,
            gae_lambda=args.gae_lambda,
            target_kl=args.target_kl,
            **common,
        )
    if args.algo == "ppo":
        from stable_baselines3 import PPO

        return PPO(
            n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.n_epochs, **common
        )
    if args.algo == "a2c":
        from stable_baselines3 import A2C

        return A2C(n_steps=16, **common)
    raise ValueError(f"algo {args.algo!r} is not one of {ALGOS}")


def evaluate_agent(
    path: Path, scenario: str, seeds: tuple[int, ...], policy: Any = AgentPolicy
) -> dict[str, float]:
    """Mean metrics of a saved agent on fixed seeds (the shared metric names), played as
    ``mtgym evaluate`` plays it (``play``; seed s -> the generator's instance s).

    ``policy`` is the agent's class (``AgentPolicy``; ``agents.rllib_policy.RLlibAgentPolicy``
    for an RLlib run), built from ``path``.
    """
    from mtgym.policy.play import play
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    pol = policy(path)
    rows = []
    for s in seeds:
        res = play(gen(s), pol)
        m = res.metrics.as_dict()
        m["decision_ms"] = res.decision_ms
        rows.append(m)
    keys = (
        "normalized_throughput",  # the headline (eval/normalized_throughput)
        "normalized_samples",
        "fairness_jain",
        "normalized_efficiency",
        "jobs_completed",
        "throughput",
        "utilisation",
        "jct_mean",
        "makespan",
        "upper_bound_fraction",
        "samples",
        "rescales",
        "decision_ms",
    )
    out = {}
    for k in keys:
        v = np.array([r[k] for r in rows], dtype=float)
        out[k] = float(np.nanmean(v)) if np.any(~np.isnan(v)) else float("nan")
    ci = mean_ci([r["normalized_throughput"] for r in rows])
    out["normalized_throughput_lo"], out["normalized_throughput_hi"] = ci.ci_low, ci.ci_high
    return out


def dagger_seeds(args: Args, round_: int) -> list[int]:
    """The episodes' seeds of DAgger round ``round_`` (from 0): as many as ``args.bc_seeds``,
    far from the evaluation ones (``mtgym compare`` uses 100 onwards).
    """
    return [10_000 + 100 * round_ + k for k in range(len(args.bc_seeds))]


def check_seeds(args: Args) -> None:
    """Refuse a seed of the benchmark's test split anywhere in ``args`` (one-line
    ``ValueError``, ``mtgym.benchmark.splits.refuse_test_seeds``): the model's ``seed``, the
    evaluation points' and ``keep_best``'s ``eval_seeds``, and with ``bc_expert`` the cloning
    episodes' ``bc_seeds`` and every DAgger round's (``dagger_seeds``).
    """
    from mtgym.benchmark.splits import refuse_test_seeds

    refuse_test_seeds((args.seed,), what="training (--seed)")
    refuse_test_seeds(args.eval_seeds, what="training's evaluation and keep-best (--eval-seeds)")
    if args.bc_expert:
        refuse_test_seeds(args.bc_seeds, what="behaviour cloning (bc_seeds, --bc-episodes)")
        dagger = [s for r in range(args.dagger_rounds) for s in dagger_seeds(args, r)]
        refuse_test_seeds(dagger, what="DAgger (--dagger-rounds)")


def imitate(model: Any, args: Args, out: Path) -> tuple[float, dict]:
    """Behaviour cloning from ``args.bc_expert`` then DAgger rounds; returns the best
    (eval normalised samples, the headline's total; policy weights) seen.
    """
    from agents.imitation import collect, merge, pretrain

    kw = args.env_kwargs()
    pooled = args.observation == "pooled"
    # episode i on the i-th training size (``scenario_of``), as the training envs mix them
    sizes = [scenario_of(args, i) for i in range(len(args.bc_seeds))]
    budget = args.budget_masks
    data = collect(sizes, args.bc_expert, list(args.bc_seeds), kw, pooled=pooled, budget=budget)
    pretrain(model, data, epochs=args.bc_epochs, lr=3e-3, seed=args.seed)
    best: tuple[float, dict] = (-np.inf, copy.deepcopy(model.policy.state_dict()))
    for r in range(args.dagger_rounds + 1):
        # this round's model, for its evaluation only (the kept clone is ``clone.zip``)
        model.save(str(out / "checkpoints" / "dagger_round.zip"))
        (out / "checkpoints" / "agent.json").write_text((out / "agent.json").read_text())
        score = evaluate_agent(
            out / "checkpoints" / "dagger_round.zip", args.scenario, args.eval_seeds
        )["normalized_samples"]
        if score > best[0]:
            best = (score, copy.deepcopy(model.policy.state_dict()))
        if r == args.dagger_rounds:
            break
        seeds = dagger_seeds(args, r)
        more = collect(sizes, args.bc_expert, seeds, kw, actor=model, pooled=pooled, budget=budget)
        data = merge(data, more)
        pretrain(model, data, epochs=max(args.bc_epochs // 2, 1), lr=2e-3, seed=args.seed + r)
    model.policy.load_state_dict(best[1])
    return best


def clone_dataset(model: Any, args: Args, out: Path, action_space: Any) -> tuple[float, dict]:
    """Behaviour cloning from the Minari dataset ``args.from_dataset`` (``agents.offline``);
    returns (the clone's evaluation score, its policy weights), as ``imitate``.
    """
    from agents.imitation import pretrain
    from agents.offline import demonstrations

    data = demonstrations(
        args.from_dataset or "",
        args.env_kwargs(),
        action_space,
        pooled=args.observation == "pooled",
    )
    losses = pretrain(model, data, epochs=args.bc_epochs, lr=3e-3, seed=args.seed)
    print(
        f"cloned {args.from_dataset}: {len(data)} states, loss {losses[0]:.3f} -> "
        f"{losses[-1]:.3f} nats over {len(losses)} epochs"
    )
    model.save(str(out / "checkpoints" / "clone.zip"))
    (out / "checkpoints" / "agent.json").write_text((out / "agent.json").read_text())
    score = evaluate_agent(out / "checkpoints" / "clone.zip", args.scenario, args.eval_seeds)
    return score["normalized_samples"], copy.deepcopy(model.policy.state_dict())


@contextmanager
def frozen_actor(model: Any) -> Iterator[None]:
    """Only ``model.policy.value_net`` learns inside the block, at the model's initial
    learning rate (a decaying schedule would reach 0 at the block's end).

    Every other parameter (the shared encoder and the action head) has ``requires_grad``
    off, so PPO's updates fit the critic and leave the actor, hence the rollouts'
    distribution, as it was.
    """
    policy, schedule = model.policy, model.lr_schedule
    held = [p for n, p in policy.named_parameters() if not n.startswith("value_net.")]
    before = [p.requires_grad for p in held]
    for p in held:
        p.requires_grad_(False)
    lr0 = float(schedule(1.0))
    model.lr_schedule = lambda _progress: lr0
    try:
        yield
    finally:
        model.lr_schedule = schedule
        for p, r in zip(held, before, strict=True):
            p.requires_grad_(r)


def _seed_range(seeds: tuple[int, ...]) -> str:
    """``"2000-2015"`` for consecutive seeds, else the list."""
    seeds = tuple(int(s) for s in seeds)
    if seeds and seeds == tuple(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def keep_best(
    model: Any, args: Args, out: Path, clone: tuple[float, dict | None], ppo: tuple
) -> str:
    """Keep in ``out/model.zip`` the best evaluated policy (eval seeds, normalised
    samples): the clone, a PPO evaluation point, or the final model; returns which
    (``"imitation"``, ``"ppo@<env steps>"`` or ``"ppo"``); a tie goes to the final model,
    then to the clone.

    Args:
        model: the trained model (its final weights are in ``out/model.zip`` already).
        args: the run's settings (its scenario and ``eval_seeds``).
        out: the run's folder.
        clone: (score, weights) of the best imitation round; weights None without one.
        ppo: (score, weights, env steps) of the best PPO evaluation point (weights None
            when none was evaluated).
    """
    from mtgym.core.io import atomic_path

    if clone[1] is None and ppo[1] is None:
        return "ppo"
    if args.timesteps == 0 and clone[1] is not None:
        return "imitation"  # no RL step: the actor is the clone's (a warm-up fits the critic)
    final = evaluate_agent(out / "model.zip", args.scenario, args.eval_seeds)
    candidates = [(clone[0], clone[1], "imitation"), (ppo[0], ppo[1], f"ppo@{ppo[2]}")]
    score, weights, name = max((c for c in candidates if c[1] is not None), key=lambda c: c[0])
    if score <= final["normalized_samples"]:
        return "ppo"
    model.policy.load_state_dict(weights)
    with atomic_path(out / "model.zip") as tmp:  # never overwritten in place
        model.save(str(tmp))
    return name


def train(args: Args) -> Path:
    """Train, checkpoint and save (module docstring); returns the model's path.

    Imitation first when ``args.bc_expert`` is set (``imitate``), then the critic's
    warm-up (``args.critic_warmup`` steps, ``frozen_actor``), then ``args.timesteps`` steps
    of RL; ``out/model.zip`` holds the best evaluated weights (``keep_best``) and
    ``out/train.json`` the timings and which weights were kept.

    Args:
        args: the run's settings; ``args.out`` is created (and written into) as needed.

    Raises:
        ValueError: a setting ``_check`` refuses, or a seed of the benchmark's test split
            (``check_seeds``).
    """
    import torch

    from agents.callbacks import training_callbacks
    from mtgym.core.io import atomic_path, atomic_write_json

    _check(args)
    check_seeds(args)  # before anything is built or written
    torch.set_num_threads(1)
    out = Path(args.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    args.config().save(out / "agent.json")
    atomic_write_json(out / "args.json", asdict(args), default=str)
    env = training_env(args)
    model = _initial_model(args, env, str(out / "tb"))
    callbacks, tags = training_callbacks(args, out, evaluate_agent)
    t0 = time.perf_counter()
    best: tuple[float, dict | None] = (-np.inf, None)
    if args.bc_expert and not args.resume:
        best = imitate(model, args, out)
        model.save(str(out / "checkpoints" / "clone.zip"))  # the kept clone, before PPO
    elif args.from_dataset and not args.resume:
        best = clone_dataset(model, args, out, env.action_space)
    t_rl = time.perf_counter()
    _learn(model, args, callbacks)
    t_end = time.perf_counter()
    wall, rl_s = t_end - t0, t_end - t_rl
    with atomic_path(out / "model.zip") as tmp:  # a crash mid-save keeps the old model
        model.save(str(tmp))
    kept = keep_best(model, args, out, best, tags.best)
    atomic_write_json(
        out / "train.json",
        {
            "wall_s": wall,  # imitation (BC + DAgger) and RL
            "imitation_s": wall - rl_s,
            "rl_s": rl_s,
            "timesteps": args.timesteps,
            "steps_per_s": args.timesteps / rl_s if rl_s > 0 else 0.0,  # RL steps only
            "kept": kept,
            "eval_points": tags.points,  # each evaluation point, as printed
        },
    )
    print(f"kept: {kept} (the best evaluation on seeds {_seed_range(args.eval_seeds)})")
    env.close()
    return out / "model.zip"


def _initial_model(args: Args, env: Any, tb: str) -> Any:
    """A fresh model (``build_model``), or the checkpoint ``args.resume`` on ``env``."""
    if not args.resume:
        return build_model(args, env, tb)
    from agents.policy import load_model

    model, _ = load_model(args.resume)
    model.set_env(env)
    model.tensorboard_log = tb
    return model


def _learn(model: Any, args: Args, callbacks: Any) -> None:
    """The critic's warm-up (not when resuming), then ``args.timesteps`` steps of RL, on one
    TensorBoard run (``<scenario>__<algo>__<seed>``).
    """
    tb_name = f"{args.scenario}__{args.algo}__{args.seed}"
    warm = args.critic_warmup if not args.resume else 0
    if warm:
        with frozen_actor(model):
            model.learn(warm, callback=callbacks, progress_bar=args.progress, tb_log_name=tb_name)
    model.learn(
        total_timesteps=args.timesteps,
        callback=callbacks,
        progress_bar=args.progress,
        tb_log_name=tb_name,  # the warm-up's run goes on (one TensorBoard curve)
        reset_num_timesteps=not (args.resume or warm),
    )
