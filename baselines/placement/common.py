"""Shared helpers of the placement baselines: job order, demands, host grouping, reorder.

The unit of allocation is mtgym's "node"; in PAL scenarios that is one GPU, and the *host*
is the level-1 group of the topology (``topology_coords[:, 1]``). A topology with only the
node and system levels has no host level: every unit is its own host.
"""

from __future__ import annotations

import numpy as np

from mtgym.core.types import JobStatus
from mtgym.sim.view import SchedulerView

#: Job orders a scheduling policy may give (Blox's FIFO, LAS and SRTF schedulers).
ORDERS = ("fifo", "las", "srtf")


def check_order(order: str) -> str:
    """Validate an ``order`` argument (raises ``ValueError``).

    Args:
        order: ``"fifo"``, ``"las"`` or ``"srtf"``.

    Returns:
        ``order``, when valid.
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    return order


def job_order(view: SchedulerView, order: str = "fifo") -> np.ndarray:
    """Active jobs (waiting or running) in priority order.

    ``fifo``: by submission time; ``las``: least attained service (``progress``) first;
    ``srtf``: shortest remaining work (``work - progress``) first. Ties: submission time,
    then index.

    Args:
        view: the current view.
        order: ``"fifo"``, ``"las"`` or ``"srtf"`` (which needs the jobs' work).

    Returns:
        The active jobs' indices in that order.
    """
    active = np.flatnonzero(view.status == JobStatus.ACTIVE)
    if active.size == 0:
        return active
    submit = view.submit_s[active]
    if order == "fifo":
        key: tuple[np.ndarray, ...] = (active, submit)
    elif order == "las":
        key = (active, submit, view.progress[active])
    elif order == "srtf":
        remaining = view.work[active] - view.progress[active]
        if not np.all(np.isfinite(remaining)):
            raise ValueError("srtf needs each job's work (an info mode that shows it)")
        key = (active, submit, remaining)
    else:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    return active[np.lexsort(key)]


def demands(view: SchedulerView, jobs: np.ndarray) -> np.ndarray:
    """GPUs (units) each job asks for: its ``min_nodes`` (rigid jobs have min == max).

    Args:
        view: the current view.
        jobs: the jobs' indices.
    """
    return view.min_nodes[jobs].astype(np.int64)


def host_of(topology_coords: np.ndarray) -> np.ndarray:
    """(N,) host id of every unit: the level-1 group, or the unit itself without one.

    Args:
        topology_coords: (N, L) each unit's group at every topology level.
    """
    c = np.asarray(topology_coords)
    return c[:, 1] if c.shape[1] >= 3 else c[:, 0]


def running_sets(view: SchedulerView) -> dict[int, np.ndarray]:
    """Units each running job holds now (available units only), by job.

    Args:
        view: the current view.
    """
    held = np.flatnonzero(view.available & (view.node_job >= 0))
    owners = view.node_job[held]
    return {int(j): held[owners == j] for j in np.unique(owners)}


def class_priority_reorder(
    jobs: np.ndarray, demand: np.ndarray, app_class: np.ndarray, capacity: int
) -> tuple[np.ndarray, np.ndarray]:
    """PAL's class-priority reorder.

    The prefix of ``jobs`` whose cumulative demand fits in ``capacity`` is stable-sorted by
    class (A, B, C, D: the most variability-sensitive pick first); the rest follows in the
    original order.

    Args:
        jobs: the jobs' indices, in priority order.
        demand: units each job asks for.
        app_class: (J,) every job's class.
        capacity: the free units.

    Returns:
        The reordered jobs and their demands.
    """
    jobs = np.asarray(jobs)
    demand = np.asarray(demand)
    fits = np.cumsum(demand) <= capacity
    n = int(np.argmin(fits)) if not fits.all() else jobs.size
    head = np.argsort(app_class[jobs[:n]], kind="stable")
    perm = np.concatenate((head, np.arange(n, jobs.size)))
    return jobs[perm], demand[perm]
