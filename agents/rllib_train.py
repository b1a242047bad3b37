"""``mtgym train --algo rllib-ppo``: PPO with RLlib on ``mtgym:mtgym/Scavenge-v0``, on this
machine or a Ray cluster (``--address``): ``num_env_runners`` Ray actors sample, each
stepping ``envs_per_runner`` episodes, by default in one compiled call (the batched env,
``gym_env_vectorize_mode="vector_entry_point"``), for one learner.

No glue: the env is built by RLlib's own runners from the module-qualified id and an
``env_config`` of ``ScavengeEnv`` keywords. ``obs_layout="masked"`` (default) trains RLlib's
example ``ActionMaskingTorchRLModule`` (illegal actions are never drawn); ``"flat"`` trains
RLlib's default MLP, unmasked (the env repairs what it asks for); both read the flat vector
of one machine. ``module="slot"`` trains ``agents.rllib_module.SlotRLModule`` on the
``"masked"`` layout instead: per slot, scale-free, one set of weights for any machine (it
then plays, as the SB3 scale-free agent does, with each machine's own slot count:
``agent.json``'s ``max_jobs`` is None, so its evaluation points too).

The run folder matches the SB3 trainer's: ``agent.json`` (``algo`` ``"rllib-ppo"``,
``observation`` the layout; ``rllib-agent:<out>`` plays it), ``args.json``, ``train.json``
(timings and the evaluation points), ``checkpoint/`` (the latest RLlib algorithm checkpoint,
written at every evaluation point and at the end: ``--resume`` continues from it) and
``tb/<scenario>__rllib-ppo__<seed>_1``: SB3's logger writes the SB3 trainer's tags
(``SHARED_TRAIN_TAGS``: ``rollout/ep_rew_mean``, ``train/value_loss``, ...) and, at each
evaluation point, the ``eval/*`` tags of ``mtgym evaluate`` on the same ``eval_seeds``, so
the runs overlay the SB3 agent's and the baselines' in TensorBoard.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from agents.policy import AgentConfig
from agents.rllib_policy import RLLIB_ALGO, RLLIB_LAYOUTS, RLlibAgentPolicy, checkpoint_of
from mtgym.core.names import DEFAULT_REWARD

#: How the runners step their envs: the batched core, or Gymnasium's loop of envs.
VECTORIZE = ("vector_entry_point", "sync")
#: How long an iteration waits for its samples (``ppo_config``).
SAMPLE_TIMEOUT_S = 600.0


@dataclass
class RLlibArgs:
    """An RLlib training run (``mtgym train --algo rllib-ppo`` sets each from its flag).

    Attributes:
        scenario: the scenario trained on, and where the evaluation points play.
        timesteps: the run's total env steps, a resumed checkpoint's included (whole
            iterations: the last may pass it). (SB3's ``--resume`` adds its timesteps to the
            checkpoint's instead.)
        seed: RLlib's seed (the runners' envs reset with it, their modules' weights).
        out: the run's folder (module docstring).
        action_mode, reward, info_mode: the env's keywords.
        max_jobs, max_count: the training env's slots S and count cap (None: the env's own
            rule); the MLP then plays with the same S, the slot module with each machine's.
        decision_interval_s: a decision every that many simulated seconds (None: at every
            event).
        obs_layout: ``"masked"`` (RLlib's masking module) or ``"flat"`` (its default MLP).
        num_env_runners: remote sampling actors (0: sample in the driver).
        envs_per_runner: episodes each runner steps together.
        vectorize: ``"vector_entry_point"`` (one compiled call) or ``"sync"``.
        address: a Ray cluster to join (None: a private local Ray).
        num_cpus: CPUs of a private local Ray (None: the cores, at least one per runner).
        train_batch, minibatch, num_epochs: PPO's env steps per update, minibatch size and
            epochs per update.
        learning_rate, gamma, gae_lambda, ent_coef, clip: PPO's step size, per-step
            discount, GAE lambda, entropy bonus and clip range.
        hidden: the MLP's layer widths (encoder; ``module="mlp"``).
        module: ``"mlp"`` (RLlib's default encoder on the flat vector: one machine) or
            ``"slot"`` (``agents.rllib_module.SlotRLModule``: scale-free, per slot, any
            machine; the ``shares`` mode and the ``"masked"`` layout).
        embed_dim: the slot module's embedding width.
        eval_seeds: the evaluation points' seeds (the SB3 trainer's).
        eval_freq: env steps between evaluation points (and checkpoints); 0: only at the end.
        resume: a run folder or checkpoint to continue from.
    """

    scenario: str = "default"
    timesteps: int = 100_000
    seed: int = 0
    out: Path = Path("runs/rllib")
    action_mode: str = "shares"
    reward: str = DEFAULT_REWARD
    info_mode: str = "user"
    max_jobs: int | None = None
    max_count: int | None = None
    decision_interval_s: float | None = 120.0
    obs_layout: str = "masked"
    num_env_runners: int = 0
    envs_per_runner: int = 8
    vectorize: str = "vector_entry_point"
    address: str | None = None
    num_cpus: int | None = None
    train_batch: int = 4096
    minibatch: int = 512
    num_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip: float = 0.2
    hidden: tuple[int, ...] = (256, 256)
    module: str = "mlp"
    embed_dim: int = 32
    eval_seeds: tuple[int, ...] = tuple(range(1000, 1008))
    eval_freq: int = 20_000
    resume: Path | None = None

    def env_config(self) -> dict[str, Any]:
        """RLlib's ``env_config``: ``ScavengeEnv``'s keywords (a scenario file made absolute:
        the runners' working folder is not the driver's).
        """
        scenario = self.scenario
        if Path(scenario).is_file():
            scenario = str(Path(scenario).resolve())
        kwargs = self._agent_config().env_kwargs()
        return {"scenario": scenario, **kwargs, "obs_layout": self.obs_layout}

    def config(self) -> AgentConfig:
        """The ``agent.json`` of the run (what ``rllib-agent`` needs to observe and act), with
        the slots and count cap the env resolves (the sizes an MLP is tied to; the slot
        module's ``max_jobs`` is None: each machine's own).
        """
        from mtgym.env.env import ScavengeEnv

        probe = ScavengeEnv(**self.env_config())
        # the slot module serves any number of slots: each machine's own (slot_rule)
        slots = None if self.module == "slot" else probe.num_slots
        return replace(self._agent_config(), max_jobs=slots, max_count=probe.max_count)

    def _agent_config(self) -> AgentConfig:
        """The run's settings as an ``AgentConfig``, sizes as given (None: the env's rule)."""
        return AgentConfig(
            algo=RLLIB_ALGO,
            action_mode=self.action_mode,
            reward=self.reward,
            info_mode=self.info_mode,
            max_jobs=self.max_jobs,
            max_count=self.max_count,
            decision_interval_s=self.decision_interval_s,
            scenario=self.scenario,
            observation=self.obs_layout,
            sample=False,
            extra={"module": self.module},
        )


def check_args(args: RLlibArgs) -> None:
    """``ValueError`` naming the setting, before Ray starts.

    Args:
        args: the run's settings.
    """
    if args.obs_layout not in RLLIB_LAYOUTS:
        raise ValueError(f"obs_layout {args.obs_layout!r} is not one of {RLLIB_LAYOUTS}")
    if args.vectorize not in VECTORIZE:
        raise ValueError(f"vectorize {args.vectorize!r} is not one of {VECTORIZE}")
    if args.num_env_runners < 0 or args.envs_per_runner < 1:
        raise ValueError("num_env_runners must be >= 0 and envs_per_runner >= 1")
    if args.module not in ("mlp", "slot"):
        raise ValueError(f"module {args.module!r} is not 'mlp' or 'slot'")
    if args.module == "slot" and (args.action_mode != "shares" or args.obs_layout != "masked"):
        raise ValueError("module 'slot' needs action_mode 'shares' and obs_layout 'masked'")
    if not 0 < args.minibatch <= args.train_batch:
        raise ValueError(f"minibatch {args.minibatch} must be in 1..train_batch")


def ppo_config(args: RLlibArgs) -> Any:
    """The RLlib ``PPOConfig`` of a run (module docstring): the env by its id and
    ``env_config``, the runners, PPO's settings and the module. The slot module reads the
    observation at the slices of ``args``' env: a later ``.environment(...)`` must keep its
    node and slot counts.

    Args:
        args: the run's settings (checked).

    Returns:
        A ``ray.rllib.algorithms.ppo.PPOConfig``.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    runners = max(args.num_env_runners, 1)
    fragment = max(args.train_batch // (runners * args.envs_per_runner), 1)
    model = {"fcnet_hiddens": list(args.hidden), "head_fcnet_hiddens": []}
    if args.module == "slot":
        from agents.rllib_module import SlotRLModule, slot_model_config
        from mtgym.env.env import ScavengeEnv

        layout = ScavengeEnv(**args.env_config()).layout  # (its slices)
        config = slot_model_config(layout, args.embed_dim)
        spec = RLModuleSpec(module_class=SlotRLModule, model_config=config)
    elif args.obs_layout == "masked":
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
            ActionMaskingTorchRLModule,
        )

        spec = RLModuleSpec(module_class=ActionMaskingTorchRLModule, model_config=model)
    else:
        spec = RLModuleSpec(model_config=model)
    return (
        PPOConfig()
        .environment("mtgym:mtgym/Scavenge-v0", env_config=args.env_config())
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            gym_env_vectorize_mode=args.vectorize,
            rollout_fragment_length=fragment,
            num_cpus_per_env_runner=1,
            # a runner's first sample may compile the env's kernels (a cold numba cache:
            # tens of seconds); RLlib's 60 s default then skips the iteration's update
            sample_timeout_s=SAMPLE_TIMEOUT_S,
        )
        .learners(num_learners=0)
        .training(
            lr=args.learning_rate,
            gamma=args.gamma,
            lambda_=args.gae_lambda,
            entropy_coeff=args.ent_coef,
            clip_param=args.clip,
            train_batch_size_per_learner=args.train_batch,
            minibatch_size=args.minibatch,
            num_epochs=args.num_epochs,
        )
        .rl_module(rl_module_spec=spec)
        .debugging(seed=args.seed, log_level="ERROR")
    )


