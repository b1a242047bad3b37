"""Placement: turn per-job node counts into a node map, sticky, topology- and speed-aware.

``pack_targets`` is the default placer of the ``counts`` and ``delta`` action modes and of
the count-deciding heuristics (on a policy's view: ``SchedulerView.pack``). It never migrates a job:

- a job above its target releases its *slowest* nodes first (highest profiled slowdown for
  its class), then the highest-indexed ones;
- growing jobs, in the order given, take free nodes in one global order: topology groups
  with the most free nodes first (so a job's new nodes share groups), and inside a group
  the fastest nodes (lowest mean profiled slowdown) first.

The order of the nodes inside each group is static (cached per instance); a call is one
compiled (numba) pass over the nodes plus a sort of the groups by free count, so it stays
cheap at 4,734 nodes.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from mtgym.core.instance import readonly_views

# Static free-node order per (slowdown, coords) pair of read-only arrays (an instance's).
_ORDER_CACHE: dict[tuple[int, int], tuple[weakref.ref, weakref.ref, tuple[np.ndarray, ...]]] = {}


def pack_targets(
    available: np.ndarray,
    node_job: np.ndarray,
    slowdown: np.ndarray,
    app_class: np.ndarray,
    topology_coords: np.ndarray,
    jobs: np.ndarray,
    targets: np.ndarray,
) -> np.ndarray:
    """A node map giving ``jobs[i]`` exactly ``targets[i]`` nodes; other jobs get none.

    Args:
        available: (N,) bool, nodes idle now.
        node_job: (N,) current map (-1 = none).
        slowdown: (N, 4) profiled per-class factors.
        app_class: (J,) class of every job.
        topology_coords: (N, L) group ids; level 1 is the grouping used for packing.
        jobs: job indices to place, in priority order.
        targets: node count for each of ``jobs``; ``sum(targets) <= available.sum()``.
            ``jobs`` must be distinct: a job listed twice grows once per entry.

    Returns:
        (N,) int32 node map: -1 on nodes not idle or not given, else the job.

    Raises:
        ValueError: the growing jobs need more nodes than are free after the shrinking
            ones released theirs.
    """
    group, seg_start, seg_nodes = _static_order(slowdown, topology_coords)
    a, total, free = _pack(
        *readonly_views(  # (one compiled type whatever the callers' flags: readonly_view)
            (
                np.ascontiguousarray(available, dtype=np.bool_),
                np.ascontiguousarray(node_job, dtype=np.int32),
                np.ascontiguousarray(slowdown, dtype=np.float64),
                _classes64(app_class),
                group,
                seg_start,
                seg_nodes,
                np.ascontiguousarray(jobs, dtype=np.int64),
                np.ascontiguousarray(targets, dtype=np.int64),
            )
        )
    )
    if total > free:
        raise ValueError(f"targets need {total} free nodes but only {free} are free")
    return a


# The int64 copy of the last read-only ``app_class`` array (an instance's), and its source.
_CLASS_CACHE: list = [None, None]


def _classes64(app_class: np.ndarray) -> np.ndarray:
    """``app_class`` as a contiguous int64 array; cached for a read-only input.

    Only the last read-only array is remembered (one instance at a time is the common
    case); a writeable array is converted on every call, since it may change.
    """
    if isinstance(app_class, np.ndarray) and not app_class.flags.writeable:
        ref, out = _CLASS_CACHE
        if ref is not None and ref() is app_class:
            return out
        out = np.ascontiguousarray(app_class, dtype=np.int64)
        _CLASS_CACHE[:] = [weakref.ref(app_class), out]
        return out
    return np.ascontiguousarray(app_class, dtype=np.int64)


def _static_order(
    slowdown: np.ndarray, topology_coords: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The part of the free-node order that does not depend on the state.

    Free nodes are taken by (most free nodes in the group first, group id, mean profiled
    slowdown, node index). All but the first key are static: nodes sorted by (group, speed,
    index) give, for each group ``g``, its nodes in taking order as
    ``seg_nodes[seg_start[g]:seg_start[g + 1]]``. Returns (group of each node, seg_start,
    seg_nodes); cached for read-only inputs (an instance's arrays).

    The group is the level-1 group of ``topology_coords`` when there are more than two
    levels, else one group for all (node -> system). The cache holds at most 65 entries
    and is cleared when full.

    Args:
        slowdown: (N, 4) profiled per-class factors; a node's speed key is its mean.
        topology_coords: (N, L) group ids per level.
    """
    cacheable = not slowdown.flags.writeable and not topology_coords.flags.writeable
    key = (id(slowdown), id(topology_coords))
    if cacheable:
        hit = _ORDER_CACHE.get(key)
        if hit is not None and hit[0]() is slowdown and hit[1]() is topology_coords:
            return hit[2]
    n = slowdown.shape[0]
    if topology_coords.shape[1] > 2:
        grp = np.ascontiguousarray(topology_coords[:, 1], dtype=np.int64)
    else:
        grp = np.zeros(n, dtype=np.int64)
    speed = slowdown.mean(axis=1)
    idx = np.arange(n)
    seg_nodes = idx[np.lexsort((idx, speed, grp))]
    seg_start = np.searchsorted(grp[seg_nodes], np.arange(int(grp.max(initial=0)) + 2))
    out = (grp, seg_start.astype(np.int64), seg_nodes.astype(np.int64))
    if cacheable:
        if len(_ORDER_CACHE) > 64:
            _ORDER_CACHE.clear()
        _ORDER_CACHE[key] = (weakref.ref(slowdown), weakref.ref(topology_coords), out)
    return out


