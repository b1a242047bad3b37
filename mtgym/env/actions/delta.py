"""``delta``: ``MultiDiscrete([3] * num_slots)``: 0 = shrink (halve; below the minimum ->
0), 1 = keep, 2 = grow (double, from 0 -> the minimum; capped at the maximum and the count
cap). The targets the moves give are repaired and placed as ``mtgym.env.actions.pack`` says.

No-op: all ones. Mask: keep always; shrink a running job; grow one below its cap when enough
nodes are free for it alone (its minimum from 0, else one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mtgym.env.actions.base import ActionCodec
from mtgym.env.actions.counts import slot_counts
from mtgym.env.actions.pack import REPAIR_KEYS, first_above, place_targets

SHRINK, KEEP, GROW = 0, 1, 2


@njit(cache=True)
def _delta_mask(
    mask: np.ndarray,
    slot_job: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    available: np.ndarray,
    n_nodes: np.ndarray,
    max_count: int,
) -> None:  # pragma: no cover - jit
    """``delta`` mask in place: keep always; shrink a running job; grow one below its cap
    when enough nodes are free (its minimum from 0, else one).

    Args:
        mask: (3 S,) int8, written: slot s's shrink, keep and grow at 3 s, 3 s + 1, 3 s + 2.
        slot_job: (S,) the job of each slot, -1 = empty (keep only).
        min_nodes: (J,) each job's minimum: what growing from 0 needs free.
        max_nodes: (J,) each job's maximum.
        available: (N,) bool, the node is idle and lent now.
        n_nodes: (J,) the nodes each job holds; free nodes = idle nodes - their sum.
        max_count: the count cap: a job at min(max, cap) cannot grow.
    """
    n_avail = 0
    for n in range(available.shape[0]):
        if available[n]:
            n_avail += 1
    held = 0
    for j in range(n_nodes.shape[0]):
        held += n_nodes[j]
    free = n_avail - held
    for s in range(slot_job.shape[0]):
        j = slot_job[s]
        mask[3 * s] = 0
        mask[3 * s + 1] = 1
        mask[3 * s + 2] = 0
        if j < 0:
            continue
        n = n_nodes[j]
        need = min_nodes[j] if n == 0 else 1
        mask[3 * s] = 1 if n > 0 else 0
        mask[3 * s + 2] = 1 if n < min(max_nodes[j], max_count) and free >= need else 0


@njit(cache=True)
def _delta_targets(
    a: np.ndarray,
    slot_job: np.ndarray,
    n_nodes: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    max_count: int,
) -> np.ndarray:  # pragma: no cover - jit
    """``delta`` actions as node-count targets per slot: grow (double; from 0 to the
    minimum), shrink (halve; below the minimum -> 0) or keep, capped at min(max, max_count);
    0 for an empty slot ("keep" there is a no-op).

    Args:
        a: (S,) int64 moves, ``SHRINK``, ``KEEP`` or ``GROW`` (anything else keeps).
        slot_job: (S,) the job of each slot, -1 = empty.
        n_nodes: (J,) the nodes each job holds now.
        min_nodes: (J,) each job's minimum.
        max_nodes: (J,) each job's maximum.
        max_count: the count cap.

    Returns:
        (S,) int64 targets, not yet repaired for the shared budget (``place_targets``).
    """
    out = np.zeros(a.shape[0], dtype=np.int64)
    for s in range(a.shape[0]):
        j = slot_job[s]
        if j < 0:
            continue
        n = np.int64(n_nodes[j])
        if a[s] == GROW:
            t = np.int64(min_nodes[j]) if n == 0 else 2 * n
        elif a[s] == SHRINK:
            t = n // 2 if n // 2 >= min_nodes[j] else np.int64(0)
        else:
            t = n
        out[s] = min(t, min(np.int64(max_nodes[j]), np.int64(max_count)))
    return out


@njit(cache=True)
def decode(frame: Any, a: np.ndarray) -> tuple[int, np.ndarray, int, int]:  # pragma: no cover
    """An action (entries 0..2) as the moves' targets, repaired and placed.

    Args:
        frame: the ``ActionFrame``; its ``repairs`` get ``REPAIR_KEYS``' counts.
        a: (S,) int64 moves.

    Returns:
        (bad, node_map, need, free): ``bad`` the first entry outside 0..2 (then an empty
        map and nothing else), else -1 and ``place_targets``' result.
    """
    bad = first_above(a, 2)
    if bad >= 0:
        return bad, np.empty(0, dtype=np.int32), 0, 0
    target = _delta_targets(
        a, frame.slot_job, frame.n_nodes, frame.min_nodes, frame.max_nodes, frame.max_count
    )
    return place_targets(frame, target)


@njit(cache=True)
def mask(frame: Any) -> None:  # pragma: no cover - jit
    """``_delta_mask`` on the frame: its ``mask`` from the slots, the jobs' bounds and
    counts, the idle nodes and the count cap.

    Args:
        frame: the ``ActionFrame`` (the state's arrays, current after in-place steps).
    """
    _delta_mask(
        frame.mask,
        frame.slot_job,
        frame.min_nodes,
        frame.max_nodes,
        frame.available,
        frame.n_nodes,
        frame.max_count,
    )


def _clean_count(c: int, lo: int, hi: int) -> bool:
    """A target count the per-job repairs leave alone: 0, or within the job's lo..hi."""
    return c == 0 or lo <= c <= hi


class Delta(ActionCodec):
    """Shrink, keep or grow each slot's job (module docstring)."""

    name = "delta"
    repair_keys = REPAIR_KEYS
    decode_kernel = decode
    mask_kernel = mask

    @classmethod
    def nvec_of(cls, num_nodes: int, num_slots: int, max_count: int) -> np.ndarray:
        """``[3] * num_slots``: per slot, shrink, keep or grow.

        Args:
            num_nodes: unused.
            num_slots: S, one action entry per slot.
            max_count: unused (it caps the targets, not the space).

        Returns:
            (S,) int64.
        """
        return np.full(num_slots, 3, dtype=np.int64)

    def noop(self, state, instance, slots) -> np.ndarray:
        """``KEEP`` for every slot: (S,) int64 ones."""
        return np.full(self.S, KEEP, dtype=np.int64)

    def encode(self, node_job, state, instance, slots) -> np.ndarray:
        """The direction of each slot's change towards ``node_job``'s counts: one move
        only, so a target more than a doubling or a halving away takes several steps.

        Args:
            node_job: (N,) the job of each node, -1 = none.
            state: the state (each job's current count).
            instance: the episode's instance (its job count).
            slots: the env's ``JobSlots``.

        Returns:
            (S,) int64: ``GROW`` where the count (capped at the count cap) is above the
            current one, ``SHRINK`` where it is below, else ``KEEP``.
        """
        counts = slot_counts(node_job, instance, slots, self.C)
        present = slots.present
        cur = np.zeros(self.S, dtype=np.int64)
        cur[present] = state.n_nodes[slots.job[present]]
        return np.where(counts > cur, GROW, np.where(counts < cur, SHRINK, KEEP))

    def sample_valid(self, state, instance, slots, rng) -> np.ndarray:
        """Each slot's three targets (shrink, keep, grow) as ``_delta_targets`` computes
        them; a choice is kept when its target needs no repair and fits the budget.

        Starts from every present slot at a baseline (keep where the current count is
        clean, else shrink), then, slot by slot in random order, draws one of the moves
        whose target is clean and keeps the total within the idle nodes (none: the
        baseline stays).

        Args:
            state: the state (idle nodes, each job's count).
            instance: its instance (the jobs' bounds).
            slots: the env's ``JobSlots``.
            rng: the random generator drawn from.

        Returns:
            (S,) int64 moves; ``KEEP`` for the empty slots.
        """
        jobs = instance.jobs
        n_avail = int(np.count_nonzero(state.available))
        present = np.flatnonzero(slots.job >= 0)
        order = rng.permutation(present)
        out = np.ones(self.S, dtype=np.int64)
        targets = {
            k: _delta_targets(
                np.full(self.S, k, dtype=np.int64),
                slots.job,
                state.n_nodes,
                jobs.min_nodes,
                jobs.max_nodes,
                self.C,
            )
            for k in (0, 1, 2)
        }
        lo_of = {s: int(jobs.min_nodes[slots.job[s]]) for s in present}
        hi_of = {s: int(jobs.max_nodes[slots.job[s]]) for s in present}
        # start from the cleanest baseline: every slot shrunk to a clean target, else kept
        chosen = {}
        for s in present:
            for k in (0, 1):
                if _clean_count(int(targets[k][s]), lo_of[s], hi_of[s]):
                    chosen[s] = k
            chosen.setdefault(s, 0)
        total = sum(int(targets[chosen[s]][s]) for s in present)
        for s in order:
            base = int(targets[chosen[s]][s])
            ok = [
                k
                for k in (0, 1, 2)
                if _clean_count(int(targets[k][s]), lo_of[s], hi_of[s])
                and total - base + int(targets[k][s]) <= n_avail
            ]
            if ok:
                k = int(rng.choice(ok))
                total += int(targets[k][s]) - base
                chosen[s] = k
        for s in present:
            out[s] = chosen[s]
        return out


CODEC = Delta  # (found by its module name, ``mtgym.core.names.ACTION_MODES``)
