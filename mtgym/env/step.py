"""The env's step in two compiled calls, through one argument (every action mode).

numba's dispatcher costs ~0.1 us per argument, and a step touches ~80 arrays (the state's,
the instance's, the slots', the profiler's, the observation builder's). ``StepBag`` (a
numba ``StructRef``) holds them all, so each call takes one argument: ``_pre`` decodes the
action, places it and runs the engine (``mtgym.sim.engine``); ``_post`` updates the
profiler and the slots, computes the reward and the mask and fills the observation. The
same kernels as the general path do the work, so both give the same bits
(``tests/env/test_fast.py``). An action out of range goes back to the general path before
anything changed (it raises there); an allocation to repair is repaired
(``repair_allocation``) and applied; a due timer is finished by the general engine call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit, types
from numba.experimental import structref

from mtgym.core.types import EventKind
from mtgym.env.action import (
    _assign_mask,
    _counts_mask,
    _decode_assign,
    _decode_pack,
    _delta_mask,
)
from mtgym.env.observation import _obs_args, _obs_fill
from mtgym.env.slots import _update
from mtgym.model.placement import _static_order
from mtgym.model.throughput import RateConsts
from mtgym.sim import dynamics, engine
from mtgym.sim.dynamics import SCALARS
from mtgym.sim.engine import (
    F_SAMPLES,
    NEEDS_REPAIR,
    OUT_OF_RANGE,
    R_ALL_DONE,
    R_ARRIVALS,
    R_COMPLETIONS,
    R_IDLE,
    R_KINDS,
    R_RECLAIMED,
    R_STOPS,
    TIMER_DUE,
    Jobs,
    Nodes,
    Static,
)
from mtgym.sim.numeric import dot, pairwise_sum
from mtgym.sim.profiling import _observe

if TYPE_CHECKING:
    from mtgym.env.env import ScavengeEnv

_EXTRA = (
    "slot_job",
    "p_slowdown",
    "group",
    "seg_start",
    "seg_nodes",
    "mask",
    "node_map",
    "prof_rate",
    "prof_samples",
    "inv_work",
    "p0",
    "n0",
    "d0",
    "x",
    "end_known",
    "obs_work",
    "job_static",
    "curve_static",
    "known_static",
    "obs_scale",
)
FIELDS = (*engine.NODE_FIELDS, *engine.JOB_FIELDS, *Static._fields, *RateConsts._fields, *_EXTRA)

_DECISION = int(dynamics.DECISION_EVENTS)  # stop kinds as ints
_HORIZON = int(EventKind.HORIZON)
# ``_pre``'s result codes beyond the engine's.
PACK_FAILED = 10  # the placement needs more free nodes than there are (ValueError)
REWARDS = {"progress": 0, "throughput": 1, "jct": 2}
MODES = {"counts": 0, "delta": 1, "assign": 2}
# The engine's repair counts in ``info["repair"]`` (as the general path's ``_info``).
ENGINE_REPAIRS = {
    "unavailable_nodes": 0,
    "inactive_job_nodes": 0,
    "dyn_over_max_nodes": 0,
    "dyn_below_min_jobs": 0,
}


@structref.register
class StepBagType(types.StructRef):
    """numba type of ``StepBag``: its fields' types are those of the arrays given."""

    def preprocess_fields(self, fields):  # noqa: D102
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepBag(structref.StructRefProxy):
    """Every array of one env episode, for the kernels (built at reset)."""


structref.define_proxy(StepBag, StepBagType, list(FIELDS))


