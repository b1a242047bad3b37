"""A hindsight upper bound of the headline, per episode: no policy, online or not, beats it.

The headline (``mtgym.metrics``, ``docs/metrics.md``) is ``normalized_throughput``: the sum
over jobs of samples / reference rate (best-node-seconds), divided by the run's duration,
from ``t_start`` to the moment the last job finishes, else to the run's end L (the horizon,
or ``until`` for a prefix run: ``play``'s limit). ``hindsight_bound`` knows the whole episode
in advance (every idle window, every arrival, each job's true curve, variability and work)
and bounds that number with linear programmes. The proof is in ``docs/metrics.md``
("Hindsight bound"); in short:

**Rate envelope** (``envelope``). A job on a node set S of n nodes runs at ``formula(n,
slow, level)`` (``mtgym.model.throughput``), where ``slow``, the largest ``sf / type_rate``
over S, is at least the n-th smallest over the nodes ever idle in the run, and S's spread is
a level one of whose groups holds n of those nodes. Both forms of the formula decrease in
``slow``, so ``h_j(n)``, the best rate over those levels at that slowness over the reference
rate, bounds the job's normalised rate on any n nodes; n is 0 or in min..max. Its concave
majorant from (0, 0), ``g_j(n) = sum_s a_s fill_s(n)`` (segments of slope a_s and length
len_s), bounds it too. A node of GPU type t in S also caps the rate at ``kappa_jt`` (<= 1)
times ``h_j(n)``.

**The LP** (``Layout``). ``[t_start, E]`` is cut into bins. For job j and bin k,
``delta_jks`` = the integral of ``fill_s(n_j(t))`` over the bin after the job's release
(arrival plus its first start-up pause) is at most ``len_s`` x the time with an idle node;
their sum over s is at most the integral of ``min(max_nodes, idle nodes)``; over jobs, at
most the bin's idle node-seconds (per type). ``sum a_s delta`` bounds the job's normalised
work there, and its own work caps it. Rescale and pre-emption costs are relaxed. Every run
maps to a feasible point (its jobs' deltas scaled down to their work), so the optimum
``maxwork(E)`` bounds any run's normalised samples by E, for any bins: bins only trade
tightness for size.

**The duration.** A run that does not finish its workload ends at L: headline <=
maxwork(L) / (L - t_start). A run that finishes at E < L has seen every arrival and done
each job's least work (``minimum_work``: all of it, or a campaign's first rung), so the
least-work LP (each job's work counted up to its least work) reaches the total least work
by E. The search on E finds E_min, the latest end it proves too early: headline <=
min(total work, maxwork(L)) / (E_min - t_start). The bound is the larger of the forms
that can apply.

**Certified.** The LPs are solved with HiGHS (``highspy``, the library ``pulp.HiGHS``
drives; through PuLP with CBC when highspy is missing). Every LP value used is a weak-duality
bound computed here from the solver's row duals (any y >= 0 bounds a maximisation with
``<=`` rows and boxed variables: ``b.y + sum ub (c - A'y)+``; ``LP.certificate``), so
solver tolerances, a time-out or a failure make the bound looser, never wrong.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtgym.core.errors import MtgymError
from mtgym.core.instance import Instance
from mtgym.metrics import reference_rate
from mtgym.sim.kernel import throughput_model

if TYPE_CHECKING:
    from mtgym.core.instance import Jobs
    from mtgym.model.throughput import ThroughputModel

#: Default size of the LP, about this many nonzeros (bins are chosen to fit it): with one GPU
#: type (``summit-replay-2d``: 11 bins, 1-3 s per solve) and with several, whose LP is slower
#: per nonzero (``default``: 29 bins, 0.1-0.3 s per solve). Finer bins tighten the bound a
#: little (``default``: 1 % from 14 to 29 bins) at a higher cost.
DEFAULT_NNZ = 250_000
DEFAULT_NNZ_TYPES = 24_000
#: Bounds on the number of bins.
MIN_BINS, MAX_BINS = 8, 96
#: Supporting lines kept per job (an outer approximation of the hull: still a bound).
MAX_LINES = 12
#: Lines are added until the outer approximation is within this share of the hull's top.
LINE_TOL = 2e-4
#: Relative gap (of E - t_start) at which the search for the earliest end stops.
END_TOL = 1e-3
#: LPs above this many nonzeros are solved by interior point (no crossover), the others by
#: simplex (whose basis warm-starts the search's re-solves).
IPM_NNZ = 100_000


class HindsightError(MtgymError):
    """``hindsight_bound(strict=True)`` could not prove its LPs optimal (time or solver)."""


@dataclass(frozen=True)
class HindsightBound:
    """The hindsight bound of one episode (``hindsight_bound``).

    ``value`` bounds the headline, ``normalized_throughput``, in best-node equivalents. It
    is always a valid bound: a time-out or a solver failure makes it looser (``status``),
    never wrong.

    Attributes:
        value: The headline bound (best-node equivalents); 0 when the run cannot step.
        form: Which form gave it: ``"horizon"`` (a run that ends at L) or
            ``"makespan"`` (a run that finishes its workload by E_min or later).
        work_bound: maxwork(L), capped at ``total_work``: the normalised samples
            (best-node-seconds) any run can reach by L.
        total_work: Sum of the jobs' work / reference rate, over the jobs submitted
            before L.
        horizon_s: L - t_start: the duration of a run that does not finish, seconds.
        makespan_lb_s: A lower bound of E - t_start for a run that finishes, seconds;
            None when no run can finish before L (or the search was not needed).
        bins: Time bins of the maxwork(L) LP.
        variables: Its columns.
        rows: Its rows.
        nonzeros: Its constraint matrix's nonzeros.
        solves: LPs solved: maxwork(L), then the least-work LPs of the search.
        status: ``"optimal"``, ``"time-limit"`` (a looser certified bound) or
            ``"failed: ..."`` (the first solver failure).
        solver: The solver that ran last: ``"highs"``, or ``"cbc"`` (asked for, or the
            fallback when highspy is missing).
        wall_s: Wall time of the whole computation, seconds.
    """

    value: float
    form: str
    work_bound: float
    total_work: float
    horizon_s: float
    makespan_lb_s: float | None
    bins: int
    variables: int
    rows: int
    nonzeros: int
    solves: int
    status: str
    solver: str
    wall_s: float

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Plain dict (JSON-friendly)."""
        return asdict(self)


