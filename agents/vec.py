"""A lean vector env for training on the pooled observation.

``PooledVecEnv(thunks)`` steps n ``ScavengeEnv``s in one loop and writes each pooled
observation (``agents/pooled.py``) straight into one (n, size) array. It gives what
``DummyVecEnv`` of ``Monitor(SlimInfo(PooledObservation(env)))`` gives, value for value
(tested): observations, rewards, dones, auto-reset with ``info["terminal_observation"]``
and ``info["TimeLimit.truncated"]``, the episode statistics ``info["episode"]`` SB3 logs,
and ``env_method("action_masks")`` for MaskablePPO. It skips what training never reads:
the wrapper calls, ``DummyVecEnv``'s deep copy of every info dict and its per-key
observation buffers (together ~20 us per env step on the 2-core development machine).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from agents.pooled import PooledLayout


class PooledVecEnv(VecEnv):
    """n ``ScavengeEnv``s (each possibly under reset-only wrappers such as ``SeedOffset``)
    with the pooled flat observation (module docstring).

    Steps go to each env's ``unwrapped`` (a wrapper's ``step`` is never called), resets
    through the wrappers.

    Args:
        env_fns: thunks, each called once here, in order. The envs may differ in node
            count; the pooled sizes (slots, feature widths, count cap) are the first
            env's, and the others must have the same (not checked).
        budget_masks: ``env_method("action_masks")`` gives the envs' budget masks
            (``ScavengeEnv.budget_masks``: float32, ``shares`` only) rather than their
            per-slot masks, for a ``SlotPolicy(budget_masks=True)``.

    Attributes:
        envs: the envs as the thunks made them (wrappers included).
        layout: the first env's ``PooledLayout``; ``get_attr("layout")`` returns it.
    """

    def __init__(
        self, env_fns: Sequence[Callable[[], gym.Env]], *, budget_masks: bool = False
    ) -> None:
        self.envs = [fn() for fn in env_fns]
        self.budget_masks = budget_masks
        self._bind(self.envs)

    def _bind(self, envs: list[gym.Env]) -> None:
        """The layout, spaces and buffers of ``envs`` (the first one's sizes).

        Args:
            envs: the made envs; their count is ``num_envs``.
        """
        self._inner = [e.unwrapped for e in envs]
        first = self._inner[0]
        self.layout = PooledLayout.for_env(first)
        VecEnv.__init__(self, len(envs), self.layout.space(), first.action_space)
        n = self.num_envs
        self._obs = np.zeros((n, self.layout.size), dtype=np.float32)
        self._rews = np.zeros(n, dtype=np.float32)
        self._dones = np.zeros(n, dtype=bool)
        self._ret = np.zeros(n)
        self._len = np.zeros(n, dtype=np.int64)
        self._t0 = time.time()
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        """Resets every env with the seeds and options set by ``seed``/``set_options``
        (used once); returns the (n, size) float32 first observations (a copy).
        """
        for i, env in enumerate(self.envs):
            obs, info = env.reset(seed=self._seeds[i], options=self._options[i])
            self.reset_infos[i] = info
            self.layout.pool(obs, self._obs[i])
        return self._after_reset()

    def _after_reset(self) -> np.ndarray:
        """The end of ``reset``: seeds and options used up, returns and lengths zeroed; the
        first observations.
        """
        self._reset_seeds()
        self._reset_options()
        self._ret[:] = 0.0
        self._len[:] = 0
        return self._obs.copy()

    def _episode(self, i: int) -> dict[str, Any]:
        """Env ``i``'s ended episode as SB3's ``Monitor`` reports it (``info["episode"]``);
        its return and length start again from 0.

        Args:
            i: the env's index.

        Returns:
            ``r``: the undiscounted return (rounded to 6 decimals), ``l``: the steps,
            ``t``: wall-clock seconds since this vec env was made.
        """
        ep = {
            "r": round(float(self._ret[i]), 6),
            "l": int(self._len[i]),
            "t": round(time.time() - self._t0, 6),
        }
        self._ret[i] = 0.0
        self._len[i] = 0
        return ep

    def step_async(self, actions: np.ndarray) -> None:
        """Keeps the (n, ...) actions for ``step_wait`` (nothing runs in between)."""
        self._actions = actions

    def step_wait(self):
        """One step of each env in turn, an ended episode reset at once (SB3's auto-reset).

        Returns:
            (observations (n, size) float32, rewards (n,) float32, dones (n,) bool,
            infos): copies. An info holds ``dt``, ``samples`` and
            ``TimeLimit.truncated``, and at an episode's end ``episode`` and
            ``terminal_observation`` (the last observation, pooled).
        """
        infos: list[dict[str, Any]] = []
        actions = self._actions
        for i, env in enumerate(self._inner):
            obs, reward, terminated, truncated, info = env.step(actions[i])
            self._rews[i] = reward
            self._ret[i] += reward
            self._len[i] += 1
            out: dict[str, Any] = {
                "dt": info["dt"],
                "samples": info["samples"],
                "TimeLimit.truncated": truncated and not terminated,
            }
            done = terminated or truncated
            self._dones[i] = done
            if done:
                out["episode"] = self._episode(i)
                out["terminal_observation"] = self.layout.pool(obs)
                obs, self.reset_infos[i] = self.envs[i].reset()
            self.layout.pool(obs, self._obs[i])
            infos.append(out)
        return self._obs.copy(), self._rews.copy(), self._dones.copy(), infos

    def close(self) -> None:  # noqa: D102
        for env in self.envs:
            env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:  # noqa: D102
        return [env.render() for env in self.envs]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """An attribute of the (wrapped) envs; ``layout`` is this vec env's, for each."""
        if attr_name == "layout":
            return [self.layout for _ in self._get_indices(indices)]
        return [getattr(self.envs[i], attr_name) for i in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        """SB3's answer, and True for ``action_masks`` (MaskablePPO checks for it)."""
        if attr_name == "action_masks":
            return True
        return super().has_attr(attr_name)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Sets the attribute on the outer (wrapped) envs."""
        for i in self._get_indices(indices):
            setattr(self.envs[i], attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        """Calls the method of the outer envs; ``action_masks`` of the unwrapped ones."""
        if method_name == "action_masks":  # MaskablePPO, before every step
            return self._masks_of(indices)
        return [
            getattr(self.envs[i], method_name)(*method_args, **method_kwargs)
            for i in self._get_indices(indices)
        ]

    def _masks_of(self, indices: Any) -> list[np.ndarray]:
        """MaskablePPO's masks of ``indices``: per-slot (bool), or budget masks (float32)."""
        if self.budget_masks:
            return [self._inner[i].budget_masks() for i in self._get_indices(indices)]
        return [self._inner[i].action_masks() for i in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:  # noqa: D102
        from stable_baselines3.common import env_util

        return [
            env_util.is_wrapped(self.envs[i], wrapper_class) for i in self._get_indices(indices)
        ]
