"""The env's step (the only one), in two compiled calls through one argument.

numba's dispatcher costs ~0.1 us per argument, and a step touches ~80 arrays (the state's,
the instance's, the slots', the profiler's, the observation builder's). ``StepBag`` (a
numba ``StructRef``) holds them all, so each call takes one argument: ``_pre`` decodes the
action, places it and runs the engine (``mtgym.sim.engine``); ``_post`` updates the
profiler and the slots, computes the reward (``mtgym.env.reward``) and the mask and fills
the observation. ``tests/env/test_step.py`` checks every output against the general
Python reference in ``tests/reference/step.py``, bit for bit.

The env validates the action first (``ActionCodec.validate``); here nothing changes
before the placement is known to fit (else ``ValueError``, as ``pack_targets``); an
allocation to repair is repaired (``repair_allocation``) and applied; due timers are
finished by the engine's Python side (``dynamics.finish_timers``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.experimental import structref

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind
from mtgym.env.action import (
    ASSIGN,
    COUNTS,
    DELTA,
    ActionCodec,
    _assign_mask,
    _counts_mask,
    _decode_assign,
    _decode_pack,
    _delta_mask,
    pack_failed,
    repair_record,
)
from mtgym.env.observation import ObservationBuilder, _obs_args, _obs_fill
from mtgym.env.reward import REWARDS, reward_kernel, reward_weights, throughput_scale
from mtgym.env.slots import JobSlots, _update
from mtgym.model.placement import _static_order
from mtgym.model.throughput import RateConsts
from mtgym.sim import dynamics, engine
from mtgym.sim.dynamics import FLOATS, INTS
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
    Static,
)
from mtgym.sim.kernel_args import bundles
from mtgym.sim.profiling import PassiveProfiler, _observe
from mtgym.sim.state import JOB_ARRAYS, NODE_ARRAYS, ClusterState

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
    "reward_weight",
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
FIELDS = (*NODE_ARRAYS, *JOB_ARRAYS, *Static._fields, *RateConsts._fields, *_EXTRA)

_DECISION = int(dynamics.DECISION_EVENTS)  # stop kinds as ints
_HORIZON = int(EventKind.HORIZON)
REPAIRED_MAP = 3  # ``_pre``'s mode beyond ``ACTION_MODES``: apply ``b.node_map`` as it is
PACK_FAILED = 10  # ``_pre``'s code beyond the engine's: more nodes needed than are free
# ``info``'s counters of what happened during a step, in order (after ``repaired``).
STEP_COUNTERS = (
    "events",
    "reclaimed_nodes",
    "idle_nodes",
    "arrivals",
    "completions",
    "stops",
    "samples",
    "elapsed_s",
)


def step_info(
    time: float,
    mask: np.ndarray,
    slot_job: np.ndarray,
    queued: int,
    repair: dict[str, int] | None = None,
    counters: tuple | None = None,
    metrics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The env's info dict (fresh arrays): at reset the first four keys; after a step the
    repair record (``repair_record``), ``repaired``, the ``STEP_COUNTERS``, ``dt`` (the
    same as ``elapsed_s``) and, at the end
    of an episode, its metrics.
    """
    info: dict[str, Any] = {
        "time": time,
        "action_mask": mask.copy(),
        "slots": slot_job.copy(),
        "queued": queued,
    }
    if repair is not None:
        info["repair"] = repair
        info["repaired"] = any(repair.values())
        info.update(zip(STEP_COUNTERS, counters, strict=True))
        info["dt"] = info["elapsed_s"]  # (the semi-MDP step's duration, for discounting)
    if metrics is not None:
        info["metrics"] = metrics
    return info


def episode_end(all_done: bool, t0: float, t: float, t_end: float, kinds: int) -> tuple[bool, bool]:
    """(terminated, truncated): every job finished; else the horizon reached, or a step
    that moved no time and saw no event (nothing is left to happen).
    """
    terminated = bool(all_done)
    return terminated, (not terminated) and (t >= t_end or (t == t0 and kinds == 0))


