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
    """``PooledLayout.pool`` of episode ``src[i]`` of a batch into ``out[dst[i]]``.

    Args:
        nodes, node_mask, node_job, job_mask, jobs, curve, known, glob: ``_pool``'s
            arrays with a leading batch axis (``PooledLayout.inputs`` of a core's ``obs``).
        C: ``_pool``'s count divisor (one for the whole batch).
        out: (n, size) float32, the vec env's observations; rows ``dst`` are written.
        src: (m,) int64 episode indices in the batch.
        dst: (m,) int64 rows of ``out``.
    """
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
    """An attribute of the env, else of the ``ScavengeEnv`` under its wrappers.

    Args:
        env: the env as its thunk made it.
        name: the attribute.

    Raises:
        AttributeError: neither has it.
    """
    return getattr(env, name) if hasattr(env, name) else getattr(env.unwrapped, name)


def _group(envs: list[gym.Env]) -> list[list[int]]:
    """The envs' indices grouped by equal observation spaces (a core steps one group).

    Args:
        envs: the envs; the unwrapped spaces are compared.

    Returns:
        Groups in order of their first env, indices ascending within each; [[0, ..., n-1]]
        when all sizes agree.
    """
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

    Args:
        env_fns: thunks, each called once here, in order. Envs of different sizes (node
            count, and so observation space) go to different cores; the pooled sizes
            must be the first env's, as for ``PooledVecEnv``.
        budget_masks: ``PooledVecEnv``'s (the masks are the envs' budget masks).
    """

    def __init__(
        self, env_fns: Sequence[Callable[[], gym.Env]], *, budget_masks: bool = False
    ) -> None:
        envs = [fn() for fn in env_fns]
        self._envs = envs
        self.budget_masks = budget_masks
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
        """Pool the core's observations ``src`` into the rows ``dst`` of ``self._obs``.

        Args:
            core: one group's core.
            src: (m,) int64 episode indices in the core.
            dst: (m,) int64 env indices (rows of the observations).
        """
        _pool_batch(*self.layout.inputs(core.obs), self._obs, src, dst)

    def reset(self) -> np.ndarray:
        """``PooledVecEnv.reset``, each episode reset through its core (its wrappers)."""
        for i in range(self.num_envs):
            core, k = self._where[i]
            _, self.reset_infos[i] = core.reset(k, seed=self._seeds[i], options=self._options[i])
        for idx, core in self._groups:
            self._pool(core, np.arange(len(idx)), idx)
            self._masks[idx] = core.mask
        return self._after_reset()

    def step_async(self, actions: np.ndarray) -> None:
        """Keeps the (n, A) actions for ``step_wait`` (nothing runs in between)."""
        self._actions = actions

    def step_wait(self):
        """``PooledVecEnv.step_wait``'s results: one compiled step per core, then the ended
        episodes' statistics, terminal observations and resets in Python.

        Raises:
            ValueError: an action out of its space (``BatchedCore.check_actions``),
                before any env moves.
        """
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
    def envs(self) -> list[gym.Env]:
        """The envs, each synced with its core first (to read; never step them)."""
        return [core.env(k) for core, k in (self._where[i] for i in range(self.num_envs))]

    def action_masks(self) -> np.ndarray:
        """(n, mask size) bool: the envs' legal actions (float32 budget masks with
        ``budget_masks``).
        """
        if self.budget_masks:
            return np.stack(self._masks_of(None))
        return self._masks.copy()

    def close(self) -> None:  # noqa: D102
        for env in self._envs:
            env.close()

    def _synced(self, indices: Any) -> list[gym.Env]:
        """The envs of ``indices`` (SB3's: None, an int or a list), synced with their core."""
        envs = []
        for i in self._get_indices(indices):
            core, k = self._where[i]
            envs.append(core.env(k))
        return envs

    def get_images(self) -> Sequence[np.ndarray | None]:
        """None per env: the batched core does not render."""
        return [None for _ in self._envs]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """Of the synced envs, else of their ``ScavengeEnv``; ``layout`` is this one's.

        Before the cores exist (SB3's ``VecEnv.__init__`` reads ``render_mode`` from
        ``_bind``), of the envs as made: without this, every training run warned that
        ``render_mode`` is not defined.
        """
        if attr_name == "layout":
            return [self.layout for _ in self._get_indices(indices)]
        if not hasattr(self, "_where"):  # (during _bind: no core to sync with yet)
            return [_attr(self._envs[i], attr_name) for i in self._get_indices(indices)]
        return [_attr(env, attr_name) for env in self._synced(indices)]

    def has_attr(self, attr_name: str) -> bool:
        """SB3's answer, and True for ``action_masks`` (MaskablePPO checks for it)."""
        if attr_name == "action_masks":
            return True
        return super().has_attr(attr_name)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Sets it on the synced envs; what a core already holds (such as the decision
        interval, read when the core was made) does not change.
        """
        for env in self._synced(indices):
            setattr(env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        """Calls it on the synced envs; ``action_masks`` comes from the cores' masks."""
        if method_name == "action_masks":  # MaskablePPO, before every step
            if self.budget_masks:  # (the envs' arrays are the cores': current)
                return self._masks_of(indices)
            return list(self._masks[list(self._get_indices(indices))])
        return [
            _attr(env, method_name)(*method_args, **method_kwargs) for env in self._synced(indices)
        ]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:  # noqa: D102
        from stable_baselines3.common import env_util

        return [
            env_util.is_wrapped(self._envs[i], wrapper_class) for i in self._get_indices(indices)
        ]
