"""Job slots: which submitted jobs the agent sees and schedules (admission, FCFS).

The observation has ``num_slots`` job rows. A submitted job takes the lowest free slot in
order of submission and keeps it until it completes or is stopped; later jobs wait in a
queue (BFTrainer's ``maxJ`` admission). Only jobs in slots can hold nodes.
"""

from __future__ import annotations

import numpy as np

from mtgym.sim.state import ClusterState
from mtgym.types import JobStatus


class JobSlots:
    """Slot -> job map (``-1`` = empty), updated after each step."""

    def __init__(self, num_slots: int) -> None:
        self.num_slots = num_slots
        self.job = np.full(num_slots, -1, dtype=np.int64)
        self._next = 0  # jobs before this index were admitted already

    def reset(self) -> None:
        """Empty every slot."""
        self.job[:] = -1
        self._next = 0

    def update(self, state: ClusterState) -> None:
        """Free the slots of finished jobs; admit waiting jobs FCFS into free slots."""
        occ = self.job >= 0
        if occ.any():
            done = state.status[self.job[occ]] != JobStatus.ACTIVE
            if done.any():
                idx = np.flatnonzero(occ)[done]
                self.job[idx] = -1
        free = np.flatnonzero(self.job < 0)
        if free.size == 0:
            return
        # jobs are stored in submission order: admit from the cursor while active
        submitted = state.arrival_cursor
        cand = np.arange(self._next, submitted)
        cand = cand[state.status[cand] == JobStatus.ACTIVE]
        take = cand[: free.size]
        self.job[free[: take.size]] = take
        if take.size:
            self._next = int(take[-1]) + 1
        elif cand.size == 0:
            self._next = submitted

    @property
    def present(self) -> np.ndarray:
        """(num_slots,) bool, slot holds a job."""
        return self.job >= 0

    def queued(self, state: ClusterState) -> int:
        """Submitted, unfinished jobs without a slot."""
        active = int(np.count_nonzero(state.status == JobStatus.ACTIVE))
        return active - int(np.count_nonzero(self.present))