@njit(cache=True)
def _bundles(b: Any) -> tuple[Nodes, Jobs, Static, RateConsts]:  # pragma: no cover - jit
    nd = Nodes(b.available, b.node_job, b.window)
    jb = Jobs(
        b.status,
        b.n_nodes,
        b.rate,
        b.spread,
        b.progress,
        b.milestone,
        b.rung,
        b.stall_until,
        b.debt,
        b.ckpt_progress,
        b.first_start,
        b.finish_time,
        b.rescales,
        b.starts,
        b.preemptions,
        b.rescale_cost_s,
        b.preempt_cost_s,
        b.preempt_lost_samples,
        b.stalled_s,
        b.node_s,
    )
    st = Static(
        b.submit_s,
        b.min_nodes,
        b.max_nodes,
        b.work,
        b.ckpt_every,
        b.startup_s,
        b.r_up_s,
        b.r_down_s,
        b.campaign,
        b.quality,
        b.rungs,
        b.eta,
        b.start_s,
        b.end_s,
        b.end_sorted_s,
        b.end_order,
        b.win_node,
        b.slowdown,
        b.gpu_type,
        b.coords,
    )
    rc = RateConsts(
        b.gpus_per_node,
        b.bw,
        b.lat,
        b.lam,
        b.is_table,
        b.curve_nodes,
        b.curve_tput,
        b.local_batch,
        b.grad_bytes,
        b.overlap,
        b.app_class,
        b.type_rate,
    )
    return nd, jb, st, rc


@njit(cache=True, error_model="numpy")
def _pre(
    b: Any,
    mode: int,
    action: np.ndarray,
    C: int,
    f: np.ndarray,
    r: np.ndarray,
    scalars: tuple[float, float, float, float, float, float, int, int, int, int, int],
    limit: float,
    stop: int,
    t_end: float,
    t_timer: float,
    bftrainer: bool,
    preempt_mode: int,
) -> tuple[int, int, int, int, int, int]:  # pragma: no cover - jit
    """Decode an action (``mode``: ``MODES``; 3: take ``b.node_map`` as it is, repaired),
    keep the progress, node counts and debts of before, then apply and run
    (``engine.run``) with the state's ``scalars`` (as ``dynamics._registers``) loaded into
    ``f`` and ``r``. Returns (code,
    bad index, and the decoder's repair counts: empty slot, over max, below min,
    oversubscribed; ``assign`` has only the first).
    """
    f[0], f[1], f[2], f[3], f[4], f[5] = scalars[:6]
    f[engine.F_SAMPLES] = 0.0
    r[:] = 0
    r[0], r[1], r[2], r[3], r[4] = scalars[6:]
    total = free = 0
    if mode == 3:  # b.node_map as it is (repaired by the caller)
        bad, rep, node_map = -1, (0, 0, 0, 0), b.node_map.copy()
    elif mode == 2:
        bad, empty, node_map = _decode_assign(action, b.slot_job)
        rep = (empty, 0, 0, 0)
    else:
        bad, rep, node_map, total, free = _decode_pack(
            action,
            mode == 1,
            C,
            b.slot_job,
            b.n_nodes,
            b.min_nodes,
            b.max_nodes,
            b.available,
            b.node_job,
            b.p_slowdown,
            b.app_class,
            b.group,
            b.seg_start,
            b.seg_nodes,
        )
    if bad >= 0:
        return engine.OUT_OF_RANGE, bad, 0, 0, 0, 0
    if total > free:
        return PACK_FAILED, -1, 0, 0, 0, 0
    if mode == 2:  # (kept for a repair: only assign maps can need one)
        b.node_map[:] = node_map
    b.p0[:] = b.progress
    b.n0[:] = b.n_nodes
    b.d0[:] = b.debt
    nd, jb, st, rc = _bundles(b)
    # Only ``assign`` maps can be infeasible: packed counts give idle nodes to slot jobs
    # (active), 0 or min..max each (the lockstep tests would see a repair otherwise).
    code, bad = engine._apply(f, r, node_map, mode == 2, bftrainer, nd, jb, st, rc)
    if code == engine.DONE:
        code = engine._loop(f, r, limit, stop, t_end, t_timer, False, preempt_mode, nd, jb, st, rc)
    return code, bad, rep[0], rep[1], rep[2], rep[3]