# ---------------------------------------------------------------------------------------
# The rate envelope
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Curves:
    """Per job: the envelope's concave majorant as segments, and the per-type factors.

    Job j's majorant ``g_j`` rises from (0, 0) with slope ``seg_a[s]`` over ``seg_len[s]``
    nodes for s in ``seg_start[j]:seg_start[j+1]`` (slopes decreasing and positive: the
    hull's segments, or the polygon of a subset of its supporting lines, cut where its
    slope stops being positive).

    Attributes:
        seg_a: (S,) segment slopes, normalised rate per node, job by job.
        seg_len: (S,) segment lengths, nodes.
        seg_start: (J + 1,) job j's segments are ``seg_start[j]:seg_start[j + 1]``; a job
            that cannot run has none.
        kappa: (J, T') each job's factor per candidate GPU type (T' = the candidates'
            distinct types, sorted), in (0, 1]; all 1 with one type.
        pi: (J,) the first slope: the largest normalised rate per node (0: cannot run).
        m: (J,) the most nodes a job can use: its ``max_nodes`` capped at the number of
            candidates; 0 when fewer candidates than its ``min_nodes`` exist.
    """

    seg_a: np.ndarray
    seg_len: np.ndarray
    seg_start: np.ndarray
    kappa: np.ndarray
    pi: np.ndarray
    m: np.ndarray

    def top(self) -> np.ndarray:
        """(J,) each job's largest normalised rate under the majorant.

        The sum of slope x length of its segments: the majorant's value at its last knot.
        """
        J = self.seg_start.size - 1
        out = np.zeros(J)
        np.add.at(out, np.repeat(np.arange(J), np.diff(self.seg_start)), self.seg_a * self.seg_len)
        return out