#: The SB3 trainer's scalar tags that the RLlib trainer writes too, under the same names.
SHARED_TRAIN_TAGS = (
    "rollout/ep_rew_mean",
    "rollout/ep_len_mean",
    "time/fps",
    "train/approx_kl",
    "train/entropy_loss",
    "train/explained_variance",
    "train/learning_rate",
    "train/loss",
    "train/policy_gradient_loss",
    "train/value_loss",
    "train/clip_range",
)


def shared_scalars(result: dict[str, Any], fps: float) -> dict[str, float]:
    """An RLlib ``train()`` result as the SB3 trainer's scalars (``SHARED_TRAIN_TAGS``).

    ``train/entropy_loss`` is minus the entropy, as SB3 logs it; the episode means are left
    out until an episode has ended.

    Args:
        result: what ``Algorithm.train()`` returned.
        fps: env steps per second of this iteration.

    Returns:
        tag -> value.
    """
    learner = result.get("learners", {}).get("default_policy", {})
    runners = result.get("env_runners", {})
    pairs = {
        "rollout/ep_rew_mean": runners.get("episode_return_mean"),
        "rollout/ep_len_mean": runners.get("episode_len_mean"),
        "time/fps": fps,
        "train/approx_kl": learner.get("mean_kl_loss"),
        "train/entropy_loss": -learner["entropy"] if "entropy" in learner else None,
        "train/explained_variance": learner.get("vf_explained_var"),
        "train/learning_rate": learner.get("default_optimizer_learning_rate"),
        "train/loss": learner.get("total_loss"),
        "train/policy_gradient_loss": learner.get("policy_loss"),
        "train/value_loss": learner.get("vf_loss"),
        "train/clip_range": result.get("config", {}).get("clip_param"),
    }
    return {k: float(v) for k, v in pairs.items() if v is not None and np.isfinite(float(v))}


