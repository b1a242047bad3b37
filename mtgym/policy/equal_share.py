"""BFTrainer's non-MILP baseline (``re_allocate_ndf``): equal share, FCFS leftovers, sticky.

1. Admit active jobs first-come first-served, at most ``max_jobs`` (BFTrainer's ``maxJ``).
2. Each gets ``q = floor(idle / admitted)`` nodes, capped at its maximum; a job whose share is
   below its minimum gets 0. (BFTrainer also gives 0 when ``q == min``; that quirk is kept
   only with ``bftrainer_quirk=True``.)
3. Leftover nodes go FCFS to jobs below their maximum, skipping a job that would still be
   below its minimum.
4. Realise the targets without migration: a shrinking job releases its highest-indexed
   nodes, a growing job takes free nodes packed by topology group (fewest groups first).
"""

from __future__ import annotations

import numpy as np

from mtgym.sim.view import InfoMode, SchedulerView
from mtgym.types import Allocation, JobStatus


def equal_share_targets(
    n_free: int, min_nodes: np.ndarray, max_nodes: np.ndarray, *, quirk: bool = False
) -> np.ndarray:
    """Node counts for admitted jobs in FCFS order (steps 2-3 above)."""
    k = len(min_nodes)
    if k == 0 or n_free <= 0:
        return np.zeros(k, dtype=np.int64)
    q = n_free // k
    ok = (q > min_nodes) if quirk else (q >= min_nodes)
    target = np.where(ok, np.minimum(q, max_nodes), 0).astype(np.int64)
    left = n_free - int(target.sum())
    for i in range(k):
        if left <= 0:
            break
        add = min(left, int(max_nodes[i] - target[i]))
        if add > 0 and target[i] + add >= min_nodes[i]:
            target[i] += add
            left -= add
    return target


def realise_targets(view: SchedulerView, jobs: np.ndarray, target: np.ndarray) -> np.ndarray:
    """A node map giving ``jobs[i]`` exactly ``target[i]`` nodes, keeping held nodes (sticky)."""
    a = np.where(view.available, view.node_job, -1).astype(np.int32)
    keep = np.zeros(view.num_jobs, dtype=np.int64)
    keep[jobs] = target
    # Release nodes of jobs that are not admitted, and surplus nodes (highest index first).
    held = np.flatnonzero(a >= 0)
    owners = a[held]
    # rank of each held node within its job, counting from the lowest index
    order = np.lexsort((held, owners))
    held, owners = held[order], owners[order]
    first = np.concatenate(([0], np.flatnonzero(owners[1:] != owners[:-1]) + 1))
    rank = np.arange(held.size) - np.repeat(first, np.diff(np.append(first, held.size)))
    a[held[rank >= keep[owners]]] = -1
    have = np.bincount(a[a >= 0], minlength=view.num_jobs)
    need = keep - have
    free = np.flatnonzero(view.available & (a < 0))
    if free.size and np.any(need[jobs] > 0):
        # Pack by topology: visit free nodes group by group, largest free groups first.
        coords = view.topology_coords
        grp = coords[free, 1] if coords.shape[1] > 2 else np.zeros(free.size, dtype=np.int64)
        sizes = np.bincount(grp)
        free = free[np.lexsort((free, -sizes[grp]))]
        pos = 0
        for j in jobs:
            k = int(need[j])
            if k > 0:
                a[free[pos : pos + k]] = j
                pos += k
    return a


class EqualShare:
    """The equal-share policy (see module docstring)."""

    name = "equal-share"
    info_mode = InfoMode.USER

    def __init__(self, max_jobs: int = 10, *, bftrainer_quirk: bool = False) -> None:
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
        self.max_jobs = max_jobs
        self.quirk = bftrainer_quirk

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset: the policy is stateless."""

    def decide(self, view: SchedulerView) -> Allocation:
        """Equal share of the idle nodes among the first ``max_jobs`` active jobs."""
        active = np.flatnonzero(view.status == JobStatus.ACTIVE)
        # FCFS by submission time (ties by index); jobs are stored in submission order.
        admitted = active[: self.max_jobs]
        n_free = int(np.count_nonzero(view.available))
        target = equal_share_targets(
            n_free, view.min_nodes[admitted], view.max_nodes[admitted], quirk=self.quirk
        )
        return Allocation(realise_targets(view, admitted, target))
