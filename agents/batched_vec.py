"""The training vector env on the batched core: ``PooledVecEnv``'s results, one compiled call.

``BatchedPooledVecEnv(thunks)`` takes what ``agents.vec.PooledVecEnv`` takes (thunks of
``ScavengeEnv``s, possibly under reset-only wrappers such as ``SeedOffset``) and gives what
it gives, value for value (``tests/agents/test_batched_vec.py``): the pooled observation
(``agents/pooled.py``) as one (n, size) array, float32 rewards, dones, auto-reset with
``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]``, the episode statistics
``info["episode"]``, and ``env_method("action_masks")`` for MaskablePPO. Instead of a
Python loop over the envs, the envs are stepped by ``mtgym.env.batched.BatchedCore`` (one
compiled call for all of them; one per group of envs with the same sizes, when the ranks
train on different cluster sizes) and pooled by one compiled call; only the episodes that
ended go through Python (their reset and their terminal observation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from numba import njit

from agents.pooled import _pool
from agents.vec import PooledVecEnv
from mtgym.env.batched import F_ELAPSED, F_SAMPLES, BatchedCore


@njit  # (not cached: it compiles ``agents.pooled._pool`` in, whose edits numba would miss)
def _pool_batch(
    nodes, node_mask, node_job, job_mask, jobs, curve, known, glob, C, out, src, dst
):  # pragma: no cover - jit
    """``PooledLayout.pool`` of episode ``src[i]`` of a batch into ``out[dst[i]]``."""
    for i in range(src.shape[0]):
        b = src[i]
        _pool(
            nodes[b],
            node_mask[b],
            node_job[b],
            job_mask[b],
            jobs[b],
            curve[b],
            known[b],
            glob[b],
            C,
            out[dst[i]],
        )


def _attr(env: gym.Env, name: str) -> Any:
    """An attribute of the env, else of the ``ScavengeEnv`` under its wrappers."""
    return getattr(env, name) if hasattr(env, name) else getattr(env.unwrapped, name)


def _group(envs: list[gym.Env]) -> list[list[int]]:
    """The envs' indices grouped by equal observation spaces (a core steps one group)."""
    groups: list[list[int]] = []
    for i, env in enumerate(envs):
        space = env.unwrapped.observation_space
        for g in groups:
            if envs[g[0]].unwrapped.observation_space == space:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


class BatchedPooledVecEnv(PooledVecEnv):
    """n ``ScavengeEnv``s with the pooled flat observation, stepped by the batched core
    (module docstring): a drop-in ``PooledVecEnv``. ``envs`` are the envs in sync with the
    batch, to read (``sample_valid``, ``noop``); they are stepped only through here.
    """

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]) -> None:
        envs = [fn() for fn in env_fns]
        self._envs = envs
        self._bind(envs)
        self._groups = [
            (np.array(idx, dtype=np.int64), BatchedCore([envs[i] for i in idx]))
            for idx in _group(envs)
        ]
        self._where = {}  # env index -> (its core, its index there)
        for idx, core in self._groups:
            for k, i in enumerate(idx):
                self._where[int(i)] = (core, k)
        self._masks = np.zeros((self.num_envs, self._inner[0].codec.mask_size), dtype=bool)

    def _pool(self, core: BatchedCore, src: np.ndarray, dst: np.ndarray) -> None:
        """Pool the core's observations ``src`` into the rows ``dst`` of ``self._obs``."""
        _pool_batch(*self.layout.inputs(core.obs), self._obs, src, dst)

    def reset(self) -> np.ndarray:  # noqa: D102
        for i in range(self.num_envs):
            core, k = self._where[i]
            _, self.reset_infos[i] = core.reset(k, seed=self._seeds[i], options=self._options[i])
        for idx, core in self._groups:
            self._pool(core, np.arange(len(idx)), idx)
            self._masks[idx] = core.mask
        return self._after_reset()

    def step_async(self, actions: np.ndarray) -> None:  # noqa: D102
        self._actions = actions

    def step_wait(self):  # noqa: D102
        actions = np.asarray(self._actions)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for idx, core in self._groups:
            a = actions if len(self._groups) == 1 else actions[idx]
            ended = core.step(core.check_actions(a))
            self._rews[idx] = core.rewards
            self._ret[idx] += core.rewards
            self._len[idx] += 1
            self._dones[idx] = core.ended != 0
            self._pool(core, np.arange(len(idx)), idx)
            f, truncated = core.floats, core.truncated
            for k, i in enumerate(idx):
                infos[i] = {
                    "dt": float(f[k, F_ELAPSED]),
                    "samples": float(f[k, F_SAMPLES]),
                    "TimeLimit.truncated": bool(truncated[k]),
                }
            for k in ended:
                i = int(idx[k])
                out = infos[i]
                out["episode"] = self._episode(i)
                out["terminal_observation"] = self._obs[i].copy()
                _, self.reset_infos[i] = core.reset(int(k))
            if ended.size:
                self._pool(core, ended, idx[ended])  # (the new episodes' first observations)
            self._masks[idx] = core.mask
        return self._obs.copy(), self._rews.copy(), self._dones.copy(), infos

    @property
    def envs(self) -> list[gym.Env]:  # noqa: D102
        return [core.env(k) for core, k in (self._where[i] for i in range(self.num_envs))]

    def action_masks(self) -> np.ndarray:
        """(n, mask size) bool: the envs' legal actions."""
        return self._masks.copy()

    def close(self) -> None:  # noqa: D102
        for env in self._envs:
            env.close()

    def _synced(self, indices: Any) -> list[gym.Env]:
        envs = []
        for i in self._get_indices(indices):
            core, k = self._where[i]
            envs.append(core.env(k))
        return envs

    def get_images(self) -> Sequence[np.ndarray | None]:  # noqa: D102
        return [None for _ in self._envs]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:  # noqa: D102
        if attr_name == "layout":
            return [self.layout for _ in self._get_indices(indices)]
        return [_attr(env, attr_name) for env in self._synced(indices)]

    def has_attr(self, attr_name: str) -> bool:  # noqa: D102
        if attr_name == "action_masks":
            return True
        return super().has_attr(attr_name)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:  # noqa: D102
        for env in self._synced(indices):
            setattr(env, attr_name, value)

    def env_method(  # noqa: D102
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        if method_name == "action_masks":  # MaskablePPO, before every step
            return list(self._masks[list(self._get_indices(indices))])
        return [
            _attr(env, method_name)(*method_args, **method_kwargs) for env in self._synced(indices)
        ]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:  # noqa: D102
        from stable_baselines3.common import env_util

        return [
            env_util.is_wrapped(self._envs[i], wrapper_class) for i in self._get_indices(indices)
        ]
