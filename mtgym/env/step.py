"""The env's step (the only one), in two compiled calls through one argument.

numba's dispatcher costs ~0.1 us per argument, and a step touches ~80 arrays (the state's,
the instance's, the slots', the profiler's, the observation builder's). ``StepKernel`` (a
numba ``StructRef``) holds them all: the episode the engine runs on
(``mtgym.sim.episode.Episode``), the observation's frame (``ObsFrame``) and the step's own
arrays and constants (``StepArrays``). Each call takes it whole: ``_pre`` decodes the
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

from typing import Any, NamedTuple

import numpy as np
from numba import njit
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
from mtgym.env.observation import ObservationBuilder, fill, log_arguments
from mtgym.env.reward import REWARDS, reward_kernel, reward_weights, throughput_scale
from mtgym.env.slots import JobSlots, _update
from mtgym.model.placement import _static_order
from mtgym.sim import dynamics, engine, episode
from mtgym.sim.engine import NEEDS_REPAIR, OUT_OF_RANGE, TIMER_DUE
from mtgym.sim.profiling import PassiveProfiler, _observe
from mtgym.sim.state import ClusterState
from mtgym.sim.struct import ValueTyped, define


class StepArrays(NamedTuple):
    """The step's own fields of ``StepKernel`` (besides ``episode`` and ``frame``)."""

    slot_job: np.ndarray  # (S,) job in each slot, -1 = empty (``JobSlots.job``)
    p_slowdown: np.ndarray  # (N, classes) profiled slowdowns (what placement sees)
    group: np.ndarray  # placement's static node order: group of each node ...
    seg_start: np.ndarray  # ... and each segment's first position and size
    seg_nodes: np.ndarray
    mask: np.ndarray  # the action mask (``ActionCodec.mask_buffer``), filled after a step
    node_map: np.ndarray  # (N,) int32: the decoded node map (kept for a repair)
    prof_rate: np.ndarray  # the passive profiler's tables (``PassiveProfiler``)
    prof_samples: np.ndarray
    reward_weight: np.ndarray  # (J,) per-job reward weights (``reward_weights``)
    progress0: np.ndarray  # (J,) progress, node counts and debts before the step
    n_nodes0: np.ndarray
    debt0: np.ndarray
    max_count: int  # the action's node-count cap
    reward_kind: int  # ``REWARDS[name].kernel``
    tput_scale: float  # the throughput reward's divisor
    profiler_max_count: int  # the profiler's largest node count


STEP_FIELDS = ("episode", "frame", *StepArrays._fields)


@structref.register
class StepKernelType(ValueTyped):
    """numba type of ``StepKernel``."""


class StepKernel(structref.StructRefProxy):
    """Every array of one env episode, for the step's kernels (built at the first step)."""

    def __new__(cls, *values: Any) -> StepKernel:  # noqa: D102
        return _new_step_kernel(*values)


define(StepKernel, StepKernelType, STEP_FIELDS)


@njit(cache=True)
def _new_step_kernel(*values: Any) -> StepKernel:  # pragma: no cover - jit
    """``StepKernel(*values)``, compiled once and cached (as ``mtgym.sim.episode.Episode``)."""
    return StepKernel(*values)


_DECISION = int(dynamics.DECISION_EVENTS)  # stop kinds as ints
_HORIZON = int(EventKind.HORIZON)
REPAIRED_MAP = 3  # ``_pre``'s mode beyond ``ACTION_MODES``: apply ``node_map`` as it is
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


@njit(cache=True, error_model="numpy")
def _pre(
    step: Any, mode: int, action: np.ndarray, until: float, stop_on: int, t_timer: float
) -> tuple[int, int, int, int, int, int]:  # pragma: no cover - jit
    """Decode an action (``mode``: an ``ACTION_MODES`` index; ``REPAIRED_MAP``: take
    ``step.node_map`` as it is, repaired), keep the progress, node counts and debts of
    before, then apply and run (``engine.apply``, then ``engine.loop``) on the episode,
    whose scalars Python loaded (``episode.load``). Returns (code, bad index, and the
    decoder's repair counts: empty slot, over max, below min, oversubscribed; ``assign``
    has only the first). ``PACK_FAILED`` gives the nodes needed and free in place of the
    first two counts. Nothing changes unless the code is the engine's ``DONE`` or
    ``TIMER_DUE``.
    """
    ep = step.episode
    total = free = 0
    if mode == REPAIRED_MAP:  # step.node_map as it is (repaired by the caller)
        bad, rep, node_map = -1, (0, 0, 0, 0), step.node_map.copy()
    elif mode == ASSIGN:
        bad, empty, node_map = _decode_assign(action, step.slot_job)
        rep = (empty, 0, 0, 0)
    else:
        bad, rep, node_map, total, free = _decode_pack(
            action,
            mode == DELTA,
            step.max_count,
            step.slot_job,
            ep.n_nodes,
            ep.min_nodes,
            ep.max_nodes,
            ep.available,
            ep.node_job,
            (step.p_slowdown, ep.rates.app_class, step.group, step.seg_start, step.seg_nodes),
        )
    if bad >= 0:
        return engine.OUT_OF_RANGE, bad, 0, 0, 0, 0
    if total > free:
        return PACK_FAILED, -1, total, free, 0, 0
    if mode == ASSIGN:  # (kept for a repair: only assign maps can need one)
        step.node_map[:] = node_map
    step.progress0[:] = ep.progress
    step.n_nodes0[:] = ep.n_nodes
    step.debt0[:] = ep.debt
    # Only ``assign`` maps can be infeasible: packed counts give idle nodes to slot jobs
    # (active), 0 or min..max each (the lockstep tests would see a repair otherwise).
    code = engine.apply(ep, node_map, mode == ASSIGN)
    if code == engine.DONE:
        code = engine.loop(ep, until, stop_on, t_timer, False)
    return code, -1, rep[0], rep[1], rep[2], rep[3]


