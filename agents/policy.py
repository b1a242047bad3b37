"""Learned agents behind mtgym's policy interface.

``AgentPolicy(path)`` loads a saved model (``model.zip``) and its ``agent.json`` (the env
settings it was trained with: action mode, slots, count cap, reward, info mode, decision
interval). It is a ``Policy`` like any baseline: ``decide(view)`` builds the env's
observation of the view (``mtgym.policy.observe.ViewObserver``: the env's own builder and
codec), runs the network (one torch thread, inference mode) and decodes its action into the
node map the env would apply. So ``play`` drives it, hence ``mtgym run``, ``evaluate``,
``compare``, the Ray backend, ``bridge record`` and ``scavenge``; it is registered as
``agent`` (``--policy agent:PATH``). An agent trained with a ``decision_interval_s`` carries
it as an attribute, which ``play`` uses unless its caller sets another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.types import Allocation
from mtgym.policy.observe import ViewObserver
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
        from mtgym.core.io import atomic_write_json

        atomic_write_json(path, self.__dict__)

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
    """A trained SB3 model as an mtgym ``Policy`` (see module docstring)."""

    info_mode = InfoMode.USER

    def __init__(self, path: str | Path | None = None, *, deterministic: bool = True) -> None:
        import torch

        self.path = Path(path) if path else PRETRAINED
        self.model, self.config = load_model(self.path)
        self.model.policy.set_training_mode(False)
        self.info_mode = InfoMode(self.config.info_mode)
        self.decision_interval_s = self.config.decision_interval_s
        self.deterministic = deterministic
        self.name = "agent"
        self.observer = ViewObserver(
            action_mode=self.config.action_mode,
            max_jobs=self.config.max_jobs,
            max_count=self.config.max_count,
            info_mode=self.info_mode,
        )
        self._torch = torch

    def reset(self, view: SchedulerView) -> None:
        """Size the observation for the view's cluster (any node count: set-based extractor)."""
        self.observer.reset(view)

    def decide(self, view: SchedulerView) -> Allocation:
        """Observe the view as the env would, run the network, decode its action."""
        obs = self.observer.observe(view)
        action = self.act(obs, self.observer.mask)
        return Allocation(self.observer.decode(action))

    def act(self, obs: dict[str, np.ndarray], mask: np.ndarray | None = None) -> np.ndarray:
        """One action for an env observation (``mask``: its legal actions, MaskablePPO only).

        Calls the policy network directly rather than ``model.predict``: SB3 checks the
        observation shape against the training env's, but the set-based extractor runs on
        any number of nodes, which is how one agent serves clusters of other sizes. The
        action is the one ``predict`` gives for the same observation and mask.
        """
        torch = self._torch
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)
        with torch.inference_mode():
            t = {
                k: torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0)
                for k, v in obs.items()
                if k != "action_mask"
            }
            policy = self.model.policy
            if self.config.algo == "maskable_ppo":
                m = obs["action_mask"] if mask is None else mask
                dist = policy.get_distribution(t, action_masks=np.asarray(m, dtype=bool)[None])
            else:
                dist = policy.get_distribution(t)
            action = dist.get_actions(deterministic=self.deterministic)
        return action.numpy().reshape(-1).astype(np.int64)
