"""The compiled event loop behind ``advance``: one call applies an allocation, then
integrates and processes events until a stop (``mtgym.sim.dynamics`` has the rules).

A Python loop over the same pieces cost ~20 compiled calls and many small numpy operations
per decision; the env's step cost was mostly that overhead. Here the state's arrays are
updated in place and its scalars travel in two small registers (``F_*`` float64,
``R_*`` int64). Every piece is the loop form of the vectorised code it replaced, with the
same floating-point operations in the same order; sums use numpy's pairwise order
(``mtgym.sim.numeric``), so results are the same bits as before.

``run`` returns to Python only for what Python owns: a timer that is due (the heap of
``EventQueue``), an allocation to repair, or an allocation out of range.
"""

from __future__ import annotations

import math
from collections import namedtuple
from operator import attrgetter

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind, JobStatus
from mtgym.model.throughput import RateConsts, _job_rates_of
from mtgym.sim.numeric import dot, pairwise_sum
from mtgym.sim.state import FLOAT_SCALARS, INT_SCALARS, JOB_ARRAYS, NODE_ARRAYS

_ACTIVE = int(JobStatus.ACTIVE)  # compile-time constants in the kernels
_COMPLETED = int(JobStatus.COMPLETED)
_STOPPED = int(JobStatus.STOPPED)
K_RECLAIMED = int(EventKind.NODE_RECLAIMED)
K_COMPLETED = int(EventKind.JOB_COMPLETED)
K_STOPPED = int(EventKind.TRIAL_STOPPED)
K_RUNG = int(EventKind.RUNG_REACHED)
K_IDLE = int(EventKind.NODE_IDLE)
K_ARRIVED = int(EventKind.JOB_ARRIVED)
K_TIMER = int(EventKind.TIMER)
K_HORIZON = int(EventKind.HORIZON)
K_FINISHING = K_COMPLETED | K_STOPPED

# How a reclaim is charged (``_preempt``).
PREEMPT_CHECKPOINT, PREEMPT_BFTRAINER, PREEMPT_PAUSE = 0, 1, 2

# Float register: the state's float scalars (``ClusterState``'s order), then the call's
# useful samples.
F_TIME, F_OFFERED, F_ALLOCATED, F_UNUSED, F_ACTIVE, F_PRODUCTIVE = (
    FLOAT_SCALARS.index(name)
    for name in (
        "time",
        "offered_node_s",
        "allocated_node_s",
        "unused_node_s",
        "active_job_s",
        "productive_node_s",
    )
)
F_SAMPLES = len(FLOAT_SCALARS)
NUM_F = F_SAMPLES + 1
# Int register: the state's int scalars, then what happened during the call (``StepInfo``).
R_EVENTS, R_DECISIONS, R_START, R_END, R_ARRIVAL = (
    INT_SCALARS.index(name)
    for name in ("events", "decisions", "start_cursor", "end_cursor", "arrival_cursor")
)
(
    R_KINDS,
    R_RECLAIMED,
    R_IDLE,
    R_ARRIVALS,
    R_COMPLETIONS,
    R_STOPS,
    R_PREEMPTED,
    R_RESCALED,
    R_ALL_DONE,
    R_HORIZON,
) = range(len(INT_SCALARS), len(INT_SCALARS) + 10)
NUM_R = R_HORIZON + 1

# ``run``'s result codes.
DONE, OUT_OF_RANGE, NEEDS_REPAIR, TIMER_DUE = 0, 1, 2, 3


# Kernel-side bundles of the ``ClusterState`` arrays (its declaration gives the fields).
Nodes = namedtuple("Nodes", NODE_ARRAYS)
JobVars = namedtuple("JobVars", JOB_ARRAYS)  # (the state's: ``core.instance.Jobs`` is the table)
# The instance's constants the loop reads (jobs, campaigns, supply, cluster): field -> where
# ``static_args`` takes it from the ``Instance``.
STATIC_SOURCES = {
    "submit_s": "jobs.submit_s",
    "min_nodes": "jobs.min_nodes",
    "max_nodes": "jobs.max_nodes",
    "work": "jobs.work",
    "ckpt_every": "jobs.ckpt_every",
    "startup_s": "jobs.startup_s",
    "r_up_s": "jobs.r_up_s",
    "r_down_s": "jobs.r_down_s",
    "campaign": "jobs.campaign",
    "quality": "jobs.quality",
    "rungs": "jobs.rungs",
    "eta": "campaigns.eta",
    "start_s": "supply.start_s",
    "end_s": "supply.end_s",
    "end_sorted_s": "supply.end_sorted_s",
    "end_order": "supply.end_order",
    "win_node": "supply.node",
    "slowdown": "cluster.slowdown",
    "gpu_type": "cluster.gpu_type",
    "coords": "cluster.topology.coords",
}
Static = namedtuple("Static", STATIC_SOURCES)
_STATIC = attrgetter(*STATIC_SOURCES.values())


