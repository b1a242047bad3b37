"""Per-slot node-count targets -> repaired -> placed: the decoding shared by the modes that
choose counts (``counts``, ``delta``), as compiled kernels over an ``ActionFrame``.

Repairs, in this order (``REPAIR_KEYS``): a count for an empty slot -> 0 (``empty_slot``);
a count above the job's maximum -> the maximum (``over_max``); a count between 1 and the
minimum - 1 -> 0 (``below_min``); more nodes asked than are idle -> granted in submission
order, each job getting what is left, 0 if that is below its minimum (``oversubscribed``).
The repaired counts are placed by ``mtgym.model.placement.pack_targets``' kernel (sticky,
topology- and speed-aware), so the node map needs no repair from the engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mtgym.model.placement import _pack

REPAIR_KEYS = ("empty_slot", "over_max", "below_min", "oversubscribed")


@njit(cache=True)
def _fcfs(present: np.ndarray, sj: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    """The present slots in order of their jobs' submission (job index).

    Args:
        present: (S,) bool, the slot holds a job.
        sj: (S,) int64 each slot's job (any value where not present).

    Returns:
        The indices of the present slots, sorted by their job index (jobs are numbered in
        submission order; a stable sort).
    """
    on = np.flatnonzero(present)
    keys = np.empty(on.shape[0], dtype=np.int64)
    for i in range(on.shape[0]):
        keys[i] = sj[on[i]]
    return on[np.argsort(keys, kind="mergesort")]


@njit(cache=True)
def _repair_targets(
    target: np.ndarray,
    present: np.ndarray,
    sj: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    """Repair per-slot node counts in place (module docstring's rules, in its order);
    returns the counts of (empty_slot, over_max, below_min, oversubscribed).

    Args:
        target: (S,) int64 node counts, changed in place.
        present: (S,) bool, the slot holds a job.
        sj: (S,) int64 each slot's job (any value where not present).
        min_nodes: (J,) each job's minimum.
        max_nodes: (J,) each job's maximum.
        available: (N,) bool, idle nodes: the budget, counted whole (the nodes a job
            holds are part of it: the targets are totals, not additions).

    Returns:
        (4,) int64, slots repaired by each rule; ``oversubscribed`` counts the slots whose
        count the FCFS pass changed.
    """
    rep = np.zeros(4, dtype=np.int64)
    total = 0
    for s in range(target.shape[0]):
        if not present[s]:
            if target[s] > 0:
                rep[0] += 1
            target[s] = 0
            continue
        j = sj[s]
        if target[s] > max_nodes[j]:
            rep[1] += 1
            target[s] = max_nodes[j]
        if target[s] > 0 and target[s] < min_nodes[j]:
            rep[2] += 1
            target[s] = 0
        total += target[s]
    free = 0
    for n in range(available.shape[0]):
        if available[n]:
            free += 1
    if total > free:  # FCFS: in submission order, each job gets what is left
        left = free
        for s in _fcfs(present, sj):
            want = target[s]
            got = min(want, left)
            if got < min_nodes[sj[s]]:
                got = 0
            if got != want:
                rep[3] += 1
            target[s] = got
            left -= got
    return rep


@njit(cache=True)
def _repair_ordered(
    target: np.ndarray,
    present: np.ndarray,
    sj: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
) -> tuple[tuple[int, int, int, int], np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """``_repair_targets``, then the present slots' jobs and repaired targets in FCFS order
    (what ``pack_targets`` takes). Repair counts come back as a tuple of ints. Its
    arguments are ``_repair_targets``' (``target`` is repaired in place).

    Returns:
        (repairs, jobs, targets): the four ``REPAIR_KEYS`` counts; (M,) int64 the present
        slots' jobs in submission order; (M,) int64 their repaired counts, zeros included
        (a job asked for 0 releases its nodes).
    """
    rep = _repair_targets(target, present, sj, min_nodes, max_nodes, available)
    order = _fcfs(present, sj)
    jobs = np.empty(order.shape[0], dtype=np.int64)
    tg = np.empty(order.shape[0], dtype=np.int64)
    for i in range(order.shape[0]):
        jobs[i] = sj[order[i]]
        tg[i] = target[order[i]]
    return (rep[0], rep[1], rep[2], rep[3]), jobs, tg


@njit(cache=True)
def first_above(a: np.ndarray, hi: int) -> int:  # pragma: no cover - jit
    """Index of the first entry outside ``0..hi``, or -1.

    Args:
        a: (S,) int64 action entries.
        hi: the largest allowed value.
    """
    for i in range(a.shape[0]):
        if a[i] < 0 or a[i] > hi:
            return i
    return -1


@njit(cache=True)
def place_targets(
    frame: Any, target: np.ndarray
) -> tuple[int, np.ndarray, int, int]:  # pragma: no cover - jit
    """Per-slot targets (int64, changed in place) repaired (``REPAIR_KEYS``' counts into
    ``frame.repairs``) and placed: a decoder's result (-1, node map, nodes needed, free).

    The placement (``mtgym.model.placement._pack``) is sticky: a job keeps the nodes it
    holds up to its target, drops its slowest ones above it, and takes new nodes group by
    group, the group with the most free nodes first, each in the static speed order.

    Args:
        frame: the ``ActionFrame`` (slots, bounds, idle nodes, the current map, the static
            node order and profiled slowdowns).
        target: (S,) int64 node count per slot.

    Returns:
        (-1, node_map, need, free): node_map (N,) int32, each node's job, -1 = none;
        ``need`` > ``free`` means the placement did not fit: the map is then incomplete
        and the step raises ``ValueError`` (``pack_failed``), changing nothing.
    """
    slot_job = frame.slot_job
    present = slot_job >= 0
    sj = np.maximum(slot_job, 0)
    counts, jobs, tg = _repair_ordered(
        target, present, sj, frame.min_nodes, frame.max_nodes, frame.available
    )
    rep = frame.repairs
    rep[0] = counts[0]
    rep[1] = counts[1]
    rep[2] = counts[2]
    rep[3] = counts[3]
    out, total, free = _pack(
        frame.available,
        frame.node_job,
        frame.p_slowdown,
        frame.app_class,
        frame.group,
        frame.seg_start,
        frame.seg_nodes,
        jobs,
        tg,
    )
    return -1, out, total, free


@njit(cache=True)
def idle_count(available: np.ndarray) -> int:  # pragma: no cover - jit
    """Nodes idle now: the ``True`` entries of ``available`` ((N,) bool)."""
    n = 0
    for i in range(available.shape[0]):
        if available[i]:
            n += 1
    return n
