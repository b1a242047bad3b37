"""``assign``: ``MultiDiscrete([num_slots + 1] * num_nodes)``, the slot (1-based) whose job
each node runs; 0 = none.

A node given to an empty slot is left idle (``empty_slot``, the decoder's one repair); the
map can still be infeasible (a node not idle, a job given fewer than its minimum or more
than its maximum nodes), so the engine checks it and repairs it (``check_feasible``).

No-op: every node's current slot (all zeros frees every node). Mask: none always; any
present slot on an idle node.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mtgym.env.actions.base import ActionCodec


@njit(cache=True)
def _assign_mask(
    mask: np.ndarray, slot_job: np.ndarray, available: np.ndarray
) -> None:  # pragma: no cover - jit
    """``assign`` mask in place: "none" always; any present slot on an idle node.

    Args:
        mask: (N * (S + 1),) int8, written: node n's entries start at n * (S + 1), the
            first "none", then one per slot.
        slot_job: (S,) the job of each slot, -1 = empty.
        available: (N,) bool, the node is idle and lent now.
    """
    S = slot_job.shape[0]
    for n in range(available.shape[0]):
        row = n * (S + 1)
        mask[row] = 1
        for s in range(S):
            mask[row + 1 + s] = 1 if available[n] and slot_job[s] >= 0 else 0


@njit(cache=True)
def _decode_assign(
    a: np.ndarray, slot_job: np.ndarray
) -> tuple[int, int, np.ndarray]:  # pragma: no cover - jit
    """An ``assign`` action (int64): the first entry outside 0..S (or -1), the entries
    naming an empty slot, and the node map (slot ``k`` -> its job, 0 -> none).

    Args:
        a: (N,) int64, each node's slot, 1-based; 0 = none.
        slot_job: (S,) the job of each slot, -1 = empty.

    Returns:
        (bad, empty, node_map): ``bad`` the first node whose entry is outside 0..S (then
        ``node_map`` is only filled before it and nothing else is counted), else -1;
        ``empty`` the nodes given to an empty slot (left without a job); ``node_map``
        (N,) int32, each node's job, -1 = none.
    """
    S = slot_job.shape[0]
    out = np.empty(a.shape[0], dtype=np.int32)
    empty = 0
    for n in range(a.shape[0]):
        k = a[n]
        if k < 0 or k > S:
            return n, 0, out
        out[n] = slot_job[k - 1] if k > 0 else -1
        if k > 0 and out[n] < 0:
            empty += 1
    return -1, empty, out


@njit(cache=True)
def decode(frame: Any, a: np.ndarray) -> tuple[int, np.ndarray, int, int]:  # pragma: no cover
    """An action as its node map (no placement: needs 0 of 0 free).

    Args:
        frame: the ``ActionFrame``; its ``repairs[0]`` (``empty_slot``) is set.
        a: (N,) int64, each node's slot, 1-based; 0 = none.

    Returns:
        (bad, node_map, 0, 0): ``_decode_assign``'s first bad entry (or -1) and (N,) int32
        node map; the map is applied as given, so the engine checks its feasibility.
    """
    bad, empty, node_map = _decode_assign(a, frame.slot_job)
    frame.repairs[0] = empty
    return bad, node_map, 0, 0


@njit(cache=True)
def mask(frame: Any) -> None:  # pragma: no cover - jit
    """``_assign_mask`` on the frame: its ``mask`` from its ``slot_job`` and ``available``.

    Args:
        frame: the ``ActionFrame`` (the state's arrays, current after in-place steps).
    """
    _assign_mask(frame.mask, frame.slot_job, frame.available)


class Assign(ActionCodec):
    """The slot of each node (module docstring)."""

    name = "assign"
    entry = "node"
    repair_keys = ("empty_slot",)
    check_feasible = True
    decode_kernel = decode
    mask_kernel = mask

    @classmethod
    def nvec_of(cls, num_nodes: int, num_slots: int, max_count: int) -> np.ndarray:
        """``[num_slots + 1] * num_nodes``: per node, none or one of the slots.

        Args:
            num_nodes: N, one action entry per node.
            num_slots: S.
            max_count: unused (a node holds one job; no count to cap).

        Returns:
            (N,) int64.
        """
        return np.full(num_nodes, num_slots + 1, dtype=np.int64)

    def noop(self, state, instance, slots) -> np.ndarray:
        """Each node's current slot (``encode`` of the state's node map).

        Returns:
            (N,) int64: 0 for a node without a job (or whose job has no slot), else the
            1-based slot of its job.
        """
        return self.encode(state.node_job, state, instance, slots)

    def encode(self, node_job, state, instance, slots) -> np.ndarray:
        """The action that gives each node the slot of its job in ``node_job``.

        Args:
            node_job: (N,) the job of each node, -1 = none.
            state: unused (the map is the action).
            instance: the episode's instance (its job count).
            slots: the env's ``JobSlots``.

        Returns:
            (N,) int64: 1 + the slot of the node's job, 0 for none or a job without a
            slot (it cannot be named, so its nodes are freed).
        """
        ext = np.zeros(instance.num_jobs + 1, dtype=np.int64)
        present = slots.present
        ext[slots.job[present]] = np.flatnonzero(present) + 1
        return ext[node_job]

    def sample_valid(self, state, instance, slots, rng) -> np.ndarray:
        """Per present slot in random order: 0 nodes or a count in its job's
        [max(min, 1), max] that still fits the idle nodes left, drawn uniformly from those
        choices; the nodes are drawn at random from the idle ones.

        Args:
            state: the state (its ``available`` nodes).
            instance: its instance (the jobs' bounds).
            slots: the env's ``JobSlots``.
            rng: the random generator drawn from.

        Returns:
            (N,) int64: a map with no node given twice, none to a non-idle node, and each
            job 0 or min..max nodes: no repair.
        """
        jobs = instance.jobs
        order = rng.permutation(np.flatnonzero(slots.job >= 0))
        out = np.zeros(self.N, dtype=np.int64)
        pool = rng.permutation(np.flatnonzero(state.available))
        used = 0
        for s in order:
            j = slots.job[s]
            lo, hi = int(jobs.min_nodes[j]), min(int(jobs.max_nodes[j]), pool.size - used)
            choices = [0, *range(max(lo, 1), hi + 1)]
            c = int(rng.choice(choices))
            out[pool[used : used + c]] = s + 1
            used += c
        return out


CODEC = Assign  # (found by its module name, ``mtgym.core.names.ACTION_MODES``)
