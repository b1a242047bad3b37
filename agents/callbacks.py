"""The training run's SB3 callbacks: checkpoints, the hyper-parameter table, the entropy
schedule, and the shared ``eval/*`` tags at evaluation points (the tags ``mtgym evaluate``
writes for the baselines, so the agent's curves sit beside theirs in TensorBoard), which
also remember the best evaluated weights for ``agents.train.keep_best``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback

from mtgym.evaluate import TAGS


class SharedTags(BaseCallback):
    """Log the hyper-parameters once, schedule the entropy bonus, and every
    ``args.eval_freq`` env steps evaluate the current weights and log the shared tags.

    Args:
        args: the run's ``agents.train.Args`` (``eval_freq``, ``eval_seeds``, the entropy
            schedule ``ent_coef`` -> ``ent_coef_final`` over ``timesteps``).
        out: the run's folder (the evaluated weights go to ``checkpoints/eval_tmp.zip``).
        evaluate: ``agents.train.evaluate_agent`` (path, scenario, seeds -> mean metrics).

    Each evaluation point is printed as one line (steps, headline with its 95% interval over
    the seeds, the selection score, and whether it is the best so far: the weights kept if
    the run ended now) and appended to ``points`` (``train.json``'s ``eval_points``).

    Attributes:
        best: (eval normalised samples, policy state dict, env steps) of the best evaluation
            point so far; (-inf, None, 0) before the first.
        points: one dict per evaluation point: ``steps``, ``headline``, ``lo``, ``hi``,
            ``normalized_samples``, ``best`` (the best so far).
    """

    def __init__(self, args: Any, out: Path, evaluate: Callable[..., dict[str, float]]):
        super().__init__()
        self.args, self.out, self.evaluate = args, out, evaluate
        self.next_eval = args.eval_freq
        self.best: tuple[float, dict | None, int] = (-np.inf, None, 0)
        self.points: list[dict[str, Any]] = []

    def _on_training_start(self) -> None:
        """Log ``args`` as TensorBoard's hyper-parameter table (once per ``learn`` call), and
        put the next evaluation point past the steps done (a resumed model's included: no
        catching-up evaluations).
        """
        from stable_baselines3.common.logger import HParam

        f = self.args.eval_freq
        if f:
            self.next_eval = (self.num_timesteps // f + 1) * f

        hp = {
            k: (str(v) if not isinstance(v, int | float | str | bool) else v)
            for k, v in asdict(self.args).items()
        }
        self.logger.record(
            "hparams",
            HParam(hp, {"rollout/ep_rew_mean": 0.0}),
            exclude=("stdout", "log", "json", "csv"),
        )

    def _on_rollout_start(self) -> None:
        """Set this rollout's entropy bonus (linear schedule; none when ``ent_coef_final``
        is None).
        """
        a = self.args
        if a.ent_coef_final is not None:
            frac = min(self.num_timesteps / max(a.timesteps, 1), 1.0)
            ent = a.ent_coef + frac * (a.ent_coef_final - a.ent_coef)
            self.model.ent_coef = ent
            self.logger.record("train/ent_coef_scheduled", ent)

    def _on_step(self) -> bool:
        """At an evaluation point: save, evaluate on ``eval_seeds``, log, remember the best."""
        a = self.args
        if a.eval_freq and self.num_timesteps >= self.next_eval:
            while self.next_eval <= self.num_timesteps:
                self.next_eval += a.eval_freq
            tmp = self.out / "checkpoints" / "eval_tmp.zip"
            self.model.save(str(tmp))
            (self.out / "checkpoints" / "agent.json").write_text(
                (self.out / "agent.json").read_text()
            )
            metrics = self.evaluate(tmp, a.scenario, a.eval_seeds)
            for k, v in metrics.items():
                if k in TAGS and not np.isnan(v):
                    self.logger.record(TAGS[k], v)
            is_best = metrics["normalized_samples"] > self.best[0]
            if is_best:
                weights = copy.deepcopy(self.model.policy.state_dict())
                self.best = (metrics["normalized_samples"], weights, self.num_timesteps)
            self._report(metrics, is_best)
        return True

    def _report(self, metrics: dict[str, float], is_best: bool) -> None:
        """Print and remember one evaluation point (class docstring)."""
        point = {
            "steps": int(self.num_timesteps),
            "headline": metrics["normalized_throughput"],
            "lo": metrics.get("normalized_throughput_lo", float("nan")),
            "hi": metrics.get("normalized_throughput_hi", float("nan")),
            "normalized_samples": metrics["normalized_samples"],
            "best": bool(is_best),
        }
        self.points.append(point)
        line = eval_line(point["steps"], metrics, len(self.args.eval_seeds))
        print(line + (" (best so far: kept if the run ended now)" if is_best else ""), flush=True)


def eval_line(steps: int, metrics: dict[str, float], n_seeds: int) -> str:
    """One evaluation point as printed during training: steps, the headline with its 95%
    interval over the seeds, and the selection score (``normalized_samples``).
    """
    lo = metrics.get("normalized_throughput_lo", float("nan"))
    hi = metrics.get("normalized_throughput_hi", float("nan"))
    return (
        f"eval @ {steps:,} steps: headline {metrics['normalized_throughput']:.2f} "
        f"[{lo:.2f}, {hi:.2f}] over {n_seeds} seeds, selection score "
        f"{metrics['normalized_samples']:.4f}"
    )


def training_callbacks(
    args: Any, out: Path, evaluate: Callable[..., dict[str, float]]
) -> tuple[CallbackList, SharedTags]:
    """Checkpoints every ``args.checkpoint_freq`` env steps (``out/checkpoints/model_<n>_
    steps.zip``) and ``SharedTags``; returns the list for ``learn`` and the tags callback
    (its ``best``).
    """
    tags = SharedTags(args, out, evaluate)
    every = max(args.checkpoint_freq // args.n_envs, 1)  # (SB3 counts calls, not env steps)
    ckpt = CheckpointCallback(every, str(out / "checkpoints"), name_prefix="model")
    return CallbackList([ckpt, tags]), tags
