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

from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import (
    DECISION_EVENTS,
    Allocation,
    EventKind,
    Repair,
)
from mtgym.sim import engine, kernel
from mtgym.sim.engine import feasible, out_of_range
from mtgym.sim.kernel import SimKernel, throughput_model
from mtgym.sim.state import ClusterState

__all__ = [
    "StepInfo",
    "advance",
    "apply_allocation",
    "finish_timers",
    "initial_state",
    "repair_allocation",
    "settle",
    "throughput_model",
    "validate_allocation",
]


@dataclass
class StepInfo:
    """What happened during one ``advance`` call.

    Attributes:
        t0: the time the call started at (the allocation's time), seconds.
        t1: the time it stopped at.
        kinds: kinds of the events processed during the call (at t1 and before), a bit set.
        reclaimed_nodes: nodes the host took back.
        idle_nodes: nodes that became idle (lent).
        arrivals: jobs submitted.
        completions: jobs that did all their work.
        stops: campaign trials stopped at a rung.
        preempted_jobs: job pre-emptions (a job once per reclaim event that hit it; reclaims
            at ``t_end`` are not counted).
        rescaled_jobs: jobs whose node set the allocation changed.
        samples: useful samples processed during the call.
        repair: what the repair changed in the allocation (empty when nothing); None when
            no allocation was given.
        all_done: every job completed or stopped, none left to arrive.
        horizon: t1 reached the instance's ``t_end``.
    """

    t0: float
    t1: float
    kinds: EventKind = EventKind.NONE
    reclaimed_nodes: int = 0
    idle_nodes: int = 0
    arrivals: int = 0
    completions: int = 0
    stops: int = 0
    preempted_jobs: int = 0
    rescaled_jobs: int = 0
    samples: float = 0.0
    repair: Repair | None = None
    all_done: bool = False
    horizon: bool = False

    @property
    def terminated(self) -> bool:
        """The workload is finished."""
        return self.all_done


