"""The LP (``Layout``): bins, per-job segment variables, the supply and work rows, in a
sparse form (``LP``) whose weak-duality certificate bounds its optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtgym.core.instance import Instance
from mtgym.metrics import reference_rate

if TYPE_CHECKING:
    pass
from mtgym.hindsight.envelope import envelope
from mtgym.hindsight.supply import StepSupply, candidate_nodes, minimum_work


class Sparse:
    """A sparse matrix in compressed columns (what HiGHS takes), built from (row, col, value)
    triplets; duplicates are summed.

    Args:
        rows: (E,) row index of each entry.
        cols: (E,) column index of each entry.
        vals: (E,) values.
        shape: (rows, columns).

    Attributes:
        indices: (nnz,) int64 row of each stored entry, sorted by (column, row).
        cols: (nnz,) int64 column of each stored entry (for ``rmatvec`` and PuLP).
        data: (nnz,) float64 values.
        indptr: (columns + 1,) column c's entries are ``indptr[c]:indptr[c + 1]``.
    """

    def __init__(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple) -> None:
        self.shape = (int(shape[0]), int(shape[1]))
        order = np.lexsort((rows, cols))
        r, c, v = rows[order], cols[order], vals[order]
        if r.size:  # sum duplicates
            new = np.concatenate(([True], (np.diff(r) != 0) | (np.diff(c) != 0)))
            idx = np.cumsum(new) - 1
            v = np.bincount(idx, weights=v)
            r, c = r[new], c[new]
        self.indices = r.astype(np.int64)
        self.cols = c.astype(np.int64)
        self.data = v.astype(np.float64)
        counts = np.bincount(self.cols, minlength=self.shape[1])
        self.indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.data.size)

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """``A' y``: (columns,) for ``y`` of shape (rows,)."""
        return np.bincount(self.cols, weights=self.data * y[self.indices], minlength=self.shape[1])


@dataclass
class LP:
    """``max c.v`` s.t. ``A v <= b``, ``0 <= v <= ub``: every row ``<=`` and every variable
    boxed, so any ``y >= 0`` certifies a bound (``certificate``). Built by ``Layout``.

    Attributes:
        c: (V,) objective coefficients.
        A: The (R, V) constraint matrix.
        b: (R,) right-hand sides.
        ub: (V,) variable upper bounds (the lower bounds are 0).
        bins: Time bins of the layout it came from.
    """

    c: np.ndarray
    A: Sparse
    b: np.ndarray
    ub: np.ndarray
    bins: int

    @property
    def nnz(self) -> int:
        """Nonzeros of A."""
        return int(self.A.nnz)

    def certificate(self, y: np.ndarray) -> float:
        """The bound ``b.y + sum ub (c - A'y)+`` of any ``y >= 0`` (weak duality).

        ``y`` is sanitised first: NaN and +inf become 0 and negative entries are clipped
        to 0, so whatever a solver returns gives a valid bound (a poor ``y``, a loose one).

        Args:
            y: (R,) row multipliers.
        """
        y = np.maximum(np.nan_to_num(np.asarray(y, np.float64), nan=0.0, posinf=0.0), 0.0)
        red = self.c - self.A.rmatvec(y)
        return float(self.b @ y + self.ub @ np.maximum(red, 0.0))