@njit(cache=True, error_model="numpy")
def _post(
    step: Any, mode: int, t0: float, active0: float, slot_cursor: int, out: tuple
) -> tuple[float, int, tuple[int, int, int, int]]:  # pragma: no cover - jit
    """After the engine (the episode's scalars are the state's after the step; ``t0`` and
    ``active0`` its time and active job-seconds before): the profiler's observation, the
    slots' update from ``slot_cursor``, the reward, the action mask (``mode``), and the
    observation into ``out`` (``ObservationBuilder.outputs``). Returns (reward, the slots'
    cursor, (idle nodes, active jobs, held nodes, occupied slots)).
    """
    ep, frame = step.episode, step.frame
    scalars = ep.scalars[0]
    t = scalars.time
    if t - t0 > 0:
        _observe(
            (step.prof_rate, step.prof_samples),
            step.profiler_max_count,
            t0,
            t - t0,
            (step.progress0, step.n_nodes0, step.debt0),
            (ep.n_nodes, ep.stall_until, ep.debt, ep.progress),
        )
    nxt = _update(step.slot_job, ep.status, slot_cursor, scalars.arrival_cursor)
    reward = reward_kernel(
        step.reward_kind,
        ep.progress,
        step.progress0,
        step.reward_weight,
        step.tput_scale,
        scalars.active_job_s,
        active0,
    )
    C = step.max_count
    if mode == COUNTS:
        _counts_mask(step.mask, step.slot_job, ep.min_nodes, ep.max_nodes, ep.available, C)
    elif mode == DELTA:
        _delta_mask(
            step.mask, step.slot_job, ep.min_nodes, ep.max_nodes, ep.available, ep.n_nodes, C
        )
    else:
        _assign_mask(step.mask, step.slot_job, ep.available)
    counts = log_arguments(frame, t)
    fill(frame, t, counts, out)
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
        J, N = inst.num_jobs, inst.num_nodes
        slowdown = inst.cluster.profiled_slowdown
        group, seg_start, seg_nodes = _static_order(slowdown, inst.cluster.topology.coords)
        self.node_map = np.empty(N, dtype=np.int32)
        own = StepArrays(
            slot_job=slots.job,
            p_slowdown=np.ascontiguousarray(slowdown, dtype=np.float64),
            group=group,
            seg_start=seg_start,
            seg_nodes=seg_nodes,
            mask=codec.mask_buffer,
            node_map=self.node_map,
            prof_rate=profiler.rate,
            prof_samples=profiler.samples,
            reward_weight=reward_weights(reward, inst),
            progress0=np.zeros(J),
            n_nodes0=np.zeros(J, dtype=s.n_nodes.dtype),
            debt0=np.zeros(J),
            max_count=int(codec.C),
            reward_kind=REWARDS[reward].kernel,
            tput_scale=float(throughput_scale(inst)),
            profiler_max_count=int(profiler.max_count),
        )
        self.episode = episode.bind(s, inst)
        frame = builder.frame(s, inst, slots.job, inst.t_end)
        self.kernel = StepKernel(self.episode, frame, *own)
        self.mode = codec.kernel_id
        self.t_end = float(inst.t_end)
        self.interval = decision_interval_s
        self.action_mask = codec.mask_buffer.copy()  # the mask after the last step

    def __call__(self, action: np.ndarray) -> tuple:
        """One env step on a validated int64 action: (obs, reward, terminated, truncated,
        info), the state updated in place.
        """
        s, inst, ep, kernel, slots = self.state, self.inst, self.episode, self.kernel, self.slots
        t0 = s.time
        if self.interval is None:
            until, stop_on = self.t_end, _DECISION
        else:
            until, stop_on = min(self.t_end, t0 + self.interval), _HORIZON
        active0 = s.active_job_s
        t_timer = s.timers.peek_time()
        episode.load(ep, s)
        code, _, e0, e1, e2, e3 = _pre(kernel, self.mode, action, until, stop_on, t_timer)
        if code == PACK_FAILED:  # (nothing changed)
            raise pack_failed(e0, e1)
        if code == OUT_OF_RANGE:  # (nothing changed; ``validate`` names the entry)
            self.codec.validate(action)
            raise AssertionError("an action out of range passed validation")
        dyn = None
        if code == NEEDS_REPAIR:  # nothing changed: repair the decoded map, apply it
            dyn = dynamics.repair_allocation(s, inst, self.node_map)
            code = _pre(kernel, REPAIRED_MAP, action, until, stop_on, t_timer)[0]
        if code == TIMER_DUE:
            dynamics.finish_timers(ep, s, engine.THEN_LOOP, until, stop_on, code)
        done = episode.store(ep, s)
        t = s.time
        builder = self.builder
        out = builder.outputs()
        reward, slots.cursor, counts = _post(kernel, self.mode, t0, active0, slots.cursor, out)
        metrics = None
        terminated, truncated = episode_end(done.all_done, t0, t, self.t_end, done.kinds)
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
                done.kinds,
                done.reclaimed_nodes,
                done.idle_nodes,
                done.arrivals,
                done.completions,
                done.stops,
                done.samples,
                t - t0,
            ),
            metrics,
        )
        return obs, reward, terminated, truncated, info