def _save(algo: Any, out: Path) -> Path:
    """Write ``out/checkpoint`` whole or not at all (a crash mid-save keeps the previous
    one: the new one is written beside it, then swapped in).

    Returns:
        The checkpoint's path.
    """
    final, tmp, old = out / "checkpoint", out / "checkpoint.tmp", out / "checkpoint.old"
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp.resolve()))
    if final.exists():  # (else a crash between the renames left the last one as old)
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def evaluate_rllib(out: Path, scenario: str, seeds: tuple[int, ...]) -> dict[str, float]:
    """Mean metrics of the run's checkpoint played as ``mtgym evaluate`` plays
    ``rllib-agent:<out>`` (``agents.train.evaluate_agent``'s metrics).
    """
    from agents.train import evaluate_agent

    return evaluate_agent(out, scenario, seeds, policy=RLlibAgentPolicy)


def train_rllib(args: RLlibArgs) -> Path:
    """Train (module docstring); returns the run folder (``rllib-agent:<it>`` plays it).

    Args:
        args: the run's settings; ``args.out`` is created as needed.

    Raises:
        ValueError: a setting out of range (``check_args``), before Ray starts.
    """
    from stable_baselines3.common.logger import configure

    from agents.callbacks import eval_line
    from mtgym.backends.ray_backend import ray_session
    from mtgym.core.io import atomic_write_json
    from mtgym.evaluate import TAGS

    check_args(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    args.config().save(out / "agent.json")
    atomic_write_json(out / "args.json", asdict(args), default=str)
    tb = out / "tb" / f"{Path(args.scenario).stem}__{RLLIB_ALGO}__{args.seed}_1"
    logger = configure(str(tb), ["tensorboard"])
    points, t0 = [], time.perf_counter()
    with ray_session(args.address, num_cpus=_local_cpus(args)):
        algo = ppo_config(args).build_algo()
        if args.resume:
            algo.restore_from_path(str(checkpoint_of(args.resume).resolve()))
        start = steps = _lifetime_steps(algo)  # (the checkpoint's, when resuming)
        next_eval = (steps // args.eval_freq + 1) * args.eval_freq if args.eval_freq else 0
        while steps < args.timesteps:
            t = time.perf_counter()
            result = algo.train()
            new = int(result.get("num_env_steps_sampled_lifetime", steps))
            fps = (new - steps) / max(time.perf_counter() - t, 1e-9)
            steps = new
            for k, v in shared_scalars(result, fps).items():
                logger.record(k, v)
            if (args.eval_freq and steps >= next_eval) or steps >= args.timesteps:
                while args.eval_freq and next_eval <= steps:
                    next_eval += args.eval_freq
                _save(algo, out)
                metrics = evaluate_rllib(out, args.scenario, args.eval_seeds)
                points.append({"steps": steps, **metrics})
                print(eval_line(steps, metrics, len(args.eval_seeds)), flush=True)
                for k, v in metrics.items():
                    if k in TAGS and not np.isnan(v):
                        logger.record(TAGS[k], v)
            logger.dump(step=steps)
        if not points:  # (a resumed run already past its timesteps)
            _save(algo, out)
        algo.stop()
    logger.close()
    wall = time.perf_counter() - t0
    atomic_write_json(
        out / "train.json",
        {
            "wall_s": wall,
            "timesteps": steps,  # the run's total, the resumed checkpoint's included
            "resumed_from": start,
            "steps_per_s": (steps - start) / wall,  # this session's steps only
            "eval": points,
        },
    )
    return out


def _local_cpus(args: RLlibArgs) -> int | None:
    """CPUs of a private local Ray: ``args.num_cpus``, else the cores, and at least one per
    runner (each asks for one: with fewer, Ray would wait for them forever); None with
    ``args.address`` (the cluster's own).
    """
    if args.address:
        return None
    return args.num_cpus or max(os.cpu_count() or 1, args.num_env_runners)


def _lifetime_steps(algo: Any) -> int:
    """Env steps the algorithm has sampled so far (non-zero after ``restore``)."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    value = algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
    return int(value or 0)
