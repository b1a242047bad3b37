"""``counts``: ``MultiDiscrete([max_count + 1] * num_slots)``, the target node count of each
slot's job; the counts are repaired and placed as ``mtgym.env.actions.pack`` says.

No-op: each job's current count (all zeros stops every job). Mask: 0 always; for a present
slot, min..min(max, max_count, idle nodes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mtgym.env.actions.base import ActionCodec
from mtgym.env.actions.pack import REPAIR_KEYS, first_above, place_targets


@njit(cache=True)
def _counts_mask(
    mask: np.ndarray,
    slot_job: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
    max_count: int,
) -> None:  # pragma: no cover - jit
    """``counts`` mask in place: 0 always; min..min(max, max_count, idle nodes) for a present
    slot.

    Args:
        mask: (S * (max_count + 1),) int8, written: slot s's entries start at
            s * (max_count + 1), one per count 0..max_count.
        slot_job: (S,) the job of each slot, -1 = empty (only count 0 allowed).
        min_nodes: (J,) each job's minimum (a minimum of 0 is taken as 1: 0 is "stop").
        max_nodes: (J,) each job's maximum.
        available: (N,) bool, the node is idle and lent now: the counts are capped at
            their number, ignoring the nodes other jobs hold.
        max_count: the count cap of the space.
    """
    n_avail = 0
    for n in range(available.shape[0]):
        if available[n]:
            n_avail += 1
    for s in range(slot_job.shape[0]):
        row = s * (max_count + 1)
        mask[row] = 1
        j = slot_job[s]
        lo, hi = 1, 0
        if j >= 0:
            lo, hi = max(min_nodes[j], 1), min(min(max_nodes[j], max_count), n_avail)
        for c in range(1, max_count + 1):
            mask[row + c] = 1 if lo <= c <= hi else 0


@njit(cache=True)
def decode(frame: Any, a: np.ndarray) -> tuple[int, np.ndarray, int, int]:  # pragma: no cover
    """An action (entries 0..max_count) as repaired, placed counts.

    Args:
        frame: the ``ActionFrame``; its ``repairs`` get ``REPAIR_KEYS``' counts.
        a: (S,) int64, each slot's job's node count (not changed: repaired on a copy).

    Returns:
        (bad, node_map, need, free): ``bad`` the first entry outside 0..max_count (then an
        empty map and nothing else), else -1 and ``place_targets``' result.
    """
    bad = first_above(a, frame.max_count)
    if bad >= 0:
        return bad, np.empty(0, dtype=np.int32), 0, 0
    return place_targets(frame, a.copy())


@njit(cache=True)
def mask(frame: Any) -> None:  # pragma: no cover - jit
    """``_counts_mask`` on the frame: its ``mask`` from the slots, the jobs' bounds, the
    idle nodes and the count cap.

    Args:
        frame: the ``ActionFrame`` (the state's arrays, current after in-place steps).
    """
    _counts_mask(
        frame.mask,
        frame.slot_job,
        frame.min_nodes,
        frame.max_nodes,
        frame.available,
        frame.max_count,
    )


class Counts(ActionCodec):
    """The node count of each slot's job (module docstring)."""

    name = "counts"
    repair_keys = REPAIR_KEYS
    decode_kernel = decode
    mask_kernel = mask

    @classmethod
    def nvec_of(cls, num_nodes: int, num_slots: int, max_count: int) -> np.ndarray:
        """``[max_count + 1] * num_slots``: per slot, a node count 0..max_count.

        Args:
            num_nodes: unused (the counts are capped by ``max_count``).
            num_slots: S, one action entry per slot.
            max_count: the count cap.

        Returns:
            (S,) int64.
        """
        return np.full(num_slots, max_count + 1, dtype=np.int64)

    def noop(self, state, instance, slots) -> np.ndarray:
        """Each slot's job's current node count, capped at the count cap (0 for an empty
        slot). A job holding more nodes than the cap is asked for the cap: ``counts``
        cannot keep it.

        Returns:
            (S,) int64.
        """
        out = np.zeros(self.S, dtype=np.int64)
        p = slots.present
        out[p] = np.minimum(state.n_nodes[slots.job[p]], self.C)
        return out

    def encode(self, node_job, state, instance, slots) -> np.ndarray:
        """The node counts of ``node_job`` per slot (``slot_counts``, capped at the count
        cap); where the nodes go is left to the placement.

        Args:
            node_job: (N,) the job of each node, -1 = none.
            state: unused.
            instance: the episode's instance (its job count).
            slots: the env's ``JobSlots``.

        Returns:
            (S,) int64.
        """
        return slot_counts(node_job, instance, slots, self.C)

    def sample_valid(self, state, instance, slots, rng) -> np.ndarray:
        """Per present slot in random order: 0 or a count in [max(min, 1),
        min(max, cap, idle nodes left)], drawn uniformly from those choices.

        Args:
            state: the state (its ``available`` nodes).
            instance: its instance (the jobs' bounds).
            slots: the env's ``JobSlots``.
            rng: the random generator drawn from.

        Returns:
            (S,) int64 whose counts sum to at most the idle nodes: no repair.
        """
        jobs = instance.jobs
        left = int(np.count_nonzero(state.available))
        out = np.zeros(self.S, dtype=np.int64)
        for s in rng.permutation(np.flatnonzero(slots.job >= 0)):
            j = slots.job[s]
            lo, hi = max(int(jobs.min_nodes[j]), 1), min(int(jobs.max_nodes[j]), self.C, left)
            c = int(rng.choice([0, *range(lo, hi + 1)]))
            out[s] = c
            left -= c
        return out


def slot_counts(node_job: np.ndarray, instance: Any, slots: Any, cap: int) -> np.ndarray:
    """Each slot's job's node count in ``node_job`` (0 for an empty slot), at most ``cap``.

    Args:
        node_job: (N,) the job of each node, -1 = none.
        instance: the episode's instance (``num_jobs``).
        slots: the env's ``JobSlots`` (``num_slots``, ``job``, ``present``).
        cap: the largest count returned.

    Returns:
        (S,) int64.
    """
    counts = np.zeros(slots.num_slots, dtype=np.int64)
    present = slots.present
    if present.any():
        per_job = np.bincount(node_job[node_job >= 0], minlength=instance.num_jobs)
        counts[present] = per_job[slots.job[present]]
    return np.minimum(counts, cap)


CODEC = Counts  # (found by its module name, ``mtgym.core.names.ACTION_MODES``)