@njit(cache=True, error_model="numpy")
def _post(
    b: Any,
    t0: float,
    t: float,
    t_start: float,
    active0: float,
    active: float,
    reward_kind: int,
    tput_scale: float,
    mode: int,
    C: int,
    max_count: int,
    slot_next: int,
    arrival_cursor: int,
    t_end: float,
    nodes: np.ndarray,
    node_slot: np.ndarray,
    node_mask: np.ndarray,
    jf: np.ndarray,
    job_mask: np.ndarray,
    curve: np.ndarray,
    known: np.ndarray,
    g: np.ndarray,
) -> tuple[float, int, tuple[int, int, int, int]]:  # pragma: no cover - jit
    """After the engine: the profiler's observation, the slots' update, the reward, the
    action mask, and the observation into ``nodes`` .. ``g`` (``ObservationBuilder.outputs``).
    Returns (reward, the slots' cursor, (idle nodes, active jobs, held nodes, occupied
    slots)).
    """
    if t - t0 > 0:
        _observe(
            b.prof_rate,
            b.prof_samples,
            t0,
            t - t0,
            b.p0,
            b.n0,
            b.d0,
            b.n_nodes,
            b.stall_until,
            b.debt,
            b.progress,
            max_count,
        )
    nxt = _update(b.slot_job, b.status, slot_next, arrival_cursor)
    if reward_kind == 0:
        dp = np.empty(b.progress.shape[0])
        for j in range(dp.shape[0]):
            dp[j] = b.progress[j] - b.p0[j]
        reward = dot(dp, b.inv_work)
    elif reward_kind == 1:
        reward = (pairwise_sum(b.progress) - pairwise_sum(b.p0)) * tput_scale
    else:
        reward = -(active - active0) / 3600.0
    if mode == 0:
        _counts_mask(b.mask, b.slot_job, b.min_nodes, b.max_nodes, b.available, C)
    elif mode == 1:
        _delta_mask(b.mask, b.slot_job, b.min_nodes, b.max_nodes, b.available, b.n_nodes, C)
    else:
        _assign_mask(b.mask, b.slot_job, b.available)
    counts = _obs_args(
        b.x,
        b.available,
        b.window,
        b.start_s,
        b.end_s,
        b.end_known,
        t,
        t_start,
        b.slot_job,
        b.status,
        b.rate,
        b.stall_until,
        b.submit_s,
        b.progress,
        b.obs_work,
        b.n_nodes,
    )
    _obs_fill(
        nodes,
        node_slot,
        node_mask,
        jf,
        job_mask,
        curve,
        known,
        g,
        b.x,
        b.obs_scale,
        b.available,
        b.node_job,
        b.window,
        b.end_known,
        t,
        t_start,
        t_end,
        b.slot_job,
        b.n_nodes,
        b.stall_until,
        b.job_static,
        b.curve_static,
        b.known_static,
        C,
        counts[0],
        counts[1],
        counts[2],
        counts[3],
    )
    return reward, nxt, counts