@structref.register
class StepBagType(types.StructRef):
    """numba type of ``StepBag``: its fields' types are those of the arrays given."""

    def preprocess_fields(self, fields):  # noqa: D102
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepBag(structref.StructRefProxy):
    """Every array of one env episode, for the kernels (built at the first step)."""


structref.define_proxy(StepBag, StepBagType, list(FIELDS))


@njit(cache=True, error_model="numpy")
def _pre(
    b: Any,
    mode: int,
    action: np.ndarray,
    C: int,
    f: np.ndarray,
    r: np.ndarray,
    floats: tuple[float, ...],
    ints: tuple[int, ...],
    limit: float,
    stop: int,
    t_end: float,
    t_timer: float,
    bftrainer: bool,
    preempt_mode: int,
) -> tuple[int, int, int, int, int, int]:  # pragma: no cover - jit
    """Decode an action (``mode``: an ``ACTION_MODES`` index; ``REPAIRED_MAP``: take
    ``b.node_map`` as it is, repaired),
    keep the progress, node counts and debts of before, then apply and run
    (``engine._apply``, then ``engine._loop``) with the state's scalars (``floats``, ``ints``: as
    ``dynamics._registers``) loaded into ``f`` and ``r``. Returns (code,
    bad index, and the decoder's repair counts: empty slot, over max, below min,
    oversubscribed; ``assign`` has only the first). ``PACK_FAILED`` gives the nodes needed
    and free in place of the first two counts. Nothing changes unless the code is the
    engine's ``DONE`` or ``TIMER_DUE``.
    """
    for i in range(len(floats)):
        f[i] = floats[i]
    f[engine.F_SAMPLES] = 0.0
    r[:] = 0
    for i in range(len(ints)):
        r[i] = ints[i]
    total = free = 0
    if mode == REPAIRED_MAP:  # b.node_map as it is (repaired by the caller)
        bad, rep, node_map = -1, (0, 0, 0, 0), b.node_map.copy()
    elif mode == ASSIGN:
        bad, empty, node_map = _decode_assign(action, b.slot_job)
        rep = (empty, 0, 0, 0)
    else:
        bad, rep, node_map, total, free = _decode_pack(
            action,
            mode == DELTA,
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
        return PACK_FAILED, -1, total, free, 0, 0
    if mode == ASSIGN:  # (kept for a repair: only assign maps can need one)
        b.node_map[:] = node_map
    b.p0[:] = b.progress
    b.n0[:] = b.n_nodes
    b.d0[:] = b.debt
    nd, jb, st, rc = bundles(b)
    # Only ``assign`` maps can be infeasible: packed counts give idle nodes to slot jobs
    # (active), 0 or min..max each (the lockstep tests would see a repair otherwise).
    code, bad = engine._apply(f, r, node_map, mode == ASSIGN, bftrainer, nd, jb, st, rc)
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
    reward = reward_kernel(
        reward_kind, b.progress, b.p0, b.reward_weight, tput_scale, active, active0
    )
    if mode == COUNTS:
        _counts_mask(b.mask, b.slot_job, b.min_nodes, b.max_nodes, b.available, C)
    elif mode == DELTA:
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


class Step:
    """The step of one episode: bound to its state, instance and the env's parts (built
    at the first step after a reset, and again when the env's state object is replaced).
    """

    def __init__(
        self,
        state: ClusterState,
        instance: Instance,
        codec: ActionCodec,
        builder: ObservationBuilder,
        slots: JobSlots,
        profiler: PassiveProfiler,
        reward: str,
        decision_interval_s: float | None,
    ) -> None:
        s, inst = state, instance
        self.state, self.inst = s, inst
        self.codec, self.builder, self.slots, self.profiler = codec, builder, slots, profiler
        self.ctx = dynamics.context(inst)
        cl = inst.cluster
        J, N = inst.num_jobs, inst.num_nodes
        slowdown = cl.profiled_slowdown
        group, seg_start, seg_nodes = _static_order(slowdown, cl.topology.coords)
        self.node_map = np.empty(N, dtype=np.int32)
        self.f = np.zeros(engine.NUM_F)
        self.r = np.zeros(engine.NUM_R, dtype=np.int64)
        x, obs_work, job_static, curve, known, scale = builder.kernel_arrays()
        extra = (
            slots.job,
            np.ascontiguousarray(slowdown, dtype=np.float64),
            group,
            seg_start,
            seg_nodes,
            codec.mask_buffer,
            self.node_map,
            profiler.rate,
            profiler.samples,
            reward_weights(reward, inst),
            np.zeros(J),
            np.zeros(J, dtype=s.n_nodes.dtype),
            np.zeros(J),
            x,
            inst.supply.end_known,
            obs_work,
            job_static,
            curve,
            known,
            scale,
        )
        self.bag = StepBag(*dynamics.STATE_ARRAYS(s), *self.ctx.static, *extra)
        self.C = codec.C
        self.mode = codec.kernel_id
        self.reward_kind = REWARDS[reward].kernel
        self.tput_scale = throughput_scale(inst)
        self.interval = decision_interval_s
        self.action_mask = codec.mask_buffer.copy()  # the mask after the last step

    def __call__(self, action: np.ndarray) -> tuple:
        """One env step on a validated int64 action: (obs, reward, terminated, truncated,
        info), the state updated in place.
        """
        s, inst, ctx, f, r, bag, slots = (
            self.state,
            self.inst,
            self.ctx,
            self.f,
            self.r,
            self.bag,
            self.slots,
        )
        t0 = s.time
        if self.interval is None:
            limit, stop = ctx.t_end, _DECISION
        else:
            limit, stop = min(ctx.t_end, t0 + self.interval), _HORIZON
        active0 = s.active_job_s
        rest = (
            f,
            r,
            FLOATS(s),
            INTS(s),
            limit,
            stop,
            ctx.t_end,
            s.timers.peek_time(),
            ctx.bftrainer,
        )
        rest += (ctx.preempt_mode,)
        code, _, e0, e1, e2, e3 = _pre(bag, self.mode, action, self.C, *rest)
        if code == PACK_FAILED:  # (nothing changed)
            raise pack_failed(e0, e1)
        if code == OUT_OF_RANGE:  # (nothing changed; ``validate`` names the entry)
            self.codec.validate(action)
            raise AssertionError("an action out of range passed validation")
        dyn = None
        if code == NEEDS_REPAIR:  # nothing changed: repair the decoded map, apply it
            dyn = dynamics.repair_allocation(s, inst, self.node_map)
            code = _pre(bag, REPAIRED_MAP, action, self.C, *rest)[0]
        if code == TIMER_DUE:
            dynamics.finish_timers(s, ctx, f, r, 1, limit, stop, code)
        fl, ri = dynamics.store_registers(s, f, r)
        t = s.time
        builder = self.builder
        out = builder.outputs()
        reward, slots.cursor, counts = _post(
            bag,
            t0,
            t,
            inst.t_start,
            active0,
            s.active_job_s,
            self.reward_kind,
            self.tput_scale,
            self.mode,
            self.C,
            self.profiler.max_count,
            slots.cursor,
            s.arrival_cursor,
            ctx.t_end,
            *out,
        )
        kinds = ri[R_KINDS]
        metrics = None
        terminated, truncated = episode_end(ri[R_ALL_DONE], t0, t, ctx.t_end, kinds)
        if terminated or truncated:
            from mtgym.metrics import compute_metrics  # (not a kernel source: see _kernel_cache)

            metrics = compute_metrics(s, inst).as_dict()
        self.action_mask = mask = self.codec.mask_buffer.copy()
        obs = builder.complete(slots, self.profiler, mask, out, counts)
        info = step_info(
            t,
            mask,
            slots.job,
            builder.queued,
            repair_record(self.codec.mode, (e0, e1, e2, e3), dyn),
            (
                kinds,
                ri[R_RECLAIMED],
                ri[R_IDLE],
                ri[R_ARRIVALS],
                ri[R_COMPLETIONS],
                ri[R_STOPS],
                fl[F_SAMPLES],
                t - t0,
            ),
            metrics,
        )
        return obs, reward, terminated, truncated, info
