"""Every job its minimum, then its current size, then first-come growth: a whole policy.

``docs/policies.md`` walks through it. From the repository's root::

    mtgym evaluate --scenario default --policy examples.min_then_grow:factory --seeds 5
"""

from __future__ import annotations

import numpy as np

from mtgym.core.types import Allocation, JobStatus
from mtgym.sim.view import InfoMode, SchedulerView


class MinThenGrow:
    """Three passes over the active jobs, first come first served, while idle nodes last.

    1. Every job its minimum (a job whose minimum does not fit waits).
    2. Each job started in pass 1 back to the size it holds now (a resize costs a pause).
    3. What is left to the earliest jobs, up to their maximum.
    """

    name = "min-then-grow"  # results, tables and TensorBoard runs are labelled by it
    info_mode = InfoMode.USER  # sees what users declare: min/max nodes, curves, costs
    decision_interval_s = 60.0  # decide every 60 simulated seconds (None: at every event)

    def reset(self, view: SchedulerView) -> None:
        """Start an episode: nothing to remember."""

    def decide(self, view: SchedulerView) -> Allocation:
        """The node map wanted from now on (the simulator charges the resizes)."""
        jobs = np.flatnonzero(view.status == JobStatus.ACTIVE)  # in submission order
        free = int(np.count_nonzero(view.available))  # nodes lent now, held or idle
        target = np.zeros(len(jobs), dtype=np.int64)
        for i, j in enumerate(jobs):  # 1. the minimum
            if view.min_nodes[j] <= free:
                target[i] = view.min_nodes[j]
                free -= int(target[i])
        now = np.minimum(view.n_nodes[jobs], view.max_nodes[jobs])
        for cap in (now, view.max_nodes[jobs]):  # 2. the current size, 3. growth
            for i in np.flatnonzero(target > 0):
                add = min(free, max(int(cap[i]) - int(target[i]), 0))
                target[i] += add
                free -= add
        return Allocation(view.pack(jobs, target))


def factory() -> MinThenGrow:
    """What ``--policy examples.min_then_grow:factory`` calls, with no argument, for each
    episode (and once before the first, to check that it builds).
    """
    return MinThenGrow()
