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

import weakref
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import (
    DECISION_EVENTS,
    Allocation,
    EventKind,
    PreemptionMode,
    Repair,
    RescaleMode,
)
from mtgym.model.throughput import ThroughputModel
from mtgym.sim import engine, kernel_args
from mtgym.sim.engine import feasible, out_of_range
from mtgym.sim.state import FLOAT_SCALARS, INT_SCALARS, JOB_ARRAYS, NODE_ARRAYS, ClusterState

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

    Returns the repair record and the number of jobs whose node set changed.
    """
    f, r = _registers(state)
    rep, _ = _apply_and_run(state, instance, allocation, f, r, 0, state.time, 0)
    store_registers(state, f, r)
    return rep, int(r[engine.R_RESCALED])


def initial_state(instance: Instance) -> ClusterState:
    """The state at ``t_start`` with every event due by then applied (nodes already idle,
    jobs already submitted), ready for the first decision.
    """
    state = ClusterState.initial(instance)
    f, r = _registers(state)
    _run(state, context(instance), f, r, None, False, 2, state.time, 0, False)
    store_registers(state, f, r)
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
    t0 = s.time
    f, r = _registers(s)
    rep, _ = _apply_and_run(
        s, instance, allocation, f, r, 1, min(until, instance.t_end), int(stop_on)
    )
    fl, kinds = store_registers(s, f, r)
    return s, StepInfo(
        t0,
        s.time,
        EventKind(kinds[engine.R_KINDS]),
        reclaimed_nodes=kinds[engine.R_RECLAIMED],
        idle_nodes=kinds[engine.R_IDLE],
        arrivals=kinds[engine.R_ARRIVALS],
        completions=kinds[engine.R_COMPLETIONS],
        stops=kinds[engine.R_STOPS],
        preempted_jobs=kinds[engine.R_PREEMPTED],
        rescaled_jobs=kinds[engine.R_RESCALED],
        samples=fl[engine.F_SAMPLES],
        repair=rep,
        all_done=bool(kinds[engine.R_ALL_DONE]),
        horizon=bool(kinds[engine.R_HORIZON]),
    )


# ---------------------------------------------------------------------------------------
# Calling the compiled engine (``mtgym.sim.engine``)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Context:
    """An instance's constant arguments of ``kernel_args.run``."""

    static: tuple
    bftrainer: bool
    preempt_mode: int
    t_end: float


_CONTEXTS: weakref.WeakKeyDictionary[Instance, _Context] = weakref.WeakKeyDictionary()
STATE_ARRAYS = attrgetter(*NODE_ARRAYS, *JOB_ARRAYS)  # ``kernel_args.run``'s order
# The state's scalars in register order (``engine.F_*`` then ``engine.R_*``; ``store_registers``).
FLOATS = attrgetter(*FLOAT_SCALARS)
INTS = attrgetter(*INT_SCALARS)
SCALARS = attrgetter(*FLOAT_SCALARS, *INT_SCALARS)
_NF, _NI = len(FLOAT_SCALARS), len(INT_SCALARS)
_NO_ALLOCATION = np.zeros(0, dtype=np.int32)


def context(instance: Instance) -> _Context:
    """An instance's constant arguments of ``kernel_args.run`` (cached per instance)."""
    ctx = _CONTEXTS.get(instance)
    if ctx is None:
        costs = instance.costs
        bftrainer = costs.rescale == RescaleMode.BFTRAINER
        if costs.preemption == PreemptionMode.CHECKPOINT:
            mode = engine.PREEMPT_CHECKPOINT
        elif bftrainer:
            mode = engine.PREEMPT_BFTRAINER
        else:
            mode = engine.PREEMPT_PAUSE
        static = engine.static_args(instance, throughput_model(instance)._consts)
        ctx = _Context(static, bftrainer, mode, float(instance.t_end))
        _CONTEXTS[instance] = ctx
    return ctx


def _registers(s: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    """The state's scalars in the engine's float and int registers."""
    vals = SCALARS(s)
    f = np.array((*vals[:_NF], 0.0))
    r = np.zeros(engine.NUM_R, dtype=np.int64)
    r[:_NI] = vals[_NF:]
    return f, r


def store_registers(s: ClusterState, f: np.ndarray, r: np.ndarray) -> tuple[list, list]:
    """The registers back into the state's scalars (as Python floats and ints); returns
    both registers as lists (what the call did is in their tails).
    """
    fl, ri = f.tolist(), r.tolist()
    kernel_args.store_registers(s, fl, ri)
    return fl, ri


def _run(
    s: ClusterState,
    ctx: _Context,
    f: np.ndarray,
    r: np.ndarray,
    alloc: np.ndarray | None,
    check: bool,
    loop: int,
    limit: float,
    stop: int,
    resume: bool,
) -> tuple[int, int]:
    return kernel_args.run(
        f,
        r,
        _NO_ALLOCATION if alloc is None else alloc,
        alloc is not None,
        check,
        loop,
        limit,
        stop,
        ctx.t_end,
        s.timers.peek_time(),
        resume,
        ctx.bftrainer,
        ctx.preempt_mode,
        *STATE_ARRAYS(s),
        *ctx.static,
    )


def _apply_and_run(
    s: ClusterState,
    instance: Instance,
    allocation: Allocation | np.ndarray | None,
    f: np.ndarray,
    r: np.ndarray,
    loop: int,
    limit: float,
    stop: int,
) -> tuple[Repair | None, int]:
    """Apply ``allocation`` (validated, repaired when needed), then run the engine's loop
    (``loop`` 1) or not (0); due timers are popped here. Returns the repair record.
    """
    ctx = context(instance)
    rep = None
    if allocation is None:
        code, _ = _run(s, ctx, f, r, None, False, loop, limit, stop, False)
    else:
        a = allocation.node_job if isinstance(allocation, Allocation) else allocation
        if not (
            type(a) is np.ndarray
            and (a.dtype == np.int32 or a.dtype == np.int64)
            and a.shape == (instance.num_nodes,)
        ):  # anything else is checked and converted first
            a = validate_allocation(a, instance.num_nodes, instance.num_jobs)
        code, _ = _run(s, ctx, f, r, a, True, loop, limit, stop, False)
        if code == engine.OUT_OF_RANGE:
            validate_allocation(a, instance.num_nodes, instance.num_jobs)  # raises
        if code == engine.NEEDS_REPAIR:  # nothing was changed: repair a copy, apply that
            a = validate_allocation(a, instance.num_nodes, instance.num_jobs)
            rep = repair_allocation(s, instance, a)
            code, _ = _run(s, ctx, f, r, a, False, loop, limit, stop, False)
        else:
            rep = Repair()
    return rep, finish_timers(s, ctx, f, r, loop, limit, stop, code)


def finish_timers(
    s: ClusterState,
    ctx: _Context,
    f: np.ndarray,
    r: np.ndarray,
    loop: int,
    limit: float,
    stop: int,
    code: int,
) -> int:
    """While the engine hands back a due timer: pop the timers due (the heap is Python's),
    count them, and resume the engine's loop. Returns the last code.
    """
    while code == engine.TIMER_DUE:
        due = s.timers.pop_until(float(f[engine.F_TIME]))
        r[engine.R_EVENTS] += len(due)
        r[engine.R_KINDS] |= engine.K_TIMER
        code, _ = _run(s, ctx, f, r, None, False, loop, limit, stop, True)
    return code
