"""Passive profiling: what an online profiler learns by watching jobs run (MalleTrain's JPA).

Every time a job holds ``n`` nodes for a whole interval, its progress reports reveal its
rate at ``n`` (on that node set). ``PassiveProfiler`` keeps the latest measurement per
(job, node count); nothing else is known in the ``profiled`` information mode. Active probing
(paying a rescale to measure a new size) is a policy's choice, built on top of this.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.sim.state import ClusterState


class PassiveProfiler:
    """Measured rates per (job, node count); NaN = never observed.

    Args:
        instance: the episode's instance (its job count sizes the tables).
        max_count: the largest node count recorded (default: the largest ``max_nodes``
            of any job); measurements at larger counts are ignored.

    Attributes:
        max_count: the largest node count recorded.
        rate: (J, max_count + 1) float64 latest measured samples/s per (job, node count);
            column 0 is 0 (no nodes, no progress), NaN = never observed.
        samples: (J, max_count + 1) int32 number of intervals measured per entry.
    """

    def __init__(self, instance: Instance, max_count: int | None = None) -> None:
        cap = int(instance.jobs.max_nodes.max()) if instance.num_jobs else 0
        self.max_count = cap if max_count is None else max_count
        self.rate = np.full((instance.num_jobs, self.max_count + 1), np.nan)
        self.rate[:, 0] = 0.0
        self.samples = np.zeros((instance.num_jobs, self.max_count + 1), dtype=np.int32)

    def observe(
        self,
        t0: float,
        progress0: np.ndarray,
        n_nodes0: np.ndarray,
        debt0: np.ndarray,
        after: ClusterState,
    ) -> None:
        """Record rates from progress reports over [t0, after.time].

        A job counts only if it held the same number of nodes at both ends, was not pausing
        or redoing lost work, and kept running: its rate is then exactly
        (progress - progress0) / dt, the throughput its reports show (MalleTrain skips the
        reports around a resize the same way).

        Args:
            t0: start of the interval, seconds.
            progress0: (J,) the jobs' progress (samples) at ``t0``.
            n_nodes0: (J,) their node counts at ``t0``.
            debt0: (J,) their debts (samples to redo) at ``t0``.
            after: the state at the end of the interval; nothing is recorded when its time
                is not after ``t0``.
        """
        dt = after.time - t0
        if dt <= 0:
            return
        _observe(
            (self.rate, self.samples),
            self.max_count,
            t0,
            dt,
            (progress0, n_nodes0, debt0),
            (after.n_nodes, after.stall_until, after.debt, after.progress),
        )

    def curve_at(self, jobs: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimates at ``counts`` for ``jobs``, interpolated between measured counts.

        Never extrapolated: a count above the job's largest measured count, or above
        ``max_count``, is unknown (value 0); below it the curve runs linearly between the
        measured counts and (0 nodes, 0 samples/s). A job with no measurement besides 0
        nodes is unknown everywhere.

        Args:
            jobs: (M,) job indices.
            counts: (K,) node counts.

        Returns:
            (values, known): (M, K) float64 samples/s and (M, K) bool, True where the
            value is interpolated from measurements.
        """
        out = np.zeros((jobs.size, counts.size))
        known = np.zeros((jobs.size, counts.size), dtype=bool)
        grid = np.arange(self.max_count + 1)
        c = np.minimum(counts, self.max_count)
        for i, j in enumerate(jobs):
            row = self.rate[j]
            ok = ~np.isnan(row)
            if ok.sum() < 2:  # only the (0, 0) point
                continue
            xs, ys = grid[ok], row[ok]
            inside = (c >= xs[0]) & (c <= xs[-1]) & (counts <= self.max_count)
            out[i, inside] = np.interp(c[inside], xs, ys)
            known[i, inside] = True
        return out, known


@njit(cache=True)
def _observe(
    tables: tuple, max_count: int, t0: float, dt: float, before: tuple, after: tuple
) -> None:  # pragma: no cover - jit
    """``PassiveProfiler.observe``'s update, in place, one job at a time: ``tables`` the
    profiler's (rate, samples); ``before`` the jobs' (progress, node counts, debts) at
    ``t0``; ``after`` their (node counts, pauses, debts, progress) ``dt`` later.
    """
    rate, samples = tables
    progress0, n_nodes0, debt0 = before
    n_nodes, stall_until, debt, progress = after
    for j in range(n_nodes.shape[0]):
        n = n_nodes[j]
        if (
            n > 0
            and n == n_nodes0[j]
            and stall_until[j] <= t0
            and debt0[j] == 0
            and debt[j] == 0
            and n <= max_count
        ):
            rate[j, n] = (progress[j] - progress0[j]) / dt
            samples[j, n] += 1
