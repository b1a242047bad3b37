"""BFTrainer's non-MILP baseline (``re_allocate_ndf``): equal share, FCFS leftovers, sticky.

1. Admit active jobs first-come first-served, at most ``max_jobs`` (BFTrainer's ``maxJ``;
   None, the default: the cap scaled with the machine, ``mtgym.policy.tunable.admission_cap``).
2. Each gets ``q = floor(idle / admitted)`` nodes, capped at its maximum; a job whose share is
   below its minimum gets 0. (BFTrainer also gives 0 when ``q == min``; that quirk is kept
   only with ``bftrainer_quirk=True``.)
3. Leftover nodes go FCFS to jobs below their maximum, skipping a job that would still be
   below its minimum.
4. Realise the targets without migration with ``SchedulerView.pack``
   (a shrinking job releases its slowest nodes; growing jobs take free nodes packed by
   topology group, fastest first).
"""

from __future__ import annotations

import numpy as np

from mtgym.core.types import Allocation, JobStatus
from mtgym.policy.tunable import Tunable, admission_cap, cap_grid, records_knobs
from mtgym.sim.view import InfoMode, SchedulerView


def equal_share_targets(
    n_free: int, min_nodes: np.ndarray, max_nodes: np.ndarray, *, quirk: bool = False
) -> np.ndarray:
    """Node counts for admitted jobs in FCFS order (steps 2-3 above).

    Args:
        n_free: Idle nodes to share.
        min_nodes: (k,) the admitted jobs' minimum node counts, in FCFS order.
        max_nodes: (k,) their maximum node counts.
        quirk: Also give 0 when the share equals the minimum (BFTrainer's code).

    Returns:
        (k,) int64 node counts, each 0 or within [min, max]; their sum is at most
        ``n_free``.
    """
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


class EqualShare(Tunable):
    """The equal-share policy (see module docstring).

    Args:
        max_jobs: the admission cap; None: scaled with the machine.
        bftrainer_quirk: also give 0 when the share equals the minimum (BFTrainer's code).
        tuned: take the scenario's recorded ``max_jobs`` (``mtgym.policy.tunable``).
    """

    name = "equal-share"
    info_mode = InfoMode.USER
    KNOBS = ("max_jobs",)

    @records_knobs
    def __init__(
        self, max_jobs: int | None = None, *, bftrainer_quirk: bool = False, tuned: bool = True
    ) -> None:
        if max_jobs is not None and max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1 (or None: scaled), got {max_jobs}")
        self.max_jobs = max_jobs
        self.quirk = bftrainer_quirk
        self.tuned = bool(tuned)

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """The admission caps of ``cap_grid``: None (the scaled cap) first, then 10 and
        the scenario's slot count times 1, 2, 4 and 8.

        Args:
            episode: The scenario's ``EpisodeSpec`` (its ``max_jobs``; 16 when unset).
        """
        return {"max_jobs": list(cap_grid(None, episode))}

    def reset(self, view: SchedulerView) -> None:
        """Nothing to reset: the policy is stateless."""

    def decide(self, view: SchedulerView) -> Allocation:
        """Equal share of the idle nodes among the first ``max_jobs`` active jobs.

        The cap's size is ``admission_cap``'s (None: scaled with the idle pool); the jobs
        admitted are the earliest submitted active ones, running or not.

        Args:
            view: The current state (user information: declared limits only).
        """
        active = np.flatnonzero(view.status == JobStatus.ACTIVE)
        # FCFS by submission time (ties by index); jobs are stored in submission order.
        admitted = active[: admission_cap(view, self.max_jobs)]
        n_free = int(np.count_nonzero(view.available))
        target = equal_share_targets(
            n_free, view.min_nodes[admitted], view.max_nodes[admitted], quirk=self.quirk
        )
        return Allocation(view.pack(admitted, target))
