"""``mtgym train`` and ``mtgym compare``.

Registered through the ``mtgym.commands`` entry point, so ``mtgym`` never imports this package.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mtgym.command import add_backend_options, check_backend
from mtgym.core import names
from mtgym.results.cli import add_record_options

#: ``mtgym train``'s action mode and decision interval: the shipped agent's (its
#: ``args.json``), so that the command trains what the docs recommend
TRAIN_ACTION_MODE = "shares"
TRAIN_DECISION_INTERVAL_S = 60.0


def _shared(ns: argparse.Namespace) -> dict:
    """The settings both trainers take from the same flags (``agents.train.Args`` and
    ``agents.rllib_train.RLlibArgs`` fields).
    """
    return {
        "scenario": ns.scenario,
        "timesteps": ns.timesteps,
        "seed": ns.seed,
        "out": Path(ns.out),
        "action_mode": ns.action_mode,
        "reward": ns.reward,
        "info_mode": ns.info_mode,
        "max_jobs": ns.max_jobs,
        "max_count": ns.max_count,
        "decision_interval_s": None if ns.decision_interval <= 0 else ns.decision_interval,
        "learning_rate": ns.learning_rate,
        "gamma": ns.gamma,
        "ent_coef": ns.ent_coef,
        "eval_freq": ns.eval_freq,
        **({"eval_seeds": tuple(ns.eval_seeds)} if ns.eval_seeds else {}),
        "resume": Path(ns.resume) if ns.resume else None,
    }


def _train(ns: argparse.Namespace) -> int:
    from agents.train import Args, check_seeds, train
    from mtgym.benchmark.splits import refuse_test_seeds
    from mtgym.core.io import prepare_out_dir

    if ns.algo == "rllib-ppo":
        return _train_rllib(ns)
    args = Args(
        **_shared(ns),
        algo=ns.algo,
        n_envs=ns.n_envs,
        vec=ns.vec,
        progress=not ns.no_progress,
        bc_expert=ns.bc_expert,
        from_dataset=ns.from_dataset,
        dagger_rounds=ns.dagger_rounds,
        bc_seeds=tuple(range(11, 11 + ns.bc_episodes)),
        context=not ns.no_context,
        lr_schedule=ns.lr_schedule,
        ent_coef_final=None if ns.ent_coef_final < 0 else ns.ent_coef_final,
        target_kl=ns.target_kl,
        critic_warmup=ns.critic_warmup,
        norm_reward=not ns.no_norm_reward,
        observation="dict" if ns.net == "set" else "pooled",
        net=ns.net,
        stay_init=ns.stay_init,
        budget_masks=ns.budget_masks,
        embed_dim=ns.embed_dim,
        num_nodes=tuple(ns.num_nodes or ()),
        n_steps=ns.n_steps,
        batch_size=ns.batch_size,
        n_epochs=ns.n_epochs,
    )
    # a test seed is one line (exit 2) before the out folder or any env exists
    check_seeds(args)
    if ns.backend == "ray":
        ray = range(ns.seed, ns.seed + ns.ray_seeds)
        refuse_test_seeds(ray, what="mtgym train --backend ray (--seed, --ray-seeds)")
    prepare_out_dir(ns.out)
    check_backend(ns)
    if ns.backend == "ray":
        from mtgym.backends.ray_backend import train_ray

        for p in train_ray(train, args, address=ns.address, num_workers=ns.ray_seeds):
            print(p)
        return 0
    path = train(args)
    print(path)
    return 0


#: ``train``'s options that only the SB3 trainer reads (imitation, its networks, its
#: schedules and vector envs): ``--algo rllib-ppo`` refuses them when set.
SB3_ONLY = (
    "bc_expert",
    "from_dataset",
    "bc_episodes",
    "dagger_rounds",
    "critic_warmup",
    "no_context",
    "lr_schedule",
    "net",
    "ent_coef_final",
    "target_kl",
    "no_norm_reward",
    "stay_init",
    "budget_masks",
    "num_nodes",
    "vec",
)


def _train_rllib(ns: argparse.Namespace) -> int:
    """``--algo rllib-ppo``: the PPO settings as the SB3 trainer reads them (an update every
    ``--n-steps`` steps of every env, minibatches of ``--batch-size``), on RLlib's runners.
    """
    from agents.rllib_train import RLlibArgs, train_rllib
    from mtgym.benchmark.splits import refuse_test_seeds
    from mtgym.core.io import prepare_out_dir

    if ns.backend == "ray":
        raise ValueError("--algo rllib-ppo runs on Ray itself: give --address, not --backend ray")
    changed = [
        "--" + dest.replace("_", "-")
        for dest in SB3_ONLY
        if getattr(ns, dest) != ns.parser.get_default(dest)
    ]
    if changed:  # (not silently dropped)
        raise ValueError(f"--algo rllib-ppo does not take {', '.join(changed)} (SB3 trainer only)")
    if ns.rllib_module != "slot" and ns.embed_dim != ns.parser.get_default("embed_dim"):
        raise ValueError("--embed-dim is the slot module's width: it needs --rllib-module slot")
    runners = ns.env_runners
    # RLlib resets each runner's envs with seed + worker index (+ the env's index): every
    # instance seed it derives from --seed must stay out of the test split
    derived = range(ns.seed, ns.seed + (runners + 1) * max(ns.n_envs, 1) + 1)
    refuse_test_seeds(derived, what=f"RLlib training (--seed {ns.seed} and the seeds it derives)")
    refuse_test_seeds(ns.eval_seeds or (), what="training's evaluation (--eval-seeds)")
    prepare_out_dir(ns.out)
    args = RLlibArgs(
        **_shared(ns),
        obs_layout=ns.obs_layout,
        module=ns.rllib_module,
        embed_dim=ns.embed_dim,
        num_env_runners=runners,
        envs_per_runner=ns.n_envs,
        vectorize=ns.vectorize,
        address=ns.address,
        train_batch=ns.n_steps * ns.n_envs * max(runners, 1),
        minibatch=ns.batch_size,
        num_epochs=ns.n_epochs,
    )
    print(train_rllib(args))
    return 0


def _compare(ns: argparse.Namespace) -> int:
    """Handler of ``mtgym compare``: play, write ``--out``, and write the result file
    (``OUT/result.json[.gz]``; with ``--record NAME`` also into the registry,
    ``mtgym.results``), one row per episode (``results.json``'s ``per_seed`` rows).
    """
    import time

    from agents.compare import CompareRun, compare
    from mtgym.core.io import prepare_out_dir
    from mtgym.evaluate import PolicyRun
    from mtgym.results import cli as results_cli

    prepare_out_dir(ns.out)
    seeds = list(range(ns.seed, ns.seed + ns.seeds))
    provenance, t0 = results_cli.start(ns), time.perf_counter()  # (a taken name: refused now)
    journal = _compare_journal(ns, seeds, provenance)
    results = compare(
        ns.scenario,
        ns.agent,
        Path(ns.out),
        seeds=seeds,
        baselines=ns.policy,
        reference=ns.reference,
        run=CompareRun(progress=not ns.no_progress, hindsight=not ns.no_bound, journal=journal),
    )
    runs = [PolicyRun(name, e["per_seed"]) for name, e in results["policies"].items()]
    results_cli.save_runs(
        ns,
        "compare",
        provenance,
        scenario=ns.scenario,
        seeds=seeds,
        runs=runs,
        wall_s=time.perf_counter() - t0,
    )
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``train`` and ``compare`` on ``mtgym``'s subcommand parser ``sub``."""
    t = sub.add_parser(
        "train",
        help="train a learned scheduler (MaskablePPO by default)",
        description="Train a learned scheduler. The defaults train the scale-free `shares` "
        "agent (one set of weights for any machine) deciding every 60 simulated seconds, as "
        "the shipped agent does (agents/pretrained/README.md); its evaluation points are "
        "printed and recorded in OUT/train.json.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _add_run_options(t.add_argument_group("run"))
    _add_imitation_options(t.add_argument_group("imitation (before RL)"))
    learning = t.add_argument_group("environment, network and learning")
    _add_learning_options(learning)
    learning.add_argument(
        "--budget-masks",
        action="store_true",
        help="shares: draw the slots in order within the node budget, so that no draw "
        "needs the env's repair (docs/env.md#budget-masks)",
    )
    _add_rllib_options(t.add_argument_group("RLlib (--algo rllib-ppo)"))
    t.add_argument("--no-progress", action="store_true")
    add_backend_options(t, "ray: a seed sweep, one Ray task per seed")
    t.add_argument(
        "--ray-seeds",
        type=int,
        default=2,
        help="with --backend ray: seeds to train (default: %(default)s)",
    )
    t.set_defaults(func=_train, parser=t)  # (parser: its defaults, for --algo rllib-ppo)
    _add_compare(sub)


def _add_run_options(t: argparse._ActionsContainer) -> None:
    """``train``'s scenario, algorithm, length, output, evaluation and resume options."""
    t.add_argument(
        "--scenario", default="default", help="scenario name or file (default: %(default)s)"
    )
    t.add_argument(
        "--algo",
        default="maskable_ppo",
        choices=["maskable_ppo", "ppo", "a2c", "rllib-ppo"],
        help="SB3's (default: %(default)s) or RLlib's PPO (rllib-ppo; the RLlib group below)",
    )
    t.add_argument(
        "--timesteps", type=int, default=100_000, help="env steps (default: %(default)s)"
    )
    t.add_argument("--seed", type=int, default=0, help="the run's seed")
    t.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="agent.json, tb/ and model.zip, checkpoints/ (SB3) or checkpoint/ (rllib-ppo)",
    )
    t.add_argument("--n-envs", type=int, default=8, help="parallel envs (default: %(default)s)")
    t.add_argument("--vec", default="dummy", choices=["dummy", "subproc"], help="vector env kind")
    t.add_argument(
        "--action-mode",
        default=TRAIN_ACTION_MODE,
        choices=names.ACTION_MODES,
        help="shares: scale-free (plays any machine); counts, assign, ...: fixed slots "
        "(docs/envs/scavenge.md)",
    )
    t.add_argument("--reward", default=names.DEFAULT_REWARD, choices=names.REWARD_NAMES)
    t.add_argument("--info-mode", default=names.DEFAULT_INFO_MODE, choices=names.INFO_MODES)
    t.add_argument(
        "--max-jobs",
        type=int,
        default=16,
        help="job slots while training; a shares agent then plays one slot per node "
        "(its agent.json says max_jobs null)",
    )
    t.add_argument("--max-count", type=int, default=16, help="count cap")
    t.add_argument(
        "--eval-freq", type=int, default=20_000, help="steps between evaluations (0 = none)"
    )
    t.add_argument(
        "--resume",
        default=None,
        metavar="PATH",
        help="continue from a checkpoint: a model zip (SB3: --timesteps more steps) or an "
        "rllib-ppo run folder (--timesteps is then the total)",
    )


def _add_imitation_options(t: argparse._ActionsContainer) -> None:
    """``train``'s behaviour cloning and DAgger options."""
    t.add_argument(
        "--bc-expert",
        default=None,
        metavar="POLICY",
        help="imitate this baseline first (behaviour cloning + DAgger), then PPO",
    )
    t.add_argument(
        "--from-dataset",
        default=None,
        metavar="ID",
        help="clone this Minari dataset's episodes first (mtgym dataset collect; offline "
        "extra), then PPO",
    )
    t.add_argument(
        "--dagger-rounds",
        type=int,
        default=3,
        help="DAgger rounds after cloning (default: %(default)s)",
    )
    t.add_argument(
        "--bc-episodes",
        type=int,
        default=4,
        help="expert episodes to clone, and per DAgger round (default: %(default)s)",
    )


def _add_learning_options(t: argparse._ActionsContainer) -> None:
    """``train``'s environment, network and PPO options."""
    t.add_argument(
        "--no-context",
        action="store_true",
        help="the earlier extractor: slots embedded independently, a shared 128-unit head",
    )
    t.add_argument(
        "--learning-rate", type=float, default=3e-3, help="PPO learning rate (default: %(default)s)"
    )
    t.add_argument(
        "--lr-schedule", default="linear", choices=["linear", "constant"], help="(%(default)s)"
    )
    t.add_argument(
        "--net",
        default="slot",
        choices=["slot", "set"],
        help="slot: per-slot shared head on the pooled observation (agents/net.py); "
        "set: the set-based extractor on every node (agents/features.py)",
    )
    t.add_argument(
        "--decision-interval",
        type=float,
        default=TRAIN_DECISION_INTERVAL_S,
        metavar="S",
        help="decide every S simulated seconds (the shipped agent's); 0: at every event",
    )
    t.add_argument("--gamma", type=float, default=0.99, help="per-step discount (%(default)s)")
    t.add_argument("--ent-coef", type=float, default=0.003, help="initial entropy bonus")
    t.add_argument(
        "--target-kl",
        type=float,
        default=None,
        help="stop an update's epochs past this approximate KL (default: never)",
    )
    t.add_argument(
        "--eval-seeds",
        type=int,
        nargs="+",
        default=None,
        metavar="SEED",
        help="seeds of the evaluation points, which also pick the kept weights "
        "(default: 1000-1007)",
    )
    t.add_argument(
        "--critic-warmup",
        type=int,
        default=0,
        metavar="STEPS",
        help="env steps after imitation that fit only the critic, actor frozen (default: 0)",
    )
    t.add_argument(
        "--ent-coef-final",
        type=float,
        default=0.0,
        help="entropy bonus at the end (linear schedule; negative: constant)",
    )
    t.add_argument("--no-norm-reward", action="store_true", help="no VecNormalize on rewards")
    t.add_argument(
        "--stay-init", type=float, default=5.0, help="slot net: initial keep-count bonus"
    )
    t.add_argument(
        "--embed-dim", type=int, default=32, help="slot and context embedding width (32)"
    )
    t.add_argument(
        "--num-nodes",
        type=int,
        nargs="+",
        default=None,
        help="mixed cluster sizes: env i trains on the scenario resized to the i-th size "
        "(cycled; synthetic scenarios); evaluation stays on the scenario's own size",
    )
    t.add_argument("--n-steps", type=int, default=128, help="rollout steps per env")
    t.add_argument("--batch-size", type=int, default=256)
    t.add_argument("--n-epochs", type=int, default=4, help="PPO epochs per rollout")


def _add_rllib_options(t: argparse._ActionsContainer) -> None:
    """``train``'s RLlib options (``--n-envs`` is the envs per runner, ``--address`` the
    cluster).
    """
    t.add_argument(
        "--env-runners",
        type=int,
        default=0,
        metavar="N",
        help="remote sampling actors, each stepping --n-envs envs (0: in the driver)",
    )
    t.add_argument(
        "--vectorize",
        default="vector_entry_point",
        choices=["vector_entry_point", "sync"],
        help="a runner's envs: one compiled call (default) or Gymnasium's SyncVectorEnv",
    )
    t.add_argument(
        "--rllib-module",
        default="mlp",
        choices=["mlp", "slot"],
        help="mlp: RLlib's default MLP on the flat vector, tied to one machine (default); "
        "slot: the scale-free per-slot module (agents/rllib_module.py; shares, masked), any "
        "machine, --embed-dim wide",
    )
    t.add_argument(
        "--obs-layout",
        default="masked",
        choices=["masked", "flat"],
        help="masked: RLlib's action-masking module (default); flat: its default MLP, unmasked",
    )


def _compare_journal(ns: argparse.Namespace, seeds: list[int], provenance: dict) -> Any:
    """``mtgym compare``'s episode journal in ``--out`` (``mtgym.benchmark.journal``):
    episodes and bounds written as they finish; ``--resume`` reads a killed run's back (and
    refuses another run's: other code, scenario, seeds, policies or agent weights).
    """
    from agents.policy import PRETRAINED
    from mtgym.benchmark import journal
    from mtgym.policy.registry import default_policies

    agent = Path(ns.agent) if ns.agent else PRETRAINED
    agent = agent / "model.zip" if agent.is_dir() else agent
    names = ns.policy or default_policies(learned=False)
    found = journal.for_evaluation(
        ns.out,
        provenance=provenance,
        scenario=ns.scenario,
        policies=[f"agent:{agent}", *names, f"hindsight={not ns.no_bound}"],
        seeds=seeds,
        decision_interval_s=None,
        resume=ns.resume,
    )
    if ns.resume:
        s = found.summary()
        print(f"resume: {s['rows']} episode(s) and {s['bounds']} bound(s) from {found.path}")
    return found


def _add_compare(sub: argparse._SubParsersAction) -> None:
    """Register ``compare``: the agent beside every baseline on the same seeds."""
    c = sub.add_parser("compare", help="agent vs every baseline: TensorBoard, results.json, chart")
    c.add_argument(
        "--scenario", default="default", help="scenario name or file (default: %(default)s)"
    )
    c.add_argument(
        "--agent", default=None, metavar="ZIP", help="model (default: the shipped agent)"
    )
    c.add_argument("--policy", action="append", help="baselines to include (default: all)")
    c.add_argument("--seeds", type=int, default=10, help="evaluation seeds (default: %(default)s)")
    c.add_argument(
        "--reference",
        default=None,
        metavar="POLICY",
        help="policy the others are compared with, seed by seed (default: freetrain when compared, else the first)",
    )
    c.add_argument(
        "--seed", type=int, default=100, help="first evaluation seed (default: %(default)s)"
    )
    c.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="results.json, results.md, tradeoff.png, compare.png, tb/<policy>/",
    )
    c.add_argument("--no-progress", action="store_true")
    c.add_argument(
        "--resume",
        action="store_true",
        help="continue the killed run in --out (its episodes.jsonl): play only what it lacks; "
        "refused if the code, scenario, seeds, policies or agent weights changed",
    )
    c.add_argument(
        "--no-bound",
        action="store_true",
        help="skip each seed's hindsight bound (hindsight_bound, bound_fraction: docs/metrics.md)",
    )
    add_record_options(c)  # --record NAME, --results-dir DIR, --force
    c.set_defaults(func=_compare)