def static_args(instance: Instance, consts: RateConsts) -> tuple:
    """``run``'s instance arguments: ``Static`` then the throughput model's ``consts``."""
    return _STATIC(instance) + tuple(consts)


# ---------------------------------------------------------------------------------------
# Pieces (each the loop form of the code it replaced; see ``mtgym.sim.dynamics``). A piece
# reads the bundles' fields it uses into locals first: numba references every member of a
# named tuple (``JobVars`` has 20 arrays) for each field read inside a branch or loop, and
# that bookkeeping cost more than the simulation itself (a default-scenario env step's
# engine time fell from ~40 to ~25 us when the fields were hoisted). The pieces ``_loop``
# runs at every event are inlined into it (``inline="always"``), and ``_loop`` itself reads
# the arrays of its common path once, before its loop, and calls each event piece only
# when its kind is due: a loop iteration with nothing due went from ~3.8 to ~1.5 us, a
# 120 s default step's engine time from ~27 to ~11-15 us.
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def fmax(a: float, b: float) -> float:  # pragma: no cover - jit
    """``np.maximum`` on two floats (NaN propagates)."""
    if a != a or a >= b:
        return a
    return b


@njit(cache=True)
def out_of_range(a: np.ndarray, num_jobs: int) -> int:  # pragma: no cover - jit
    """Index of the first entry outside -1..num_jobs-1, or -1."""
    for n in range(a.shape[0]):
        if a[n] < -1 or a[n] >= num_jobs:
            return n
    return -1


@njit(cache=True)
def feasible(
    a: np.ndarray,
    available: np.ndarray,
    status: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
) -> bool:  # pragma: no cover - jit
    """True when ``repair_allocation`` would change nothing: every assigned node is idle and
    runs an active job, and every job gets 0 or between its min and max nodes.
    """
    cnt = np.zeros(status.shape[0], dtype=np.int64)
    for n in range(a.shape[0]):
        j = a[n]
        if j < 0:
            continue
        if not available[n] or status[j] != _ACTIVE:
            return False
        cnt[j] += 1
    for j in range(cnt.shape[0]):
        if cnt[j] > 0 and (cnt[j] < min_nodes[j] or cnt[j] > max_nodes[j]):
            return False
    return True


@njit(cache=True)
def repair(
    a: np.ndarray,
    available: np.ndarray,
    status: np.ndarray,
    node_job: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
) -> tuple[int, int, int, int, np.ndarray]:  # pragma: no cover - jit
    """``repair_allocation``'s rules on the map ``a``, in place, in their order: nodes not
    idle, then nodes of inactive jobs, are left unassigned; a job above its maximum keeps
    the nodes it holds now first, then the lowest-indexed new ones; a job left with 1..min-1
    nodes gets none. Returns the counts (unavailable nodes, inactive-job nodes, nodes over
    a maximum, jobs below their minimum) and the sorted jobs whose allocation changed.
    """
    J = status.shape[0]
    flag = np.zeros(J, dtype=np.bool_)
    unavailable = inactive = 0
    for n in range(a.shape[0]):
        j = a[n]
        if j >= 0 and not available[n]:
            unavailable += 1
            flag[j] = True
            a[n] = -1
    for n in range(a.shape[0]):
        j = a[n]
        if j >= 0 and status[j] != _ACTIVE:
            inactive += 1
            flag[j] = True
            a[n] = -1
    cnt = np.zeros(J, dtype=np.int64)
    for n in range(a.shape[0]):
        if a[n] >= 0:
            cnt[a[n]] += 1
    over = 0
    for j in range(J):
        if cnt[j] <= max_nodes[j]:
            continue
        flag[j] = True
        kept = 0
        for held in (True, False):  # the nodes it holds now first, each in index order
            for n in range(a.shape[0]):
                if a[n] == j and (node_job[n] == j) == held:
                    if kept < max_nodes[j]:
                        kept += 1
                    else:
                        a[n] = -1
                        over += 1
        cnt[j] = max_nodes[j]
    below = np.zeros(J, dtype=np.bool_)
    n_below = 0
    for j in range(J):
        if cnt[j] > 0 and cnt[j] < min_nodes[j]:
            below[j] = True
            flag[j] = True
            n_below += 1
    if n_below:
        for n in range(a.shape[0]):
            if a[n] >= 0 and below[a[n]]:
                a[n] = -1
    return unavailable, inactive, over, n_below, np.flatnonzero(flag)


@njit(cache=True)
def diff_jobs(old: np.ndarray, new: np.ndarray, J: int) -> tuple[np.ndarray, np.ndarray]:
    """Jobs that gained a node (bool (J,)) and every job whose node set changed (sorted)."""
    gained = np.zeros(J, dtype=np.bool_)
    touched = np.zeros(J, dtype=np.bool_)
    for n in range(old.shape[0]):
        o, a = old[n], new[n]
        if o != a:
            if a >= 0:
                gained[a] = True
                touched[a] = True
            if o >= 0:
                touched[o] = True
    return gained, np.flatnonzero(touched)


