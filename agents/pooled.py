"""A small, flat observation: the env's Dict observation with its nodes pooled away.

``ScavengeEnv`` shows every node (``nodes``: N x node_dim), so its observation grows with the
cluster and SB3's Dict rollout buffer copies it key by key. An allocator needs the nodes only
through their pools: which nodes each job holds and what the idle pool looks like. So
``PooledLayout.pool`` keeps every job slot's row and replaces the node table by

- per slot: ``job_mask``, ``jobs``, ``job_curve``, ``job_curve_known``, the mean features of
  the nodes the slot holds, and the nodes it holds / ``max_count``;
- global: ``global``, the mean and max features of the lent nodes and of the idle ones
  (lent and unheld), and the lent and idle node counts / ``max_count`` (clipped at 8).

For a scale-free action mode (``SCALE_FREE_MODES``: ``shares``) the layout is
*scale-free* (``PooledLayout.scale_free``): the job row drops its columns divided by the
count cap (nodes, min, max, info) and adds ``job_scale`` and ``job_shape``; there is no
``job_curve`` (its points run to the cap); the global part adds ``global_scale``; the held
count becomes a running flag and the lent and idle counts fractions of the node count. Its
slot rows and global part then have the same width and meaning on any machine and for any
S, so one network reads them all (``agents/net.py`` takes S from the vector's length).

One float32 vector of ``S * slot_dim + global_dim`` values, the same size for any node
count: the first ``S * slot_dim`` values are the slots' rows in slot order, so a network
can read them as an (S, slot_dim) table (``agents/net.py``). Pooling is a sum over nodes,
so the vector does not depend on the nodes' order. ``action_mask`` is left to the env's
``action_masks()`` (MaskablePPO asks for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numba import njit

from mtgym.core import names
from mtgym.env.observation import JOB_FEATURES

COUNT_CLIP = 8.0  # node counts / max_count are clipped here (the env clips its features at 8)
#: A slot row's parts, in order (``PooledLayout.slot_features`` gives their columns). The
#: first and the last are one value each whatever the sizes: a network reads them by these
#: names (``SLOT_MASK``, ``SLOT_COUNT``), never by position.
SLOT_PARTS = ("job_mask", "jobs", "job_curve", "job_curve_known", "held_nodes", "held_count")
SLOT_MASK = 0  # ``job_mask``'s column: 1 for a slot holding a job
SLOT_COUNT = -1  # ``held_count``'s column: the nodes the slot's job holds / max_count


#: The features every agent whose ``agent.json`` names none was trained on (the shipped
#: agents': feature set version 1), key -> (name, width) in column order. A literal, not read
#: from the env: a column the env adds later must not change what these agents read.
FEATURES_V1: dict[str, tuple[tuple[str, int], ...]] = {
    "nodes": (
        ("available", 1),
        ("held", 1),
        ("gpu_type", 1),
        ("slowdown", 4),
        ("idle_time", 1),
        ("end_known", 1),
        ("time_to_end", 1),
        ("group", 1),
    ),
    "jobs": (
        ("present", 1),
        ("app_class", 4),
        ("nodes", 1),
        ("min", 1),
        ("max", 1),
        ("rate", 1),
        ("age", 1),
        ("pausing", 1),
        ("progress", 1),
        ("remaining", 1),
        ("r_up", 1),
        ("r_down", 1),
        ("info", 1),
    ),
    "global": (
        ("time", 1),
        ("idle", 1),
        ("free", 1),
        ("queued", 1),
        ("slots", 1),
        ("log_time", 1),
    ),
    "job_scale": (
        ("held_idle", 1),
        ("min_idle", 1),
        ("max_idle", 1),
        ("range_pos", 1),
        ("rate_rel", 1),
    ),
    "global_scale": (("free_idle", 1), ("demand_min", 1), ("demand_max", 1)),
}
#: Its version (``mtgym.env.observation.FEATURES_VERSION`` when it was written).
FEATURES_V1_VERSION = 1


class FeatureError(ValueError):
    """An env whose observation lacks a feature an agent reads (named), or has it with
    another width or meaning (another feature set version).
    """


def feature_record(features: dict[str, dict[str, slice]]) -> dict[str, list[list[Any]]]:
    """An env's feature map (``env.unwrapped.features``) as ``agent.json`` records it:
    key -> [[name, width], ...] in column order.
    """
    return {
        key: [[name, cols.stop - cols.start] for name, cols in named.items()]
        for key, named in features.items()
    }


def current_features(scale_free: bool) -> tuple[dict[str, list[list[Any]]], int]:
    """The env's features now (``mtgym.env.observation.FEATURES``; the scale-free keys only
    for a scale-free agent) as ``agent.json`` records them, and their version: what an agent
    trained today reads.
    """
    from mtgym.env.observation import BASE_KEYS, FEATURES, FEATURES_VERSION

    keys = {k: v for k, v in FEATURES.items() if scale_free or k in BASE_KEYS}
    return feature_record(keys), FEATURES_VERSION


def select_columns(
    features: dict[str, dict[str, slice]], wanted: dict[str, Any]
) -> dict[str, np.ndarray]:
    """Each wanted key's column indices in the env's observation: the wanted features'
    columns, in the wanted order.

    Args:
        features: the env's map, key -> name -> slice (``env.unwrapped.features``).
        wanted: key -> [(name, width), ...], what the agent was trained on.

    Raises:
        FeatureError: a wanted key or feature the env does not have, or a width that differs
            (the message names it).
    """
    out = {}
    for key, parts in wanted.items():
        have = features.get(key)
        if have is None:
            raise FeatureError(f"the observation has no {key!r}, which the agent reads")
        idx: list[int] = []
        for name, width in parts:
            cols = have.get(name)
            if cols is None:
                raise FeatureError(
                    f"the observation's {key!r} has no feature {name!r}, which the agent reads"
                )
            if cols.stop - cols.start != int(width):
                raise FeatureError(
                    f"the observation's {key}.{name} has {cols.stop - cols.start} columns, "
                    f"the agent read {width}"
                )
            idx.extend(range(cols.start, cols.stop))
        out[key] = np.asarray(idx, dtype=np.intp)
    return out


#: Action modes whose agents read the scale-free layout (module docstring).
SCALE_FREE_MODES = names.SCALE_FREE_MODES
#: ``jobs`` columns the scale-free layout zeroes: divided by the count cap
CAP_COLUMNS = ("nodes", "min", "max", "info")
_CAP_COLS = tuple(JOB_FEATURES[c].start for c in CAP_COLUMNS)


def _cap_positions(parts: Any) -> tuple[int, ...]:
    """The positions of ``CAP_COLUMNS`` in a job row laid out as ``parts`` ((name, width)
    pairs); ``FeatureError`` if one is missing.
    """
    at, o = {}, 0
    for name, width in parts:
        at[name] = o
        o += int(width)
    missing = [c for c in CAP_COLUMNS if c not in at]
    if missing:
        raise FeatureError(f"the agent's job row lacks {missing}, which the layout zeroes")
    return tuple(at[c] for c in CAP_COLUMNS)


@dataclass(frozen=True)
class PooledLayout:
    """Sizes of the pooled vector, read from the env's Dict observation space.

    Make one with ``of`` (a space) or ``for_env`` (an env) rather than by hand.

    Attributes:
        num_slots: job slots S.
        node_dim: columns of a node row (``nodes``).
        job_dim: columns of a job row as pooled (scale-free: ``jobs``, ``job_scale`` and
            ``job_shape`` side by side).
        points: curve points per slot (0 when scale-free).
        env_global_dim: the env's global entries pooled (scale-free: with ``global_scale``).
        max_count: the count cap (1 when scale-free: the held column is a flag).
        scale_free: the scale-free layout (module docstring).
        columns: (key, column indices) for each key whose columns are picked by name
            (``of``'s ``wanted``) and are not all of the env's in order; empty: every
            column as the env lays it out.
        cap_cols: the positions of ``CAP_COLUMNS`` in the (picked) ``jobs`` row.
    """

    num_slots: int
    node_dim: int
    job_dim: int
    points: int
    env_global_dim: int
    max_count: int
    scale_free: bool = False
    columns: tuple[tuple[str, tuple[int, ...]], ...] = ()
    cap_cols: tuple[int, ...] = _CAP_COLS

    @classmethod
    def of(
        cls,
        space: spaces.Dict,
        max_count: int,
        *,
        scale_free: bool = False,
        features: dict[str, dict[str, slice]] | None = None,
        wanted: dict[str, Any] | None = None,
    ) -> PooledLayout:
        """The layout for an env observation space and its count cap.

        Args:
            space: ``ScavengeEnv``'s Dict observation space (or one with its keys and
                shapes, as ``AgentPolicy`` builds from an observation).
            max_count: the env's count cap C (ignored when scale-free: 1).
            scale_free: the scale-free layout (module docstring), which needs the
                ``job_scale``, ``job_shape`` and ``global_scale`` keys.
            features: the env's feature map (``env.unwrapped.features``), with ``wanted``.
            wanted: key -> [(name, width), ...], the features an agent reads (its
                ``agent.json``): the layout picks those columns by name, so columns the env
                added since are not read. None (or no ``features``): every column.

        Returns:
            The layout, frozen.

        Raises:
            TypeError: ``space`` is not a Dict with a ``nodes`` key.
            FeatureError: a wanted feature the env lacks, or of another width.
        """
        if not isinstance(space, spaces.Dict) or "nodes" not in space.spaces:
            raise TypeError(f"expected ScavengeEnv's Dict observation space, got {space!r}")
        width = {k: int(space[k].shape[-1]) for k in FEATURES_V1 if k in space.spaces}
        picked: list[tuple[str, tuple[int, ...]]] = []
        cap_cols = _CAP_COLS
        if features is not None and wanted is not None:
            keys = {k: v for k, v in wanted.items() if k in width}
            for key, idx in select_columns(features, keys).items():
                width[key] = int(idx.size)
                if not np.array_equal(idx, np.arange(int(space[key].shape[-1]))):
                    picked.append((key, tuple(int(i) for i in idx)))
            if "jobs" in keys:
                cap_cols = _cap_positions(keys["jobs"])
        slots = int(space["jobs"].shape[0])
        job_dim, glob = width["jobs"], width["global"]
        points = int(space["job_curve"].shape[-1])
        if scale_free:
            job_dim += width["job_scale"] + space["job_shape"].shape[-1]
            glob += width["global_scale"]
            points, max_count = 0, 1
        return cls(
            num_slots=slots,
            node_dim=width["nodes"],
            job_dim=int(job_dim),
            points=points,
            env_global_dim=glob,
            max_count=int(max_count),
            scale_free=scale_free,
            columns=tuple(picked),
            cap_cols=cap_cols,
        )

    @classmethod
    def for_env(cls, env: gym.Env) -> PooledLayout:
        """The layout of a ``ScavengeEnv`` (possibly wrapped): scale-free for the modes in
        ``SCALE_FREE_MODES``.

        Args:
            env: the env; its ``unwrapped`` gives the space, ``max_count`` and
                ``action_mode``.
        """
        inner = env.unwrapped
        free = inner.action_mode in SCALE_FREE_MODES
        return cls.of(inner.observation_space, inner.max_count, scale_free=free)

    @property
    def slot_dim(self) -> int:
        """Values per slot: mask, job row, curve, known, held-node mean, held count.

        1 + job_dim + 2 * points + node_dim + 1; the same for any N and (scale-free) any S.
        """
        return 1 + self.job_dim + 2 * self.points + self.node_dim + 1

    @property
    def slot_features(self) -> dict[str, slice]:
        """A slot row's parts by name (``SLOT_PARTS``) -> their columns."""
        widths = (1, self.job_dim, self.points, self.points, self.node_dim, 1)
        out, o = {}, 0
        for name, w in zip(SLOT_PARTS, widths, strict=True):
            out[name] = slice(o, o + w)
            o += w
        return out

    @property
    def global_dim(self) -> int:
        """Values after the slots: env global, lent/idle mean and max, lent/idle counts.

        env_global_dim + 4 * node_dim + 2, in the order lent mean, lent max, idle mean,
        idle max (``node_dim`` each), then the lent and the idle count.
        """
        return self.env_global_dim + 4 * self.node_dim + 2

    @property
    def size(self) -> int:
        """Length of the pooled vector."""
        return self.num_slots * self.slot_dim + self.global_dim

    def space(self) -> spaces.Box:
        """The pooled observation space: ``Box`` of ``size`` float32 values in [-1, 1000]
        (loose bounds; SB3 reads only the shape and dtype).
        """
        return spaces.Box(-1.0, np.float32(1e3), (self.size,), np.float32)

    def inputs(self, obs: dict[str, np.ndarray]) -> tuple[Any, ...]:
        """``_pool``'s arguments before ``out`` from an observation's arrays: one env's, or a
        batch's with a leading axis (the scale-free parts are joined along the last axis).

        Args:
            obs: the env's observation arrays by key (``action_mask`` is not read).

        Returns:
            (nodes, node_mask, node_job, job_mask, jobs, curve, known, glob, C) as float32
            arrays (``jobs`` with ``job_scale`` and ``job_shape`` joined and the
            ``CAP_COLUMNS`` zeroed, ``curve`` and ``known`` empty, when scale-free) and C:
            ``max_count``, or minus the node count N when scale-free (``_pool``).
        """
        f32 = np.float32
        if self.columns:  # the agent's features by name (``of``'s ``wanted``)
            obs = dict(obs)
            for key, idx in self.columns:
                obs[key] = np.asarray(obs[key])[..., list(idx)]
        jobs = np.asarray(obs["jobs"], dtype=f32)
        curve = np.asarray(obs["job_curve"], dtype=f32)
        known = np.asarray(obs["job_curve_known"], dtype=f32)
        glob = np.asarray(obs["global"], dtype=f32)
        nodes = np.asarray(obs["nodes"], dtype=f32)
        if self.scale_free:
            jobs = np.concatenate((jobs, obs["job_scale"], obs["job_shape"]), axis=-1)
            jobs[..., list(self.cap_cols)] = 0.0
            curve = known = np.zeros((*jobs.shape[:-1], 0), dtype=f32)
            glob = np.concatenate((glob, obs["global_scale"]), axis=-1).astype(f32)
        return (
            nodes,
            np.asarray(obs["node_mask"], dtype=f32),
            np.asarray(obs["node_job"], dtype=f32),
            np.asarray(obs["job_mask"], dtype=f32),
            jobs,
            curve,
            known,
            glob,
            # scale-free: the held column a flag, the lent and idle counts fractions of N
            -float(nodes.shape[-2]) if self.scale_free else float(self.max_count),
        )

    def pool(self, obs: dict[str, np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """The pooled vector of one env observation (module docstring), written into
        ``out`` (a float32 vector of ``size`` values, e.g. a vec env's row) when given.

        Args:
            obs: one env's observation arrays by key (no batch axis).
            out: (size,) float32, C-contiguous, overwritten; None: a new vector.

        Returns:
            ``out``, or the new vector.
        """
        if out is None:
            out = np.empty(self.size, dtype=np.float32)
        _pool(*self.inputs(obs), out)
        return out


@njit(cache=True)
def _pool(
    nodes, lent, node_job, job_mask, jobs, curve, known, glob, C, out
):  # pragma: no cover - jit
    """Fill ``out`` with the pooled vector (``PooledLayout``'s order); sums in float64.
    ``C`` > 0: counts / C (clipped at ``COUNT_CLIP``); ``C`` < 0: the scale-free layout,
    the held column 1 for a running slot and the lent and idle counts / -C.

    Args:
        nodes: (N, D) node features.
        lent: (N,) ``node_mask``: > 0 for a node lent to the scavenger.
        node_job: (N,) the slot holding each node, -1 for none.
        job_mask: (S,) 1 for a slot holding a job.
        jobs: (S, J) job rows.
        curve, known: (S, P) curve points and their known flags (P = 0: none).
        glob: (E,) the env's global features.
        C: the count divisor, its sign picking the layout (above).
        out: (S * W + E + 4 * D + 2,) with W = 1 + J + 2 * P + D + 1, written; the mean
            and max of an empty pool, and a slot's held-node mean without nodes, are 0.
    """
    N, D = nodes.shape
    S, J = jobs.shape
    P = curve.shape[1]
    E = glob.shape[0]
    W = 1 + J + 2 * P + D + 1
    acc = np.zeros((S, D))
    held = np.zeros(S)
    pool_sum = np.zeros((2, D))
    pool_max = np.full((2, D), -np.inf)
    pool_n = np.zeros(2)
    for n in range(N):
        s = int(node_job[n])
        if s >= 0:
            held[s] += 1.0
            for k in range(D):
                acc[s, k] += nodes[n, k]
        if lent[n] > 0:
            for q in range(2):
                if q == 1 and s >= 0:
                    continue  # q = 1: idle (lent and unheld)
                pool_n[q] += 1.0
                for k in range(D):
                    pool_sum[q, k] += nodes[n, k]
                    if nodes[n, k] > pool_max[q, k]:
                        pool_max[q, k] = nodes[n, k]
    for s in range(S):
        o = s * W
        out[o] = job_mask[s]
        for k in range(J):
            out[o + 1 + k] = jobs[s, k]
        for k in range(P):
            out[o + 1 + J + k] = curve[s, k]
            out[o + 1 + J + P + k] = known[s, k]
        for k in range(D):
            out[o + 1 + J + 2 * P + k] = acc[s, k] / held[s] if held[s] > 0 else 0.0
        out[o + W - 1] = (1.0 if held[s] > 0 else 0.0) if C < 0 else min(held[s] / C, COUNT_CLIP)
    o = S * W
    for k in range(E):
        out[o + k] = glob[k]
    for q in range(2):
        for k in range(D):
            has = pool_n[q] > 0
            out[o + E + 2 * q * D + k] = pool_sum[q, k] / pool_n[q] if has else 0.0
            out[o + E + (2 * q + 1) * D + k] = pool_max[q, k] if has else 0.0
        out[o + E + 4 * D + q] = pool_n[q] / -C if C < 0 else min(pool_n[q] / C, COUNT_CLIP)


class PooledObservation(gym.ObservationWrapper):
    """``ScavengeEnv`` with the pooled flat observation (``PooledLayout.pool``).

    Args:
        env: a ``ScavengeEnv``, possibly wrapped; its action mode fixes the layout.

    Attributes:
        layout: the ``PooledLayout``, read once from the env at construction.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.layout = PooledLayout.for_env(env)
        self.observation_space = self.layout.space()

    def observation(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """The pooled (size,) float32 vector of the env's Dict observation."""
        return self.layout.pool(observation)

    def action_masks(self) -> Any:
        """The env's legal actions (MaskablePPO)."""
        return self.env.unwrapped.action_masks()


class SlimInfo(gym.Wrapper):
    """Keep only ``keys`` of the step's ``info``.

    SB3's ``DummyVecEnv`` deep-copies every info dict on every step; the env's (action mask,
    slot map, repair counts, ...) cost more to copy than the step itself. Training needs
    none of it (``Monitor`` adds the episode statistics above this wrapper).

    Args:
        env: the env to wrap.
        keys: the info keys kept when present (``dt``: the step's simulated seconds,
            ``samples``: the samples trained in it); others are dropped.
    """

    def __init__(self, env: gym.Env, keys: tuple[str, ...] = ("dt", "samples")) -> None:
        super().__init__(env)
        self.keys = keys

    def step(self, action: Any):
        """The env's step with ``info`` cut down to ``keys``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {k: info[k] for k in self.keys if k in info}

    def action_masks(self) -> Any:
        """The env's legal actions (MaskablePPO)."""
        return self.env.unwrapped.action_masks()
