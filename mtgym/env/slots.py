"""Job slots: which submitted jobs the agent sees and schedules (admission, FCFS).

The observation has ``num_slots`` job rows. A submitted job takes the lowest free slot in
order of submission and keeps it until it completes or is stopped; later jobs wait in a
queue (BFTrainer's ``maxJ`` admission). Only jobs in slots can hold nodes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mtgym.core.limits import MAX_SLOTS
from mtgym.core.types import JobStatus
from mtgym.sim.state import ClusterState

#: ``slot_rule``'s ceiling, the env's ``MAX_SLOTS`` (8,192): one slot per node on every
#: machine up to 8,192 nodes (Summit's 4,734 included). It was 1,024 until issue [refs]: on
#: ``summit-manyjobs`` (2,000 jobs, over 1,000 active at once) the shipped agent scored
#: 1.233x [1.226, 1.238] with 2,048 slots and 1.251x [1.245, 1.258] with one per node
#: (4,734) what it scored with 1,024, on the tuning seeds (``scripts/agent_slots.py``,
#: ``docs/env.md``)
MAX_AUTO_SLOTS = MAX_SLOTS


def slot_rule(num_nodes: int) -> int:
    """The job slots S when ``max_jobs`` is not set: one per node, at most
    ``MAX_AUTO_SLOTS`` (8,192). A job holds at least one node, so up to 8,192 nodes every set
    of jobs a policy can run at once fits in the slots (``packed`` runs 37 one-node jobs at
    once on ``default`` and 707 on ``summit-hps``; ``freetrain`` backfills small rigid jobs
    past waiting 24-GPU ones on ``pal-philly-64gpu``). The machine, not its idle pool, sets
    it: a live scavenger knows the one and not the other.

    Args:
        num_nodes: the machine's nodes N.

    Returns:
        min(max(N, 1), ``MAX_AUTO_SLOTS``).
    """
    return int(min(max(int(num_nodes), 1), MAX_AUTO_SLOTS))


class JobSlots:
    """Slot -> job map (``-1`` = empty), updated after each step.

    Args:
        num_slots: S, the env's job slots.

    Attributes:
        job: (S,) int64, each slot's job, -1 = empty (the step's kernels update it in
            place).
        cursor: every job before this index was admitted already, or was no longer
            active when the cursor passed it.
    """

    def __init__(self, num_slots: int) -> None:
        self.num_slots = num_slots
        self.job = np.full(num_slots, -1, dtype=np.int64)
        self.cursor = 0  # jobs before this index were admitted already (the step kernel moves it)

    def reset(self) -> None:
        """Empty every slot."""
        self.job[:] = -1
        self.cursor = 0

    def update(self, state: ClusterState) -> None:
        """Free the slots of finished jobs; admit waiting jobs FCFS into free slots.

        Args:
            state: the state now (its job statuses and its count of jobs submitted).
        """
        # jobs are stored in submission order: admit from the cursor while active
        self.cursor = _update(self.job, state.status, self.cursor, state.arrival_cursor)

    @property
    def present(self) -> np.ndarray:
        """(num_slots,) bool, slot holds a job."""
        return self.job >= 0

    def queued(self, state: ClusterState) -> int:
        """Submitted, unfinished jobs without a slot.

        Args:
            state: the state now (its job statuses).
        """
        return _queued(self.job, state.status)


_ACTIVE = int(JobStatus.ACTIVE)  # a compile-time constant in the kernels


@njit(cache=True)
def _update(
    job: np.ndarray, status: np.ndarray, nxt: int, submitted: int
) -> int:  # pragma: no cover - jit
    """``JobSlots.update`` in place on ``job``; returns the new admission cursor.

    Slots of jobs no longer active are freed; then the active jobs from the cursor up to
    ``submitted`` take the free slots in order (lowest slot first). The cursor moves past
    the last job admitted, or to ``submitted`` when no active job was waiting; it stays
    put when no slot is free.

    Args:
        job: (S,) int64, each slot's job, -1 = empty; updated.
        status: (J,) the jobs' ``JobStatus``.
        nxt: the admission cursor.
        submitted: the jobs submitted so far (``ClusterState.arrival_cursor``).
    """
    S = job.shape[0]
    n_free = 0
    for s in range(S):
        j = job[s]
        if j >= 0 and status[j] != _ACTIVE:
            job[s] = -1
        if job[s] < 0:
            n_free += 1
    if n_free == 0:
        return nxt
    s = 0
    last = -1
    for j in range(nxt, submitted):
        if status[j] != _ACTIVE:
            continue
        if n_free == 0:  # a waiting job but no slot left
            return last + 1
        while job[s] >= 0:
            s += 1
        job[s] = j
        last = j
        n_free -= 1
    return last + 1 if last >= 0 else submitted


@njit(cache=True)
def _queued(job: np.ndarray, status: np.ndarray) -> int:  # pragma: no cover - jit
    """Active jobs minus occupied slots.

    Args:
        job: (S,) each slot's job, -1 = empty.
        status: (J,) the jobs' ``JobStatus``.
    """
    active = 0
    for j in range(status.shape[0]):
        if status[j] == _ACTIVE:
            active += 1
    for s in range(job.shape[0]):
        if job[s] >= 0:
            active -= 1
    return active
