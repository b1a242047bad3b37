"""``shares``: ``MultiDiscrete([LEVELS + 2] * num_slots)``, each slot's job's size as a
level of its *own* range: 0 = keep the current count, 1 = stop (0 nodes), ``1 + k`` for
k = 1..LEVELS = the k-th of LEVELS counts spread over the job's [min, max]
(``level_counts``). The space does not depend on the machine: the same action means the
same thing on 64 nodes as on 4,734, and any job that fits the machine can be started at
its full size (no count cap). The targets are repaired and placed as
``mtgym.env.actions.pack`` says (only ``oversubscribed`` can occur: every level lies in
the job's range).

The grid: a job whose range holds at most LEVELS counts has each count once (exact); a
wider range gets ``min - 1 + max(k, round(R ** ((k - 1) / (LEVELS - 1))))`` with
R = max - min + 1, exact at the small counts and geometric above (spacing at most
R ** (1 / 31) - 1: 14 % of the count for a range of 64, 31 % for 4,734). The first level is
the minimum and the last the maximum.

No-op: all zeros (keep everything). Mask: keep always; stop for a running job; a level for
a present slot when its count is new (not a repeat of the level below it, nor the job's
current count, which keep gives) and at most the idle nodes.

Why this mode (``docs/env.md#the-shares-action-mode``): a per-slot choice keeps the head's
size linear in the slots and the same per-slot weights serve any number of slots
(RLScheduler's shared kernel), the level is relative to the job's own range as Decima's
parallelism limit is relative to its executors, and keep is the zero action (Gavel keeps
an allocation until its shares change), so an untrained policy does not re-size by chance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from mtgym.env.actions.base import ActionCodec
from mtgym.env.actions.budget import OFFSET
from mtgym.env.actions.counts import slot_counts
from mtgym.env.actions.pack import REPAIR_KEYS, idle_count, place_targets

#: counts per job range; the action has two more entries per slot (keep, stop)
LEVELS = 32
KEEP, STOP = 0, 1
CHOICES = LEVELS + 2


@njit(cache=True)
def level_count(lo: int, hi: int, k: int) -> int:  # pragma: no cover - jit
    """The count of level ``k`` (1..LEVELS) on the range ``lo..hi`` (module docstring).

    Args:
        lo: the job's minimum, at least 1.
        hi: the job's maximum, at least ``lo``.
        k: the level, 1..``LEVELS``.

    Returns:
        ``lo + k - 1`` (capped at ``hi``) on a range of at most ``LEVELS`` counts, else the
        geometric grid's count; level 1 is ``lo`` and level ``LEVELS`` is ``hi``.
    """
    span = hi - lo + 1
    if span <= LEVELS:
        return min(lo + k - 1, hi)
    g = int(np.floor(span ** ((k - 1) / (LEVELS - 1)) + 0.5))
    return min(lo - 1 + max(k, g), hi)


@njit(cache=True)
def level_counts(lo: int, hi: int) -> np.ndarray:  # pragma: no cover - jit
    """The LEVELS counts of the range ``lo..hi`` (repeats where the range is short).

    Args:
        lo: the job's minimum, at least 1.
        hi: the job's maximum, at least ``lo``.

    Returns:
        (LEVELS,) int64, non-decreasing: entry k - 1 is ``level_count(lo, hi, k)``, the
        count action ``1 + k`` asks for.
    """
    out = np.empty(LEVELS, dtype=np.int64)
    for k in range(LEVELS):
        out[k] = level_count(lo, hi, k + 1)
    return out


@njit(cache=True)
def mask(frame: Any) -> None:  # pragma: no cover - jit
    """``shares`` mask into ``frame.mask`` (module docstring).

    Slot s's ``CHOICES`` entries start at s * ``CHOICES``: keep, stop, then the levels.
    The levels are scanned upwards and stop at the first count above the idle nodes (the
    grid never decreases).

    Args:
        frame: the ``ActionFrame`` (the state's arrays, current after in-place steps).
    """
    m, slot_job, n_nodes = frame.mask, frame.slot_job, frame.n_nodes
    n_avail = idle_count(frame.available)
    for s in range(slot_job.shape[0]):
        row = s * CHOICES
        m[row + KEEP] = 1
        j = slot_job[s]
        for c in range(1, CHOICES):
            m[row + c] = 0
        if j < 0:
            continue
        cur = n_nodes[j]
        m[row + STOP] = 1 if cur > 0 else 0
        lo, hi = max(frame.min_nodes[j], 1), frame.max_nodes[j]
        prev = -1
        for k in range(1, LEVELS + 1):
            c = level_count(lo, hi, k)
            if c > n_avail:
                break
            if c != prev and c != cur:
                m[row + 1 + k] = 1
            prev = c


@njit(cache=True)
def budget_mask(frame: Any, out: np.ndarray) -> None:  # pragma: no cover - jit
    """``shares``' budget mask (``mtgym.env.actions.budget``) into ``out``: the mask of
    ``mask`` with each legal choice's node delta and, in every keep entry, the budget.

    Args:
        frame: the ``ActionFrame``, its ``mask`` already written by ``mask``.
        out: (S * CHOICES,) float32, written.
    """
    m, slot_job, n_nodes = frame.mask, frame.slot_job, frame.n_nodes
    budget = idle_count(frame.available)
    for s in range(slot_job.shape[0]):
        if slot_job[s] >= 0:
            budget -= n_nodes[slot_job[s]]
    for s in range(slot_job.shape[0]):
        row = s * CHOICES
        for c in range(CHOICES):
            out[row + c] = 0.0
        out[row + KEEP] = OFFSET + budget
        j = slot_job[s]
        if j < 0:
            continue
        cur = n_nodes[j]
        if m[row + STOP]:
            out[row + STOP] = OFFSET - cur
        lo, hi = max(frame.min_nodes[j], 1), frame.max_nodes[j]
        for k in range(1, LEVELS + 1):
            if m[row + 1 + k]:
                out[row + 1 + k] = OFFSET + level_count(lo, hi, k) - cur


@njit(cache=True)
def _targets(frame: Any, a: np.ndarray) -> tuple[int, np.ndarray]:  # pragma: no cover - jit
    """The first entry outside 0..CHOICES-1 (or -1) and each slot's target count.

    Args:
        frame: the ``ActionFrame`` (slots, the jobs' bounds and counts).
        a: (S,) int64, keep, stop or 1 + a level per slot.

    Returns:
        (bad, target): ``bad`` the first entry out of range (then ``target`` is zeros),
        else -1; ``target`` (S,) int64: the current count for keep, 0 for stop, the
        level's count; on an empty slot 0 for keep and 1 for a level, so that
        ``place_targets`` counts it as ``empty_slot``.
    """
    S = frame.slot_job.shape[0]
    target = np.zeros(S, dtype=np.int64)
    for s in range(S):
        if a[s] < 0 or a[s] >= CHOICES:
            return s, target
    for s in range(S):
        j = frame.slot_job[s]
        v = a[s]
        if v == STOP:
            continue
        if j < 0:
            target[s] = 0 if v == KEEP else 1  # a level on an empty slot: repaired (empty_slot)
        elif v == KEEP:
            target[s] = frame.n_nodes[j]
        else:
            target[s] = level_count(max(frame.min_nodes[j], 1), frame.max_nodes[j], v - 1)
    return -1, target


@njit(cache=True)
def decode(frame: Any, a: np.ndarray) -> tuple[int, np.ndarray, int, int]:  # pragma: no cover
    """An action as each slot's count (keep, stop or a level), repaired and placed.

    Args:
        frame: the ``ActionFrame``; its ``repairs`` get ``REPAIR_KEYS``' counts.
        a: (S,) int64, keep, stop or 1 + a level per slot.

    Returns:
        (bad, node_map, need, free): ``bad`` the first entry outside 0..CHOICES-1 (then an
        empty map and nothing else), else -1 and ``place_targets``' result.
    """
    bad, target = _targets(frame, a)
    if bad >= 0:
        return bad, np.empty(0, dtype=np.int32), 0, 0
    return place_targets(frame, target)


class Shares(ActionCodec):
    """Each slot's job's size as a level of its own range, keep or stop (module docstring)."""

    name = "shares"
    repair_keys = REPAIR_KEYS
    decode_kernel = decode
    mask_kernel = mask
    budget_kernel = budget_mask

    @classmethod
    def nvec_of(cls, num_nodes: int, num_slots: int, max_count: int) -> np.ndarray:
        """``[CHOICES] * num_slots``: the same space on every machine.

        Args:
            num_nodes: unused (the levels are relative to each job's range).
            num_slots: S, one action entry per slot.
            max_count: unused (no count cap: any level up to the job's maximum).

        Returns:
            (S,) int64.
        """
        return np.full(num_slots, CHOICES, dtype=np.int64)

    def noop(self, state, instance, slots) -> np.ndarray:
        """``KEEP`` for every slot: (S,) int64 zeros."""
        return np.zeros(self.S, dtype=np.int64)

    def encode(self, node_job, state, instance, slots) -> np.ndarray:
        """The action nearest ``node_job``'s counts that fits the idle nodes: keep where a
        count is unchanged, stop where it is 0, else the level at or below it, then, in
        order of the nodes they would add back, the level above where the idle nodes allow.

        Args:
            node_job: (N,) the job of each node, -1 = none (an expert's allocation).
            state: the state (each job's current count, the idle nodes).
            instance: its instance (the jobs' bounds).
            slots: the env's ``JobSlots``.

        Returns:
            (S,) int64 actions; ``KEEP`` for the empty slots. For a feasible map (each job
            0 or min..max idle nodes) the counts they ask for fit the idle nodes: no
            ``oversubscribed`` repair.
        """
        want = slot_counts(node_job, instance, slots, instance.num_nodes)
        jobs = instance.jobs
        out = np.zeros(self.S, dtype=np.int64)
        got = np.zeros(self.S, dtype=np.int64)
        ups: list[tuple[int, int, int, int]] = []
        for s in np.flatnonzero(slots.present):
            j = int(slots.job[s])
            cur, w = int(state.n_nodes[j]), int(want[s])
            if w == 0:
                out[s] = STOP if cur > 0 else KEEP
                continue
            grid = level_counts(max(int(jobs.min_nodes[j]), 1), int(jobs.max_nodes[j]))
            below = grid[grid <= w]
            c = int(below[-1]) if below.size and w != cur else cur
            out[s], got[s] = _action_of(grid, c, cur), c
            above = grid[grid > c]
            if c < w and above.size:
                ups.append((w - c, int(s), _action_of(grid, int(above[0]), cur), int(above[0])))
        left = int(np.count_nonzero(state.available)) - int(got.sum())
        for _gap, s, a, c in sorted(ups, key=lambda u: (-u[0], u[1])):  # type: ignore[assignment]  # s: int
            if c - got[s] <= left:
                left -= c - int(got[s])
                out[s], got[s] = a, c
        return out

    def sample_valid(self, state, instance, slots, rng) -> np.ndarray:
        """Per present slot in random order: keep, stop or a level whose count still fits
        the idle nodes left (keep and stop always fit).

        The budget starts at the idle nodes minus every present job's current count
        (keeping reserves them); a level is a choice only when its count is new (the
        first level with it, and not the current count, as the mask says).

        Args:
            state: the state (each job's current count, the idle nodes).
            instance: its instance (the jobs' bounds).
            slots: the env's ``JobSlots``.
            rng: the random generator drawn from, uniformly over each slot's choices.

        Returns:
            (S,) int64 actions; ``KEEP`` for the empty slots.
        """
        jobs = instance.jobs
        left = int(np.count_nonzero(state.available))
        out = np.zeros(self.S, dtype=np.int64)
        present = np.flatnonzero(slots.job >= 0)
        for s in present:  # keeping reserves the job's nodes first
            left -= int(state.n_nodes[slots.job[s]])
        for s in rng.permutation(present):
            j = int(slots.job[s])
            cur = int(state.n_nodes[j])
            grid = level_counts(max(int(jobs.min_nodes[j]), 1), int(jobs.max_nodes[j]))
            first = np.ones(LEVELS, dtype=bool)
            first[1:] = grid[1:] != grid[:-1]
            ok = np.flatnonzero(first & (grid != cur) & (grid - cur <= left))
            choices = [KEEP, *([STOP] if cur > 0 else []), *(ok + 2).tolist()]
            a = int(rng.choice(choices))
            out[s] = a
            if a == STOP:
                left += cur
            elif a >= 2:
                left -= int(grid[a - 2]) - cur
        return out


def _action_of(grid: np.ndarray, count: int, current: int) -> int:
    """The action that asks for ``count`` nodes (a count on ``grid``, or ``current``): keep
    for the current count, else the first level with that count (the one the mask allows).

    Args:
        grid: (LEVELS,) the job's ``level_counts``.
        count: the count asked for: ``current`` or one of ``grid``'s.
        current: the job's current count.

    Returns:
        ``KEEP``, or 2 + the index of the first level with ``count``.
    """
    if count == current:
        return KEEP
    return int(np.flatnonzero(grid == count)[0]) + 2


CODEC = Shares  # (found by its module name, ``mtgym.core.names.ACTION_MODES``)
