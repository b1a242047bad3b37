"""The env's step (the only one), in two compiled calls through one argument.

numba's dispatcher costs ~0.1 us per argument, and a step touches ~80 arrays (the state's,
the instance's, the slots', the profiler's, the observation builder's). ``StepKernel`` (a
numba ``StructRef``) holds them all: the episode the engine runs on
(``mtgym.sim.episode.Episode``), the observation's frame (``ObsFrame``), the action
mode's frame (``mtgym.env.actions.base.ActionFrame``, whose numba type names the mode) and
the step's own arrays and constants (``StepArrays``). Each call takes it whole: ``_pre``
decodes the action with the mode's kernel, places it and runs the engine
(``mtgym.sim.engine``); ``_post`` updates the profiler and the slots, computes the reward
(``mtgym.env.reward``) and the mode's mask and fills the observation. Both are compiled
once per action mode (the mode is part of the struct's type): no branch on the mode.
``tests/env/test_step.py`` checks every output against the general Python reference in
``tests/reference/step.py``, bit for bit.

The env validates the action first (``ActionCodec.validate``); here nothing changes
before the placement is known to fit (else ``ValueError``, as ``pack_targets``); a node
map to repair is repaired and applied, and due timers are finished, by the engine's Python
side, as for ``advance`` (``dynamics.settle``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind
from mtgym.env.actions import base as actions
from mtgym.env.actions.base import ActionCodec, ActionFrame, pack_failed
from mtgym.env.observation import ObservationBuilder, fill, log_arguments
from mtgym.env.reward import REWARDS, reward_kernel, reward_weights, throughput_scale
from mtgym.env.slots import JobSlots, _update
from mtgym.sim import dynamics, engine, episode
from mtgym.sim.engine import OUT_OF_RANGE
from mtgym.sim.profiling import PassiveProfiler, _observe
from mtgym.sim.state import ClusterState
from mtgym.sim.struct import ValueTyped, define


class StepArrays(NamedTuple):
    """The step's own fields of ``StepKernel`` (besides ``episode``, ``frame``, ``actions``)."""

    prof_rate: np.ndarray  # the passive profiler's tables (``PassiveProfiler``)
    prof_samples: np.ndarray
    reward_weight: np.ndarray  # (J,) per-job reward weights (``reward_weights``)
    progress0: np.ndarray  # (J,) progress, node counts and debts before the step
    n_nodes0: np.ndarray
    debt0: np.ndarray
    reward_kind: int  # ``REWARDS[name].kernel``
    tput_scale: float  # the throughput reward's divisor
    profiler_max_count: int  # the profiler's largest node count


STEP_FIELDS = ("episode", "frame", "actions", *StepArrays._fields)


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
_THEN_LOOP = engine.THEN_LOOP
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
    step: Any, action: np.ndarray, until: float, stop_on: int, t_timer: float
) -> tuple[int, int, int]:  # pragma: no cover - jit
    """Decode an action (the mode's kernel: ``actions.decode``, resolved when this is
    compiled for the mode of ``step.actions``), keep the progress, node counts and debts of
    before, then apply and run (``engine.apply``, then ``engine.loop``) on the episode,
    whose scalars Python loaded (``episode.load``). Returns (code, the first entry out of
    range or -1, 0), or for ``PACK_FAILED`` (code, nodes needed, nodes free); the decoder's
    repair counts are in ``step.actions.repairs``. Nothing changes unless the code is the
    engine's ``DONE`` or ``TIMER_DUE`` (``NEEDS_REPAIR``: the map, kept in
    ``step.actions.node_map``, needs ``dynamics.settle``).
    """
    ep, act = step.episode, step.actions
    bad, node_map, need, free, check = actions.decode(act, action)
    if bad >= 0:
        return engine.OUT_OF_RANGE, bad, 0
    if need > free:
        return PACK_FAILED, need, free
    if check:  # (kept for a repair: only maps the engine checks can need one)
        act.node_map[:] = node_map
    step.progress0[:] = ep.progress
    step.n_nodes0[:] = ep.n_nodes
    step.debt0[:] = ep.debt
    code = engine.apply(ep, node_map, check)
    if code == engine.DONE:
        code = engine.loop(ep, until, stop_on, t_timer, False)
    return code, -1, 0


@njit(cache=True, error_model="numpy")
def _post(
    step: Any, t0: float, active0: float, slot_cursor: int, out: tuple
) -> tuple[float, int, tuple[int, int, int, int]]:  # pragma: no cover - jit
    """After the engine (the episode's scalars are the state's after the step; ``t0`` and
    ``active0`` its time and active job-seconds before): the profiler's observation, the
    slots' update from ``slot_cursor``, the reward, the action mask (the mode's kernel:
    ``actions.mask``), and the
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
    nxt = _update(step.actions.slot_job, ep.status, slot_cursor, scalars.arrival_cursor)
    reward = reward_kernel(
        step.reward_kind,
        ep.progress,
        step.progress0,
        step.reward_weight,
        step.tput_scale,
        scalars.active_job_s,
        active0,
    )
    actions.mask(step.actions)
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
        J = inst.num_jobs
        own = StepArrays(
            prof_rate=profiler.rate,
            prof_samples=profiler.samples,
            reward_weight=reward_weights(reward, inst),
            progress0=np.zeros(J),
            n_nodes0=np.zeros(J, dtype=s.n_nodes.dtype),
            debt0=np.zeros(J),
            reward_kind=REWARDS[reward].kernel,
            tput_scale=float(throughput_scale(inst)),
            profiler_max_count=int(profiler.max_count),
        )
        self.episode = episode.bind(s, inst)
        frame = builder.frame(s, inst, slots.job, inst.t_end)
        self.actions: ActionFrame = codec.frame(s, inst, slots.job)
        self.kernel = StepKernel(self.episode, frame, self.actions, *own)
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
        code, x, y = _pre(kernel, action, until, stop_on, t_timer)
        if code == PACK_FAILED:  # (nothing changed)
            raise pack_failed(x, y)
        if code == OUT_OF_RANGE:  # (nothing changed; ``validate`` names the entry)
            self.codec.validate(action)
            raise AssertionError("an action out of range passed validation")
        codec = self.codec
        dyn, _ = dynamics.settle(ep, s, inst, codec.node_map, code, _THEN_LOOP, until, stop_on)
        done = episode.store(ep, s)
        t = s.time
        builder = self.builder
        out = builder.outputs()
        reward, slots.cursor, counts = _post(kernel, t0, active0, slots.cursor, out)
        metrics = None
        terminated, truncated = episode_end(done.all_done, t0, t, self.t_end, done.kinds)
        if terminated or truncated:
            from mtgym.metrics import compute_metrics  # (not a kernel source: see _kernel_cache)

            metrics = compute_metrics(s, inst).as_dict()
        self.action_mask = mask = codec.mask_buffer.copy()
        obs = builder.complete(slots, self.profiler, mask, out, counts)
        info = step_info(
            t,
            mask,
            slots.job,
            builder.queued,
            codec.repair_record(codec.repairs.tolist(), dyn),
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
