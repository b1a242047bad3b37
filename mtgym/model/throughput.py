"""Throughput of a synchronous data-parallel job on a node set.

Two forms, chosen per job by ``Jobs.perf_kind``:

**Parametric** (straggler + ring all-reduce). With ``g = |S| * gpus_per_node`` workers,
``slow = max over n in S of sf[n, class] / type_rate[job, type(n)]`` (seconds per sample of
the slowest device) and the spread level ``l`` of S::

    t_compute = local_batch * slow
    t_comm    = 2 (g - 1) / g * grad_bytes / bw[l] + 2 (g - 1) * lat[l]    (0 when g = 1)
    rate      = g * local_batch / (t_compute + (1 - overlap) * t_comm)    samples/s

**Table** (measured curve; the form that replays BFTrainer's ImageNet jobs exactly). The curve
is linearly interpolated at |S| (held flat beyond its last breakpoint), then PAL's multipliers
apply: the slowest device's factor relative to the measured type and the spread's locality
factor (lambda)::

    rate = interp(|S|; curve_nodes, curve_tput) / slow / locality_factor[l]

With identical median devices of the reference type and lambda = 1 this is the table itself.
All functions broadcast over jobs; ``ThroughputModel`` caches per-instance constants.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from mtgym.core.instance import Cluster, Jobs, readonly_views
from mtgym.core.types import PerfKind


def interp_rows(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation: ``x[i]`` on the breakpoints ``xp[i], fp[i]``.

    ``xp`` rows are sorted and may repeat their last point (padding); values beyond the last
    breakpoint are held at the last value. Shapes: x (M,), xp and fp (M, K).

    Args:
        x: (M,) points, one per row.
        xp: (M, K) breakpoints, each row non-decreasing; a zero-width segment (a repeated
            point) contributes its left value.
        fp: (M, K) values at the breakpoints.

    Returns:
        (M,) float64 interpolated values; a single breakpoint (K = 1) gives ``fp[:, 0]``.
    """
    K = xp.shape[1]
    if K == 1:
        return fp[:, 0].copy()
    idx = np.clip((xp <= x[:, None]).sum(axis=1) - 1, 0, K - 2)
    rows = np.arange(x.shape[0])
    x0, x1 = xp[rows, idx], xp[rows, idx + 1]
    y0, y1 = fp[rows, idx], fp[rows, idx + 1]
    dx = x1 - x0
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(dx > 0, (np.minimum(x, x1) - x0) / np.where(dx > 0, dx, 1.0), 0.0)
    y = y0 + np.clip(w, 0.0, 1.0) * (y1 - y0)
    last = xp[:, -1]
    return np.where(x >= last, fp[:, -1], y)