def upper_hull(n: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the upper concave hull of the points (n, h), n increasing.

    A monotone-chain scan, O(points); collinear middle points are dropped.

    Args:
        n: (P,) abscissae, strictly increasing (node counts, 0 first).
        h: (P,) values at them.

    Returns:
        The hull's vertices (n, h) as float64, the first and last point included.
    """
    keep: list[int] = []
    for i in range(n.size):
        while len(keep) >= 2:
            a, b = keep[-2], keep[-1]
            # b is below (or on) the chord a -> i: drop it
            if (h[b] - h[a]) * (n[i] - n[a]) <= (h[i] - h[a]) * (n[b] - n[a]):
                keep.pop()
            else:
                break
        keep.append(i)
    idx = np.asarray(keep)
    return n[idx].astype(np.float64), h[idx].astype(np.float64)


def majorant(vn: np.ndarray, vh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments (slopes, lengths) of a concave majorant of the hull with vertices (vn, vh)
    from (0, 0): the hull itself when it has at most ``MAX_LINES`` segments, else the
    minimum of a greedy subset of its supporting lines (within ``LINE_TOL`` of the hull's
    top at integer n). Only positive slopes are kept: fewer nodes do as well.

    Args:
        vn: (V,) the hull's vertex abscissae, increasing (``upper_hull``), from 0.
        vh: (V,) its values there.

    Returns:
        (slopes, lengths) of the segments, slopes decreasing; both empty when the hull
        has fewer than two vertices.
    """
    if vn.size < 2:
        return np.zeros(0), np.zeros(0)
    a = np.diff(vh) / np.diff(vn)
    b = vh[:-1] - a * vn[:-1]
    if a.size > MAX_LINES:
        grid = np.arange(0.0, vn[-1] + 1.0)
        hull = np.interp(grid, vn, vh)
        seg = np.clip(np.searchsorted(vn, grid, side="right") - 1, 0, a.size - 1)
        chosen = {0, a.size - 1}
        tol = LINE_TOL * max(float(vh.max()), 1e-300)
        while len(chosen) < MAX_LINES:
            c = np.fromiter(chosen, dtype=np.int64)
            outer = np.min(a[c][:, None] * grid[None, :] + b[c][:, None], axis=0)
            err = outer - hull
            i = int(np.argmax(err))
            if err[i] <= tol:
                break
            chosen.add(int(seg[i]))
        c = np.sort(np.fromiter(chosen, dtype=np.int64))
        a, b = a[c], b[c]
        # the polygon's breakpoints: where consecutive lines cross
        cross = (b[1:] - b[:-1]) / (a[:-1] - a[1:])
        knots = np.concatenate(([0.0], cross, [vn[-1]]))
    else:
        knots = vn
    length = np.diff(knots)
    pos = (a > 0) & (length > 0)
    return a[pos], length[pos]


def envelope(instance: Instance, candidates: np.ndarray) -> Curves:
    """The rate envelope of every job on the nodes ``candidates`` (those ever idle).

    ``h_j(n)``: the rate on n nodes at the n-th smallest slowness ``sf / type_rate`` among
    the candidates, at the best spread level that a group of the candidates can hold for n
    nodes, divided by the reference rate (``mtgym.metrics.reference_rate``).

    Args:
        instance: The episode.
        candidates: Node indices, those with an idle window in the run
            (``candidate_nodes``).

    Returns:
        Each job's concave majorant and per-type factors.
    """
    jobs = instance.jobs
    ref = reference_rate(instance)
    J = jobs.num_jobs
    cand = _Candidates.of(instance, np.asarray(candidates, dtype=np.int64))
    m = np.minimum(jobs.max_nodes.astype(np.int64), cand.size)
    seg_a: list[np.ndarray] = []
    seg_len: list[np.ndarray] = []
    kappa = np.ones((J, cand.types.size))
    pi = np.zeros(J)
    cache: dict[tuple, np.ndarray] = {}
    for j in range(J):
        mj = int(m[j])
        lo = max(int(jobs.min_nodes[j]), 1)  # a job runs on 0 or min..max nodes
        if mj < lo:
            m[j] = 0  # never enough candidates: it cannot run
            seg_a.append(np.zeros(0))
            seg_len.append(np.zeros(0))
            continue
        n = np.arange(lo, mj + 1)
        slow_n = cand.sorted_slowness(jobs, j, cache)[n - 1]  # the n-th smallest slowness
        rate = cand.best_rate(j, n, slow_n)
        h = np.concatenate(([0.0], rate / ref[j]))
        vn, vh = upper_hull(np.concatenate(([0], n)), h)
        a, length = majorant(vn, vh)
        seg_a.append(a)
        seg_len.append(length)
        pi[j] = a[0] if a.size else 0.0
        if cand.types.size > 1:
            kappa[j] = cand.type_factors(jobs, j, n, slow_n, rate)
    starts = np.concatenate(([0], np.cumsum([a.size for a in seg_a]))).astype(np.int64)
    return Curves(
        np.concatenate(seg_a) if seg_a else np.zeros(0),
        np.concatenate(seg_len) if seg_len else np.zeros(0),
        starts,
        kappa,
        pi,
        m,
    )


@dataclass(frozen=True)
class _Candidates:
    """What ``envelope`` needs of the candidate nodes: their slowdowns, GPU types and the
    largest group of them at each topology level, and the cluster's throughput model.

    Attributes:
        model: The instance's true throughput model (``mtgym.sim.kernel``).
        size: Number of candidates, C.
        types: The candidates' GPU types (sorted, unique).
        cap: (L,) the largest group of candidates at each topology level.
        none_shared: No group at the last level holds every candidate.
        sf: (C, classes) the candidates' true slowdowns per application class.
        gt: (C,) the candidates' GPU types.
    """

    model: ThroughputModel
    size: int
    types: np.ndarray
    cap: np.ndarray
    none_shared: bool
    sf: np.ndarray
    gt: np.ndarray

    @staticmethod
    def of(instance: Instance, cand: np.ndarray) -> _Candidates:
        """The facts of the candidate nodes ``cand`` of ``instance``.

        Args:
            instance: The episode.
            cand: (C,) int64 node indices.
        """
        cl = instance.cluster
        coords = cl.topology.coords[cand]
        L = coords.shape[1]
        # largest group of candidates at each level; a set's spread is the lowest level where
        # all its nodes share a group (level 0 also when none does: the kernel's default)
        cap = np.array(
            [np.bincount(coords[:, k]).max() if cand.size else 0 for k in range(L)],
            dtype=np.int64,
        )
        return _Candidates(
            model=throughput_model(instance),
            size=int(cand.size),
            types=np.unique(cl.gpu_type[cand]) if cand.size else np.zeros(0, dtype=np.int64),
            cap=cap,
            none_shared=bool(cand.size > 0 and np.unique(coords[:, -1]).size > 1),
            sf=cl.slowdown[cand],
            gt=cl.gpu_type[cand],
        )

    def best_rate(self, j: int, n: np.ndarray, slow: np.ndarray) -> np.ndarray:
        """Job j's rate on ``n`` nodes of slowness ``slow``, at the best spread level a
        group of the candidates can hold.

        A level is allowed for n nodes when some group of it holds n candidates; level 0
        only for n <= 1 (or when no group holds them all, the kernel's default spread).

        Args:
            j: The job.
            n: (P,) node counts.
            slow: (P,) the slowness at each count (the n-th smallest).

        Returns:
            (P,) the best rate over the allowed levels, samples/s (0 when none is).
        """
        out = np.full(n.size, 0.0)
        for lvl in range(self.cap.size):
            ok = (self.cap[lvl] >= n) | ((lvl == 0) & self.none_shared & (n >= 2))
            if lvl == 0:
                ok |= n <= 1
            if not ok.any():
                continue
            r = self.model.formula(
                np.full(int(ok.sum()), j), n[ok], slow[ok], np.full(int(ok.sum()), lvl)
            )
            out[ok] = np.maximum(out[ok], r)
        return out

    def sorted_slowness(self, jobs: Jobs, j: int, cache: dict[tuple, np.ndarray]) -> np.ndarray:
        """Job j's slowness on each candidate, ascending (shared by jobs of one class and
        type rates through ``cache``).

        Slowness is the node's slowdown for the job's class over the job's rate on the
        node's GPU type; a type rate of 0 gives an infinite slowness (never the best).

        Args:
            jobs: The job table.
            j: The job.
            cache: (class, type-rate bytes) -> the sorted (C,) array, filled here.
        """
        cls = int(jobs.app_class[j])
        key = (cls, jobs.type_rate[j].tobytes())
        slow_sorted = cache.get(key)
        if slow_sorted is None:
            with np.errstate(divide="ignore"):
                slow_sorted = np.sort(self.sf[:, cls] / jobs.type_rate[j, self.gt])
            cache[key] = slow_sorted
        return slow_sorted

    def type_factors(
        self, jobs: Jobs, j: int, n: np.ndarray, slow_n: np.ndarray, rate: np.ndarray
    ) -> np.ndarray:
        """Job j's factor per candidate type: its best rate on nodes of that type only,
        over its rate ``rate`` on the fastest candidates, at most 1.

        Args:
            jobs: The job table.
            j: The job.
            n: (P,) node counts.
            slow_n: (P,) the n-th smallest slowness over all candidates.
            rate: (P,) ``best_rate(j, n, slow_n)``.

        Returns:
            (T',) one factor per candidate type, in [0, 1].
        """
        cls = int(jobs.app_class[j])
        out = np.ones(self.types.size)
        for ti, t in enumerate(self.types):
            with np.errstate(divide="ignore"):
                s_t = float(np.min(self.sf[self.gt == t, cls] / jobs.type_rate[j, t]))
            r_t = self.best_rate(j, n, np.maximum(slow_n, s_t))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(rate > 0, r_t / rate, 0.0)
            out[ti] = min(1.0, float(ratio.max()))
        return out


# ---------------------------------------------------------------------------------------
# The supply as a step function
# ---------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------
# The LP
# ---------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Solved:
    """One LP's certified value and how the solver ended.

    Attributes:
        value: A certified upper bound of the LP's optimum (``LP.certificate``).
        optimal: The solver proved its solution optimal.
        status: The solver's status in lower case (``"optimal"``, ``"time limit
            reached"``, ...) or ``"failed: <exception>"``.
    """

    value: float
    optimal: bool
    status: str


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence C-level stdout (HiGHS prints a banner on its first ``Highs()``)."""
    try:
        fd = os.dup(1)
    except OSError:  # no real stdout (some test runners)
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            try:
                yield
            finally:
                os.dup2(fd, 1)
    finally:
        os.close(fd)


class Session:
    """A solver holding one ``Layout``'s model: ``solve(lp)`` passes the model the first
    time, then only new bounds (HiGHS keeps its basis: a warm start). Solutions are
    certified (``LP.certificate``). ``solver``: "highs" (highspy), or "cbc" (PuLP, each
    solve from scratch; also the fallback when highspy is missing).

    Args:
        layout: The LP structure every ``solve`` shares.
        solver: ``"highs"`` or ``"cbc"``; ``self.solver`` says which is used.
        method: HiGHS's algorithm: ``"auto"`` (interior point above ``IPM_NNZ``
            nonzeros, else simplex), or a HiGHS ``solver`` option value.

    Raises:
        ValueError: an unknown ``solver``.
    """

    def __init__(self, layout: Layout, solver: str = "highs", method: str = "auto") -> None:
        if solver not in ("highs", "cbc"):
            raise ValueError(f"solver {solver!r} is not 'highs' or 'cbc'")
        self.layout = layout
        self.solver = solver
        self.method = method
        self._h = None
        if solver == "highs":
            try:
                import highspy  # noqa: F401
            except ImportError:
                self.solver = "cbc"

    def solve(self, lp: LP, time_limit_s: float) -> Solved:
        """Solve and certify; never raises on solver trouble: without duals, the
        certificate at y = 0 (the variables' bounds) is the value.

        Args:
            lp: ``layout.vectors(...)`` of this session's layout.
            time_limit_s: Wall budget of this solve, seconds (HiGHS takes at least
                0.01 s, CBC at least 1 s).
        """
        if lp.A.shape[1] == 0:  # no job can run: nothing to solve
            return Solved(0.0, True, "optimal")
        try:
            if self.solver == "highs":
                return self._solve_highs(lp, time_limit_s)
            return _solve_pulp(lp, time_limit_s)
        except Exception as exc:  # a broken solver: the trivial certificate
            return Solved(lp.certificate(np.zeros(lp.b.size)), False, f"failed: {exc!r}")

    def _solve_highs(self, lp: LP, time_limit_s: float) -> Solved:
        """Solve with highspy: pass the model on the first call, only new bounds after.

        The value is the smaller certificate of the row duals and of their negation
        (HiGHS's sign convention for duals of a maximisation is not relied on).
        """
        import highspy

        nrow, ncol = lp.A.shape
        inf = highspy.kHighsInf
        if self._h is None:
            with _quiet_stdout():
                h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            method = self.method
            if method == "auto":  # interior point for large LPs: no basis, but fast
                method = "ipm" if lp.A.nnz > IPM_NNZ else "simplex"
            h.setOptionValue("solver", method)
            if method == "ipm":
                h.setOptionValue("run_crossover", "off")  # the certificate needs no vertex
            model = highspy.HighsLp()
            model.num_col_ = ncol
            model.num_row_ = nrow
            model.sense_ = highspy.ObjSense.kMaximize
            model.col_cost_ = lp.c
            model.col_lower_ = np.zeros(ncol)
            model.col_upper_ = lp.ub
            model.row_lower_ = np.full(nrow, -inf)
            model.row_upper_ = lp.b
            model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
            model.a_matrix_.start_ = lp.A.indptr.astype(np.int32)
            model.a_matrix_.index_ = lp.A.indices.astype(np.int32)
            model.a_matrix_.value_ = lp.A.data
            h.passModel(model)
            self._h = h
        else:
            h = self._h
            h.changeColsBounds(ncol, np.arange(ncol, dtype=np.int32), np.zeros(ncol), lp.ub)
            h.changeRowsBounds(nrow, np.arange(nrow, dtype=np.int32), np.full(nrow, -inf), lp.b)
        h.setOptionValue("time_limit", max(float(time_limit_s), 0.01))
        h.run()
        model_status = h.getModelStatus()
        sol = h.getSolution()
        y = np.asarray(sol.row_dual, dtype=np.float64) if sol.dual_valid else np.zeros(0)
        if y.size != nrow:
            y = np.zeros(nrow)
        # either sign convention: every y >= 0 gives a bound; keep the smaller
        value = min(lp.certificate(y), lp.certificate(-y))
        optimal = model_status == highspy.HighsModelStatus.kOptimal
        return Solved(value, optimal, h.modelStatusToString(model_status).lower())


def _solve_pulp(lp: LP, time_limit_s: float) -> Solved:
    """The same LP through PuLP and CBC (the fallback when highspy is missing).

    Each call builds the model from scratch (no warm start); the rows' ``pi`` give the
    duals (missing ones count as 0), certified like HiGHS's.

    Args:
        lp: The LP.
        time_limit_s: CBC's time limit, seconds (at least 1).
    """
    import pulp

    prob = pulp.LpProblem("hindsight", pulp.LpMaximize)
    v = [prob.add_variable(f"v{i}", 0, float(u)) for i, u in enumerate(lp.ub)]
    A = lp.A
    by_row = np.argsort(A.indices, kind="stable")
    cuts = np.searchsorted(A.indices[by_row], np.arange(A.shape[0] + 1))
    names = []
    for r in range(A.shape[0]):
        sel = by_row[cuts[r] : cuts[r + 1]]
        expr = pulp.LpAffineExpression(
            [(v[int(i)], float(x)) for i, x in zip(A.cols[sel], A.data[sel], strict=True)]
        )
        prob += expr <= float(lp.b[r]), f"r{r}"
        names.append(f"r{r}")
    prob += pulp.lpSum(float(lp.c[i]) * v[i] for i in np.flatnonzero(lp.c))
    prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=max(float(time_limit_s), 1.0)))
    optimal = prob.status == pulp.LpStatusOptimal
    y = np.array([prob.get_constraint_by_name(n).pi or 0.0 for n in names], dtype=np.float64)
    value = min(lp.certificate(y), lp.certificate(-y))
    return Solved(value, optimal, pulp.LpStatus[prob.status].lower())


# ---------------------------------------------------------------------------------------
# The bound
# ---------------------------------------------------------------------------------------
def run_end(instance: Instance, until: float | None = None) -> float:
    """L: when a run that does not finish its workload ends (``play``'s limit). With an
    infinite horizon, the last window end or arrival (after it nothing can happen).

    Args:
        instance: The episode.
        until: The prefix's end given to ``play``; None: the horizon.

    Returns:
        L, seconds on the instance's clock.
    """
    limit = float(instance.t_end) if until is None else min(float(until), float(instance.t_end))
    if math.isinf(limit):
        s, jobs = instance.supply, instance.jobs
        last = [float(instance.t_start)]
        if s.num_windows:
            last.append(float(s.end_s.max()))
        if jobs.num_jobs:
            last.append(float(jobs.submit_s.max()))
        limit = max(last)
    return limit


def _bins_for(p: _Problem, nnz: int | None) -> int:
    """Bins so that the LP has about ``nnz`` nonzeros (default: ``DEFAULT_NNZ`` with one
    GPU type, ``DEFAULT_NNZ_TYPES`` with several, whose LP is slower per nonzero).

    The estimate counts about 3 nonzeros per (job, bin, segment) with one type and
    4 x types with several, at the jobs' mean segment count; the result is clipped to
    ``MIN_BINS``..``MAX_BINS``.
    """
    if nnz is None:
        nnz = DEFAULT_NNZ if p.T == 1 else DEFAULT_NNZ_TYPES
    segs = float(np.diff(p.curves.seg_start)[p.jobs].mean()) if p.jobs.size else 1.0
    per_pair = 3 * segs if p.T == 1 else 4 * p.T * segs
    return int(np.clip(nnz / max(per_pair * max(p.jobs.size, 1), 1.0), MIN_BINS, MAX_BINS))


def hindsight_bound(
    instance: Instance,
    until: float | None = None,
    *,
    time_limit_s: float = 60.0,
    nnz: int | None = None,
    bins: int | None = None,
    solver: str = "highs",
    strict: bool = False,
) -> HindsightBound:
    """An upper bound of ``normalized_throughput`` for every policy on ``instance``, for
    runs played to the horizon or, with ``until``, the prefix ``play(until=until)``.

    Args:
        instance: the episode.
        until: the prefix's end, as given to ``play`` (None: the horizon).
        time_limit_s: wall budget of all the LP solves together.
        nnz: target size of each LP (nonzeros; default ``DEFAULT_NNZ`` or, with several
            GPU types, ``DEFAULT_NNZ_TYPES``); the bins are chosen to fit it.
        bins: the number of time bins (overrides ``nnz``).
        solver: "highs" (default) or "cbc" (through PuLP).
        strict: raise ``HindsightError`` unless every LP was solved to optimality.

    Returns:
        The bound. Every value it rests on is certified (``LP.certificate``), so a
        time-out or a solver failure leaves a looser but still valid bound (``status``
        says which); a search cut short by the time limit keeps the end time it proved.
    """
    t_wall = time.perf_counter()
    deadline = t_wall + float(time_limit_s)
    end = run_end(instance, until)
    if not end > instance.t_start:  # play() does not step: the headline is 0
        return HindsightBound(
            0.0, "horizon", 0.0, 0.0, 0.0, None, 0, 0, 0, 0, 0, "optimal", solver, 0.0
        )
    p = _Problem(instance, end)
    t0 = p.t0
    horizon = end - t0
    K = int(bins) if bins is not None else _bins_for(p, nnz)
    total_work = float(p.work[p.jobs].sum())
    layout = p.layout(end, K)
    session = Session(layout, solver)
    res = session.solve(layout.vectors(), deadline - time.perf_counter())
    search = _EndSearch(end, [res], True, session.solver)
    work_bound = min(res.value, total_work)
    value = work_bound / horizon if horizon > 0 else 0.0
    form = "horizon"
    makespan: float | None = None
    # A run can end before `end` only once every job arrived and did its least work.
    need = float(p.min_work.sum())
    if (
        p.jobs.size == instance.jobs.num_jobs > 0
        and work_bound >= need * (1 - 1e-12)
        and horizon > 0
    ):
        search = _earliest_end(p, end, K, solver, deadline, search)
        if search.lo < end:
            makespan = search.lo - t0
            alt = work_bound / makespan if makespan > 0 else math.inf
            if alt > value:
                value, form = alt, "makespan"
    status = _overall_status(search)
    if strict and status != "optimal":
        raise _not_optimal(instance, status, time_limit_s)
    return HindsightBound(
        value=float(value),
        form=form,
        work_bound=float(work_bound),
        total_work=total_work,
        horizon_s=float(horizon),
        makespan_lb_s=None if makespan is None else float(makespan),
        bins=layout.K,
        variables=layout.A.shape[1],
        rows=layout.A.shape[0],
        nonzeros=layout.nnz,
        solves=len(search.statuses),
        status=status,
        solver=search.solver,
        wall_s=time.perf_counter() - t_wall,
    )


@dataclass
class _EndSearch:
    """The search for the earliest end E_min of a run: ``lo``, the latest end proved too
    early (a lower bound of E_min), every LP solved so far, whether the bracket closed,
    and the solver that the last LP used.
    """

    lo: float
    statuses: list[Solved]
    converged: bool
    solver: str


def _earliest_end(
    p: _Problem, end: float, K: int, solver: str, deadline: float, search: _EndSearch
) -> _EndSearch:
    """Bracket E_min in [lo, end] by least-work LPs (every job's work by E counts up to
    its least work only) until the bracket is narrow or ``deadline`` passes; ``search``
    holds the solves before this one.

    Args:
        p: The episode's data.
        end: L: the search's upper end.
        K: Bins of each least-work layout; the layout is rebuilt on the shorter span
            when the bracket's top falls below half of the layout's span.
        solver: ``"highs"`` or ``"cbc"``.
        deadline: ``time.perf_counter()`` value at which to stop.
        search: The search state so far (the maxwork(L) solve).

    Returns:
        The search's end state: ``lo`` is the latest end proved too early (``end``
        itself when even L is too early).
    """
    t0, need = p.t0, float(p.min_work.sum())
    layout = p.layout(end, K, floor=True)
    session = Session(layout, solver)
    first = session.solve(layout.vectors(), deadline - time.perf_counter())
    statuses = [*search.statuses, first]
    lo, hi = _end_lower_bound(p), end
    if first.value < need * (1 - 1e-9):
        lo = end  # proved: no run finishes before the end
    f_lo, f_hi = math.nan, first.value - need
    lo_prev, f_prev = math.nan, math.nan
    last_width = math.inf
    while hi - lo > END_TOL * (hi - t0) and time.perf_counter() < deadline:
        if layout.B[-1] - t0 > 2.0 * (hi - t0):  # re-bin on the shorter span
            layout = p.layout(hi, K, floor=True)
            session = Session(layout, solver)
        mid = _next_end(lo, hi, f_lo, f_hi, lo_prev, f_prev, last_width, END_TOL * (hi - t0))
        last_width = hi - lo
        r = session.solve(layout.vectors(mid), deadline - time.perf_counter())
        statuses.append(r)
        f = r.value - need
        if f < -1e-9 * need:  # proved: no run does its least work by mid
            lo_prev, f_prev = lo, f_lo
            lo, f_lo = mid, f
        else:
            hi, f_hi = mid, f
    return _EndSearch(lo, statuses, hi - lo <= END_TOL * (hi - t0), session.solver)


def _overall_status(search: _EndSearch) -> str:
    """The bound's status: "optimal" when every LP was solved to optimality and the end
    search converged, else the first failure or "time-limit".
    """
    if all(s.optimal for s in search.statuses) and search.converged:
        return "optimal"
    failed = [s.status for s in search.statuses if s.status.startswith("failed")]
    return failed[0] if failed else "time-limit"


def _not_optimal(instance: Instance, status: str, time_limit_s: float) -> HindsightError:
    """The error of ``strict=True`` when the bound is not optimal (``status``)."""
    return HindsightError(
        f"hindsight bound of {instance.name!r}: not every LP was solved to optimality, "
        f"or the search for the earliest end was cut short ({status}) within "
        f"{time_limit_s:g} s; raise time_limit_s or lower nnz/bins"
    )


def _next_end(
    lo: float,
    hi: float,
    f_lo: float,
    f_hi: float,
    lo_prev: float,
    f_prev: float,
    last_width: float,
    tol: float,
) -> float:
    """The next end time to test in the search for E_min on [lo, hi] (f = maxwork - least
    work, negative at lo): lo itself first (the cheap bound is often nearly the answer),
    then a secant step (through lo and hi, or through the last two points below when f is
    flat at hi: the least-work LP caps it at 0), safeguarded by bisection whenever the bracket did
    not halve in the previous step.

    Args:
        lo: The bracket's low end (proved too early).
        hi: Its high end (not proved too early).
        f_lo: f at ``lo``; NaN before lo was tested.
        f_hi: f at ``hi``.
        lo_prev: The previous ``lo`` (NaN: none).
        f_prev: f at ``lo_prev``.
        last_width: The bracket's width before the last step.
        tol: The search's tolerance; a secant step stays ``tol / 2`` inside the bracket.
    """
    if math.isnan(f_lo):
        return lo
    cand = math.nan
    if f_hi > 0:
        cand = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
    elif not math.isnan(f_prev) and f_lo > f_prev:
        cand = lo - f_lo * (lo - lo_prev) / (f_lo - f_prev)
    if math.isnan(cand) or hi - lo > 0.5 * last_width:
        return 0.5 * (lo + hi)
    return min(max(cand, lo + 0.5 * tol), hi - 0.5 * tol)


def _end_lower_bound(p: _Problem) -> float:
    """A cheap lower bound of when a run can finish: the last arrival, each job's least
    work at its top rate, and all the least work at the best per-node rate on the supply.
    """
    jobs = p.jobs
    cv = p.curves
    top = cv.top()[jobs]
    with np.errstate(divide="ignore"):
        alone = np.where(top > 0, p.release[jobs] + p.min_work[jobs] / top, math.inf)
    lo = max(p.t0, float(p.submit[jobs].max()), float(alone.max()))
    rate = float(cv.pi[jobs].max()) if jobs.size else 0.0
    need = float(p.min_work.sum())
    if rate > 0:
        g = p.supply.grid
        cum = np.concatenate(([0.0], np.cumsum(p.supply.total * np.diff(g)))) * rate
        i = int(np.searchsorted(cum, need))
        if i >= cum.size:
            return p.end
        if i > 0:
            # inside [g[i-1], g[i]): the exact crossing
            s = p.supply.total[i - 1] * rate
            lo = max(lo, g[i - 1] + (need - cum[i - 1]) / s if s > 0 else g[i - 1])
    return min(lo, p.end)
