"""Learned agents behind mtgym's policy interface.

``AgentPolicy(path)`` loads a saved model (``model.zip``) and its ``agent.json`` (the env
settings it was trained with: action mode, slots, count cap, reward, info mode) and plays an
instance through ``ScavengeEnv`` with the same decision schedule as ``play`` (a
decision at every event). It implements ``episode(instance) -> EpisodeResult``, which
``mtgym.evaluate`` uses for policies that act on observations rather than views; it is
registered as ``agent`` (``--policy agent:PATH``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import Allocation
from mtgym.metrics import compute_metrics
from mtgym.policy.play import EpisodeResult
from mtgym.sim.view import InfoMode, SchedulerView

PRETRAINED = Path(__file__).resolve().parent / "pretrained" / "default"


@dataclass
class AgentConfig:
    """Env settings an agent was trained with (saved as ``agent.json`` beside the model)."""

    algo: str = "maskable_ppo"
    action_mode: str = "counts"
    reward: str = "throughput"
    info_mode: str = "user"
    max_jobs: int = 16
    max_count: int = 16
    decision_interval_s: float | None = None
    scenario: str = "default"
    extra: dict[str, Any] = field(default_factory=dict)

    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``ScavengeEnv``."""
        return {
            "action_mode": self.action_mode,
            "reward": self.reward,
            "info_mode": self.info_mode,
            "max_jobs": self.max_jobs,
            "max_count": self.max_count,
            "decision_interval_s": self.decision_interval_s,
        }

    def save(self, path: Path) -> None:
        """Write ``agent.json``."""
        path.write_text(json.dumps(self.__dict__, indent=2))

    @classmethod
    def load(cls, path: Path) -> AgentConfig:
        """Read ``agent.json``."""
        return cls(**json.loads(path.read_text()))


def load_model(path: str | Path) -> tuple[Any, AgentConfig]:
    """A saved model and its config (``path``: a model.zip or its folder)."""
    import torch

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    zip_path = p if p.suffix == ".zip" else folder / "model.zip"
    if not zip_path.is_file():
        raise FileNotFoundError(f"no model at {zip_path} (train one with `mtgym train`)")
    cfg_path = folder / "agent.json"
    cfg = AgentConfig.load(cfg_path) if cfg_path.is_file() else AgentConfig()
    torch.set_num_threads(1)
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, PPO

    algos = {"maskable_ppo": MaskablePPO, "ppo": PPO, "a2c": A2C}
    if cfg.algo not in algos:
        raise ValueError(f"unknown algo {cfg.algo!r} in {cfg_path}; known: {sorted(algos)}")
    return algos[cfg.algo].load(str(zip_path), device="cpu"), cfg


class AgentPolicy:
    """A trained SB3 model as an mtgym policy (see module docstring)."""

    info_mode = InfoMode.USER

    def __init__(self, path: str | Path | None = None, *, deterministic: bool = True) -> None:
        self.path = Path(path) if path else PRETRAINED
        self.model, self.config = load_model(self.path)
        self.info_mode = InfoMode(self.config.info_mode)
        self.deterministic = deterministic
        self.name = "agent"

    def reset(self, view: SchedulerView) -> None:
        """Agents act on observations: see ``episode``."""

    def decide(self, view: SchedulerView) -> Allocation:
        """Not available: an agent needs the env's observation (use ``episode``)."""
        raise NotImplementedError(
            "AgentPolicy acts on env observations; evaluate it with episode()"
        )

    def act(self, env: Any, obs: dict[str, np.ndarray]) -> np.ndarray:
        """One action for the env's observation (with its action mask).

        Calls the policy network directly rather than ``model.predict``: SB3 checks the
        observation shape against the training env's, but the set-based extractor runs on
        any number of nodes, which is how one agent serves clusters of other sizes.
        """
        import torch

        with torch.no_grad():
            t = {
                k: torch.as_tensor(np.asarray(v), dtype=torch.float32).unsqueeze(0)
                for k, v in obs.items()
            }
            if self.config.algo == "maskable_ppo":
                dist = self.model.policy.get_distribution(t, action_masks=env.action_masks()[None])
            else:
                dist = self.model.policy.get_distribution(t)
            action = dist.get_actions(deterministic=self.deterministic)
        return action.cpu().numpy().reshape(-1)

    def episode(self, instance: Instance) -> EpisodeResult:
        """Play ``instance`` to the end; metrics as ``play`` computes them."""
        from mtgym.env.env import ScavengeEnv

        t_wall = time.perf_counter()
        env = ScavengeEnv(instance, **self.config.env_kwargs())
        obs, _ = env.reset(seed=0)
        policy_s, decisions = 0.0, 0
        while True:
            t0 = time.perf_counter()
            action = self.act(env, obs)
            policy_s += time.perf_counter() - t0
            decisions += 1
            obs, _, term, trunc, _ = env.step(action)
            if term or trunc:
                break
        return EpisodeResult(
            metrics=compute_metrics(env.state, env.instance),
            state=env.state,
            wall_s=time.perf_counter() - t_wall,
            policy_s=policy_s,
            decisions=decisions,
            repairs=0,
        )
