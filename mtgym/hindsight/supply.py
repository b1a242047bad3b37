"""The supply as a step function of idle nodes per GPU type (``StepSupply``), the nodes a
job could ever run on (``candidate_nodes``) and each job's least work (``minimum_work``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from mtgym.core.instance import Instance

if TYPE_CHECKING:
    pass


class StepSupply:
    """Idle nodes per candidate GPU type on [t0, end), as a step function with exact
    integrals of ``min(cap, idle nodes)`` over any interval.

    Args:
        instance: The episode (its idle windows, clipped to [t0, end)).
        t0: Start of the span, seconds.
        end: End of the span, seconds.
        types: The candidate GPU types, sorted (``_Problem.types``); a window's node
            type is looked up among them.

    Attributes:
        grid: (F,) the times where the idle count changes, t0 and end included.
        by_type: (T', F - 1) windows of each type open on ``[grid[i], grid[i + 1])``.
        total: (F - 1,) the same summed over types.
    """

    def __init__(self, instance: Instance, t0: float, end: float, types: np.ndarray) -> None:
        s = instance.supply
        lo = np.maximum(s.start_s, t0)
        hi = np.minimum(s.end_s, end)
        live = hi > lo
        lo, hi, node = lo[live], hi[live], s.node[live]
        self.grid = np.unique(np.concatenate(([t0, end], lo, hi)))
        wtype = np.searchsorted(types, instance.cluster.gpu_type[node])
        F = self.grid.size
        counts = np.zeros((types.size, F))
        i0 = np.searchsorted(self.grid, lo)
        i1 = np.searchsorted(self.grid, hi)
        for t in range(types.size):
            sel = wtype == t
            np.add.at(counts[t], i0[sel], 1.0)
            np.add.at(counts[t], i1[sel], -1.0)
        # counts[t, i]: windows of type t open on [grid[i], grid[i+1])
        self.by_type = np.cumsum(counts, axis=1)[:, :-1]
        self.total = self.by_type.sum(axis=0)
        self._cum: dict[tuple[int, float], np.ndarray] = {}

    def _rows(self, t: int) -> np.ndarray:
        """The idle counts per grid step of type ``t`` (index into the types), or all (t < 0)."""
        return self.total if t < 0 else self.by_type[t]

    def integral(
        self, a: np.ndarray, b: np.ndarray, cap: float = math.inf, t: int = -1
    ) -> np.ndarray:
        """Integral of ``min(cap, idle nodes)`` (of type t; all types when t < 0) over
        [a, b] (arrays; a <= b within the grid).

        The cumulative integral of each (type, cap) pair is computed once and cached, so
        every further call is two binary searches per interval.

        Args:
            a: Interval starts, seconds.
            b: Interval ends, seconds (same shape; a pair with b < a gives 0).
            cap: Nodes counted at most (a job's ``max_nodes``; 1: time with an idle node).
            t: The type's index, or -1 for every type.

        Returns:
            Node-seconds, the shape of ``a``.
        """
        key = (t, cap)
        cum = self._cum.get(key)
        vals = np.minimum(self._rows(t), cap)
        if cum is None:
            cum = np.concatenate(([0.0], np.cumsum(vals * np.diff(self.grid))))
            self._cum[key] = cum

        def at(x: np.ndarray) -> np.ndarray:
            i = np.clip(np.searchsorted(self.grid, x, side="right") - 1, 0, vals.size - 1)
            return cum[i] + vals[i] * (x - self.grid[i])

        return np.maximum(at(np.asarray(b, np.float64)) - at(np.asarray(a, np.float64)), 0.0)


def candidate_nodes(instance: Instance, t0: float, end: float) -> np.ndarray:
    """Nodes with an idle window that overlaps [t0, end): the only ones a job can use.

    Returns:
        The node indices, sorted, int64.
    """
    s = instance.supply
    live = np.minimum(s.end_s, end) > np.maximum(s.start_s, t0)
    return np.unique(s.node[live]).astype(np.int64)


def minimum_work(instance: Instance) -> np.ndarray:
    """(J,) the least work (samples) a job has done when it finishes: all of it, unless a
    campaign may stop it at a rung (then its first rung's share). The best-quality trials of
    a campaign are never stopped (``mtgym.sim.engine._milestones`` keeps rank 0).

    A rung of NaN (no rung) counts as the whole work; a rung above 1 as 1. Every trial
    below its campaign's best quality may be stopped, so all of them get the reduced
    figure: a lower bound of the work the run must do.

    Args:
        instance: The episode.
    """
    jobs = instance.jobs
    out = jobs.work.astype(np.float64).copy()
    if jobs.rungs.shape[1] == 0:
        return out
    first = np.where(np.isnan(jobs.rungs[:, 0]), 1.0, np.minimum(jobs.rungs[:, 0], 1.0))
    for c in np.unique(jobs.campaign[jobs.campaign >= 0]):
        members = jobs.campaign == c
        best = jobs.quality[members].max()
        stoppable = members & (jobs.quality < best)
        out[stoppable] = jobs.work[stoppable] * first[stoppable]
    return out
