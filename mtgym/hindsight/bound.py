"""The bound itself (``hindsight_bound``): the run's end, the bins, the maxwork LP at the
end and the search for the earliest end the least-work LP allows.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtgym.core.instance import Instance

if TYPE_CHECKING:
    pass
from mtgym.hindsight.base import (
    DEFAULT_NNZ,
    DEFAULT_NNZ_TYPES,
    END_TOL,
    MAX_BINS,
    MIN_BINS,
    HindsightBound,
    HindsightError,
)
from mtgym.hindsight.layout import _Problem
from mtgym.hindsight.solve import Session, Solved


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
