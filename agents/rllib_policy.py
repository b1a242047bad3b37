"""``rllib-agent``: an RLlib-trained scheduler (``mtgym train --algo rllib-ppo``) as an mtgym
``Policy``, so ``mtgym evaluate``, ``compare``, ``benchmark``, the bridge and the scavenger
judge and drive it as they do the MILPs and the SB3 agent.

``rllib-agent:PATH`` loads a run folder (``agent.json`` beside ``checkpoint/``, an RLlib
algorithm checkpoint) or that checkpoint folder itself; the RLModule's weights are read from
``checkpoint/learner_group/learner/rl_module/default_policy``. Views become the env's
observation (``ViewObserver``), laid out as the agent was trained (``obs_layout``
``"flat"`` or ``"masked"``: ``mtgym.env.layout``); the action is the per-dimension argmax of
the module's logits with the illegal actions masked out (whatever the module is: RLlib's
default MLP sees no mask), so a decision needs no repair beyond the shared node budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.policy import AgentConfig
from mtgym.core.errors import PolicyUnsupportedError
from mtgym.core.types import Allocation
from mtgym.env.layout import OBSERVATIONS_KEY, ObsLayout
from mtgym.policy.observe import ViewObserver
from mtgym.sim.view import InfoMode, SchedulerView

#: The module's weights inside an RLlib algorithm checkpoint (single-agent, one learner).
MODULE_IN_CHECKPOINT = Path("learner_group", "learner", "rl_module", "default_policy")
#: ``agent.json``'s ``algo`` for an RLlib-trained agent.
RLLIB_ALGO = "rllib-ppo"
#: The layouts RLlib trains on (its default encoders take no ``Dict``): ``agent.json``'s
#: ``observation`` of an RLlib agent.
RLLIB_LAYOUTS = ("masked", "flat")


def checkpoint_of(path: str | Path) -> Path:
    """The algorithm checkpoint of a run folder: its ``checkpoint/``, else the previous one a
    crash mid-swap left as ``checkpoint.old/`` (``agents.rllib_train``), else ``path``
    itself (a checkpoint folder given directly).

    Args:
        path: a run folder or a checkpoint folder.
    """
    path = Path(path)
    for name in ("checkpoint", "checkpoint.old"):
        if (path / name).is_dir():
            return path / name
    return path


def find_run(path: str | Path) -> tuple[Path, Path]:
    """The run folder's ``agent.json`` and the module folder of ``path``.

    Args:
        path: a run folder (``agent.json``, ``checkpoint/``) or its ``checkpoint/`` (or any
            algorithm checkpoint in a folder beside an ``agent.json``).

    Returns:
        (the ``agent.json`` path, the RLModule's checkpoint folder).

    Raises:
        FileNotFoundError: no ``agent.json`` or no module checkpoint there.
    """
    path = Path(path)
    ckpt = checkpoint_of(path)
    cfg = next(
        (p / "agent.json" for p in (path, ckpt.parent) if (p / "agent.json").is_file()), None
    )
    module = ckpt / MODULE_IN_CHECKPOINT
    if cfg is None or not module.is_dir():
        raise FileNotFoundError(
            f"{path}: not an RLlib run (want agent.json and checkpoint/{MODULE_IN_CHECKPOINT}, "
            "as `mtgym train --algo rllib-ppo` writes)"
        )
    return cfg, module


class RLlibAgentPolicy:
    """An RLlib RLModule checkpoint as a ``Policy`` (module docstring).

    Args:
        path: the run folder or its checkpoint (``find_run``); required.

    Attributes:
        config: the run's ``agent.json`` (``algo`` ``"rllib-ppo"``, ``observation`` the
            ``obs_layout``).
        module: the loaded RLModule (torch, CPU, inference only).
        active: ``module``, or for another machine its weights in a ``SlotRLModule`` sized
            for it (``reset``).
        info_mode, decision_interval_s: from ``agent.json``.

    Raises:
        ValueError: no path, or an ``agent.json`` not written for an RLlib agent.
        FileNotFoundError: no run at ``path``.
    """

    info_mode = InfoMode.USER
    #: no default model: ``mtgym.policy.registry.default_policies`` leaves it out
    requires_argument = True

    def __init__(self, path: str | Path | None = None) -> None:
        if not path:
            raise ValueError("rllib-agent needs the run's folder: rllib-agent:PATH")
        import torch
        from ray.rllib.core.rl_module.rl_module import RLModule

        cfg_path, module_path = find_run(path)
        self.path = Path(path)
        self.config = AgentConfig.load(cfg_path)
        if self.config.algo != RLLIB_ALGO or self.config.observation not in RLLIB_LAYOUTS:
            raise ValueError(
                f"{cfg_path}: algo {self.config.algo!r} / observation "
                f"{self.config.observation!r} is not an RLlib agent's ({RLLIB_ALGO!r}, "
                "'flat' or 'masked'); an SB3 agent is `agent:PATH`"
            )
        self.module = RLModule.from_checkpoint(str(module_path.resolve()))  # (a URI: absolute)
        self.module.eval()
        self.name = "rllib-agent"
        self.info_mode = InfoMode(self.config.info_mode)
        self.decision_interval_s = self.config.decision_interval_s
        self.observer = ViewObserver(
            action_mode=self.config.action_mode,
            max_jobs=self.config.max_jobs,
            max_count=self.config.max_count,
            info_mode=self.info_mode,
        )
        self.layout: ObsLayout | None = None
        self.active = self.module  # (the module sized for the current machine)
        self._resized: dict[tuple, Any] = {}
        self._torch = torch

    def reset(self, view: SchedulerView) -> None:
        """Size the observation for the view's cluster.

        Args:
            view: the episode's first view.

        Raises:
            PolicyUnsupportedError: the cluster's observation or action space is not the one
                the module was trained on (an MLP on the flat vector is tied to N and S; the
                scale-free ``SlotRLModule`` is rebuilt for any machine instead).
        """
        self.observer.reset(view)
        self.layout = ObsLayout(self.config.observation, self.observer.builder.space)
        self.active = self.module
        same = self.layout.space == self.module.observation_space
        if not same and self._scale_free():  # (the same weights, sized for this machine)
            from agents.rllib_module import for_machine

            space = self.observer.codec.space
            key = (self.layout.size, space.shape)
            if key not in self._resized:
                self._resized[key] = for_machine(self.module, self.layout, space)
            self.active = self._resized[key]
            return
        if not same:
            want = _flat_size(self.module.observation_space)
            raise PolicyUnsupportedError(
                self.name,
                f"its observation has {self.layout.size} values on this cluster "
                f"({view.num_nodes} nodes), the module takes {want}",
            )
        if self.observer.codec.space != self.module.action_space:
            raise PolicyUnsupportedError(
                self.name, "its action space differs from the one the module was trained on"
            )

    def _scale_free(self) -> bool:
        """The module is the per-slot ``SlotRLModule`` (its weights fit any machine)."""
        from agents.rllib_module import SlotRLModule

        return isinstance(self.module, SlotRLModule)

    def decide(self, view: SchedulerView) -> Allocation:
        """Observe the view as the env would, run the module, decode its action.

        Args:
            view: what the policy sees now (``reset`` first).

        Returns:
            The node map the env would apply for the module's action.
        """
        obs = self.observer.observe(view)
        action = self.act(self.layout(obs), self.observer.mask)
        return Allocation(self.observer.decode(action))

    def act(self, obs: Any, mask: np.ndarray) -> np.ndarray:
        """The most likely legal action for an observation in the agent's layout.

        Args:
            obs: one observation as ``ScavengeEnv(obs_layout=...)`` returns it, no batch axis.
            mask: the flat legal-action mask (sb3-contrib's layout: the logits').

        Returns:
            (A,) int64: per dimension, the argmax of the logits over its legal actions (0
            where none is legal).
        """
        torch = self._torch
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)
        if isinstance(obs, dict):
            batch = {k: torch.from_numpy(np.asarray(v, np.float32))[None] for k, v in obs.items()}
        else:
            batch = torch.from_numpy(np.asarray(obs, np.float32))[None]
        with torch.inference_mode():
            logits = self.active.forward_inference({"obs": batch})["action_dist_inputs"][0]
        logits = logits.numpy().astype(np.float64)
        legal = np.asarray(mask, dtype=bool)
        logits[~legal] = -np.inf
        nvec = np.asarray(self.active.action_space.nvec).reshape(-1)
        out = np.zeros(nvec.size, dtype=np.int64)
        for i, part in enumerate(np.split(logits, np.cumsum(nvec)[:-1])):
            out[i] = int(np.argmax(part)) if np.isfinite(part).any() else 0
        return out


def _flat_size(space: Any) -> int:
    """The flat observation's length of a module's observation space (``"flat"``: the Box,
    ``"masked"``: its ``"observations"`` Box).
    """
    box = space[OBSERVATIONS_KEY] if hasattr(space, "spaces") else space
    return int(np.prod(box.shape))