class ThroughputModel:
    """Vectorised throughput for one (cluster, jobs) pair, with cached constants.

    Args:
        cluster: the machine (GPU types, true and profiled slowdowns, topology).
        jobs: the jobs (perf kind, curves, per-type rates, batch, gradient size, overlap).

    Attributes:
        cluster: the machine given.
        jobs: the jobs given.
    """

    def __init__(self, cluster: Cluster, jobs: Jobs) -> None:
        self.cluster = cluster
        self.jobs = jobs
        topo = cluster.topology
        self._gpn = cluster.gpus_per_node
        self._bw = topo.bandwidth_gbps * 1e9
        self._lat = topo.latency_s
        self._lam = topo.locality_factor
        self._is_table = jobs.perf_kind == PerfKind.TABLE
        # Largest group at each level: a packed set of n nodes can stay within level l when
        # n <= capacity[l] (used for best-case predictions).
        self._curve_cache: dict[tuple[int, float | None], np.ndarray] = {}
        self._capacity = np.array(
            [np.bincount(topo.coords[:, k]).max() for k in range(topo.num_levels)], dtype=np.int64
        )
        f64 = np.float64
        # (read-only views: one compiled type whatever the jobs' flags: readonly_view)
        self._consts = RateConsts(
            int(self._gpn),
            *readonly_views(
                (
                    np.ascontiguousarray(self._bw, dtype=f64),
                    np.ascontiguousarray(self._lat, dtype=f64),
                    np.ascontiguousarray(self._lam, dtype=f64),
                    np.ascontiguousarray(self._is_table),
                    np.ascontiguousarray(jobs.curve_nodes, dtype=f64),
                    np.ascontiguousarray(jobs.curve_tput, dtype=f64),
                    np.ascontiguousarray(jobs.local_batch, dtype=f64),
                    np.ascontiguousarray(jobs.grad_bytes, dtype=f64),
                    np.ascontiguousarray(jobs.overlap, dtype=f64),
                    np.ascontiguousarray(jobs.app_class, dtype=np.int64),
                    np.ascontiguousarray(jobs.type_rate, dtype=f64),
                )
            ),
        )
        # ``job_rates``' kernel arguments after the node map (numba resolves the types of
        # plain arrays in C, of a named tuple in Python: several us per call)
        self._rate_args = readonly_views(
            (*self._consts, cluster.slowdown, cluster.gpu_type, cluster.topology.coords)
        )

    # -- the formula -------------------------------------------------------------------
    def formula(
        self, job: np.ndarray, count: np.ndarray, slow: np.ndarray, spread: np.ndarray
    ) -> np.ndarray:
        """Rates (samples/s) of jobs ``job`` on ``count`` nodes with the given slowest-device
        factor ``slow`` (sf / type_rate) and spread level; all arrays broadcast to (M,).

        Args:
            job: job indices.
            count: node counts (fractional counts interpolate a table; <= 0 gives 0).
            slow: the slowest device's slowdown over the job's per-type rate: seconds per
                sample per GPU for a parametric job, a multiplier for a table job.
            spread: topology level spanned (0 = one node).

        Returns:
            float64 rates of the broadcast shape.
        """
        job, count, slow, spread = np.broadcast_arrays(
            np.asarray(job, dtype=np.int64),
            np.asarray(count, dtype=np.float64),
            np.asarray(slow, dtype=np.float64),
            np.asarray(spread, dtype=np.int64),
        )
        out = _formula_many(self._consts, job.ravel(), count.ravel(), slow.ravel(), spread.ravel())
        return out.reshape(job.shape)

    # -- on actual node sets -----------------------------------------------------------
    def node_slowness(
        self, job: np.ndarray, nodes: np.ndarray, slowdown: np.ndarray | None = None
    ) -> np.ndarray:
        """Per (job, node) pair: sf[node, class(job)] / type_rate[job, type(node)].

        Args:
            job: job indices, broadcast against ``nodes``.
            nodes: node indices.
            slowdown: (N, 4) factors to use (default: the cluster's true ones; pass the
                profiled ones for a policy's estimate).

        Returns:
            The ``slow`` of ``formula`` for a job on that single node.
        """
        sf = self.cluster.slowdown if slowdown is None else slowdown
        jb = self.jobs
        return sf[nodes, jb.app_class[job]] / jb.type_rate[job, self.cluster.gpu_type[nodes]]

    def job_rates(self, node_job: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rates, node counts and spreads of every job under a node-to-job map.

        Returns three (J,) arrays: samples/s (0 for jobs without nodes), counts (int32) and
        spread levels (int8). Cost: one compiled pass over the nodes, then the formula for
        each job that holds nodes.

        Args:
            node_job: (N,) node map, -1 = none (any integer dtype).
        """
        return _job_rates_flat(np.ascontiguousarray(node_job, dtype=np.int32), *self._rate_args)

    def rate_on(self, job: int, nodes: np.ndarray) -> float:
        """Rate of one job on an explicit node set.

        Args:
            job: the job index.
            nodes: node indices (distinct); empty gives 0.

        Returns:
            Samples/s on those nodes with the true slowdowns: the slowest node gates, the
            set's spread prices the links.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size == 0:
            return 0.0
        slow = self.node_slowness(np.full(nodes.size, job), nodes).max()
        spr = self.cluster.topology.spread(nodes)
        return float(
            self.formula(
                np.array([job]), np.array([nodes.size]), np.array([slow]), np.array([spr])
            )[0]
        )

    # -- predictions (cached) ----------------------------------------------------------
    def packed_spread(self, count: np.ndarray) -> np.ndarray:
        """Lowest level whose largest group holds ``count`` nodes (best-case placement).

        Args:
            count: node counts (0 is treated as 1: level 0).

        Returns:
            int spread levels, the system level when no smaller group is large enough.
        """
        count = np.asarray(count)
        lvl = np.searchsorted(self._capacity, np.maximum(count, 1), side="left")
        return np.minimum(lvl, len(self._capacity) - 1)

    def ideal_curve(self, job: int, slow: float | None = None) -> np.ndarray:
        """Rate of ``job`` at 0..max_nodes nodes, packed, on devices of slowness ``slow``.

        ``slow`` defaults to the job's best node (the fastest type at slowdown 1). Cached per
        model (so per instance); the result is read-only.

        Args:
            job: the job index.
            slow: the ``slow`` of ``formula`` on every node (None: the job's fastest type
                at slowdown 1, ``min(1 / type_rate[job])``).

        Returns:
            (max_nodes + 1,) float64 samples/s at 0, 1, ..., max_nodes nodes (0 at 0).
        """
        key = (int(job), slow)
        hit = self._curve_cache.get(key)
        if hit is not None:
            return hit
        out = self._ideal_curve(int(job), slow)
        self._curve_cache[key] = out
        return out

    def _ideal_curve(self, job: int, slow: float | None) -> np.ndarray:
        """``ideal_curve`` uncached: the formula at every count, packed, made read-only."""
        jb = self.jobs
        n = np.arange(int(jb.max_nodes[job]) + 1)
        s = float(np.min(1.0 / jb.type_rate[job])) if slow is None else slow
        out = self.formula(np.full(n.size, job), n, np.full(n.size, s), self.packed_spread(n))
        out.flags.writeable = False
        return out

    def best_node_rate(self) -> np.ndarray:
        """(J,) the best per-node rate each job can reach, for the upper bound.

        Parametric jobs scale sub-linearly, so their best per-node rate is one node on the
        fastest device. A measured table may be super-linear (BFTrainer's VGG16: 1,193 at 1
        node, 2,389 at 2), so table jobs use the best ``tput(n) / n`` over the breakpoints,
        on the fastest device and without locality penalty: a true upper bound.

        "Fastest device" is per job: the smallest true slowdown of its class on any node of
        a type, over that type's rate for the job, minimised over the types.

        Returns:
            (J,) float64 samples/s per node.
        """
        J = self.jobs.num_jobs
        if J == 0:
            return np.zeros(0)
        cl, jb = self.cluster, self.jobs
        T = cl.num_gpu_types
        # Smallest slowdown per (type, class), then the best type for each job.
        min_sf = np.full((T, cl.slowdown.shape[1]), np.inf)
        for t in range(T):
            mask = cl.gpu_type == t
            if mask.any():
                min_sf[t] = cl.slowdown[mask].min(axis=0)
        best = (min_sf[:, jb.app_class].T / jb.type_rate).min(axis=1)
        out = self.formula(np.arange(J), np.ones(J), best, np.zeros(J, dtype=np.int64))
        table = np.flatnonzero(self._is_table)
        if table.size:
            n = jb.curve_nodes[table]
            with np.errstate(divide="ignore", invalid="ignore"):
                per_node = np.where(n > 0, jb.curve_tput[table] / np.where(n > 0, n, 1.0), 0.0)
            out[table] = per_node.max(axis=1) / best[table]
        return out


# ---------------------------------------------------------------------------------------
# Compiled kernels (numba). Every floating-point operation is written in the order of the
# vectorised formulas above (no fast-math, no reassociation), so results are bit-identical
# to evaluating them with numpy. Named-tuple fields are read into locals at the top of a
# kernel: numba takes a reference to every member of the tuple for a field read inside a
# branch or loop, which costs more than the arithmetic (see ``mtgym.sim.engine``).
# ---------------------------------------------------------------------------------------
class RateConsts(NamedTuple):
    """Per-instance constants of the formula, as contiguous arrays (the kernels' input).

    Attributes:
        gpus_per_node: devices per node (the ring has ``count x gpus_per_node`` workers).
        bw: (L,) float64 ring bandwidth per spread level, bytes/s.
        lat: (L,) float64 per-hop latency per spread level, seconds.
        lam: (L,) float64 locality factor (PAL's lambda) per spread level, >= 1.
        is_table: (J,) bool, the job uses the table form.
        curve_nodes: (J, K) float64 breakpoints of each job's curve, padded by repetition.
        curve_tput: (J, K) float64 samples/s at the breakpoints (true curves).
        local_batch: (J,) float64 samples per GPU per iteration (parametric jobs).
        grad_bytes: (J,) float64 bytes all-reduced per iteration (parametric jobs).
        overlap: (J,) float64 share of the all-reduce hidden behind compute, in [0, 1].
        app_class: (J,) int64 variability class, the column of the slowdown tables.
        type_rate: (J, T) float64 per-GPU samples/s per GPU type (parametric) or speed
            relative to the measured type (table).
    """

    gpus_per_node: int
    bw: np.ndarray
    lat: np.ndarray
    lam: np.ndarray
    is_table: np.ndarray
    curve_nodes: np.ndarray
    curve_tput: np.ndarray
    local_batch: np.ndarray
    grad_bytes: np.ndarray
    overlap: np.ndarray
    app_class: np.ndarray
    type_rate: np.ndarray


@njit(cache=True, error_model="numpy")
def _interp1(x: float, xp: np.ndarray, fp: np.ndarray) -> float:  # pragma: no cover - jit
    """``interp_rows`` for one row (same operations, same order).

    Args:
        x: the point.
        xp: (K,) non-decreasing breakpoints.
        fp: (K,) values at them.
    """
    K = xp.shape[0]
    if K == 1:
        return fp[0]
    n_le = 0
    for k in range(K):
        if xp[k] <= x:
            n_le += 1
    idx = min(max(n_le - 1, 0), K - 2)
    x0, x1 = xp[idx], xp[idx + 1]
    y0, y1 = fp[idx], fp[idx + 1]
    dx = x1 - x0
    w = (min(x, x1) - x0) / dx if dx > 0 else 0.0
    y = y0 + min(max(w, 0.0), 1.0) * (y1 - y0)
    return fp[K - 1] if x >= xp[K - 1] else y


@njit(cache=True, error_model="numpy")
def _rate1(
    consts: RateConsts, j: int, count: float, slow: float, lvl: int
) -> float:  # pragma: no cover - jit
    """The formula for one (job, count, slowness, spread level); 0 when ``count <= 0``.

    Args:
        consts: the instance's constants.
        j: the job index.
        count: node count (a float: tables interpolate it).
        slow: the slowest device's factor over the job's type rate (``formula``).
        lvl: spread level, an index into ``bw``, ``lat`` and ``lam``.
    """
    is_table, local_batch, grad_bytes, overlap = (
        consts.is_table,
        consts.local_batch,
        consts.grad_bytes,
        consts.overlap,
    )
    lam, bw, lat, gpus = consts.lam, consts.bw, consts.lat, consts.gpus_per_node
    if not count > 0:
        return 0.0
    if is_table[j]:
        base = _interp1(count, consts.curve_nodes[j], consts.curve_tput[j])
        return base / slow / lam[lvl]
    g = count * gpus
    lb = local_batch[j]
    t_comp = lb * slow
    if g > 1:
        t_comm = 2.0 * (g - 1.0) / g * grad_bytes[j] / bw[lvl] + 2.0 * (g - 1.0) * lat[lvl]
    else:
        t_comm = 0.0
    return g * lb / (t_comp + (1.0 - overlap[j]) * t_comm)


@njit(cache=True, error_model="numpy")
def _formula_many(
    consts: RateConsts, job: np.ndarray, count: np.ndarray, slow: np.ndarray, spread: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """``ThroughputModel.formula`` on flat (M,) arrays.

    Args:
        consts: the instance's constants.
        job: (M,) int64 job indices.
        count: (M,) float64 node counts.
        slow: (M,) float64 slowest-device factors.
        spread: (M,) int64 spread levels.
    """
    out = np.zeros(job.shape[0])
    for i in range(job.shape[0]):
        out[i] = _rate1(consts, job[i], count[i], slow[i], spread[i])
    return out


@njit(cache=True, error_model="numpy")
def _job_rates(
    consts: RateConsts,
    node_job: np.ndarray,
    slowdown: np.ndarray,
    gpu_type: np.ndarray,
    coords: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """``ThroughputModel.job_rates`` into new arrays (``_job_rates_of`` for all jobs).

    Args:
        consts: the instance's constants.
        node_job: (N,) int32 node map, -1 = none.
        slowdown: (N, 4) true per-class node factors.
        gpu_type: (N,) GPU type index of each node.
        coords: (N, L) group id of each node at each topology level.

    Returns:
        (rate, count, spread): (J,) float64 samples/s, int32 node counts, int8 levels.
    """
    J = consts.is_table.shape[0]
    rate = np.zeros(J)
    count = np.zeros(J, dtype=np.int32)
    spread = np.zeros(J, dtype=np.int8)
    _job_rates_of(consts, node_job, slowdown, gpu_type, coords, rate, count, spread, np.arange(J))
    return rate, count, spread


@njit(cache=True, error_model="numpy")
def _job_rates_of(
    consts: RateConsts,
    node_job: np.ndarray,
    slowdown: np.ndarray,
    gpu_type: np.ndarray,
    coords: np.ndarray,
    rate: np.ndarray,
    count: np.ndarray,
    spread: np.ndarray,
    jobs: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Rate, node count and spread level of each of the distinct ``jobs``, written into
    ``rate``, ``count`` and ``spread`` (J,); other jobs' entries are left as they are (the
    caller knows only these jobs' node sets changed). One pass over the nodes (count,
    slowest device and per-level group range of each job), then the formula per job that
    holds nodes.

    The spread is the lowest level at which the job's nodes share one group (the min and
    max group id agree); the slowest device follows ``np.maximum`` (NaN propagates).

    Args:
        consts: the instance's constants.
        node_job: (N,) node map, -1 = none.
        slowdown: (N, 4) true per-class node factors.
        gpu_type: (N,) GPU type index of each node.
        coords: (N, L) group id of each node at each topology level.
        rate: (J,) float64, written for ``jobs``.
        count: (J,) node counts, written for ``jobs``.
        spread: (J,) spread levels, written for ``jobs``.
        jobs: distinct job indices to recompute.
    """
    app_class, type_rate = consts.app_class, consts.type_rate
    J = consts.is_table.shape[0]
    L = coords.shape[1]
    mark = np.zeros(J, dtype=np.bool_)
    for j in jobs:
        mark[j] = True
        rate[j] = 0.0
        count[j] = 0
        spread[j] = 0
    slow = np.empty(J)
    lo = np.empty((J, L), dtype=coords.dtype)
    hi = np.empty((J, L), dtype=coords.dtype)
    for n in range(node_job.shape[0]):
        j = node_job[n]
        if j < 0 or not mark[j]:
            continue
        s = slowdown[n, app_class[j]] / type_rate[j, gpu_type[n]]
        if count[j] == 0:
            slow[j] = s
            for k in range(L):
                lo[j, k] = coords[n, k]
                hi[j, k] = coords[n, k]
        else:
            if (s > slow[j] or np.isnan(s)) and not np.isnan(slow[j]):  # as np.maximum
                slow[j] = s
            for k in range(L):
                v = coords[n, k]
                if v < lo[j, k]:
                    lo[j, k] = v
                if v > hi[j, k]:
                    hi[j, k] = v
        count[j] += 1
    for j in jobs:
        if count[j] == 0:
            continue
        lvl = 0
        for k in range(L):
            if lo[j, k] == hi[j, k]:
                lvl = k
                break
        spread[j] = lvl
        rate[j] = _rate1(consts, j, float(count[j]), slow[j], lvl)


@njit(cache=True, error_model="numpy")
def _job_rates_flat(
    node_job: np.ndarray,
    gpus_per_node: int,
    bw: np.ndarray,
    lat: np.ndarray,
    lam: np.ndarray,
    is_table: np.ndarray,
    curve_nodes: np.ndarray,
    curve_tput: np.ndarray,
    local_batch: np.ndarray,
    grad_bytes: np.ndarray,
    overlap: np.ndarray,
    app_class: np.ndarray,
    type_rate: np.ndarray,
    slowdown: np.ndarray,
    gpu_type: np.ndarray,
    coords: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """``_job_rates`` with ``RateConsts`` given field by field (cheaper to call).

    The arguments after ``node_job`` are the ``RateConsts`` fields in order, then the
    cluster's ``slowdown``, ``gpu_type`` and ``topology.coords`` (``_job_rates``).
    """
    c = RateConsts(
        gpus_per_node,
        bw,
        lat,
        lam,
        is_table,
        curve_nodes,
        curve_tput,
        local_batch,
        grad_bytes,
        overlap,
        app_class,
        type_rate,
    )
    return _job_rates(c, node_job, slowdown, gpu_type, coords)