@njit(cache=True, error_model="numpy")
def _refresh(
    nd: Nodes, jb: JobVars, st: Static, rc: RateConsts, jobs: np.ndarray
) -> None:  # pragma: no cover - jit
    """Rates, node counts and spreads, in place, of the distinct ``jobs`` whose node sets
    changed (the other jobs' entries stand as they are).
    """
    _job_rates_of(
        rc, nd.node_job, st.slowdown, st.gpu_type, st.coords, jb.rate, jb.n_nodes, jb.spread, jobs
    )


@njit(cache=True, error_model="numpy")
def _charge_changes(
    touched: np.ndarray,
    gained: np.ndarray,
    old_n: np.ndarray,
    old_rate: np.ndarray,
    t: float,
    bftrainer: bool,
    jb: JobVars,
    st: Static,
) -> None:  # pragma: no cover - jit
    """Checkpoint and charge every job whose node set changed (``old_n`` and ``old_rate``
    per entry of ``touched``): a stop is free under
    ``PAUSE`` and costs ``r_down_s x rate before`` (debt) under BFTrainer; a start pauses
    ``startup_s``; a grow costs ``r_up_s``, a shrink ``r_down_s`` (a pause, or BFTrainer's
    lost samples).
    """
    ckpt_progress, progress, debt, n_nodes = jb.ckpt_progress, jb.progress, jb.debt, jb.n_nodes
    stall_until, rescales, rescale_cost_s = jb.stall_until, jb.rescales, jb.rescale_cost_s
    starts, first_start = jb.starts, jb.first_start
    r_down_s, r_up_s, startup_s = st.r_down_s, st.r_up_s, st.startup_s
    for i in range(touched.shape[0]):
        j = touched[i]
        # Voluntary changes checkpoint first.
        ckpt_progress[j] = fmax(ckpt_progress[j], progress[j] - debt[j])
        if n_nodes[j] == 0:  # stopped
            stall_until[j] = -np.inf
            if bftrainer:
                rescales[j] += 1
                rescale_cost_s[j] += r_down_s[j]
                debt[j] += r_down_s[j] * old_rate[i]
        elif old_n[i] == 0:  # started: always a pause
            starts[j] += 1
            if np.isnan(first_start[j]):
                first_start[j] = t
            stall_until[j] = fmax(stall_until[j], t + startup_s[j])
            rescale_cost_s[j] += startup_s[j]
        else:  # grown (any node added) or only shrunk
            cost = r_up_s[j] if gained[j] else r_down_s[j]
            rescales[j] += 1
            rescale_cost_s[j] += cost
            if bftrainer:
                debt[j] += cost * old_rate[i]
            else:
                stall_until[j] = fmax(stall_until[j], t + cost)


