"""The rate envelope: each job's best normalised rate on n nodes, its concave majorant and
the per-type caps (``envelope``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtgym.core.instance import Instance
from mtgym.metrics import reference_rate
from mtgym.sim.kernel import throughput_model

if TYPE_CHECKING:
    from mtgym.core.instance import Jobs
    from mtgym.model.throughput import ThroughputModel
from mtgym.hindsight.base import LINE_TOL, MAX_LINES


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