# ---------------------------------------------------------------------------------------
# Allocation: validate, repair, charge
# ---------------------------------------------------------------------------------------
def validate_allocation(node_job: np.ndarray, num_nodes: int, num_jobs: int) -> np.ndarray:
    """Check an allocation is in range; return it as int32.

    Args:
        node_job: (num_nodes,) integer array (or anything ``np.asarray`` takes): the job of
            each node, -1 = none.
        num_nodes: the instance's node count.
        num_jobs: the instance's job count.

    Returns:
        An int32 copy, which a repair may change in place without touching the caller's.

    Raises:
        ValueError: wrong shape, a non-integer dtype, or an entry outside -1..num_jobs-1
            (the first one is named).
    """
    a = np.asarray(node_job)
    if a.shape != (num_nodes,):
        raise ValueError(
            f"allocation has shape {a.shape}; expected ({num_nodes},), one job per node"
        )
    if a.size and a.dtype.kind not in "iu":  # the integer types (np.issubdtype, faster)
        raise ValueError(f"allocation dtype {a.dtype} is not an integer type")
    if a.dtype == np.int32 or a.dtype == np.int64:  # the common case: one compiled pass
        i = out_of_range(a, num_jobs)
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

    Args:
        state: the current state (read only).
        instance: its instance (the jobs' node bounds).
        a: (N,) int32 or int64 node map, in range; changed in place.

    Returns:
        What was changed, rule by rule, and the jobs concerned (an empty ``Repair`` when
        the map was feasible).
    """
    jobs = instance.jobs
    if feasible(a, state.available, state.status, jobs.min_nodes, jobs.max_nodes):
        return Repair()  # nothing to repair (the common case)
    unavailable, inactive, over, below, changed = engine.repair(
        a, state.available, state.status, state.node_job, jobs.min_nodes, jobs.max_nodes
    )
    return Repair(unavailable, inactive, over, below, changed.tolist())


def apply_allocation(
    state: ClusterState, instance: Instance, allocation: Allocation | np.ndarray
) -> tuple[Repair, int]:
    """Validate, repair and apply an allocation at ``state.time``, in place.

    Rescale and start costs are charged to the jobs whose node set changed (see the module
    rules); no time passes and no event is processed.

    Args:
        state: the state, changed in place.
        instance: its instance.
        allocation: an ``Allocation`` or a (N,) integer node map (-1 = none); never
            modified (a repair works on a copy).

    Returns:
        The repair record and the number of jobs whose node set changed.

    Raises:
        ValueError: the allocation is out of range (``validate_allocation``).
    """
    ep = kernel.bound(state, instance)
    rep, _ = _apply_and_run(ep, state, instance, allocation, engine.THEN_NOTHING, state.time, 0)
    return rep, int(kernel.store(ep, state).rescaled_jobs)  # type: ignore[return-value]  # not None


def initial_state(instance: Instance) -> ClusterState:
    """The state at ``t_start`` with every event due by then applied (nodes already idle,
    jobs already submitted), ready for the first decision.

    Args:
        instance: the instance.

    Returns:
        A new state at ``instance.t_start``.
    """
    state = ClusterState.initial(instance)
    ep = kernel.bind(state, instance)
    _run(ep, state, None, False, engine.THEN_EVENTS_NOW, state.time, 0, False)
    kernel.store(ep, state)
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
    stay free). Due timers of ``state.timers`` are popped and counted as ``TIMER`` events.

    Args:
        state: the state to start from.
        instance: its instance.
        allocation: an ``Allocation`` or (N,) integer node map applied first (validated,
            repaired when infeasible); None keeps the standing allocation.
        until: stop at this time at the latest (capped at ``instance.t_end``), seconds.
        stop_on: event kinds that end the call (default ``DECISION_EVENTS``); the call
            also ends when the last job finishes.
        copy: work on a copy (True) or update ``state`` in place (False: faster, and the
            kernel struct (``kernel.bound``) is reused across calls).

    Returns:
        The state at the stopping time and what happened.

    Raises:
        ValueError: the allocation is out of range.
    """
    s = state.copy() if copy else state
    t0 = s.time
    ep = kernel.bound(s, instance)
    rep, _ = _apply_and_run(
        ep, s, instance, allocation, engine.THEN_LOOP, min(until, instance.t_end), int(stop_on)
    )
    done = kernel.store(ep, s)
    return s, StepInfo(
        t0,
        s.time,
        EventKind(done.event_kinds),
        reclaimed_nodes=done.reclaimed_nodes,
        idle_nodes=done.idle_nodes,
        arrivals=done.arrivals,
        completions=done.completions,
        stops=done.stops,
        preempted_jobs=done.preempted_jobs,
        rescaled_jobs=done.rescaled_jobs,
        samples=done.samples,
        repair=rep,
        all_done=bool(done.all_done),
        horizon=bool(done.horizon),
    )


# ---------------------------------------------------------------------------------------
# Calling the compiled engine (``mtgym.sim.engine``) through a ``SimKernel``
# ---------------------------------------------------------------------------------------
_NO_ALLOCATION = np.zeros(0, dtype=np.int32)


def _run(
    ep: SimKernel,
    s: ClusterState,
    allocation: np.ndarray | None,
    check_feasible: bool,
    then: int,
    until: float,
    stop_on: int,
    resume: bool,
) -> tuple[int, int]:
    """``engine.run`` on ``ep`` (the kernel struct of ``s``), the next timer from ``s``'s heap.

    ``allocation`` None applies nothing; the other arguments are ``engine.run``'s. Returns
    its (code, index of the first out-of-range entry or -1).
    """
    return engine.run(
        ep,
        _NO_ALLOCATION if allocation is None else allocation,
        allocation is not None,
        check_feasible,
        then,
        until,
        stop_on,
        s.timers.peek_time(),
        resume,
    )


def _apply_and_run(
    ep: SimKernel,
    s: ClusterState,
    instance: Instance,
    allocation: Allocation | np.ndarray | None,
    then: int,
    until: float,
    stop_on: int,
) -> tuple[Repair | None, int]:
    """Apply ``allocation`` (validated, repaired when needed), then run the engine's loop
    (``then``: ``engine.THEN_LOOP``) or not; due timers are popped here. Returns the repair
    record and the engine's last code.
    """
    if allocation is None:
        code, _ = _run(ep, s, None, False, then, until, stop_on, False)
        return None, finish_timers(ep, s, then, until, stop_on, code)
    a = allocation.node_job if isinstance(allocation, Allocation) else allocation
    if not (
        type(a) is np.ndarray
        and (a.dtype == np.int32 or a.dtype == np.int64)
        and a.shape == (instance.num_nodes,)
    ):  # anything else is checked and converted first
        a = validate_allocation(a, instance.num_nodes, instance.num_jobs)
    code, _ = _run(ep, s, a, True, then, until, stop_on, False)
    if code == engine.OUT_OF_RANGE:
        validate_allocation(a, instance.num_nodes, instance.num_jobs)  # raises
    if code == engine.NEEDS_REPAIR:  # (repair a copy, not the caller's array)
        a = validate_allocation(a, instance.num_nodes, instance.num_jobs)
    rep, code = settle(ep, s, instance, a, code, then, until, stop_on)
    return Repair() if rep is None else rep, code


def settle(
    ep: SimKernel,
    s: ClusterState,
    instance: Instance,
    node_map: np.ndarray,
    code: int,
    then: int,
    until: float,
    stop_on: int,
) -> tuple[Repair | None, int]:
    """After an engine call that applied ``node_map`` (int32 or int64, in range) with its
    feasibility checked, as ``advance`` and the env's step both do: when the engine asked
    for a repair (``NEEDS_REPAIR``: nothing changed), repair ``node_map`` in place, apply it
    and run on (``then``); then finish the due timers (``finish_timers``). Returns the
    repair record (None when none was needed) and the engine's last code.

    Args:
        ep: the kernel struct of ``s`` (``kernel.bound``).
        s: the state, changed in place.
        instance: its instance.
        node_map: the (N,) map the engine was given; repaired in place when needed, so
            pass a copy of a caller's array.
        code: the engine call's result code.
        then: ``engine.THEN_NOTHING``, ``THEN_LOOP`` or ``THEN_EVENTS_NOW``, as in that call.
        until: the loop's time limit, seconds.
        stop_on: the ``EventKind`` bits that stop the loop.
    """
    rep = None
    if code == engine.NEEDS_REPAIR:
        rep = repair_allocation(s, instance, node_map)
        code, _ = _run(ep, s, node_map, False, then, until, stop_on, False)
    return rep, finish_timers(ep, s, then, until, stop_on, code)


def finish_timers(
    ep: SimKernel, s: ClusterState, then: int, until: float, stop_on: int, code: int
) -> int:
    """While the engine hands back a due timer: pop the timers due (the heap is Python's),
    count them, and resume the engine's loop. Returns the last code.

    The popped timers' payloads are dropped: only their number is recorded.

    Args:
        ep: the kernel struct of ``s``; its scalars are updated (events, event_kinds).
        s: the state whose timer heap is popped.
        then: the engine's ``then`` argument of the interrupted call.
        until: the loop's time limit, seconds.
        stop_on: the ``EventKind`` bits that stop the loop.
        code: the interrupted call's code; anything but ``engine.TIMER_DUE`` returns at once.
    """
    while code == engine.TIMER_DUE:
        scalars = ep.scalars[0]
        due = s.timers.pop_until(float(scalars["time"]))
        scalars["events"] += len(due)
        scalars["event_kinds"] |= engine.K_TIMER
        code, _ = _run(ep, s, None, False, then, until, stop_on, True)
    return code
