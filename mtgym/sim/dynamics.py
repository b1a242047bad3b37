"""Exact, event-driven dynamics: ``initial_state``, ``apply_allocation`` and ``advance``.

Rules (see ``docs/model.md`` and ``ClusterState``):

- A node runs at most one job; a job runs with 0 nodes or between its min and max.
- Changing a job's node set costs, per ``CostModel.rescale``: adding any node -> ``r_up_s``,
  only removing nodes -> ``r_down_s``, starting from 0 nodes -> ``startup_s`` (always a
  pause). Voluntary changes checkpoint first.
- A reclaimed node leaves at once. Its job, once per event, pays ``r_down_s`` (``rdown``) or
  redoes its progress since the last checkpoint and pauses ``r_down_s`` (``checkpoint``); a
  job left below its minimum releases its other nodes too. Windows cut at ``t_end`` are not
  reclaims.
- At one instant: milestones, then reclaims, then new idle nodes, then arrivals, then timers.
- Between events every rate is constant, so progress is integrated exactly and completion
  times are exact (not rounded to ticks).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
from numba import njit

from mtgym.generate.instance import Instance
from mtgym.model.throughput import ThroughputModel
from mtgym.sim.numeric import dot
from mtgym.sim.state import ClusterState
from mtgym.types import (
    DECISION_EVENTS,
    Allocation,
    EventKind,
    JobStatus,
    PreemptionMode,
    Repair,
    RescaleMode,
)

_ACTIVE = int(JobStatus.ACTIVE)  # compile-time constants in the kernels
_COMPLETED = int(JobStatus.COMPLETED)
# Event kinds as plain ints: ``advance`` accumulates ``StepInfo.kinds`` as an int (enum
# attribute look-ups and flag operators are slow) and turns it into an ``EventKind`` at the end.
_K_RECLAIMED = int(EventKind.NODE_RECLAIMED)
_K_COMPLETED = int(EventKind.JOB_COMPLETED)
_K_STOPPED = int(EventKind.TRIAL_STOPPED)
_K_RUNG = int(EventKind.RUNG_REACHED)
_K_IDLE = int(EventKind.NODE_IDLE)
_K_ARRIVED = int(EventKind.JOB_ARRIVED)
_K_TIMER = int(EventKind.TIMER)
_K_HORIZON = int(EventKind.HORIZON)
_K_FINISHING = _K_COMPLETED | _K_STOPPED
# How a reclaim is charged (``_preempt``).
_PREEMPT_CHECKPOINT, _PREEMPT_BFTRAINER, _PREEMPT_PAUSE = 0, 1, 2

_MODELS: weakref.WeakKeyDictionary[Instance, ThroughputModel] = weakref.WeakKeyDictionary()


def throughput_model(instance: Instance) -> ThroughputModel:
    """The (cached) throughput model of an instance."""
    model = _MODELS.get(instance)
    if model is None:
        model = ThroughputModel(instance.cluster, instance.jobs)
        _MODELS[instance] = model
    return model


@dataclass
class StepInfo:
    """What happened during one ``advance`` call."""

    t0: float
    t1: float
    kinds: EventKind = EventKind.NONE  # kinds of the events processed at t1 (and before)
    reclaimed_nodes: int = 0
    idle_nodes: int = 0
    arrivals: int = 0
    completions: int = 0
    stops: int = 0
    preempted_jobs: int = 0
    rescaled_jobs: int = 0
    samples: float = 0.0  # useful samples processed during the call
    repair: Repair | None = None
    all_done: bool = False  # every job completed or stopped, none left to arrive
    horizon: bool = False  # t1 reached the instance's t_end

    @property
    def terminated(self) -> bool:
        """The workload is finished."""
        return self.all_done


# ---------------------------------------------------------------------------------------
# Allocation: validate, repair, charge
# ---------------------------------------------------------------------------------------
def validate_allocation(node_job: np.ndarray, num_nodes: int, num_jobs: int) -> np.ndarray:
    """Check an allocation is in range; return it as int32. Raises ``ValueError``."""
    a = np.asarray(node_job)
    if a.shape != (num_nodes,):
        raise ValueError(
            f"allocation has shape {a.shape}; expected ({num_nodes},), one job per node"
        )
    if a.size and a.dtype.kind not in "iu":  # the integer types (np.issubdtype, faster)
        raise ValueError(f"allocation dtype {a.dtype} is not an integer type")
    if a.dtype == np.int32 or a.dtype == np.int64:  # the common case: one compiled pass
        i = _out_of_range(a, num_jobs)
    elif a.size and (a.min() < -1 or a.max() >= num_jobs):
        i = int(np.flatnonzero((a < -1) | (a >= num_jobs))[0])
    else:
        i = -1
    if i >= 0:
        raise ValueError(
            f"allocation[{i}] = {int(a[i])} is out of range; allowed -1 (idle) .. {num_jobs - 1}"
        )
    return a.astype(np.int32, copy=True)


def repair_allocation(state: ClusterState, instance: Instance, a: np.ndarray) -> Repair:
    """Make an in-range allocation feasible, in place, deterministically.

    1. Nodes that are not idle now are left unassigned.
    2. Nodes given to jobs that are not active are left unassigned.
    3. A job above ``max_nodes`` keeps the nodes it already holds first, then the
       lowest-indexed new ones.
    4. A job given 1..min-1 nodes gets none.
    """
    rep = Repair()
    jobs = instance.jobs
    if _feasible(a, state.available, state.status, jobs.min_nodes, jobs.max_nodes):
        return rep  # nothing to repair (the common case): skip the vectorised checks
    idx = np.flatnonzero(a >= 0)  # assigned nodes only: usually a small share of N
    owners = a[idx]
    bad = ~state.available[idx]
    if bad.any():
        rep.unavailable_nodes = int(bad.sum())
        rep.jobs.extend(np.unique(owners[bad]).tolist())
        a[idx[bad]] = -1
        idx, owners = idx[~bad], owners[~bad]
    bad = state.status[owners] != JobStatus.ACTIVE
    if bad.any():
        rep.inactive_job_nodes = int(bad.sum())
        rep.jobs.extend(np.unique(owners[bad]).tolist())
        a[idx[bad]] = -1
        idx, owners = idx[~bad], owners[~bad]
    cnt = np.bincount(owners, minlength=instance.num_jobs)
    over = cnt > jobs.max_nodes
    if over.any():
        # Rank each job's nodes (held first, then by index) and drop those past its max.
        sel = over[owners]
        nodes, own = idx[sel], owners[sel]
        new_node = (state.node_job[nodes] != own).astype(np.int8)
        order = np.lexsort((nodes, new_node, own))
        nodes, own = nodes[order], own[order]
        first = np.concatenate(([0], np.flatnonzero(own[1:] != own[:-1]) + 1))
        rank = np.arange(nodes.size) - np.repeat(first, np.diff(np.append(first, nodes.size)))
        drop = rank >= jobs.max_nodes[own]
        a[nodes[drop]] = -1
        rep.over_max_nodes += int(drop.sum())
        rep.jobs.extend(np.flatnonzero(over).tolist())
        keep = a[idx] >= 0
        idx, owners = idx[keep], owners[keep]
        cnt = np.minimum(cnt, jobs.max_nodes)
    below = np.flatnonzero((cnt > 0) & (cnt < jobs.min_nodes))
    if below.size:
        a[idx[np.isin(owners, below)]] = -1
        rep.below_min_jobs = int(below.size)
        rep.jobs.extend(below.tolist())
    if rep.jobs:
        rep.jobs = sorted(set(rep.jobs))
    return rep


def apply_allocation(
    state: ClusterState, instance: Instance, allocation: Allocation | np.ndarray
) -> tuple[Repair, int]:
    """Validate, repair and apply an allocation at ``state.time``, in place.

    Returns the repair record and the number of jobs whose node set changed.
    """
    node_job = allocation.node_job if isinstance(allocation, Allocation) else allocation
    J = instance.num_jobs
    jobs = instance.jobs
    old = state.node_job
    if (
        type(node_job) is np.ndarray
        and (node_job.dtype == np.int32 or node_job.dtype == np.int64)
        and node_job.shape == (instance.num_nodes,)
    ):  # the common case: validate, copy, check feasibility and diff in one compiled call
        bad, a, feasible, gained, touched = _prepare(
            node_job, J, state.available, state.status, jobs.min_nodes, jobs.max_nodes, old
        )
        if bad >= 0:
            validate_allocation(node_job, instance.num_nodes, J)  # raises
        if feasible:
            rep = Repair()
        else:
            rep = repair_allocation(state, instance, a)
            gained, touched = _diff_jobs(old, a, J)
    else:
        a = validate_allocation(node_job, instance.num_nodes, J)
        rep = repair_allocation(state, instance, a)
        gained, touched = _diff_jobs(old, a, J)
    state.decisions += 1
    if touched.size == 0:
        return rep, 0
    old_rate, old_n = state.rate, state.n_nodes
    state.node_job = a
    _refresh_rates(state, instance)  # new rate/n_nodes/spread arrays: old_* stay intact
    _charge_changes(
        touched,
        gained,
        old_n,
        state.n_nodes,
        old_rate,
        state.time,
        instance.costs.rescale == RescaleMode.BFTRAINER,
        jobs.startup_s,
        jobs.r_up_s,
        jobs.r_down_s,
        state.progress,
        state.debt,
        state.ckpt_progress,
        state.stall_until,
        state.first_start,
        state.rescales,
        state.starts,
        state.rescale_cost_s,
    )
    return rep, int(touched.size)


def _refresh_rates(state: ClusterState, instance: Instance) -> None:
    state.rate, state.n_nodes, state.spread = throughput_model(instance).job_rates(state.node_job)


# ---------------------------------------------------------------------------------------
# Integration and events
# ---------------------------------------------------------------------------------------
def _milestone_times(
    state: ClusterState, instance: Instance
) -> tuple[tuple[np.ndarray, np.ndarray], float]:
    """Jobs that progress now (they hold nodes), when each reaches its next milestone, and
    the earliest pending event time (``t_end`` included), in one compiled pass.
    """
    sup, t_end = instance.supply, instance.t_end
    held, t_hit, t_next = _hit_next(
        state.time,
        state.n_nodes,
        state.rate,
        state.stall_until,
        state.debt,
        state.milestone,
        state.progress,
        float(t_end),
        state.timers.peek_time(),
        sup.start_s,
        state.start_cursor,
        sup.end_sorted_s,
        state.end_cursor,
        instance.jobs.submit_s,
        state.arrival_cursor,
    )
    # ``min`` over Python objects returned ``t_end`` itself on a tie (it came first)
    return (held, t_hit), (t_end if t_next >= t_end else t_next)


def _integrate(state: ClusterState, instance: Instance, t1: float, held: np.ndarray) -> float:
    """Advance progress and accumulators from ``state.time`` to ``t1`` (no event inside).

    ``held`` lists the jobs holding nodes (the only ones that progress or cost anything).
    """
    dt = t1 - state.time
    if dt <= 0:
        state.time = max(state.time, t1)
        return 0.0
    (n_avail, n_unused, n_finished), (gain, useful_t, n, n_sum) = _integrate_all(
        state.available,
        state.node_job,
        state.status,
        held,
        state.time,
        dt,
        state.rate,
        state.n_nodes,
        state.stall_until,
        state.debt,
        state.progress,
        state.milestone,
        instance.jobs.ckpt_every,
        state.ckpt_progress,
        state.stalled_s,
        state.node_s,
    )
    state.offered_node_s += float(n_avail) * dt
    state.active_job_s += float(state.arrival_cursor - n_finished) * dt
    # Unused nodes are counted independently of the job node counts, so check_state can
    # verify offered = allocated + unused (it fails if a job holds a node that is not idle).
    state.unused_node_s += float(n_unused) * dt
    if held.size == 0:
        state.time = t1
        return 0.0
    state.allocated_node_s += float(n_sum) * dt
    state.productive_node_s += dot(n, useful_t)  # fixed order (np.dot's BLAS order varies)
    state.time = t1
    return float(gain.sum())


def _release(state: ClusterState, jobs: np.ndarray) -> None:
    """Take every node away from ``jobs`` (finished or below their minimum)."""
    if jobs.size == 0:
        return
    mask = np.isin(state.node_job, jobs)
    state.node_job[mask] = -1
    state.n_nodes[jobs] = 0
    state.rate[jobs] = 0.0
    state.spread[jobs] = 0
    state.stall_until[jobs] = -np.inf


def _process_milestones(
    state: ClusterState, instance: Instance, hit: tuple[np.ndarray, np.ndarray], info: StepInfo
) -> None:
    t = state.time
    held, t_hit = hit
    jobs = instance.jobs
    # Due: the job whose milestone time defined this instant (t_hit == t exactly), and any
    # whose remaining distance is within rounding of zero (relative to its work, never to
    # the clock, so large absolute times cannot finish a job early).
    due = _due(held, t_hit, t, state.milestone, state.progress, state.debt, jobs.work)
    if due.size == 0:
        return
    info.samples += float((state.milestone[due] - state.progress[due]).sum())
    state.progress[due] = state.milestone[due]
    state.debt[due] = 0.0
    done = due[state.milestone[due] >= jobs.work[due]]
    state.status[done] = JobStatus.COMPLETED
    state.finish_time[done] = t
    _release(state, done)
    if done.size:
        info.completions += int(done.size)
        info.kinds |= _K_COMPLETED
    stopped = []
    for j in due[state.milestone[due] < jobs.work[due]]:  # campaign rungs: rare
        info.kinds |= _K_RUNG
        r = int(state.rung[j])
        state.rung[j] = r + 1
        c = int(jobs.campaign[j])
        keep = True
        if c >= 0:
            eta = float(instance.campaigns.eta[c])
            peers = (jobs.campaign == c) & (state.rung >= r + 1)
            m = int(peers.sum())
            rank = int(np.count_nonzero(peers & (jobs.quality > jobs.quality[j])))
            keep = rank < int(np.ceil(m / eta))
        if keep:
            nxt = jobs.rungs[j, r + 1] if r + 1 < jobs.rungs.shape[1] else np.nan
            state.milestone[j] = jobs.work[j] * (1.0 if np.isnan(nxt) else min(float(nxt), 1.0))
        else:
            stopped.append(int(j))
    if stopped:
        arr = np.array(stopped, dtype=np.int64)
        state.status[arr] = JobStatus.STOPPED
        state.finish_time[arr] = t
        _release(state, arr)
        info.stops += len(stopped)
        info.kinds |= _K_STOPPED
    _refresh_rates(state, instance)


def _process_reclaims(state: ClusterState, instance: Instance, t: float, info: StepInfo) -> None:
    sup = instance.supply
    lo = state.end_cursor
    if lo >= sup.num_windows or sup.end_sorted_s[lo] > t:
        return  # no window ends by t (the common case)
    # One compiled pass: the windows ending by t, their live nodes taken away, the owners.
    hi, n_live, hit = _reclaim_nodes(
        t,
        lo,
        sup.end_sorted_s,
        sup.end_order,
        sup.node,
        state.window,
        state.available,
        state.node_job,
    )
    if hi == lo:
        return
    state.end_cursor = hi
    if n_live == 0:
        return
    state.events += n_live
    info.reclaimed_nodes += n_live
    info.kinds |= _K_RECLAIMED
    if hit.size == 0:
        return
    old_rate = state.rate  # _refresh_rates makes new arrays: this one stays as it was
    _refresh_rates(state, instance)
    past_end = t >= instance.t_end  # windows cut at the horizon: nobody is pre-empted
    if instance.costs.preemption == PreemptionMode.CHECKPOINT:
        mode = _PREEMPT_CHECKPOINT
    elif instance.costs.rescale == RescaleMode.BFTRAINER:
        mode = _PREEMPT_BFTRAINER
    else:
        mode = _PREEMPT_PAUSE
    jobs = instance.jobs
    _preempt(
        hit,
        t,
        past_end,
        mode,
        jobs.min_nodes,
        jobs.r_down_s,
        old_rate,
        state.node_job,
        state.n_nodes,
        state.rate,
        state.spread,
        state.stall_until,
        state.progress,
        state.ckpt_progress,
        state.debt,
        state.preempt_lost_samples,
        state.preempt_cost_s,
        state.preemptions,
    )
    if not past_end:
        info.preempted_jobs += int(hit.size)


def _process_idle(state: ClusterState, instance: Instance, t: float, info: StepInfo) -> None:
    sup = instance.supply
    lo = state.start_cursor
    if lo >= sup.num_windows or sup.start_s[lo] > t:
        return  # no window starts by t (the common case)
    hi, n = _open_windows(t, lo, sup.start_s, sup.end_s, sup.node, state.window, state.available)
    if hi == lo:
        return
    state.start_cursor = hi
    state.events += n
    info.idle_nodes += n
    if n:
        info.kinds |= _K_IDLE


def _process_arrivals(state: ClusterState, instance: Instance, t: float, info: StepInfo) -> None:
    sub = instance.jobs.submit_s
    lo = state.arrival_cursor
    if lo >= sub.shape[0] or sub[lo] > t:
        return  # no arrival by t (the common case)
    hi = lo + int(np.searchsorted(sub[lo:], t, side="right"))
    if hi == lo:
        return
    state.arrival_cursor = hi
    state.status[lo:hi] = JobStatus.ACTIVE
    state.events += hi - lo
    info.arrivals += hi - lo
    info.kinds |= _K_ARRIVED


def _all_done(state: ClusterState, instance: Instance) -> bool:
    return state.arrival_cursor >= instance.num_jobs and _all_finished(state.status)


def _events_at(
    state: ClusterState, instance: Instance, hit: tuple[np.ndarray, np.ndarray], info: StepInfo
) -> None:
    """Process every event due at ``state.time``, in the fixed order of kinds."""
    t = state.time
    _process_milestones(state, instance, hit, info)
    _process_reclaims(state, instance, t, info)
    _process_idle(state, instance, t, info)
    _process_arrivals(state, instance, t, info)
    if len(state.timers):  # skip pop_until on an empty queue (the common case)
        due = state.timers.pop_until(t)
        if due:
            state.events += len(due)
            info.kinds |= _K_TIMER


def initial_state(instance: Instance) -> ClusterState:
    """The state at ``t_start`` with every event due by then applied (nodes already idle,
    jobs already submitted), ready for the first decision.
    """
    state = ClusterState.initial(instance)
    info = StepInfo(state.time, state.time)
    _events_at(state, instance, (np.zeros(0, np.int64), np.zeros(0)), info)
    return state


def advance(
    state: ClusterState,
    instance: Instance,
    allocation: Allocation | np.ndarray | None = None,
    *,
    until: float = float("inf"),
    stop_on: EventKind = DECISION_EVENTS,
    copy: bool = True,
) -> tuple[ClusterState, StepInfo]:
    """Apply ``allocation`` now, then run events until one of ``stop_on`` or ``until``.

    Pure when ``copy`` is True (the input state is untouched). Events that do not stop the
    call are handled with the standing allocation (reclaimed nodes drop out, new idle nodes
    stay free). Returns the state at the stopping time and what happened.
    """
    s = state.copy() if copy else state
    info = StepInfo(s.time, s.time, 0)  # kinds: a plain int until the end (see _K_*)
    if allocation is not None:
        info.repair, info.rescaled_jobs = apply_allocation(s, instance, allocation)
    t_end = instance.t_end
    limit = min(until, t_end)
    stop = int(stop_on)
    while True:
        hit, t_next = _milestone_times(s, instance)
        if t_next > limit:
            t_next = limit
        if not math.isfinite(t_next):  # nothing will ever happen again
            info.all_done = _all_done(s, instance)
            break
        info.samples += _integrate(s, instance, t_next, hit[0])
        _events_at(s, instance, hit, info)
        if s.time >= t_end:
            info.kinds |= _K_HORIZON
            info.horizon = True
        info.all_done = _all_done(s, instance)
        finished_now = info.all_done and info.kinds & _K_FINISHING
        if (info.kinds & stop) or s.time >= limit or finished_now:
            break
    info.t1 = s.time
    info.kinds = EventKind(info.kinds)
    return s, info


# ---------------------------------------------------------------------------------------
# Compiled kernels (numba). Each one is the loop form of the vectorised code it replaced:
# the same floating-point operations in the same order per job (no fast-math), so the
# simulation stays bit-identical. Sums over jobs stay in numpy (its pairwise summation).
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def _fmax(a: float, b: float) -> float:  # pragma: no cover - jit
    """``np.maximum`` on two floats (NaN propagates)."""
    if a != a or a >= b:
        return a
    return b


@njit(cache=True)
def _feasible(
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
def _counts(
    available: np.ndarray, node_job: np.ndarray, status: np.ndarray
) -> tuple[int, int, int]:  # pragma: no cover - jit
    """Idle nodes, idle nodes running nothing, and finished (completed or stopped) jobs."""
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
    return n_avail, n_unused, n_finished


@njit(cache=True)
def _diff_jobs(old: np.ndarray, new: np.ndarray, J: int) -> tuple[np.ndarray, np.ndarray]:
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
def _charge_changes(
    touched: np.ndarray,
    gained: np.ndarray,
    old_n: np.ndarray,
    new_n: np.ndarray,
    old_rate: np.ndarray,
    t: float,
    bftrainer: bool,
    startup_s: np.ndarray,
    r_up_s: np.ndarray,
    r_down_s: np.ndarray,
    progress: np.ndarray,
    debt: np.ndarray,
    ckpt_progress: np.ndarray,
    stall_until: np.ndarray,
    first_start: np.ndarray,
    rescales: np.ndarray,
    starts: np.ndarray,
    rescale_cost_s: np.ndarray,
) -> None:  # pragma: no cover - jit
    """Checkpoint and charge every job whose node set changed (``apply_allocation`` rules):
    a stop is free under ``PAUSE`` and costs ``r_down_s x rate before`` (debt) under
    BFTrainer; a start pauses ``startup_s``; a grow costs ``r_up_s``, a shrink ``r_down_s``
    (a pause, or BFTrainer's lost samples).
    """
    for j in touched:
        # Voluntary changes checkpoint first.
        ckpt_progress[j] = _fmax(ckpt_progress[j], progress[j] - debt[j])
        if new_n[j] == 0:  # stopped
            stall_until[j] = -np.inf
            if bftrainer:
                rescales[j] += 1
                rescale_cost_s[j] += r_down_s[j]
                debt[j] += r_down_s[j] * old_rate[j]
        elif old_n[j] == 0:  # started: always a pause
            starts[j] += 1
            if np.isnan(first_start[j]):
                first_start[j] = t
            stall_until[j] = _fmax(stall_until[j], t + startup_s[j])
            rescale_cost_s[j] += startup_s[j]
        else:  # grown (any node added) or only shrunk
            cost = r_up_s[j] if gained[j] else r_down_s[j]
            rescales[j] += 1
            rescale_cost_s[j] += cost
            if bftrainer:
                debt[j] += cost * old_rate[j]
            else:
                stall_until[j] = _fmax(stall_until[j], t + cost)


@njit(cache=True, error_model="numpy")
def _hit_times(
    t: float,
    n_nodes: np.ndarray,
    rate: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    milestone: np.ndarray,
    progress: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """Jobs holding nodes and when each reaches its next milestone (inf without a rate):
    after its pause, its debt, then the distance to the milestone at its rate.
    """
    held = np.flatnonzero(n_nodes > 0)
    t_hit = np.empty(held.shape[0])
    for i in range(held.shape[0]):
        j = held[i]
        r = rate[j]
        if r > 0:
            t_hit[i] = (
                t + _fmax(stall_until[j] - t, 0.0) + (debt[j] + milestone[j] - progress[j]) / r
            )
        else:
            t_hit[i] = np.inf
    return held, t_hit


@njit(cache=True, error_model="numpy")
def _integrate_held(
    held: np.ndarray,
    t: float,
    dt: float,
    rate: np.ndarray,
    n_nodes: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    progress: np.ndarray,
    milestone: np.ndarray,
    ckpt_every: np.ndarray,
    ckpt_progress: np.ndarray,
    stalled_s: np.ndarray,
    node_s: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """Advance the jobs in ``held`` by ``dt`` (no event inside), in place: pause, then debt,
    then progress (capped at the milestone); periodic checkpoints; stalled and node seconds.

    Returns (useful samples gained, useful seconds, node counts) per held job, for the
    caller's sums.
    """
    m = held.shape[0]
    gain = np.empty(m)
    useful_t = np.empty(m)
    n_out = np.empty(m, dtype=n_nodes.dtype)
    for i in range(m):
        j = held[i]
        r = rate[j]
        n = n_nodes[j]
        n_out[i] = n
        stall = min(max(stall_until[j] - t, 0.0), dt)
        gross = (dt - stall) * r if r > 0 else 0.0
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
            ckpt_progress[j] = _fmax(ck, periodic)
        u = g / r if r > 0 else 0.0
        useful_t[i] = u
        gain[i] = g
        stalled_s[j] += dt - u
        node_s[j] += n * dt
    return gain, useful_t, n_out


@njit(cache=True)
def _due(
    held: np.ndarray,
    t_hit: np.ndarray,
    t: float,
    milestone: np.ndarray,
    progress: np.ndarray,
    debt: np.ndarray,
    work: np.ndarray,
) -> np.ndarray:  # pragma: no cover - jit
    """Held jobs whose milestone is due at ``t``: its time is ``t``, or the remaining
    distance is within 1e-9 of the job's work (no debt left).
    """
    out = np.empty(held.shape[0], dtype=held.dtype)
    k = 0
    for i in range(held.shape[0]):
        j = held[i]
        near = debt[j] <= 0.0 and milestone[j] - progress[j] <= 1e-9 * work[j]
        if t_hit[i] <= t or near:
            out[k] = j
            k += 1
    return out[:k]


@njit(cache=True)
def _out_of_range(a: np.ndarray, num_jobs: int) -> int:  # pragma: no cover - jit
    """Index of the first entry outside -1..num_jobs-1, or -1."""
    for n in range(a.shape[0]):
        if a[n] < -1 or a[n] >= num_jobs:
            return n
    return -1


@njit(cache=True)
def _all_finished(status: np.ndarray) -> bool:  # pragma: no cover - jit
    """Every job completed or stopped."""
    done = True
    for j in range(status.shape[0]):
        if status[j] < _COMPLETED:
            done = False
            break
    return done


@njit(cache=True, error_model="numpy")
def _hit_next(
    t: float,
    n_nodes: np.ndarray,
    rate: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    milestone: np.ndarray,
    progress: np.ndarray,
    t_end: float,
    t_timer: float,
    start_s: np.ndarray,
    start_cursor: int,
    end_sorted_s: np.ndarray,
    end_cursor: int,
    submit_s: np.ndarray,
    arrival_cursor: int,
) -> tuple[np.ndarray, np.ndarray, float]:  # pragma: no cover - jit
    """``_hit_times``, then the earliest of ``t_end``, the next timer, window start, window
    end, arrival and milestone: ``min`` over them in that order (a later one wins only when
    strictly earlier; the milestone time is ``t_hit.min()``, NaN propagating).
    """
    held, t_hit = _hit_times(t, n_nodes, rate, stall_until, debt, milestone, progress)
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


@njit(cache=True)
def _reclaim_nodes(
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
    return hi, n_live, np.unique(owners[:k])


@njit(cache=True)
def _open_windows(
    t: float,
    lo: int,
    start_s: np.ndarray,
    end_s: np.ndarray,
    node: np.ndarray,
    window: np.ndarray,
    available: np.ndarray,
) -> tuple[int, int]:  # pragma: no cover - jit
    """Windows ``lo..hi-1`` start by ``t``: their nodes become idle (unless the window also
    ended by now: the t_start case). Returns ``hi`` and the number of nodes made idle.
    """
    hi = lo
    while hi < start_s.shape[0] and start_s[hi] <= t:
        hi += 1
    k = 0
    for w in range(lo, hi):
        if end_s[w] > t:
            n = node[w]
            available[n] = True
            window[n] = w
            k += 1
    return hi, k


@njit(cache=True, error_model="numpy")
def _preempt(
    hit: np.ndarray,
    t: float,
    past_end: bool,
    mode: int,
    min_nodes: np.ndarray,
    r_down_s: np.ndarray,
    old_rate: np.ndarray,
    node_job: np.ndarray,
    n_nodes: np.ndarray,
    rate: np.ndarray,
    spread: np.ndarray,
    stall_until: np.ndarray,
    progress: np.ndarray,
    ckpt_progress: np.ndarray,
    debt: np.ndarray,
    preempt_lost_samples: np.ndarray,
    preempt_cost_s: np.ndarray,
    preemptions: np.ndarray,
) -> None:  # pragma: no cover - jit
    """``_process_reclaims`` after the rates were refreshed, in place, for the sorted
    distinct jobs ``hit`` that lost nodes: a job left below its minimum releases its other
    nodes (``_release``); a job left without nodes has no pause pending; unless past the
    horizon, each is pre-empted: ``checkpoint`` -> debt up to the progress since its last
    checkpoint, plus an ``r_down_s`` pause if it still runs; ``bftrainer`` rescaling ->
    ``r_down_s x rate before`` as debt, nodes left or not; else an ``r_down_s`` pause if it
    still runs.
    """
    below = np.zeros(n_nodes.shape[0], dtype=np.bool_)
    any_below = False
    for j in hit:
        if n_nodes[j] > 0 and n_nodes[j] < min_nodes[j]:
            below[j] = True
            any_below = True
    if any_below:
        for n in range(node_job.shape[0]):
            j = node_job[n]
            if j >= 0 and below[j]:
                node_job[n] = -1
        for j in hit:
            if below[j]:
                n_nodes[j] = 0
                rate[j] = 0.0
                spread[j] = 0
                stall_until[j] = -np.inf
    for j in hit:
        if n_nodes[j] == 0:
            stall_until[j] = -np.inf
    if past_end:
        return
    for j in hit:
        preemptions[j] += 1
    if mode == _PREEMPT_CHECKPOINT:
        for j in hit:
            d = debt[j]
            new_debt = _fmax(progress[j] - ckpt_progress[j], d)
            preempt_lost_samples[j] += new_debt - d
            debt[j] = new_debt
        for j in hit:
            if n_nodes[j] > 0:
                preempt_cost_s[j] += r_down_s[j]
                stall_until[j] = _fmax(stall_until[j], t + r_down_s[j])
    elif mode == _PREEMPT_BFTRAINER:
        for j in hit:
            preempt_cost_s[j] += r_down_s[j]
            debt[j] += r_down_s[j] * old_rate[j]
    else:
        for j in hit:
            if n_nodes[j] > 0:
                preempt_cost_s[j] += r_down_s[j]
                stall_until[j] = _fmax(stall_until[j], t + r_down_s[j])


@njit(cache=True, error_model="numpy")
def _integrate_all(
    available: np.ndarray,
    node_job: np.ndarray,
    status: np.ndarray,
    held: np.ndarray,
    t: float,
    dt: float,
    rate: np.ndarray,
    n_nodes: np.ndarray,
    stall_until: np.ndarray,
    debt: np.ndarray,
    progress: np.ndarray,
    milestone: np.ndarray,
    ckpt_every: np.ndarray,
    ckpt_progress: np.ndarray,
    stalled_s: np.ndarray,
    node_s: np.ndarray,
) -> tuple[
    tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray, int]
]:  # pragma: no cover
    """``_counts`` then ``_integrate_held`` (one call); also the sum of the node counts."""
    counts = _counts(available, node_job, status)
    gain, useful_t, n = _integrate_held(
        held,
        t,
        dt,
        rate,
        n_nodes,
        stall_until,
        debt,
        progress,
        milestone,
        ckpt_every,
        ckpt_progress,
        stalled_s,
        node_s,
    )
    n_sum = 0
    for i in range(n.shape[0]):
        n_sum += n[i]
    return counts, (gain, useful_t, n, n_sum)


@njit(cache=True)
def _prepare(
    node_job: np.ndarray,
    J: int,
    available: np.ndarray,
    status: np.ndarray,
    min_nodes: np.ndarray,
    max_nodes: np.ndarray,
    old: np.ndarray,
) -> tuple[int, np.ndarray, bool, np.ndarray, np.ndarray]:  # pragma: no cover - jit
    """``apply_allocation``'s checks in one call: the first entry out of -1..J-1 (or -1);
    when none, an int32 copy, whether it is feasible as it is (``_feasible``) and its
    ``_diff_jobs`` against ``old``.
    """
    bad = _out_of_range(node_job, J)
    if bad >= 0:
        return bad, np.empty(0, np.int32), False, np.empty(0, np.bool_), np.empty(0, np.int64)
    a = node_job.astype(np.int32)
    feasible = _feasible(a, available, status, min_nodes, max_nodes)
    gained, touched = _diff_jobs(old, a, J)
    return -1, a, feasible, gained, touched