@njit(cache=True, error_model="numpy", inline="always")
def _apply(
    f: np.ndarray,
    r: np.ndarray,
    alloc: np.ndarray,
    check: bool,
    bftrainer: bool,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> tuple[int, int]:  # pragma: no cover - jit
    """Apply a node map (int32, in range) at the current time (``apply_allocation``).
    Nothing changes when, with ``check``, it needs a repair (``NEEDS_REPAIR``).
    """
    status, node_job, rate, n_nodes = jb.status, nd.node_job, jb.rate, jb.n_nodes
    J = status.shape[0]
    a = alloc
    if check and not feasible(a, nd.available, status, st.min_nodes, st.max_nodes):
        return NEEDS_REPAIR, -1
    gained, touched = diff_jobs(node_job, a, J)
    r[R_DECISIONS] += 1
    r[R_RESCALED] = touched.shape[0]
    if touched.shape[0] == 0:
        return DONE, -1
    old_rate = np.empty(touched.shape[0])  # (per touched job: what the charges read)
    old_n = np.empty(touched.shape[0], dtype=n_nodes.dtype)
    for i in range(touched.shape[0]):
        old_rate[i] = rate[touched[i]]
        old_n[i] = n_nodes[touched[i]]
    node_job[:] = a
    _refresh(nd, jb, st, rc, touched)
    _charge_changes(touched, gained, old_n, old_rate, f[F_TIME], bftrainer, jb, st)
    return DONE, -1


@njit(cache=True, error_model="numpy", inline="always")
def hit_next(
    t: float,
    jb: JobVars,
    st: Static,
    t_end: float,
    t_timer: float,
    start_cursor: int,
    end_cursor: int,
    arrival_cursor: int,
) -> tuple[np.ndarray, np.ndarray, float]:  # pragma: no cover - jit
    """Jobs holding nodes, when each reaches its next milestone (after its pause, its debt,
    then the distance at its rate; inf without a rate), and the earliest pending event:
    ``min`` over ``t_end``, the next timer, window start, window end, arrival and milestone
    in that order (a later one wins only when strictly earlier; NaN propagates from the
    milestones).
    """
    return _hit_next(
        t,
        jb.n_nodes,
        jb.rate,
        jb.stall_until,
        jb.debt,
        jb.milestone,
        jb.progress,
        st.start_s,
        st.end_sorted_s,
        st.submit_s,
        t_end,
        t_timer,
        start_cursor,
        end_cursor,
        arrival_cursor,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _hit_next(
    t: float,
    n_nodes: np.ndarray,
    rate: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    milestone: np.ndarray,
    progress: np.ndarray,
    start_s: np.ndarray,
    end_sorted_s: np.ndarray,
    submit_s: np.ndarray,
    t_end: float,
    t_timer: float,
    start_cursor: int,
    end_cursor: int,
    arrival_cursor: int,
) -> tuple[np.ndarray, np.ndarray, float]:  # pragma: no cover - jit
    """``hit_next`` on its arrays (``_loop`` reads them once, before its loop)."""
    held = np.empty(n_nodes.shape[0], dtype=np.int64)  # (np.flatnonzero, in one pass)
    k = 0
    for j in range(n_nodes.shape[0]):
        if n_nodes[j] > 0:
            held[k] = j
            k += 1
    held = held[:k]
    t_hit = np.empty(k)
    for i in range(held.shape[0]):
        j = held[i]
        rt = rate[j]
        if rt > 0:
            t_hit[i] = (
                t + fmax(stall_until[j] - t, 0.0) + (debt[j] + milestone[j] - progress[j]) / rt
            )
        else:
            t_hit[i] = np.inf
    m = t_end
    if t_timer < m:
        m = t_timer
    if start_cursor < start_s.shape[0] and start_s[start_cursor] < m:
        m = start_s[start_cursor]
    if end_cursor < end_sorted_s.shape[0] and end_sorted_s[end_cursor] < m:
        m = end_sorted_s[end_cursor]
    if arrival_cursor < submit_s.shape[0] and submit_s[arrival_cursor] < m:
        m = submit_s[arrival_cursor]
    if t_hit.shape[0]:
        h = t_hit[0]
        for i in range(1, t_hit.shape[0]):
            v = t_hit[i]
            if v < h or v != v:
                h = v
                if v != v:
                    break
        if h < m:
            m = h
    return held, t_hit, m


@njit(cache=True, error_model="numpy", inline="always")
def _integrate(
    f: np.ndarray, r: np.ndarray, t1: float, held: np.ndarray, nd: Nodes, jb: JobVars, st: Static
) -> float:  # pragma: no cover - jit
    """Advance progress and accumulators to ``t1`` (no event inside): per held job pause,
    then debt, then progress (capped at the milestone); periodic checkpoints; stalled and
    node seconds. Returns the useful samples gained.
    """
    return _integrate_arrays(
        f,
        r,
        t1,
        held,
        nd.available,
        nd.node_job,
        jb.status,
        jb.rate,
        jb.n_nodes,
        jb.stall_until,
        jb.debt,
        jb.progress,
        jb.milestone,
        jb.ckpt_progress,
        jb.stalled_s,
        jb.node_s,
        st.ckpt_every,
    )


@njit(cache=True, error_model="numpy", inline="always")
def _integrate_arrays(
    f: np.ndarray,
    r: np.ndarray,
    t1: float,
    held: np.ndarray,
    available: np.ndarray,
    node_job: np.ndarray,
    status: np.ndarray,
    rate: np.ndarray,
    n_nodes: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    progress: np.ndarray,
    milestone: np.ndarray,
    ckpt_progress: np.ndarray,
    stalled_s: np.ndarray,
    node_s: np.ndarray,
    ckpt_every: np.ndarray,
) -> float:  # pragma: no cover - jit
    """``_integrate`` on its arrays (``_loop`` reads them once, before its loop)."""
    t = f[F_TIME]
    dt = t1 - t
    if dt <= 0:
        return 0.0  # (t1 <= t: the time stays)
    n_avail = n_unused = 0
    for n in range(available.shape[0]):
        if available[n]:
            n_avail += 1
            if node_job[n] < 0:
                n_unused += 1
    n_finished = 0
    for j in range(status.shape[0]):
        if status[j] >= _COMPLETED:
            n_finished += 1
    m = held.shape[0]
    gain = np.empty(m)
    useful_t = np.empty(m)
    n_held = np.empty(m, dtype=n_nodes.dtype)
    n_sum = 0
    for i in range(m):
        j = held[i]
        rt = rate[j]
        k = n_nodes[j]
        n_held[i] = k
        n_sum += k
        stall = min(max(stall_until[j] - t, 0.0), dt)
        gross = (dt - stall) * rt if rt > 0 else 0.0
        d = debt[j]
        pay = min(gross, d)
        g = gross - pay
        d = d - pay
        debt[j] = d
        p = min(progress[j] + g, milestone[j])
        progress[j] = p
        every = ckpt_every[j]
        periodic = np.floor(p / every) * every if np.isfinite(every) else 0.0
        ck = ckpt_progress[j]
        if not d > 0:
            ckpt_progress[j] = fmax(ck, periodic)
        u = g / rt if rt > 0 else 0.0
        useful_t[i] = u
        gain[i] = g
        stalled_s[j] += dt - u
        node_s[j] += k * dt
    f[F_OFFERED] += float(n_avail) * dt
    f[F_ACTIVE] += float(r[R_ARRIVAL] - n_finished) * dt
    # Unused nodes are counted independently of the job node counts, so check_state can
    # verify offered = allocated + unused (it fails if a job holds a node that is not idle).
    f[F_UNUSED] += float(n_unused) * dt
    f[F_TIME] = t1
    if m == 0:
        return 0.0
    f[F_ALLOCATED] += float(n_sum) * dt
    f[F_PRODUCTIVE] += dot(n_held, useful_t)
    return pairwise_sum(gain)


@njit(cache=True)
def _release(jobs: np.ndarray, k: int, nd: Nodes, jb: JobVars) -> None:  # pragma: no cover
    """Take every node away from ``jobs[:k]`` (finished or below their minimum)."""
    node_job, n_nodes, rate, spread, stall_until = (
        nd.node_job,
        jb.n_nodes,
        jb.rate,
        jb.spread,
        jb.stall_until,
    )
    if k == 0:
        return
    mark = np.zeros(n_nodes.shape[0], dtype=np.bool_)
    for i in range(k):
        mark[jobs[i]] = True
    for n in range(node_job.shape[0]):
        j = node_job[n]
        if j >= 0 and mark[j]:
            node_job[n] = -1
    for i in range(k):
        j = jobs[i]
        n_nodes[j] = 0
        rate[j] = 0.0
        spread[j] = 0
        stall_until[j] = -np.inf


@njit(cache=True, error_model="numpy", inline="always")
def _milestones(
    f: np.ndarray,
    r: np.ndarray,
    held: np.ndarray,
    t_hit: np.ndarray,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> None:  # pragma: no cover - jit
    """Jobs at a milestone now: those whose time is now, and any whose remaining distance is
    within 1e-9 of its work (relative to the work, never to the clock, so large absolute
    times cannot finish a job early). The work done -> completed; a campaign rung -> the
    trial continues only if its quality ranks in the best ``1/eta`` of its campaign's
    trials at that rung, else it is stopped.
    """
    debt, milestone, progress, work = jb.debt, jb.milestone, jb.progress, st.work
    t = f[F_TIME]
    due = np.empty(held.shape[0], dtype=np.int64)
    nd_ = 0
    for i in range(held.shape[0]):
        j = held[i]
        near = debt[j] <= 0.0 and milestone[j] - progress[j] <= 1e-9 * work[j]
        if t_hit[i] <= t or near:
            due[nd_] = j
            nd_ += 1
    if nd_ == 0:
        return
    status, finish_time = jb.status, jb.finish_time
    due = due[:nd_]
    left = np.empty(nd_)
    for i in range(nd_):
        left[i] = milestone[due[i]] - progress[due[i]]
    f[F_SAMPLES] += pairwise_sum(left)
    done = np.empty(nd_, dtype=np.int64)
    n_done = 0
    for j in due:
        progress[j] = milestone[j]
        debt[j] = 0.0
        if milestone[j] >= work[j]:
            status[j] = _COMPLETED
            finish_time[j] = t
            done[n_done] = j
            n_done += 1
    _release(done, n_done, nd, jb)
    if n_done:
        r[R_COMPLETIONS] += n_done
        r[R_KINDS] |= K_COMPLETED
    rung, campaign, quality, eta, rungs = jb.rung, st.campaign, st.quality, st.eta, st.rungs
    stopped = np.empty(nd_, dtype=np.int64)
    n_stop = 0
    for j in due:
        if not milestone[j] < work[j]:  # (campaign rungs: rare)
            continue
        r[R_KINDS] |= K_RUNG
        rr = rung[j]
        rung[j] = rr + 1
        c = campaign[j]
        keep = True
        if c >= 0:
            m = rank = 0
            for k in range(campaign.shape[0]):
                if campaign[k] == c and rung[k] >= rr + 1:
                    m += 1
                    if quality[k] > quality[j]:
                        rank += 1
            keep = rank < math.ceil(m / eta[c])
        if keep:
            nxt = rungs[j, rr + 1] if rr + 1 < rungs.shape[1] else np.nan
            milestone[j] = work[j] * (1.0 if np.isnan(nxt) else min(nxt, 1.0))
        else:
            stopped[n_stop] = j
            n_stop += 1
    if n_stop:
        for i in range(n_stop):
            status[stopped[i]] = _STOPPED
            finish_time[stopped[i]] = t
        _release(stopped, n_stop, nd, jb)
        r[R_STOPS] += n_stop
        r[R_KINDS] |= K_STOPPED
    _refresh(nd, jb, st, rc, due)  # (only due jobs lost nodes)


@njit(cache=True)
def _sorted_distinct(a: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - jit
    """``np.unique(a[:k])`` for the few entries of one instant, as a view of ``a`` sorted in
    place (an insertion sort: numba's ``np.unique`` costs over a microsecond even for three
    values).
    """
    for i in range(1, k):
        v = a[i]
        m = i - 1
        while m >= 0 and a[m] > v:
            a[m + 1] = a[m]
            m -= 1
        a[m + 1] = v
    n = 0
    for i in range(k):
        if n == 0 or a[i] != a[n - 1]:
            a[n] = a[i]
            n += 1
    return a[:n]


@njit(cache=True)
def reclaim_nodes(
    t: float,
    lo: int,
    end_sorted_s: np.ndarray,
    end_order: np.ndarray,
    node: np.ndarray,
    window: np.ndarray,
    available: np.ndarray,
    node_job: np.ndarray,
) -> tuple[int, int, np.ndarray]:  # pragma: no cover - jit
    """Windows ``lo..hi-1`` (by end) end by ``t``: each one's node, if that window is still
    its current one, stops being idle and loses its job. Returns ``hi``, the number of such
    nodes and the sorted distinct jobs that lost nodes.
    """
    hi = lo
    while hi < end_sorted_s.shape[0] and end_sorted_s[hi] <= t:
        hi += 1
    owners = np.empty(hi - lo, dtype=node_job.dtype)
    n_live = k = 0
    for i in range(lo, hi):
        w = end_order[i]
        n = node[w]
        if window[n] != w:  # a window that never opened (before t_start)
            continue
        n_live += 1
        if node_job[n] >= 0:
            owners[k] = node_job[n]
            k += 1
        available[n] = False
        window[n] = -1
        node_job[n] = -1
    return hi, n_live, _sorted_distinct(owners, k)


@njit(cache=True, error_model="numpy")
def _preempt(
    hit: np.ndarray,
    t: float,
    past_end: bool,
    mode: int,
    old_rate: np.ndarray,
    nd: Nodes,
    jb: JobVars,
    st: Static,
) -> None:  # pragma: no cover - jit
    """After the rates were refreshed, for the sorted distinct jobs ``hit`` that lost nodes
    (``old_rate``: their rates before, per entry):
    a job left below its minimum releases its other nodes; a job left without nodes has no
    pause pending; unless past the horizon, each is pre-empted: ``checkpoint`` -> debt up
    to the progress since its last checkpoint, plus an ``r_down_s`` pause if it still runs;
    ``bftrainer`` rescaling -> ``r_down_s x rate before`` as debt, nodes left or not; else
    an ``r_down_s`` pause if it still runs.
    """
    n_nodes, stall_until, min_nodes = jb.n_nodes, jb.stall_until, st.min_nodes
    preemptions, preempt_cost_s, r_down_s = jb.preemptions, jb.preempt_cost_s, st.r_down_s
    debt, progress, ckpt_progress = jb.debt, jb.progress, jb.ckpt_progress
    preempt_lost_samples = jb.preempt_lost_samples
    below = np.empty(hit.shape[0], dtype=np.int64)
    k = 0
    for j in hit:
        if n_nodes[j] > 0 and n_nodes[j] < min_nodes[j]:
            below[k] = j
            k += 1
    _release(below, k, nd, jb)
    for j in hit:
        if n_nodes[j] == 0:
            stall_until[j] = -np.inf
    if past_end:
        return
    for j in hit:
        preemptions[j] += 1
    if mode == PREEMPT_CHECKPOINT:
        for j in hit:
            d = debt[j]
            new_debt = fmax(progress[j] - ckpt_progress[j], d)
            preempt_lost_samples[j] += new_debt - d
            debt[j] = new_debt
        for j in hit:
            if n_nodes[j] > 0:
                preempt_cost_s[j] += r_down_s[j]
                stall_until[j] = fmax(stall_until[j], t + r_down_s[j])
    elif mode == PREEMPT_BFTRAINER:
        for i in range(hit.shape[0]):
            j = hit[i]
            preempt_cost_s[j] += r_down_s[j]
            debt[j] += r_down_s[j] * old_rate[i]
    else:
        for j in hit:
            if n_nodes[j] > 0:
                preempt_cost_s[j] += r_down_s[j]
                stall_until[j] = fmax(stall_until[j], t + r_down_s[j])


@njit(cache=True, error_model="numpy", inline="always")
def _reclaims(
    f: np.ndarray,
    r: np.ndarray,
    t_end: float,
    preempt_mode: int,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> None:  # pragma: no cover - jit
    """Windows ending by now: their nodes leave at once and their jobs are pre-empted
    (windows cut at ``t_end`` are not reclaims: nobody is charged).
    """
    end_sorted_s = st.end_sorted_s
    t = f[F_TIME]
    lo = r[R_END]
    if lo >= end_sorted_s.shape[0] or end_sorted_s[lo] > t:
        return  # no window ends by t (the common case)
    hi, n_live, hit = reclaim_nodes(
        t, lo, end_sorted_s, st.end_order, st.win_node, nd.window, nd.available, nd.node_job
    )
    if hi == lo:
        return
    r[R_END] = hi
    if n_live == 0:
        return
    r[R_EVENTS] += n_live
    r[R_RECLAIMED] += n_live
    r[R_KINDS] |= K_RECLAIMED
    if hit.shape[0] == 0:
        return
    rate = jb.rate
    old_rate = np.empty(hit.shape[0])  # (per hit job)
    for i in range(hit.shape[0]):
        old_rate[i] = rate[hit[i]]
    _refresh(nd, jb, st, rc, hit)
    past_end = t >= t_end
    _preempt(hit, t, past_end, preempt_mode, old_rate, nd, jb, st)
    if not past_end:
        r[R_PREEMPTED] += hit.shape[0]


@njit(cache=True, inline="always")
def _open_windows(f: np.ndarray, r: np.ndarray, nd: Nodes, st: Static) -> None:  # pragma: no cover
    """Windows starting by now: their nodes become idle (unless the window also ended by
    now: the ``t_start`` case).
    """
    start_s, end_s, win_node = st.start_s, st.end_s, st.win_node
    available, window = nd.available, nd.window
    t = f[F_TIME]
    lo = r[R_START]
    W = start_s.shape[0]
    if lo >= W or start_s[lo] > t:
        return  # no window starts by t (the common case)
    hi = lo
    while hi < W and start_s[hi] <= t:
        hi += 1
    k = 0
    for w in range(lo, hi):
        if end_s[w] > t:
            n = win_node[w]
            available[n] = True
            window[n] = w
            k += 1
    r[R_START] = hi
    r[R_EVENTS] += k
    r[R_IDLE] += k
    if k:
        r[R_KINDS] |= K_IDLE


@njit(cache=True, inline="always")
def _arrivals(f: np.ndarray, r: np.ndarray, jb: JobVars, st: Static) -> None:  # pragma: no cover
    """Jobs submitted by now become active (jobs are sorted by submission)."""
    submit_s, status = st.submit_s, jb.status
    t = f[F_TIME]
    lo = r[R_ARRIVAL]
    J = submit_s.shape[0]
    if lo >= J or submit_s[lo] > t:
        return  # no arrival by t (the common case)
    hi = lo
    while hi < J and submit_s[hi] <= t:
        hi += 1
    for j in range(lo, hi):
        status[j] = _ACTIVE
    r[R_ARRIVAL] = hi
    r[R_EVENTS] += hi - lo
    r[R_ARRIVALS] += hi - lo
    r[R_KINDS] |= K_ARRIVED


@njit(cache=True)
def _all_done(r: np.ndarray, jb: JobVars) -> bool:  # pragma: no cover - jit
    """Every job arrived and completed or stopped."""
    return _all_done_of(r, jb.status)


@njit(cache=True)
def _all_done_of(r: np.ndarray, status: np.ndarray) -> bool:  # pragma: no cover - jit
    """``_all_done`` on the jobs' status array."""
    if r[R_ARRIVAL] < status.shape[0]:
        return False
    done = True
    for j in range(status.shape[0]):
        if status[j] < _COMPLETED:
            done = False
            break
    return done


@njit(cache=True, error_model="numpy", inline="always")
def _events_at(
    f: np.ndarray,
    r: np.ndarray,
    held: np.ndarray,
    t_hit: np.ndarray,
    t_end: float,
    preempt_mode: int,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> None:  # pragma: no cover - jit
    """Every event due now but timers, in the fixed order of kinds."""
    _milestones(f, r, held, t_hit, nd, jb, st, rc)
    _reclaims(f, r, t_end, preempt_mode, nd, jb, st, rc)
    _open_windows(f, r, nd, st)
    _arrivals(f, r, jb, st)


@njit(cache=True, error_model="numpy", inline="always")
def _loop(
    f: np.ndarray,
    r: np.ndarray,
    limit: float,
    stop: int,
    t_end: float,
    t_timer: float,
    resume: bool,
    preempt_mode: int,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> int:  # pragma: no cover - jit
    """``advance``'s loop: next event time, integrate to it, process what is due; stop on a
    kind in ``stop``, at ``limit``, or when the last job finishes. ``TIMER_DUE`` hands a due
    timer to Python; ``resume`` continues after it (the end-of-instant checks).
    """
    # The arrays the common path reads, taken out of the bundles once: inside the loop a
    # bundle's use costs a reference count per member (~2 us an event), so the bundles are
    # touched only when an event is due.
    available, node_job = nd.available, nd.node_job
    status, rate, n_nodes, stall_until = jb.status, jb.rate, jb.n_nodes, jb.stall_until
    debt, progress, milestone, ckpt_progress = jb.debt, jb.progress, jb.milestone, jb.ckpt_progress
    stalled_s, node_s = jb.stalled_s, jb.node_s
    ckpt_every, work, start_s, end_sorted_s = st.ckpt_every, st.work, st.start_s, st.end_sorted_s
    submit_s = st.submit_s
    while True:
        if not resume:
            held, t_hit, t_next = _hit_next(
                f[F_TIME],
                n_nodes,
                rate,
                stall_until,
                debt,
                milestone,
                progress,
                start_s,
                end_sorted_s,
                submit_s,
                t_end,
                t_timer,
                r[R_START],
                r[R_END],
                r[R_ARRIVAL],
            )
            if t_next >= t_end:
                t_next = t_end
            if t_next > limit:
                t_next = limit
            if not np.isfinite(t_next):  # nothing will ever happen again
                r[R_ALL_DONE] = 1 if _all_done_of(r, status) else 0
                return DONE
            f[F_SAMPLES] += _integrate_arrays(
                f,
                r,
                t_next,
                held,
                available,
                node_job,
                status,
                rate,
                n_nodes,
                stall_until,
                debt,
                progress,
                milestone,
                ckpt_progress,
                stalled_s,
                node_s,
                ckpt_every,
            )
            # ``_events_at``, each piece called only when its own early-return test says
            # something of its kind is due now (the same tests, on the hoisted arrays)
            t = f[F_TIME]
            for i in range(held.shape[0]):
                j = held[i]
                if t_hit[i] <= t or (
                    debt[j] <= 0.0 and milestone[j] - progress[j] <= 1e-9 * work[j]
                ):
                    _milestones(f, r, held, t_hit, nd, jb, st, rc)
                    break
            if r[R_END] < end_sorted_s.shape[0] and not end_sorted_s[r[R_END]] > t:
                _reclaims(f, r, t_end, preempt_mode, nd, jb, st, rc)
            if r[R_START] < start_s.shape[0] and not start_s[r[R_START]] > t:
                _open_windows(f, r, nd, st)
            if r[R_ARRIVAL] < submit_s.shape[0] and not submit_s[r[R_ARRIVAL]] > t:
                _arrivals(f, r, jb, st)
            if t_timer <= f[F_TIME]:
                return TIMER_DUE
        resume = False
        if f[F_TIME] >= t_end:
            r[R_KINDS] |= K_HORIZON
            r[R_HORIZON] = 1
        done = _all_done_of(r, status)
        r[R_ALL_DONE] = 1 if done else 0
        finished_now = done and (r[R_KINDS] & K_FINISHING) != 0
        if (r[R_KINDS] & stop) != 0 or f[F_TIME] >= limit or finished_now:
            return DONE


@njit(cache=True, error_model="numpy")
def run_bundled(
    f: np.ndarray,
    r: np.ndarray,
    alloc: np.ndarray,
    apply: bool,
    check: bool,
    loop: int,
    limit: float,
    stop: int,
    t_end: float,
    t_timer: float,
    resume: bool,
    bftrainer: bool,
    preempt_mode: int,
    nd: Nodes,
    jb: JobVars,
    st: Static,
    rc: RateConsts,
) -> tuple[int, int]:  # pragma: no cover - jit
    """Apply ``alloc`` (when ``apply``; ``check``: return ``NEEDS_REPAIR`` untouched if it
    is infeasible), then run the loop (``loop`` 1) or only the events due now (``loop`` 2,
    the initial state). The state's arrays change in place and its scalars in ``f``/``r``.
    Python calls it through ``mtgym.sim.kernel_args.run`` (flat arguments: numba resolves
    plain arrays fast, named tuples slowly). Returns (code, index of the first
    out-of-range entry or -1).
    """
    if apply:
        bad = out_of_range(alloc, jb.status.shape[0])
        if bad >= 0:
            return OUT_OF_RANGE, bad
        code, bad = _apply(f, r, alloc.astype(np.int32), check, bftrainer, nd, jb, st, rc)
        if code != DONE:
            return code, bad
    if loop == 1:
        return _loop(f, r, limit, stop, t_end, t_timer, resume, preempt_mode, nd, jb, st, rc), -1
    if loop == 2:
        empty = np.empty(0, dtype=np.int64)
        _events_at(f, r, empty, np.empty(0), t_end, preempt_mode, nd, jb, st, rc)
    return DONE, -1