class _Problem:
    """One episode's data for the LPs: jobs, envelope, supply, candidate types.

    Args:
        instance: The episode.
        end: L, the run's end (``run_end``); jobs submitted at or after it are left out.

    Attributes:
        t0: The episode's start, seconds.
        work: (J,) each job's work / reference rate, best-node-seconds.
        min_work: (J,) its least work (``minimum_work``), in the same unit.
        submit: (J,) submission times, at least ``t0``.
        release: (J,) the earliest first progress: submission plus the start-up pause.
        jobs: Indices of the jobs submitted before ``end`` (the others never run).
        types: The candidate nodes' GPU types, sorted.
        curves: The rate envelope (``envelope``) on the candidates.
        supply: The idle nodes as a step function (``StepSupply``).
        T: The number of candidate types, at least 1.
    """

    def __init__(self, instance: Instance, end: float) -> None:
        self.instance = instance
        self.t0 = float(instance.t_start)
        self.end = end
        jobs = instance.jobs
        ref = reference_rate(instance)
        self.work = jobs.work / ref
        self.min_work = minimum_work(instance) / ref
        self.submit = np.maximum(jobs.submit_s.astype(np.float64), self.t0)
        # a job's first progress comes after its start-up pause, at the earliest
        self.release = self.submit + np.maximum(jobs.startup_s.astype(np.float64), 0.0)
        self.jobs = np.flatnonzero(self.submit < end)  # the others never run
        cand = candidate_nodes(instance, self.t0, end)
        self.types = np.unique(instance.cluster.gpu_type[cand]).astype(np.int64)
        self.curves = envelope(instance, cand)
        self.supply = StepSupply(instance, self.t0, end, self.types)
        self.T = max(int(self.types.size), 1)

    def points(self, end: float) -> np.ndarray:
        """Natural bin boundaries in (t0, end): supply changes and arrivals.

        Arrivals are the jobs' release times (submission plus start-up), sorted, unique.
        """
        g = self.supply.grid
        pts = np.concatenate((g, self.release[self.jobs]))
        return np.unique(pts[(pts > self.t0) & (pts < end)])

    def boundaries(self, end: float, bins: int) -> np.ndarray:
        """At most ``bins`` bins over [t0, end]: all natural boundaries when they fit, else
        about half placed uniformly in time and half uniformly over the natural points.

        The time-uniform ones are snapped to the next natural point, so every boundary is
        one (duplicates merged: possibly fewer bins).

        Args:
            end: The last boundary.
            bins: The most bins.

        Returns:
            The boundaries, increasing, ``t0`` first and ``end`` last.
        """
        pts = self.points(end)
        if pts.size <= bins - 1:
            inner = pts
        else:
            k = max(bins - 1, 0)
            by_time = np.linspace(self.t0, end, k // 2 + 2)[1:-1]
            snap = pts[np.clip(np.searchsorted(pts, by_time), 0, pts.size - 1)]
            by_count = pts[np.linspace(0, pts.size - 1, k - k // 2 + 2).astype(np.int64)[1:-1]]
            inner = np.unique(np.concatenate((snap, by_count)))
        return np.concatenate(([self.t0], inner, [end]))

    def layout(self, end: float, bins: int, floor: bool = False) -> Layout:
        """The LP of maxwork(end) on at most ``bins`` bins, or with ``floor`` the LP of
        the least work done by ``end`` (``Layout``).
        """
        return Layout(self, self.boundaries(end, bins), floor)


class Layout:
    """One LP's structure on the bins [B[k], B[k+1]], and its data for any end ``cut`` in
    (t0, B[-1]] (``vectors``): the bins after the cut are emptied, the one holding it is
    cut there, so the search for the earliest end re-solves one model with new bounds.

    Variables, per active (job, bin) pair p (the bin's part after the job's arrival, with
    D its time with an idle node and U the integral of min(max_nodes, idle nodes) there):
    ``delta[p, s]``, node-seconds on segment s (slope a_s, length len_s) of the job's
    majorant, at most len_s x D. Rows (all ``<=``), for one GPU type::

        pair  sum_s delta[p, s]            <= U[p]
        bin   sum_p,s delta[p, s]          <= C[k]  (idle node-seconds of bin k)
        job   sum_p,s a_s delta[p, s]      <= W[j]  (work / reference rate)
        max   sum_p,s a_s delta[p, s]

    With several types, ``delta[t, p, s]`` is the part on type t, worth ``kappa_jt a_s``
    (at most U_t, the integral of min(max_nodes, idle nodes of type t)); the segment's
    length is shared by the types (``sum_t delta[t, p, s] <= len_s D``), the bins are per
    type (``C[k, t]``), and the job's row and the objective weigh each part by kappa.

    With ``floor`` (the least-work LP), one more variable per job, z_j <= its least work
    and <= its weighted deltas, and the objective is sum z_j instead.

    Args:
        problem: The episode's data.
        B: (K + 1,) the bin boundaries (``_Problem.boundaries``).
        floor: Build the least-work LP.

    Attributes:
        K: The number of bins.
        jj, kk, a0: Per active pair: the job, the bin, and the start of the bin's part
            after the job's release; pairs with no idle node-time are dropped.
        P: The number of pairs.
        ps, si: Per (pair, segment) row i: its pair and its index into the curves'
            segments; S of them.
        c: (V,) the objective.
        A: The constraint matrix (the bounds depend on the cut: ``vectors``).
    """

    def __init__(self, problem: _Problem, B: np.ndarray, floor: bool = False) -> None:
        self.problem = problem
        self.B = B
        self.floor = floor
        self.K = K = B.size - 1
        cv = problem.curves
        T = problem.T
        jobs = problem.jobs
        jj, kk = np.meshgrid(jobs, np.arange(K), indexing="ij")
        jj, kk = jj.ravel(), kk.ravel()
        a0 = np.maximum(B[kk], problem.release[jj])
        act = (B[kk + 1] > a0) & (cv.m[jj] > 0)
        jj, kk, a0 = jj[act], kk[act], a0[act]
        D = problem.supply.integral(a0, B[kk + 1], cap=1.0)
        keep = D > 0
        self.jj, self.kk, self.a0 = jj[keep], kk[keep], a0[keep]
        jj, kk = self.jj, self.kk
        P = self.P = jj.size
        cnt = np.diff(cv.seg_start)[jj]
        ps = np.repeat(np.arange(P), cnt)
        S = self.S = ps.size
        si = np.repeat(cv.seg_start[jj], cnt) + (
            np.arange(S) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        )
        self.ps, self.si = ps, si
        slope = cv.seg_a[si]
        jpos = np.searchsorted(jobs, jj)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []

        def add(r: np.ndarray, c: np.ndarray, v: float | np.ndarray) -> None:
            rows.append(r)
            cols.append(c)
            vals.append(np.broadcast_to(np.asarray(v, np.float64), r.shape))

        idelta = np.arange(S)
        if T == 1:
            nvar = S
            c = slope.copy()
            add(ps, idelta, 1.0)  # pair
            add(P + kk[ps], idelta, 1.0)  # bin
            add(P + K + jpos[ps], idelta, slope)  # job
            nrow = P + K + jobs.size
        else:
            # delta[t, i]: segment row i's node-seconds on type t (type-major columns)
            nvar = T * S
            c = np.zeros(nvar)
            for t in range(T):
                col = t * S + idelta
                kap = cv.kappa[jj[ps], t]
                add(idelta, col, 1.0)  # segment: sum_t delta[t, i] <= len D
                add(S + ps, col, 1.0)  # pair: sum <= U
                add(S + P + t * K + kk[ps], col, 1.0)  # bin, type
                add(S + P + T * K + jpos[ps], col, kap * slope)  # job
                c[col] = kap * slope
            nrow = S + P + T * K + jobs.size
        if floor:  # max sum_j z_j, z_j <= the job's work by the end, z_j <= its least work
            iz = nvar + np.arange(jobs.size)
            value = c.copy()
            add(nrow + np.arange(jobs.size), iz, 1.0)
            for t in range(T):
                nz = np.flatnonzero(value[t * S : (t + 1) * S]) + t * S
                add(nrow + jpos[ps[nz - t * S]], nz, -value[nz])
            nrow += jobs.size
            nvar += jobs.size
            c = np.zeros(nvar)
            c[iz] = 1.0
        self.c = c
        self.A = Sparse(
            np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), (nrow, nvar)
        )

    @property
    def nnz(self) -> int:
        """Nonzeros of the constraint matrix."""
        return int(self.A.nnz)

    def vectors(self, cut: float | None = None) -> LP:
        """The LP of maxwork(cut) (default: the layout's end) on this structure.

        Only bounds change with ``cut`` (U, C, D and the segment bounds are integrals up
        to it), so a session can re-solve from its basis.

        Args:
            cut: The end time, in (t0, B[-1]]; None: B[-1].
        """
        p, cv, T, K = self.problem, self.problem.curves, self.problem.T, self.K
        cut = float(self.B[-1]) if cut is None else float(cut)
        B = np.minimum(self.B, cut)
        jj, kk = self.jj, self.kk
        a0 = np.minimum(self.a0, cut)
        a1 = B[kk + 1]
        sup = p.supply
        D = sup.integral(a0, a1, cap=1.0)
        U = np.zeros(self.P)
        Ut = np.zeros((T, self.P))
        m = cv.m[jj]
        for mv in np.unique(m):
            sel = m == mv
            U[sel] = sup.integral(a0[sel], a1[sel], cap=float(mv))
            if T > 1:
                for t in range(T):
                    Ut[t, sel] = sup.integral(a0[sel], a1[sel], cap=float(mv), t=t)
        work = p.work[p.jobs]
        seg_ub = cv.seg_len[self.si] * D[self.ps]
        if T == 1:
            ub = seg_ub
            b = np.concatenate((U, sup.integral(B[:-1], B[1:]), work))
        else:
            ub = np.minimum(np.tile(seg_ub, T), Ut[:, self.ps].ravel())
            cap = [sup.integral(B[:-1], B[1:], t=t) for t in range(T)]
            b = np.concatenate((seg_ub, U, *cap, work))
        if self.floor:
            ub = np.concatenate((ub, p.min_work[p.jobs]))
            b = np.concatenate((b, np.zeros(p.jobs.size)))
        return LP(self.c, self.A, b, ub, K)