@njit(cache=True)
def _pack(
    available: np.ndarray,
    node_job: np.ndarray,
    slowdown: np.ndarray,
    app_class: np.ndarray,
    group: np.ndarray,
    seg_start: np.ndarray,
    seg_nodes: np.ndarray,
    jobs: np.ndarray,
    targets: np.ndarray,
) -> tuple[np.ndarray, int, int]:  # pragma: no cover - jit
    """``pack_targets``' work; returns (node map, nodes needed, nodes free).

    Held nodes of a job above its target are dropped slowest first (by its class's profiled
    slowdown, then highest index); free nodes are taken group by group, the group with the
    most free nodes first (ties: lowest group id), each group's nodes in the static order.
    When more nodes are needed than are free the map is incomplete (the caller raises).

    Args:
        available: (N,) bool, nodes idle now.
        node_job: (N,) int32 current map; a node not idle or held by an unlisted job
            starts free of it.
        slowdown: (N, 4) float64 profiled per-class factors.
        app_class: (J,) int64 class of every job.
        group: (N,) int64 packing group of each node (``_static_order``).
        seg_start: (G + 1,) int64 offsets of each group's nodes in ``seg_nodes``.
        seg_nodes: (N,) int64 nodes by (group, speed, index).
        jobs: (M,) int64 jobs to place, in priority order.
        targets: (M,) int64 node count per entry of ``jobs``.
    """
    N = available.shape[0]
    J = app_class.shape[0]
    M = jobs.shape[0]
    a = np.empty(N, dtype=np.int32)
    # Listed jobs by their last position in ``jobs`` (its target counts); work per listed
    # job, not per job of the instance (M is a few slots, J can be thousands).
    pos = np.full(J, -1, dtype=np.int64)
    for i in range(M):
        pos[jobs[i]] = i
    have = np.zeros(M, dtype=np.int64)
    for n in range(N):
        j = node_job[n] if available[n] else -1
        if j >= 0 and pos[j] < 0:
            j = -1  # a job not listed keeps no node
        a[n] = j
        if j >= 0:
            have[pos[j]] += 1
    # -- drop: per job above its target, keep the `keep` fastest (then lowest index) --
    # Each job's held nodes in index order, bucketed in one pass over the nodes.
    first = np.zeros(M + 1, dtype=np.int64)
    for p in range(M):
        first[p + 1] = first[p] + have[p]
    bucket = np.empty(first[M], dtype=np.int64)
    fill = first[:M].copy()
    for n in range(N):
        j = a[n]
        if j >= 0:
            p = pos[j]
            bucket[fill[p]] = n
            fill[p] += 1
    for p in range(M):
        keep = targets[p]
        if have[p] <= keep:
            continue
        mine = bucket[first[p] : first[p + 1]]
        m = mine.shape[0]
        sf = np.empty(m)
        c = app_class[jobs[p]]
        for i in range(m):
            sf[i] = slowdown[mine[i], c]
        order = _stable_argsort(sf)  # stable: ties stay in index order
        for r in range(keep, m):
            a[mine[order[r]]] = -1
        have[p] = keep
    # -- grow: take free nodes in one global order --
    need = np.zeros(M, dtype=np.int64)
    total = 0
    for i in range(M):
        p = pos[jobs[i]]
        need[i] = max(targets[p] - have[p], 0)
        total += need[i]
    G = seg_start.shape[0] - 1
    gfree = np.zeros(G, dtype=np.int64)
    n_free = 0
    for n in range(N):
        if available[n] and a[n] < 0:
            gfree[group[n]] += 1
            n_free += 1
    if total == 0 or total > n_free:
        return a, total, n_free
    g_order = np.argsort(-gfree, kind="mergesort")  # most free first, ties by group id
    i = 0
    while need[i] == 0:
        i += 1
    left = need[i]
    for gi in range(G):
        g = g_order[gi]
        if gfree[g] == 0:
            break
        for p in range(seg_start[g], seg_start[g + 1]):
            n = seg_nodes[p]
            if not available[n] or a[n] >= 0:
                continue
            a[n] = jobs[i]
            left -= 1
            if left == 0:
                i += 1
                while i < need.shape[0] and need[i] == 0:
                    i += 1
                if i == need.shape[0]:
                    return a, total, n_free
                left = need[i]
    return a, total, n_free


@njit(cache=True)
def _stable_argsort(v: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    """``np.argsort(v, kind="mergesort")``: a stable sort, NaN last. Short arrays (a job's
    nodes) by insertion, which gives the same permutation (a stable sort's is unique).

    Args:
        v: 1-D float64 keys.

    Returns:
        int64 indices that sort ``v``, ties in index order.
    """
    m = v.shape[0]
    if m > 64:
        return np.argsort(v, kind="mergesort")
    order = np.arange(m)
    for i in range(1, m):
        k = order[i]
        x = v[k]
        p = i - 1
        while p >= 0:
            y = v[order[p]]
            if x < y or (np.isnan(y) and not np.isnan(x)):  # x strictly before y
                order[p + 1] = order[p]
                p -= 1
            else:
                break
        order[p + 1] = k
    return order
