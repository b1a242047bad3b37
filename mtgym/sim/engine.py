"""The compiled event loop behind ``advance`` and the env's step: one call applies an
allocation, then integrates and processes events until a stop (``mtgym.sim.dynamics`` has
the rules).

Every kernel here that works on the episode takes its struct whole (``episode``, a
``mtgym.sim.kernel.SimKernel``) and reads the fields it uses into locals (the small helpers
on plain arrays, ``feasible``, ``repair``, ``diff_jobs``, ..., take arrays); the state's
scalars and the call's results are fields of its one-row record ``episode.scalars``
(``scalars.time``, ``scalars.events``, ``scalars.event_kinds``, ...). Every piece
is the loop form of the vectorised code it replaced, with the same floating-point
operations in the same order; sums use numpy's pairwise order (``mtgym.sim.numeric``), so
results are the same bits as before.

``run`` returns to Python only for what Python owns: a timer that is due (the heap of
``EventQueue``), an allocation to repair, or an allocation out of range.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from mtgym.core.types import EventKind, JobStatus
from mtgym.model.throughput import _job_rates_of
from mtgym.sim.kernel import PREEMPT_BFTRAINER, PREEMPT_CHECKPOINT
from mtgym.sim.numeric import dot, pairwise_sum

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

# ``run``'s result codes.
DONE, OUT_OF_RANGE, NEEDS_REPAIR, TIMER_DUE = 0, 1, 2, 3
# What ``run`` does after the allocation: nothing, the event loop, or only the events due now
# (the initial state).
THEN_NOTHING, THEN_LOOP, THEN_EVENTS_NOW = 0, 1, 2


# ---------------------------------------------------------------------------------------
# Pieces (each the loop form of the code it replaced; see ``mtgym.sim.dynamics``). A piece
# reads the episode's fields it uses into locals first. The pieces the loop runs at every
# event are inlined into it (``inline="always"``), and ``loop`` calls each event piece only
# when a test on the arrays it read before its loop says that kind is due.
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def fmax(a: float, b: float) -> float:  # pragma: no cover - jit
    """``np.maximum`` on two floats (NaN propagates).

    Args:
        a: first value; returned when it is NaN or ``>= b``.
        b: second value; returned otherwise (so a NaN ``b`` is returned too).
    """
    if a != a or a >= b:
        return a
    return b


@njit(cache=True)
def out_of_range(a: np.ndarray, num_jobs: int) -> int:  # pragma: no cover - jit
    """Index of the first entry outside -1..num_jobs-1, or -1.

    Args:
        a: (N,) integer node map (any integer dtype).
        num_jobs: J, the instance's job count.
    """
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

    Args:
        a: (N,) node map, in range (-1 = none).
        available: (N,) bool, nodes idle now.
        status: (J,) int8 ``JobStatus``.
        min_nodes: (J,) fewest nodes of a running job.
        max_nodes: (J,) most nodes of a job.
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

    Args:
        a: (N,) node map, in range; changed in place.
        available: (N,) bool, nodes idle now.
        status: (J,) int8 ``JobStatus``.
        node_job: (N,) the map in force now (what a job "holds").
        min_nodes: (J,) fewest nodes of a running job.
        max_nodes: (J,) most nodes of a job.
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
    """Jobs that gained a node (bool (J,)) and every job whose node set changed (sorted).

    Args:
        old: (N,) node map in force.
        new: (N,) node map to apply.
        J: the job count.

    Returns:
        (gained, touched): (J,) bool, the job gets a node it did not run on; and the int64
        indices, ascending, of the jobs that gain or lose any node.
    """
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
def _refresh(episode: Any, jobs: np.ndarray) -> None:  # pragma: no cover - jit
    """Rates, node counts and spreads, in place, of the distinct ``jobs`` whose node sets
    changed (the other jobs' entries stand as they are).

    Args:
        episode: the episode; its ``rate``, ``n_nodes`` and ``spread`` are written.
        jobs: distinct job indices, any order.
    """
    _job_rates_of(
        episode.rates,
        episode.node_job,
        episode.slowdown,
        episode.gpu_type,
        episode.coords,
        episode.rate,
        episode.n_nodes,
        episode.spread,
        jobs,
    )


@njit(cache=True, error_model="numpy")
def _charge_changes(
    episode: Any, touched: np.ndarray, gained: np.ndarray, old_n: np.ndarray, old_rate: np.ndarray
) -> None:  # pragma: no cover - jit
    """Checkpoint and charge every job whose node set changed (``old_n`` and ``old_rate``
    per entry of ``touched``): a stop is free under ``PAUSE`` and costs ``r_down_s x rate
    before`` (debt) under BFTrainer; a start pauses ``startup_s``; a grow costs ``r_up_s``,
    a shrink ``r_down_s`` (a pause, or BFTrainer's lost samples).

    Args:
        episode: the episode after the new map and the refreshed rates, at the decision
            time; its counters, pauses, debts and checkpoints are updated.
        touched: sorted indices of the jobs whose node set changed.
        gained: (J,) bool, the job got a node it did not hold (a grow, not only a shrink).
        old_n: node count of each of ``touched`` before the change.
        old_rate: samples/s of each of ``touched`` before the change.
    """
    e = episode
    ckpt_progress, progress, debt, n_nodes = e.ckpt_progress, e.progress, e.debt, e.n_nodes
    stall_until, rescales, rescale_cost_s = e.stall_until, e.rescales, e.rescale_cost_s
    starts, first_start = e.starts, e.first_start
    r_down_s, r_up_s, startup_s = e.r_down_s, e.r_up_s, e.startup_s
    bftrainer = e.bftrainer
    t = e.scalars[0].time
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


@njit(cache=True, error_model="numpy")  # (called once per step: not inlined, see ``loop``)
def apply(episode: Any, node_map: np.ndarray, check_feasible: bool) -> int:  # pragma: no cover
    """Apply a node map (int32, in range) at the current time (``apply_allocation``).
    Nothing changes when, with ``check_feasible``, it needs a repair (``NEEDS_REPAIR``).

    Once the map is accepted the decision is counted, and the number of jobs whose node
    set changed is recorded in ``scalars`` (also when it is 0).

    Args:
        episode: the episode, changed in place.
        node_map: (N,) int32 map, every entry in -1..J-1.
        check_feasible: test the map first (``feasible``); without it, the map must be
            feasible already.

    Returns:
        ``DONE`` or ``NEEDS_REPAIR``.
    """
    status, node_job, rate, n_nodes = (
        episode.status,
        episode.node_job,
        episode.rate,
        episode.n_nodes,
    )
    J = status.shape[0]
    if check_feasible and not feasible(
        node_map, episode.available, status, episode.min_nodes, episode.max_nodes
    ):
        return NEEDS_REPAIR
    gained, touched = diff_jobs(node_job, node_map, J)
    scalars = episode.scalars[0]
    scalars.decisions += 1
    scalars.rescaled_jobs = touched.shape[0]
    if touched.shape[0] == 0:
        return DONE
    old_rate = np.empty(touched.shape[0])  # (per touched job: what the charges read)
    old_n = np.empty(touched.shape[0], dtype=n_nodes.dtype)
    for i in range(touched.shape[0]):
        old_rate[i] = rate[touched[i]]
        old_n[i] = n_nodes[touched[i]]
    node_job[:] = node_map
    _refresh(episode, touched)
    _charge_changes(episode, touched, gained, old_n, old_rate)
    return DONE


@njit(cache=True, error_model="numpy", inline="always")
def next_event(
    episode: Any, t_timer: float
) -> tuple[np.ndarray, np.ndarray, float]:  # pragma: no cover - jit
    """Jobs holding nodes, when each reaches its next milestone (after its pause, its debt,
    then the distance at its rate; inf without a rate), and the earliest pending event:
    ``min`` over ``t_end``, the next timer, window start, window end, arrival and milestone
    in that order (a later one wins only when strictly earlier; NaN propagates from the
    milestones).

    Args:
        episode: the episode at the current time (read only).
        t_timer: the next Python timer's time (+inf when none).

    Returns:
        (held, t_hit, t_next): (H,) int64 indices of the jobs holding nodes, ascending;
        (H,) float64 time each reaches its milestone; and the earliest event time (at
        most ``t_end``).
    """
    e = episode
    n_nodes, rate, stall_until, debt = e.n_nodes, e.rate, e.stall_until, e.debt
    milestone, progress = e.milestone, e.progress
    start_s, end_sorted_s, submit_s = e.start_s, e.end_sorted_s, e.submit_s
    scalars = e.scalars[0]
    t = scalars.time
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
    m = e.t_end
    if t_timer < m:
        m = t_timer
    if scalars.start_cursor < start_s.shape[0] and start_s[scalars.start_cursor] < m:
        m = start_s[scalars.start_cursor]
    if scalars.end_cursor < end_sorted_s.shape[0] and end_sorted_s[scalars.end_cursor] < m:
        m = end_sorted_s[scalars.end_cursor]
    if scalars.arrival_cursor < submit_s.shape[0] and submit_s[scalars.arrival_cursor] < m:
        m = submit_s[scalars.arrival_cursor]
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
def integrate(episode: Any, t1: float, held: np.ndarray) -> float:  # pragma: no cover - jit
    """Advance progress and accumulators to ``t1`` (no event inside): per held job pause,
    then debt, then progress (capped at the milestone); periodic checkpoints; stalled and
    node seconds. Returns the useful samples gained.

    The global accumulators grow with the interval too: offered, unused and allocated
    node-seconds, productive node-seconds and the active-job integral; the clock moves to
    ``t1``. Nothing happens when ``t1`` is not after the current time.

    Args:
        episode: the episode, changed in place.
        t1: the end of the interval, at or before the next event.
        held: the jobs holding nodes (``next_event``'s first result).
    """
    e = episode
    available, node_job, status, rate = e.available, e.node_job, e.status, e.rate
    n_nodes, stall_until, debt, progress = e.n_nodes, e.stall_until, e.debt, e.progress
    milestone, ckpt_progress, stalled_s, node_s = (
        e.milestone,
        e.ckpt_progress,
        e.stalled_s,
        e.node_s,
    )
    ckpt_every = e.ckpt_every
    scalars = e.scalars[0]
    t = scalars.time
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
    scalars.offered_node_s += float(n_avail) * dt
    scalars.active_job_s += float(scalars.arrival_cursor - n_finished) * dt
    # Unused nodes are counted independently of the job node counts, so check_state can
    # verify offered = allocated + unused (it fails if a job holds a node that is not idle).
    scalars.unused_node_s += float(n_unused) * dt
    scalars.time = t1
    if m == 0:
        return 0.0
    scalars.allocated_node_s += float(n_sum) * dt
    scalars.productive_node_s += dot(n_held, useful_t)
    return pairwise_sum(gain)


@njit(cache=True)
def _release(episode: Any, jobs: np.ndarray, k: int) -> None:  # pragma: no cover - jit
    """Take every node away from ``jobs[:k]`` (finished or below their minimum).

    Their rate, count and spread drop to 0 and their pending pause is cleared; nothing is
    charged here.

    Args:
        episode: the episode, changed in place.
        jobs: job indices; only the first ``k`` are read.
        k: how many of ``jobs`` to release.
    """
    node_job, n_nodes, rate = episode.node_job, episode.n_nodes, episode.rate
    spread, stall_until = episode.spread, episode.stall_until
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
def _milestones(episode: Any, held: np.ndarray, t_hit: np.ndarray) -> None:  # pragma: no cover
    """Jobs at a milestone now: those whose time is now, and any whose remaining distance is
    within 1e-9 of its work (relative to the work, never to the clock, so large absolute
    times cannot finish a job early). The work done -> completed; a campaign rung -> the
    trial continues only if its quality ranks in the best ``1/eta`` of its campaign's
    trials at that rung, else it is stopped.

    The remaining distance of every due job is added to ``scalars.samples`` (the
    integration stopped short of it by rounding); a continuing trial's next milestone is
    its next rung, or the work after the last one.

    Args:
        episode: the episode at the current time, changed in place.
        held: the jobs holding nodes when the interval began (``next_event``).
        t_hit: when each of ``held`` reaches its milestone.
    """
    e = episode
    debt, milestone, progress, work = e.debt, e.milestone, e.progress, e.work
    scalars = e.scalars[0]
    t = scalars.time
    due = np.empty(held.shape[0], dtype=np.int64)
    n_due = 0
    for i in range(held.shape[0]):
        j = held[i]
        near = debt[j] <= 0.0 and milestone[j] - progress[j] <= 1e-9 * work[j]
        if t_hit[i] <= t or near:
            due[n_due] = j
            n_due += 1
    if n_due == 0:
        return
    status, finish_time = e.status, e.finish_time
    due = due[:n_due]
    left = np.empty(n_due)
    for i in range(n_due):
        left[i] = milestone[due[i]] - progress[due[i]]
    scalars.samples += pairwise_sum(left)
    done = np.empty(n_due, dtype=np.int64)
    n_done = 0
    for j in due:
        progress[j] = milestone[j]
        debt[j] = 0.0
        if milestone[j] >= work[j]:
            status[j] = _COMPLETED
            finish_time[j] = t
            done[n_done] = j
            n_done += 1
    _release(e, done, n_done)
    if n_done:
        scalars.completions += n_done
        scalars.event_kinds |= K_COMPLETED
    rung, campaign, quality, eta, rungs = e.rung, e.campaign, e.quality, e.eta, e.rungs
    stopped = np.empty(n_due, dtype=np.int64)
    n_stop = 0
    for j in due:
        if not milestone[j] < work[j]:  # (campaign rungs: rare)
            continue
        scalars.event_kinds |= K_RUNG
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
        _release(e, stopped, n_stop)
        scalars.stops += n_stop
        scalars.event_kinds |= K_STOPPED
    _refresh(e, due)  # (only due jobs lost nodes)


@njit(cache=True)
def _sorted_distinct(a: np.ndarray, k: int) -> np.ndarray:  # pragma: no cover - jit
    """``np.unique(a[:k])`` for the few entries of one instant, as a view of ``a`` sorted in
    place (an insertion sort: numba's ``np.unique`` costs over a microsecond even for three
    values).

    Args:
        a: integer array, its first ``k`` entries sorted and deduplicated in place.
        k: number of entries to consider.

    Returns:
        ``a[:n]``, the n distinct values ascending.
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
def _reclaim_nodes(
    episode: Any, t: float, lo: int
) -> tuple[int, int, np.ndarray]:  # pragma: no cover
    """Windows ``lo..hi-1`` (by end) end by ``t``: each one's node, if that window is still
    its current one, stops being idle and loses its job. Returns ``hi``, the number of such
    nodes and the sorted distinct jobs that lost nodes.

    Only the node map, availability and windows change here; the jobs' counts and rates
    are refreshed by the caller.

    Args:
        episode: the episode, changed in place.
        t: the current time.
        lo: ``end_cursor``, the first window end (in end order) not yet processed.
    """
    end_sorted_s, end_order, win_node = episode.end_sorted_s, episode.end_order, episode.win_node
    window, available, node_job = episode.window, episode.available, episode.node_job
    hi = lo
    while hi < end_sorted_s.shape[0] and end_sorted_s[hi] <= t:
        hi += 1
    owners = np.empty(hi - lo, dtype=node_job.dtype)
    n_live = k = 0
    for i in range(lo, hi):
        w = end_order[i]
        n = win_node[w]
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
    episode: Any, hit: np.ndarray, past_end: bool, old_rate: np.ndarray
) -> None:  # pragma: no cover - jit
    """After the rates were refreshed, for the sorted distinct jobs ``hit`` that lost nodes
    (``old_rate``: their rates before, per entry):
    a job left below its minimum releases its other nodes; a job left without nodes has no
    pause pending; unless past the horizon, each is pre-empted: ``checkpoint`` -> debt up
    to the progress since its last checkpoint, plus an ``r_down_s`` pause if it still runs;
    ``bftrainer`` rescaling -> ``r_down_s x rate before`` as debt, nodes left or not; else
    an ``r_down_s`` pause if it still runs.

    Args:
        episode: the episode at the reclaim time, changed in place.
        hit: sorted distinct jobs that lost nodes.
        past_end: the reclaim is at or after ``t_end`` (only the releases apply).
        old_rate: each of ``hit``'s samples/s before the reclaim.
    """
    e = episode
    n_nodes, stall_until, min_nodes = e.n_nodes, e.stall_until, e.min_nodes
    preemptions, preempt_cost_s, r_down_s = e.preemptions, e.preempt_cost_s, e.r_down_s
    debt, progress, ckpt_progress = e.debt, e.progress, e.ckpt_progress
    preempt_lost_samples = e.preempt_lost_samples
    t = e.scalars[0].time
    mode = e.preempt_mode
    below = np.empty(hit.shape[0], dtype=np.int64)
    k = 0
    for j in hit:
        if n_nodes[j] > 0 and n_nodes[j] < min_nodes[j]:
            below[k] = j
            k += 1
    _release(e, below, k)
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
def _reclaims(episode: Any) -> None:  # pragma: no cover - jit
    """Windows ending by now: their nodes leave at once and their jobs are pre-empted
    (windows cut at ``t_end`` are not reclaims: nobody is charged).

    Counts the live windows as events and reclaimed nodes, and the jobs hit as
    pre-empted (not at or after ``t_end``).

    Args:
        episode: the episode at the current time, changed in place.
    """
    end_sorted_s = episode.end_sorted_s
    scalars = episode.scalars[0]
    t = scalars.time
    lo = scalars.end_cursor
    if lo >= end_sorted_s.shape[0] or end_sorted_s[lo] > t:
        return  # no window ends by t (the common case)
    hi, n_live, hit = _reclaim_nodes(episode, t, lo)
    if hi == lo:
        return
    scalars.end_cursor = hi
    if n_live == 0:
        return
    scalars.events += n_live
    scalars.reclaimed_nodes += n_live
    scalars.event_kinds |= K_RECLAIMED
    if hit.shape[0] == 0:
        return
    rate = episode.rate
    old_rate = np.empty(hit.shape[0])  # (per hit job)
    for i in range(hit.shape[0]):
        old_rate[i] = rate[hit[i]]
    _refresh(episode, hit)
    past_end = t >= episode.t_end
    _preempt(episode, hit, past_end, old_rate)
    if not past_end:
        scalars.preempted_jobs += hit.shape[0]


@njit(cache=True, inline="always")
def _open_windows(episode: Any) -> None:  # pragma: no cover - jit
    """Windows starting by now: their nodes become idle (unless the window also ended by
    now: the ``t_start`` case).

    Args:
        episode: the episode at the current time; availability, windows, the start
            cursor and the counts of events and idle nodes are updated.
    """
    start_s, end_s, win_node = episode.start_s, episode.end_s, episode.win_node
    available, window = episode.available, episode.window
    scalars = episode.scalars[0]
    t = scalars.time
    lo = scalars.start_cursor
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
    scalars.start_cursor = hi
    scalars.events += k
    scalars.idle_nodes += k
    if k:
        scalars.event_kinds |= K_IDLE


@njit(cache=True, inline="always")
def _arrivals(episode: Any) -> None:  # pragma: no cover - jit
    """Jobs submitted by now become active (jobs are sorted by submission).

    Args:
        episode: the episode at the current time; statuses, the arrival cursor and the
            counts of events and arrivals are updated.
    """
    submit_s, status = episode.submit_s, episode.status
    scalars = episode.scalars[0]
    t = scalars.time
    lo = scalars.arrival_cursor
    J = submit_s.shape[0]
    if lo >= J or submit_s[lo] > t:
        return  # no arrival by t (the common case)
    hi = lo
    while hi < J and submit_s[hi] <= t:
        hi += 1
    for j in range(lo, hi):
        status[j] = _ACTIVE
    scalars.arrival_cursor = hi
    scalars.events += hi - lo
    scalars.arrivals += hi - lo
    scalars.event_kinds |= K_ARRIVED


@njit(cache=True)
def _all_done(status: np.ndarray, arrival_cursor: int) -> bool:  # pragma: no cover - jit
    """Every job arrived (``arrival_cursor``) and completed or stopped.

    Args:
        status: (J,) int8 ``JobStatus``.
        arrival_cursor: number of jobs submitted so far.
    """
    if arrival_cursor < status.shape[0]:
        return False
    done = True
    for j in range(status.shape[0]):
        if status[j] < _COMPLETED:
            done = False
            break
    return done


@njit(cache=True, error_model="numpy", inline="always")
def events_now(episode: Any, held: np.ndarray, t_hit: np.ndarray) -> None:  # pragma: no cover
    """Every event due now but timers, in the fixed order of kinds.

    Args:
        episode: the episode at the current time, changed in place.
        held: the jobs holding nodes (``next_event``), empty when no milestone can be due.
        t_hit: when each of ``held`` reaches its milestone.
    """
    _milestones(episode, held, t_hit)
    _reclaims(episode)
    _open_windows(episode)
    _arrivals(episode)


# ``loop`` and ``apply`` are not inlined into their callers (``run``, the env's step per
# action mode, the batched step): called once per step, a call costs nothing there, and
# each is then compiled once rather than once more inside every caller (8-10 s each).
@njit(cache=True, error_model="numpy")
def loop(
    episode: Any, until: float, stop_on: int, t_timer: float, resume: bool
) -> int:  # pragma: no cover - jit
    """``advance``'s loop: next event time, integrate to it, process what is due; stop on a
    kind in ``stop_on`` (an ``EventKind`` bit set), at ``until``, or when the last job
    finishes. ``TIMER_DUE`` hands the timer due at ``t_timer`` to Python; ``resume``
    continues after it (the end-of-instant checks).

    Args:
        episode: the episode, changed in place.
        until: the latest time to stop at (the caller caps it at ``t_end``).
        stop_on: ``EventKind`` bits; the loop returns after the instant at which an event
            of one of these kinds was processed.
        t_timer: the next Python timer's time (+inf when none).
        resume: skip to the end-of-instant checks (after Python popped a due timer).

    Returns:
        ``DONE`` or ``TIMER_DUE``.
    """
    # The arrays the common path's tests read, taken out of the episode once.
    e = episode
    status, debt, progress, milestone, work = e.status, e.debt, e.progress, e.milestone, e.work
    start_s, end_sorted_s, submit_s = e.start_s, e.end_sorted_s, e.submit_s
    t_end = e.t_end
    scalars = e.scalars[0]
    while True:
        if not resume:
            held, t_hit, t_next = next_event(e, t_timer)
            if t_next >= t_end:
                t_next = t_end
            if t_next > until:
                t_next = until
            if not np.isfinite(t_next):  # nothing will ever happen again
                scalars.all_done = 1 if _all_done(status, scalars.arrival_cursor) else 0
                return DONE
            scalars.samples += integrate(e, t_next, held)
            # ``events_now``, each piece called only when its own early-return test says
            # something of its kind is due now (the same tests)
            t = scalars.time
            for i in range(held.shape[0]):
                j = held[i]
                if t_hit[i] <= t or (
                    debt[j] <= 0.0 and milestone[j] - progress[j] <= 1e-9 * work[j]
                ):
                    _milestones(e, held, t_hit)
                    break
            if (
                scalars.end_cursor < end_sorted_s.shape[0]
                and not end_sorted_s[scalars.end_cursor] > t
            ):
                _reclaims(e)
            if scalars.start_cursor < start_s.shape[0] and not start_s[scalars.start_cursor] > t:
                _open_windows(e)
            if (
                scalars.arrival_cursor < submit_s.shape[0]
                and not submit_s[scalars.arrival_cursor] > t
            ):
                _arrivals(e)
            if t_timer <= scalars.time:
                return TIMER_DUE
        resume = False
        if scalars.time >= t_end:
            scalars.event_kinds |= K_HORIZON
            scalars.horizon = 1
        done = _all_done(status, scalars.arrival_cursor)
        scalars.all_done = 1 if done else 0
        finished_now = done and (scalars.event_kinds & K_FINISHING) != 0
        if (scalars.event_kinds & stop_on) != 0 or scalars.time >= until or finished_now:
            return DONE


@njit(cache=True, error_model="numpy")
def run(
    episode: Any,
    allocation: np.ndarray,
    with_allocation: bool,
    check_feasible: bool,
    then: int,
    until: float,
    stop_on: int,
    t_timer: float,
    resume: bool,
) -> tuple[int, int]:  # pragma: no cover - jit
    """``advance``'s one compiled call. Apply ``allocation`` (when ``with_allocation``;
    ``check_feasible``: return ``NEEDS_REPAIR``, nothing changed, if it needs a repair),
    then (``then``) nothing, the loop (``loop``'s arguments) or only the events due now.
    The state's arrays change in place and its scalars in ``episode.scalars``. Returns
    (code, index of the first out-of-range entry or -1).

    Args:
        episode: the episode, changed in place.
        allocation: (N,) integer node map (read only when ``with_allocation``; any integer
            dtype, converted to int32).
        with_allocation: apply ``allocation`` first.
        check_feasible: see above; without it the map must be feasible already.
        then: ``THEN_NOTHING``, ``THEN_LOOP`` or ``THEN_EVENTS_NOW``.
        until: ``loop``'s time limit.
        stop_on: ``loop``'s ``EventKind`` bits.
        t_timer: the next Python timer's time (+inf when none).
        resume: ``loop``'s resume flag.

    Returns:
        (``DONE``, ``OUT_OF_RANGE``, ``NEEDS_REPAIR`` or ``TIMER_DUE``; the first
        out-of-range entry's index or -1).
    """
    if with_allocation:
        bad = out_of_range(allocation, episode.status.shape[0])
        if bad >= 0:
            return OUT_OF_RANGE, bad
        code = apply(episode, allocation.astype(np.int32), check_feasible)
        if code != DONE:
            return code, -1
    if then == THEN_LOOP:
        return loop(episode, until, stop_on, t_timer, resume), -1
    if then == THEN_EVENTS_NOW:
        events_now(episode, np.empty(0, dtype=np.int64), np.empty(0))
    return DONE, -1
