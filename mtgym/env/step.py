"""The env's step (the only one), in two compiled calls through one argument.

numba's dispatcher costs ~0.1 us per argument, and a step touches ~80 arrays (the state's,
the instance's, the slots', the profiler's, the observation builder's). ``StepKernel`` (a
numba ``StructRef``) holds them all: the episode the engine runs on
(``mtgym.sim.kernel.SimKernel``, field ``sim``), the observation's frame (``ObsFrame``), the action
mode's frame (``mtgym.env.actions.base.ActionFrame``, whose numba type names the mode) and
the step's own arrays and constants (``StepArrays``). Each call takes it whole: ``_pre``
decodes the action with the mode's kernel, places it and runs the engine
(``mtgym.sim.engine``); ``_post`` updates the profiler and the slots and the mode's mask and
fills the observation; ``step_reward`` computes the reward (the reward's kernel:
``mtgym.env.reward``) from the values before and after the step.
Both are compiled once per action mode (the mode is part of the struct's type); the reward
is ``step_reward``, a small call compiled per reward (its class is its argument's type), so
a reward costs one small compilation, not a copy of the step: no branch on either.
``tests/env/test_step.py`` checks every output against the general Python reference in
``tests/reference/step.py``, bit for bit.

The env validates the action first (``ActionCodec.validate``); here nothing changes
before the placement is known to fit (else ``ValueError``, as ``pack_targets``); a node
map to repair is repaired and applied, and due timers are finished, by the engine's Python
side, as for ``advance`` (``dynamics.settle``).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.experimental import structref

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind
from mtgym.env.actions import base as actions
from mtgym.env.actions.base import ActionCodec, ActionFrame, pack_failed
from mtgym.env.observation import ObservationBuilder, fill, log_arguments
from mtgym.env.reward import base as rewards
from mtgym.env.slots import JobSlots, _update
from mtgym.sim import dynamics, engine
from mtgym.sim import kernel as sim_kernel
from mtgym.sim.engine import OUT_OF_RANGE
from mtgym.sim.profiling import PassiveProfiler, _observe
from mtgym.sim.state import ClusterState
from mtgym.sim.struct import ValueTyped, define


class StepArrays(NamedTuple):
    """The step's own fields of ``StepKernel`` (besides ``sim``, ``frame``, ``actions``).

    Attributes:
        prof_rate: (J, C + 1) float64, the passive profiler's measured samples/s per (job,
            node count), NaN = never observed (``PassiveProfiler.rate``, the same array).
        prof_samples: (J, C + 1) int32, its intervals measured per entry.
        reward_weight: (J,) float64, the reward's per-job weights (``Reward.weights``).
        progress0: (J,) float64, the jobs' progress (samples) before the step (``_pre``
            writes it; the profiler and the reward read it).
        n_nodes0: (J,) the jobs' node counts before the step (the state's dtype).
        debt0: (J,) float64, the jobs' debts (samples to redo) before the step.
        reward_scale: the reward's scale (``Reward.scale``).
        profiler_max_count: the largest node count the profiler records.
    """

    prof_rate: np.ndarray
    prof_samples: np.ndarray
    reward_weight: np.ndarray
    progress0: np.ndarray
    n_nodes0: np.ndarray
    debt0: np.ndarray
    reward_scale: float
    profiler_max_count: int


STEP_FIELDS = ("sim", "frame", "actions", *StepArrays._fields)


@structref.register
class StepKernelType(ValueTyped):
    """numba type of ``StepKernel``."""


class StepKernel(structref.StructRefProxy):
    """Every array of one env episode, for the step's kernels (built at the first step).

    Its fields, in ``STEP_FIELDS`` order and passed positionally: ``sim`` (the episode's
    ``mtgym.sim.kernel.SimKernel``), ``frame`` (its ``ObsFrame``), ``actions`` (its
    ``ActionFrame``: the mode is part of the numba type) and the ``StepArrays``. The reward
    is ``step_reward``'s own argument (its class is its numba type).
    """

    def __new__(cls, *values: Any) -> StepKernel:  # noqa: D102
        return _new_step_kernel(*values)


define(StepKernel, StepKernelType, STEP_FIELDS)


@njit(cache=True)
def _new_step_kernel(*values: Any) -> StepKernel:  # pragma: no cover - jit
    """``StepKernel(*values)``, compiled once and cached (as ``mtgym.sim.kernel.SimKernel``)."""
    return StepKernel(*values)


_DECISION = int(dynamics.DECISION_EVENTS)  # stop kinds as ints
_HORIZON = int(EventKind.HORIZON)
_THEN_LOOP = engine.THEN_LOOP
PACK_FAILED = 10  # ``_pre``'s code beyond the engine's: more nodes needed than are free
#: ``info``'s counters of a step, in order (after ``repaired``): the engine call's counters,
#: declared once as ``mtgym.sim.kernel.COUNTERS`` (``event_kinds``, ..., ``samples``), then
#: ``elapsed_s``, the simulated seconds the step covered.
STEP_COUNTERS = (*(name for name, _ in sim_kernel.COUNTERS), "elapsed_s")
#: ``info``'s keys that repeat another key's value, after the counters: ``dt`` is
#: ``elapsed_s`` (the name ``mtgym.env.wrappers.TimeDiscount`` reads); ``events`` is
#: ``event_kinds`` under its old name, deprecated (kept for one release, then removed).
INFO_ALIASES = {"dt": "elapsed_s", "events": "event_kinds"}
#: A ``kernel.store`` record -> the values of its ``COUNTERS``, in order.
_COUNTERS_OF = attrgetter(*(name for name, _ in sim_kernel.COUNTERS))


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
    repair record (``repair_record``), ``repaired``, the ``STEP_COUNTERS``, their
    ``INFO_ALIASES`` (``dt``, and ``events``, deprecated) and, at the end of an episode,
    its metrics.

    Args:
        time: the simulated time now, seconds.
        mask: the action mask (copied).
        slot_job: (S,) the slots' jobs, -1 = empty (copied).
        queued: submitted, unfinished jobs without a slot.
        repair: the step's repair record; None at a reset (then ``counters`` is unused).
        counters: the values of ``STEP_COUNTERS``, in order (Python ints; ``samples`` and
            ``elapsed_s`` floats).
        metrics: ``EpisodeMetrics.as_dict()`` at an episode's last step, else None.

    Returns:
        The info dict, keys in the order above.
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
        info.update(zip(STEP_COUNTERS, counters, strict=True))  # type: ignore[arg-type]  # set with repair
        for alias, key in INFO_ALIASES.items():
            info[alias] = info[key]
    if metrics is not None:
        info["metrics"] = metrics
    return info


def episode_end(
    all_done: bool, t0: float, t: float, t_end: float, event_kinds: int
) -> tuple[bool, bool]:
    """(terminated, truncated): every job finished; else the horizon reached, or a step
    that moved no time and saw no event (nothing is left to happen).

    Args:
        all_done: the engine's flag: every job completed or stopped, none left to arrive.
        t0: the time before the step, seconds.
        t: the time after it.
        t_end: the episode's end.
        event_kinds: the ``EventKind`` bits of the step's events (0: none).
    """
    terminated = bool(all_done)
    return terminated, (not terminated) and (t >= t_end or (t == t0 and event_kinds == 0))


@njit(cache=True, error_model="numpy")
def _pre(
    step: Any, action: np.ndarray, until: float, stop_on: int, t_timer: float
) -> tuple[int, int, int]:  # pragma: no cover - jit
    """Decode an action (the mode's kernel: ``actions.decode``, resolved when this is
    compiled for the mode of ``step.actions``), keep the progress, node counts and debts of
    before, then apply and run (``engine.apply``, then ``engine.loop``) on the episode,
    whose scalars Python loaded (``mtgym.sim.kernel.load``). Returns (code, the first entry out of
    range or -1, 0), or for ``PACK_FAILED`` (code, nodes needed, nodes free); the decoder's
    repair counts are in ``step.actions.repairs``. Nothing changes unless the code is the
    engine's ``DONE`` or ``TIMER_DUE`` (``NEEDS_REPAIR``: the map, kept in
    ``step.actions.node_map``, needs ``dynamics.settle``).

    Args:
        step: the episode's ``StepKernel``.
        action: (A,) int64, the action (its range is checked here, by the decoder).
        until: the latest time the engine runs to, seconds.
        stop_on: the ``EventKind`` bits that end the run (the decision events, or the
            horizon with a decision interval).
        t_timer: the time of the next Python timer (+inf: none).
    """
    ep, act = step.sim, step.actions
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
    # (``bool(...)``: a plain bool, not a literal, so that ``apply`` and ``loop`` are the
    # same compiled functions as ``engine.run``'s, not compiled again for a constant)
    code = engine.apply(ep, node_map, bool(check))
    if code == engine.DONE:
        code = engine.loop(ep, until, stop_on, t_timer, bool(False))  # noqa: UP018
    return code, -1, 0


@njit(cache=True, error_model="numpy")
def _post(
    step: Any, t0: float, slot_cursor: int, out: tuple
) -> tuple[int, tuple[int, int, int, int]]:  # pragma: no cover - jit
    """After the engine (the episode's scalars are the state's after the step; ``t0`` its
    time before): the profiler's observation, the slots' update from ``slot_cursor``, the
    action mask (the mode's kernel: ``actions.mask``), and the observation into ``out``
    (``ObservationBuilder.outputs``). Returns (the slots' cursor, (idle nodes, active jobs,
    held nodes, occupied slots)).

    Args:
        step: the episode's ``StepKernel``, after ``_pre`` and the engine.
        t0: the time before the step, seconds (the profiler measures over [t0, now]).
        slot_cursor: the slots' admission cursor (``JobSlots.cursor``).
        out: ``ObservationBuilder.outputs()``' arrays, filled.
    """
    ep, frame = step.sim, step.frame
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
    actions.mask(step.actions)
    counts = log_arguments(frame, t)
    fill(frame, t, counts, out)
    return nxt, counts


@njit(cache=True, error_model="numpy")
def step_reward(reward: Any, step: Any, t0: float, active0: float) -> float:  # pragma: no cover
    """The step's reward by ``reward``'s kernel (``mtgym.env.reward``), after the engine:
    the episode's arrays are the state's after the step, ``step.progress0`` (and the other
    ``0`` arrays) before it; ``t0`` and ``active0`` the time and active job-seconds before.
    Compiled per reward class and step type: a small function, not a copy of ``_post``.
    """
    return rewards.compute(reward, step, t0, active0)


class Step:
    """The step of one episode: bound to its state, instance and the env's parts (built
    at the first step after a reset, and again when the env's state object is replaced).

    Args:
        state: the episode's state, updated in place by every call.
        instance: its instance.
        codec: the env's action codec.
        builder: the env's observation builder, bound to ``instance``.
        slots: the env's ``JobSlots``.
        profiler: the episode's passive profiler.
        reward: the reward's name (a key of ``mtgym.env.reward.REWARDS``).
        decision_interval_s: decide every that many simulated seconds; None: at every
            decision event.

    Attributes:
        sim: the episode's ``SimKernel`` (``mtgym.sim.kernel.bind``).
        actions: the codec's ``ActionFrame`` for this episode.
        kernel: the ``StepKernel`` the compiled calls take.
        reward: the env's ``Reward`` (``step_reward``'s argument).
        t_end: the episode's end, seconds.
        action_mask: the mask after the last step (a copy of the codec's buffer).
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
        rwd = rewards.make_reward(reward)
        own = StepArrays(
            prof_rate=profiler.rate,
            prof_samples=profiler.samples,
            reward_weight=np.asarray(rwd.weights(inst), dtype=np.float64),
            progress0=np.zeros(J),
            n_nodes0=np.zeros(J, dtype=s.n_nodes.dtype),
            debt0=np.zeros(J),
            reward_scale=float(rwd.scale(inst)),
            profiler_max_count=int(profiler.max_count),
        )
        self.sim = sim_kernel.bind(s, inst)
        frame = builder.frame(s, inst, slots.job, inst.t_end)
        self.actions: ActionFrame = codec.frame(s, inst, slots.job)
        self.kernel = StepKernel(self.sim, frame, self.actions, *own)
        self.reward = rwd
        self.t_end = float(inst.t_end)
        self.interval = decision_interval_s
        self.action_mask = codec.mask_buffer.copy()  # the mask after the last step

    def __call__(self, action: np.ndarray) -> tuple:
        """One env step on a validated int64 action: (obs, reward, terminated, truncated,
        info), the state updated in place.

        Args:
            action: (A,) int64, the shape checked (``ActionCodec.validate``); its range is
                checked here.

        Returns:
            Gymnasium's step tuple: the observation (fresh arrays), the reward (float),
            terminated, truncated, and the info (``step_info``).

        Raises:
            ValueError: an entry out of range (named), or a placement needing more nodes
                than are free; nothing changed.
        """
        s, inst, ep, kernel, slots = self.state, self.inst, self.sim, self.kernel, self.slots
        t0 = s.time
        if self.interval is None:
            until, stop_on = self.t_end, _DECISION
        else:
            until, stop_on = min(self.t_end, t0 + self.interval), _HORIZON
        active0 = s.active_job_s
        t_timer = s.timers.peek_time()
        sim_kernel.load(ep, s)
        code, x, y = _pre(kernel, action, until, stop_on, t_timer)
        if code == PACK_FAILED:  # (nothing changed)
            raise pack_failed(x, y)
        if code == OUT_OF_RANGE:  # (nothing changed; ``validate`` names the entry)
            self.codec.validate(action)
            raise AssertionError("an action out of range passed validation")
        codec = self.codec
        dyn, _ = dynamics.settle(ep, s, inst, codec.node_map, code, _THEN_LOOP, until, stop_on)
        done = sim_kernel.store(ep, s)
        t = s.time
        builder = self.builder
        out = builder.outputs()
        slots.cursor, counts = _post(kernel, t0, slots.cursor, out)
        reward = step_reward(self.reward, kernel, t0, active0)
        metrics = None
        terminated, truncated = episode_end(done.all_done, t0, t, self.t_end, done.event_kinds)
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
            (*_COUNTERS_OF(done), t - t0),
            metrics,
        )
        return obs, reward, terminated, truncated, info