class FastStep:
    """The step of one env episode (bound at reset)."""

    def __init__(self, env: ScavengeEnv) -> None:
        s, inst = env.state, env.instance
        self.env = env
        self.state = s
        self.ctx = dynamics._context(inst)
        cl, jobs = inst.cluster, inst.jobs
        J, N = inst.num_jobs, inst.num_nodes
        slowdown = cl.profiled_slowdown
        group, seg_start, seg_nodes = _static_order(slowdown, cl.topology.coords)
        self.node_map = np.empty(N, dtype=np.int32)
        self.f = np.zeros(engine.NUM_F)
        self.r = np.zeros(engine.NUM_R, dtype=np.int64)
        builder = env.builder
        extra = (
            env.slots.job,
            np.ascontiguousarray(slowdown, dtype=np.float64),
            group,
            seg_start,
            seg_nodes,
            env.codec._mask,
            self.node_map,
            env.profiler.rate,
            env.profiler.samples,
            1.0 / jobs.work,
            np.zeros(J),
            np.zeros(J, dtype=s.n_nodes.dtype),
            np.zeros(J),
            builder._x,
            inst.supply.end_known,
            builder._work_arr,
            builder._job_static,
            builder._curve,
            builder._known,
            builder._scale,
        )
        self.bag = StepBag(*dynamics._STATE_ARRAYS(s), *self.ctx.static, *extra)
        rf = env.reward_fn
        self.inst = inst
        self.mask = env.codec._mask
        self.C = env.max_count
        self.profile_max = env.profiler.max_count
        self.t_start = inst.t_start
        self.mode = MODES[env.action_mode]
        self.shape = env.codec.nvec.shape
        self.reward_kind = REWARDS[rf.name]
        self.tput_scale = float(rf._tput_scale)

    def usable(self, action: Any) -> bool:
        """The fast path applies: the state it was built for (the env rebuilds it when its
        state object is replaced; arrays of a state are updated in place, never rebound),
        an int64 action of the right shape.
        """
        env = self.env
        return (
            env.state is self.state
            and type(action) is np.ndarray
            and action.dtype == np.int64
            and action.shape == self.shape
        )

    def step(self, action: np.ndarray) -> tuple | None:
        """One env step, or None (nothing changed) when the general path must take it."""
        env, s, inst, ctx, f, r, bag = (
            self.env,
            self.state,
            self.inst,
            self.ctx,
            self.f,
            self.r,
            self.bag,
        )
        t0 = s.time
        scalars = SCALARS(s)
        if env.decision_interval_s is None:
            limit, stop = ctx.t_end, _DECISION
        else:
            limit, stop = min(ctx.t_end, t0 + env.decision_interval_s), _HORIZON
        active0 = s.active_job_s
        rest = (f, r, scalars, limit, stop, ctx.t_end, s.timers.peek_time(), ctx.bftrainer)
        rest += (ctx.preempt_mode,)
        code, _, e0, e1, e2, e3 = _pre(bag, self.mode, action, self.C, *rest)
        if code in (OUT_OF_RANGE, PACK_FAILED):
            return None  # (nothing changed: the general path raises)
        dyn = None
        if code == NEEDS_REPAIR:  # nothing changed: repair the decoded map, apply it
            dyn = dynamics.repair_allocation(s, inst, self.node_map)
            code = _pre(bag, 3, action, self.C, *rest)[0]
        if code == TIMER_DUE:
            dynamics._finish_timers(s, ctx, f, r, 1, limit, stop, code)
        fl, ri = dynamics._store(s, f, r)
        t = s.time
        slots = env.slots
        out = env.builder.outputs()
        reward, slots._next, counts = _post(
            bag,
            t0,
            t,
            self.t_start,
            active0,
            s.active_job_s,
            self.reward_kind,
            self.tput_scale,
            self.mode,
            self.C,
            self.profile_max,
            slots._next,
            s.arrival_cursor,
            ctx.t_end,
            *out,
        )
        if env.debug:
            from mtgym.sim.invariants import check_state

            check_state(s, inst)
        if env.render_mode == "rgb_array":
            env.history.record(t0, t, s.node_job, s.available)
        kinds = ri[R_KINDS]
        terminated = bool(ri[R_ALL_DONE])
        truncated = (not terminated) and (t >= ctx.t_end or (t == t0 and kinds == 0))
        env._mask = mask = self.mask.copy()
        obs = env.builder.complete(slots, env.profiler, mask, out, counts)
        if self.mode == 2:
            rep = {"empty_slot": e0}
        else:
            rep = {"empty_slot": e0, "over_max": e1, "below_min": e2, "oversubscribed": e3}
        if dyn is None:
            rep.update(ENGINE_REPAIRS)  # (none: the allocation was feasible)
        else:
            rep.update(
                unavailable_nodes=dyn.unavailable_nodes,
                inactive_job_nodes=dyn.inactive_job_nodes,
                dyn_over_max_nodes=dyn.over_max_nodes,
                dyn_below_min_jobs=dyn.below_min_jobs,
            )
        info = {
            "time": t,
            "action_mask": mask.copy(),
            "slots": slots.job.copy(),
            "queued": env.builder.queued,
            "repair": rep,
            "repaired": any(rep.values()),
            "events": kinds,
            "reclaimed_nodes": ri[R_RECLAIMED],
            "idle_nodes": ri[R_IDLE],
            "arrivals": ri[R_ARRIVALS],
            "completions": ri[R_COMPLETIONS],
            "stops": ri[R_STOPS],
            "samples": fl[F_SAMPLES],
            "elapsed_s": t - t0,
        }
        if terminated or truncated:
            from mtgym.metrics import compute_metrics

            info["metrics"] = compute_metrics(s, inst).as_dict()
        return obs, reward, terminated, truncated, info
