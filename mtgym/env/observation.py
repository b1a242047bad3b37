"""``ObservationBuilder``: state -> the env's Dict observation (fixed shapes, padded, masked).

All values are float32 and roughly O(1): rates, work and durations are log-scaled with fixed
constants (``log1p(x) / scale``, the C library's log1p: the same bits on every CPU), never
with instance truths, so nothing hidden leaks through normalisation. What a job row shows
depends on the information mode (``mtgym.sim.view``):
``user`` -> declared curve, work and costs; ``profiled`` -> only measured rates (passive
profiling) and no work or costs; ``oracle`` -> the truth.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np
from gymnasium import spaces
from numba import njit
from numba.experimental import structref

from mtgym.core.instance import Instance, readonly_view, readonly_views
from mtgym.core.types import NUM_CLASSES, JobStatus
from mtgym.env.slots import JobSlots
from mtgym.model.throughput import interp_rows
from mtgym.sim.numeric import log1p
from mtgym.sim.profiling import PassiveProfiler
from mtgym.sim.state import ClusterState
from mtgym.sim.struct import ValueTyped, define
from mtgym.sim.view import InfoMode

RATE_SCALE = 20.0  # log1p(samples/s) / 20: 1e8 samples/s -> 0.92
WORK_SCALE = 25.0  # log1p(samples) / 25
TIME_SCALE = 12.0  # log1p(seconds) / 12: one week -> 1.1
COST_SCALE = 60.0  # seconds / 60
OBS_HIGH = 8.0  # every scaled feature is clipped to [-1, 8] (values are O(1) by design)
_ACTIVE = int(JobStatus.ACTIVE)  # a compile-time constant in the kernels


# -- features by name: each key's columns, declared once (the env docstring's table) -------
def _columns(*parts: tuple[str, int]) -> dict[str, slice]:
    """Named parts of a row, in order: name -> its slice of columns.

    Args:
        parts: (name, width) pairs, left to right.

    Returns:
        name -> ``slice(start, start + width)``, the parts laid end to end from column 0.
    """
    out: dict[str, slice] = {}
    o = 0
    for name, width in parts:
        out[name] = slice(o, o + width)
        o += width
    return out


TOPO_DIM = 1  # topology columns, fixed
#: ``nodes`` columns: availability, held, GPU type, profiled slowdowns of classes A-D, log
#: idle time so far, window end known, log time until reclaim, then ``group``: the node's
#: group at the topology's coarsest level below the whole machine (0..1; 0 for a flat
#: machine). One column whatever the number of levels, so an observation's width does not
#: depend on the machine's topology depth (an agent trained on a 3-level machine can observe
#: a 4-level dragonfly).
NODE_FEATURES = _columns(
    ("available", 1),
    ("held", 1),
    ("gpu_type", 1),
    ("slowdown", NUM_CLASSES),
    ("idle_time", 1),
    ("end_known", 1),
    ("time_to_end", 1),
    ("group", TOPO_DIM),
)
#: ``jobs`` columns: present, class one-hot (A-D), nodes / cap, min / cap, max / cap, log
#: measured rate, log age, pausing, log progress, log remaining work, R_up, R_down, info level.
JOB_FEATURES = _columns(
    ("present", 1),
    ("app_class", NUM_CLASSES),
    ("nodes", 1),
    ("min", 1),
    ("max", 1),
    ("rate", 1),
    ("age", 1),
    ("pausing", 1),
    ("progress", 1),
    ("remaining", 1),
    ("r_up", 1),
    ("r_down", 1),
    ("info", 1),
)
#: ``global`` entries.
GLOBAL_FEATURES = _columns(
    ("time", 1), ("idle", 1), ("free", 1), ("queued", 1), ("slots", 1), ("log_time", 1)
)
#: ``job_scale`` columns, scale-free (the same meaning on 64 nodes as on 4,734): nodes held,
#: min and max as fractions of the idle pool; the position of the held count in the job's own
#: range ((n - min + 1) / (max - min + 1), 0 when not running); the shown rate as a fraction
#: of the shown curve's rate at the job's maximum (0 in ``profiled``).
JOB_SCALE_FEATURES = _columns(
    ("held_idle", 1), ("min_idle", 1), ("max_idle", 1), ("range_pos", 1), ("rate_rel", 1)
)
#: ``global_scale`` entries, scale-free: unheld idle nodes / idle nodes; the present slots'
#: summed minimum and maximum / idle nodes.
GLOBAL_SCALE_FEATURES = _columns(("free_idle", 1), ("demand_min", 1), ("demand_max", 1))
#: ``job_shape``'s points: the shown curve at min + f (max - min), f = 0, 1/7, ..., 1, over
#: its rate at the maximum (0 in ``profiled``): the job's scaling, whatever its size.
SHAPE_POINTS = 8
#: The keys with named columns in every observation (the others: scale-free modes only).
BASE_KEYS = ("nodes", "jobs", "global")


class FeatureMap(dict):
    """key -> feature -> its columns (``slice``), with the feature set's ``version``.

    ``FEATURES_VERSION`` rises when an existing feature changes meaning or goes away; a
    feature added under a new name does not raise it, because consumers read columns by
    name (``agents.pooled``): an agent trained before the addition still reads its own
    columns, bit for bit.
    """

    version: int = 0


#: The feature set's version (``FeatureMap``): 1 = the columns declared above.
FEATURES_VERSION = 1
#: The observation's features by name: key -> feature -> its columns (``ScavengeEnv.features``;
#: consumers index through this, never by position).
FEATURES = {
    "nodes": NODE_FEATURES,
    "jobs": JOB_FEATURES,
    "global": GLOBAL_FEATURES,
    "job_scale": JOB_SCALE_FEATURES,
    "global_scale": GLOBAL_SCALE_FEATURES,
}

# The columns as the kernels' compile-time constants.
NODE_AVAILABLE = NODE_FEATURES["available"].start
NODE_HELD = NODE_FEATURES["held"].start
NODE_GPU_TYPE = NODE_FEATURES["gpu_type"].start
NODE_SLOWDOWN = NODE_FEATURES["slowdown"].start  # NUM_CLASSES columns
NODE_IDLE_TIME = NODE_FEATURES["idle_time"].start
NODE_END_KNOWN = NODE_FEATURES["end_known"].start
NODE_TIME_TO_END = NODE_FEATURES["time_to_end"].start
NODE_COORDS = NODE_GROUP = NODE_FEATURES["group"].start  # the topology column(s)
NODE_DIM = NODE_FEATURES["group"].stop
JOB_PRESENT = JOB_FEATURES["present"].start
JOB_CLASS = JOB_FEATURES["app_class"].start  # class one-hot: NUM_CLASSES columns
JOB_NODES = JOB_FEATURES["nodes"].start
JOB_MIN, JOB_MAX = JOB_FEATURES["min"].start, JOB_FEATURES["max"].start
JOB_RATE, JOB_AGE = JOB_FEATURES["rate"].start, JOB_FEATURES["age"].start
JOB_PAUSING, JOB_PROGRESS = JOB_FEATURES["pausing"].start, JOB_FEATURES["progress"].start
JOB_REMAINING = JOB_FEATURES["remaining"].start
JOB_R_UP, JOB_R_DOWN = JOB_FEATURES["r_up"].start, JOB_FEATURES["r_down"].start
JOB_INFO = JOB_FEATURES["info"].start
JOB_DIM = JOB_FEATURES["info"].stop
G_TIME, G_IDLE = GLOBAL_FEATURES["time"].start, GLOBAL_FEATURES["idle"].start
G_FREE, G_QUEUED = GLOBAL_FEATURES["free"].start, GLOBAL_FEATURES["queued"].start
G_SLOTS, G_LOG_TIME = GLOBAL_FEATURES["slots"].start, GLOBAL_FEATURES["log_time"].start
GLOBAL_DIM = GLOBAL_FEATURES["log_time"].stop
S_HELD, S_MIN = JOB_SCALE_FEATURES["held_idle"].start, JOB_SCALE_FEATURES["min_idle"].start
S_MAX, S_POS = JOB_SCALE_FEATURES["max_idle"].start, JOB_SCALE_FEATURES["range_pos"].start
S_RATE = JOB_SCALE_FEATURES["rate_rel"].start
SCALE_DIM = JOB_SCALE_FEATURES["rate_rel"].stop
GS_FREE, GS_MIN = (
    GLOBAL_SCALE_FEATURES["free_idle"].start,
    GLOBAL_SCALE_FEATURES["demand_min"].start,
)
GS_MAX = GLOBAL_SCALE_FEATURES["demand_max"].start
GLOBAL_SCALE_DIM = GLOBAL_SCALE_FEATURES["demand_max"].stop
#: ``log_arguments``' per-slot arguments, in order (a stride of ``L_SLOT`` per slot, after
#: the nodes' two per node): shown rate, age, progress, remaining work.
L_RATE, L_AGE, L_PROGRESS, L_REMAINING = range(4)
L_SLOT = 4
_L_SCALES = {L_RATE: RATE_SCALE, L_AGE: TIME_SCALE, L_PROGRESS: WORK_SCALE, L_REMAINING: WORK_SCALE}


# -- what the observation's kernels read: one ``ObsFrame``, its fields declared here ---------
#: the state's arrays, by their ``ClusterState`` names
FROM_STATE = (
    "available",
    "window",
    "node_job",
    "status",
    "rate",
    "stall_until",
    "progress",
    "n_nodes",
)
#: the instance's: field name -> attribute path
FROM_INSTANCE = {
    "start_s": "supply.start_s",
    "end_s": "supply.end_s",
    "end_known": "supply.end_known",
    "submit_s": "jobs.submit_s",
    "min_nodes": "jobs.min_nodes",
    "max_nodes": "jobs.max_nodes",
    "t_start": "t_start",
}
#: the slots' jobs, the horizon, and the builder's own (bound per instance): the buffer of
#: log-scaled arguments and their divisors, the work shown, the static job rows, curves and
#: known flags, the node-count cap, each job's reference rate (the shown curve's at its
#: maximum; 0: unknown) and its shape (``SHAPE_POINTS``)
OWN = (
    "slot_job",
    "t_end",
    "log_args",
    "log_scale",
    "shown_work",
    "job_static",
    "curve_static",
    "known_static",
    "max_count",
    "ref_rate",
    "shape_static",
)
FRAME_FIELDS = (*FROM_STATE, *FROM_INSTANCE, *OWN)
_STATE = attrgetter(*FROM_STATE)
_INSTANCE = attrgetter(*FROM_INSTANCE.values())


@structref.register
class ObsFrameType(ValueTyped):
    """numba type of ``ObsFrame``."""


class ObsFrame(structref.StructRefProxy):
    """Everything the observation's kernels read (``FRAME_FIELDS``), taken whole by them
    (``ObservationBuilder.frame`` builds one).

    Its fields, in ``FRAME_FIELDS`` order and passed positionally: ``FROM_STATE`` (the
    state's own arrays: a frame stays current across in-place steps), ``FROM_INSTANCE``
    and ``OWN`` (the slots' jobs, the horizon and the builder's arrays for the episode).
    """

    def __new__(cls, *values: Any) -> ObsFrame:  # noqa: D102
        return _new_frame(*values)


define(ObsFrame, ObsFrameType, FRAME_FIELDS)


@njit(cache=True)
def _new_frame(*values: Any) -> ObsFrame:  # pragma: no cover - jit
    """``ObsFrame(*values)``, compiled once and cached (as ``mtgym.sim.kernel.SimKernel``)."""
    return ObsFrame(*values)


def curve_points(max_count: int) -> np.ndarray:
    """Node counts at which curves are observed: 1, 2, 4, ... and ``max_count``.

    Args:
        max_count: the count cap, >= 1.

    Returns:
        (P,) float64: the powers of two below ``max_count``, then ``max_count`` itself
        (P = 1 + ceil(log2(max_count)); ``[1.0]`` for a cap of 1).
    """
    pts = [1]
    while pts[-1] * 2 < max_count:
        pts.append(pts[-1] * 2)
    if pts[-1] != max_count:
        pts.append(max_count)
    return np.array(pts[: max(1, len(pts))], dtype=np.float64)


class ObservationBuilder:
    """Builds observations for fixed sizes; buffers are preallocated and reused.

    Build once per env, ``bind`` once per episode, then ``build`` (or, in the step,
    ``frame`` + ``outputs`` + the kernels ``log_arguments`` and ``fill`` + ``complete``).

    Args:
        num_nodes: N, the machine's nodes (``nodes`` rows).
        num_slots: S, the job slots (``jobs`` rows).
        max_count: C, the count cap: node counts are shown / C and curves end at C.
        num_levels: the topology's levels, the whole machine included; ``group`` reads the
            coarsest level below the machine, level ``num_levels - 2`` when that is at
            least 1 (else the column is 0).
        num_gpu_types: the GPU types T; ``gpu_type`` is shown / (T - 1).
        mode: the information mode: what the job rows and curves show.
        mask_size: the action mask's length (``obs["action_mask"]``).
        scale_free: add ``job_scale``, ``job_shape`` and ``global_scale`` (the
            ``SCALE_FREE_MODES``).

    Attributes:
        points: (P,) float64, the node counts the curves are shown at (``curve_points``).
        P: their number.
        features: key -> feature -> its columns, for the keys this observation has.
        queued: submitted jobs without a slot, as of the last ``complete``.
        space: the observation's ``gymnasium.spaces.Dict``.
    """

    NODE_BASE = NODE_COORDS  # (the columns before the topology coordinates)

    def __init__(
        self,
        num_nodes: int,
        num_slots: int,
        max_count: int,
        num_levels: int,
        num_gpu_types: int,
        mode: InfoMode,
        mask_size: int,
        scale_free: bool = False,
    ) -> None:
        self.N, self.S, self.C = num_nodes, num_slots, max_count
        # the scale-free keys (``SCALE_FREE_KEYS``) only for the modes that read them: the
        # other modes' step does not pay for them
        self.scale_free = bool(scale_free)
        self.mode = mode
        self.points = curve_points(max_count)
        self.P = self.points.size
        self.levels = num_levels  # the coarsest intermediate level is levels - 2 (if >= 1)
        self.T = num_gpu_types
        self.node_dim = NODE_DIM
        # each key's features by name (``FEATURES``), for the keys this observation has
        self.features = FeatureMap(
            {k: v for k, v in FEATURES.items() if self.scale_free or k in BASE_KEYS}
        )
        self.features.version = FEATURES_VERSION
        self.job_dim = JOB_DIM
        self.global_dim = GLOBAL_DIM
        self.queued = 0  # submitted jobs without a slot, as of the last ``build``
        f32 = np.float32
        self.space = spaces.Dict(
            {
                "nodes": spaces.Box(-1.0, OBS_HIGH, (self.N, self.node_dim), f32),
                "node_mask": spaces.Box(0.0, 1.0, (self.N,), f32),
                "node_job": spaces.Box(-1.0, float(max(self.S - 1, 0)), (self.N,), f32),
                "jobs": spaces.Box(-1.0, OBS_HIGH, (self.S, self.job_dim), f32),
                "job_mask": spaces.Box(0.0, 1.0, (self.S,), f32),
                "job_curve": spaces.Box(0.0, OBS_HIGH, (self.S, self.P), f32),
                "job_curve_known": spaces.Box(0.0, 1.0, (self.S, self.P), f32),
                "global": spaces.Box(-1.0, OBS_HIGH, (self.global_dim,), f32),
                **(
                    {
                        "job_scale": spaces.Box(-1.0, OBS_HIGH, (self.S, SCALE_DIM), f32),
                        "job_shape": spaces.Box(0.0, OBS_HIGH, (self.S, SHAPE_POINTS), f32),
                        "global_scale": spaces.Box(-1.0, OBS_HIGH, (GLOBAL_SCALE_DIM,), f32),
                    }
                    if self.scale_free
                    else {}
                ),
                "action_mask": spaces.Box(0, 1, (mask_size,), np.int8),
            }
        )
        f0 = np.zeros(0, dtype=f32)  # (no scale-free keys: empty, shared, never written)
        self._no_scale = (f0.reshape(0, SCALE_DIM), f0.reshape(0, SHAPE_POINTS), f0)

    def bind(self, instance: Instance) -> None:
        """Precompute the parts of the observation that never change in an episode.

        The static node columns (GPU type, profiled slowdowns, topology group), each job's
        static row (present, class, min and max / C; in ``user`` and ``oracle`` also the
        rescale costs and the info level), its declared or true curve at ``points`` and
        which points are known (in ``profiled`` zeros: ``complete`` adds the measured
        ones), the scale-free reference rates and shapes, and the divisors of the
        log-scaled features (``log_arguments``' layout).

        Args:
            instance: the episode's instance, of the sizes the builder was made for.
        """
        cl, jobs = instance.cluster, instance.jobs
        C = self.C
        ns = np.zeros((self.N, self.node_dim), dtype=np.float32)
        ns[:, NODE_GPU_TYPE] = cl.gpu_type / max(self.T - 1, 1)
        ns[:, NODE_SLOWDOWN : NODE_SLOWDOWN + NUM_CLASSES] = cl.profiled_slowdown
        top = self.levels - 2  # the coarsest level below the machine (none if < 1)
        if top >= 1:
            group = cl.topology.coords[:, top]
            ns[:, NODE_GROUP] = group / max(int(group.max()), 1)
        np.clip(ns, -1.0, OBS_HIGH, out=ns)
        self._node_static = ns
        J = instance.num_jobs
        js = np.zeros((J, self.job_dim), dtype=np.float32)
        js[:, JOB_PRESENT] = 1.0
        js[np.arange(J), JOB_CLASS + jobs.app_class.astype(np.int64)] = 1.0
        js[:, JOB_MIN] = jobs.min_nodes / C
        js[:, JOB_MAX] = np.minimum(jobs.max_nodes, C) / C
        curve = np.zeros((J, self.P), dtype=np.float32)
        known = np.zeros((J, self.P), dtype=np.float32)
        self._ref_rate = np.zeros(J)
        self._shape = np.zeros((J, SHAPE_POINTS), dtype=np.float32)
        self._work = None
        if self.mode is not InfoMode.PROFILED and J:
            self._bind_shape(jobs, self.mode is InfoMode.ORACLE)
            oracle = self.mode is InfoMode.ORACLE
            tput = jobs.curve_tput if oracle else jobs.declared_curve_tput
            pts = np.broadcast_to(self.points, (J, self.P))
            rows = np.repeat(np.arange(J), self.P)
            vals = interp_rows(pts.ravel(), jobs.curve_nodes[rows], tput[rows]).reshape(J, self.P)
            kn = pts <= np.minimum(jobs.max_nodes, C)[:, None]
            curve[:] = log1p(np.where(kn, vals, 0.0)) / RATE_SCALE
            known[:] = kn
            js[:, JOB_R_UP] = (jobs.r_up_s if oracle else jobs.declared_r_up_s) / COST_SCALE
            js[:, JOB_R_DOWN] = (jobs.r_down_s if oracle else jobs.declared_r_down_s) / COST_SCALE
            js[:, JOB_INFO] = 1.0
            self._work = jobs.work
        np.clip(js, -1.0, OBS_HIGH, out=js)
        np.clip(curve, 0.0, OBS_HIGH, out=curve)
        self._job_static, self._curve, self._known = js, curve, known
        N, S = self.N, self.S
        # Divisors of the log-scaled arguments ``log_arguments`` lays out (see there).
        self._scale = np.concatenate(
            (
                np.full(2 * N, TIME_SCALE),
                np.tile([_L_SCALES[k] for k in range(L_SLOT)], S),
                [TIME_SCALE],
            )
        )
        self._work_arr = jobs.work if self._work is not None else np.zeros(0)
        self._x = np.zeros(2 * N + L_SLOT * S + 1)  # ``log_arguments``' output, reused

    def _bind_shape(self, jobs: Any, oracle: bool) -> None:
        """Each job's reference rate (its shown curve at its maximum) and its curve at
        ``SHAPE_POINTS`` fractions of its own range over that rate.

        Args:
            jobs: the instance's jobs.
            oracle: read the true curves (``oracle``), else the declared ones (``user``).
        """
        J = jobs.min_nodes.shape[0]
        tput = jobs.curve_tput if oracle else jobs.declared_curve_tput
        lo = np.maximum(jobs.min_nodes, 1).astype(np.float64)
        hi = np.maximum(jobs.max_nodes, lo).astype(np.float64)
        f = np.linspace(0.0, 1.0, SHAPE_POINTS)
        pts = np.round(lo[:, None] + f[None, :] * (hi - lo)[:, None])
        rows = np.repeat(np.arange(J), SHAPE_POINTS)
        vals = interp_rows(pts.ravel(), jobs.curve_nodes[rows], tput[rows]).reshape(J, -1)
        ref = vals[:, -1]
        self._ref_rate = np.where(ref > 0, ref, 0.0)
        shape = np.where(ref[:, None] > 0, vals / np.where(ref > 0, ref, 1.0)[:, None], 0.0)
        self._shape = np.clip(shape, 0.0, OBS_HIGH).astype(np.float32)

    def frame(self, state: Any, instance: Any, slot_job: np.ndarray, t_end: float) -> ObsFrame:
        """The kernels' view of ``state`` on ``instance`` (after ``bind``): the same arrays,
        so an ``ObsFrame`` kept across in-place steps stays current (``mtgym.env.step``).

        Args:
            state: the state (its arrays, not copies).
            instance: the instance ``bind`` was called with.
            slot_job: (S,) the slots' jobs (the env's ``JobSlots.job``).
            t_end: the episode's end, seconds: ``global``'s time is shown / its span.

        Returns:
            A new ``ObsFrame``.
        """
        own = (
            slot_job,
            float(t_end),
            self._x,
            self._scale,
            readonly_view(self._work_arr),  # (an instance's, or zeros: one compiled type)
            self._job_static,
            self._curve,
            self._known,
            self.C,
            self._ref_rate,
            self._shape,
        )
        return ObsFrame(*_STATE(state), *readonly_views(_INSTANCE(instance)), *own)

    def build(
        self,
        state: ClusterState,
        instance: Instance,
        slots: JobSlots,
        profiler: PassiveProfiler,
        action_mask: np.ndarray,
        t_end: float,
    ) -> dict[str, np.ndarray]:
        """The observation of ``state`` (fresh arrays: safe to keep). Call ``bind`` first.

        Args:
            state: the state now.
            instance: the instance ``bind`` was called with.
            slots: the env's ``JobSlots``.
            profiler: the episode's passive profiler (its measured curves in ``profiled``).
            action_mask: (mask_size,) int8, copied into ``obs["action_mask"]``.
            t_end: the episode's end, seconds.

        Returns:
            key -> float32 array (``action_mask`` int8), the keys of ``space``.
        """
        frame = self.frame(state, instance, slots.job, t_end)
        counts = log_arguments(frame, state.time)
        out = self.outputs()
        fill(frame, state.time, counts, out)
        return self.complete(slots, profiler, action_mask, out, counts)

    def outputs(self) -> tuple[np.ndarray, ...]:
        """Fresh output arrays for ``fill``.

        In order: nodes (a copy of the static part), node_job, node_mask, jobs, job_mask,
        job_curve, job_curve_known, global, job_scale, job_shape, global_scale. Allocated
        here: numba would box each array it returned, slower than this.
        """
        N, S, f32 = self.N, self.S, np.float32
        return (
            self._node_static.copy(),
            np.empty(N, dtype=f32),
            np.empty(N, dtype=f32),
            np.zeros((S, self.job_dim), dtype=f32),
            np.empty(S, dtype=f32),
            np.zeros((S, self.P), dtype=f32),
            np.zeros((S, self.P), dtype=f32),
            np.empty(self.global_dim, dtype=f32),
            *self._scale_free_outputs(),
        )

    def _scale_free_outputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``job_scale``, ``job_shape`` and ``global_scale``: zeroed views of one fresh
        block (one allocation per step rather than three).

        Returns:
            (S, SCALE_DIM), (S, SHAPE_POINTS) and (GLOBAL_SCALE_DIM,) float32; without
            the scale-free keys, three shared empty arrays (``fill`` writes nothing there).
        """
        if not self.scale_free:
            return self._no_scale
        S = self.S
        block = np.zeros(S * (SCALE_DIM + SHAPE_POINTS) + GLOBAL_SCALE_DIM, dtype=np.float32)
        a, b = S * SCALE_DIM, S * (SCALE_DIM + SHAPE_POINTS)
        return (
            block[:a].reshape(S, SCALE_DIM),
            block[a:b].reshape(S, SHAPE_POINTS),
            block[b:],
        )

    def complete(
        self,
        slots: JobSlots,
        profiler: PassiveProfiler,
        action_mask: np.ndarray,
        out: tuple[np.ndarray, ...],
        counts: tuple[int, int, int, int],
    ) -> dict[str, np.ndarray]:
        """The observation from ``outputs()`` filled by ``fill`` and the ``counts``
        ``log_arguments`` returned (idle nodes, active jobs, held nodes, occupied slots); in
        ``profiled`` mode the measured curves are added here.

        Args:
            slots: the env's ``JobSlots`` (the present slots' jobs, for ``profiled``).
            profiler: the passive profiler; read in ``profiled`` mode only (None otherwise
                is fine).
            action_mask: (mask_size,) int8, copied.
            out: ``outputs()``' arrays after ``fill``; they become the observation's
                arrays (not copied).
            counts: ``log_arguments``' four counts; sets ``queued``.

        Returns:
            key -> array, the keys of ``space``.
        """
        nodes, node_job, node_mask, jf, job_mask, curve, known_c, g, js, shape, gs = out
        n_present = counts[3]
        self.queued = counts[1] - n_present  # JobSlots.queued(state), for the env's info
        if self._work is None and n_present:  # profiled: only what was measured
            idx = np.flatnonzero(slots.present)
            j = slots.job[idx]
            vals, kn = profiler.curve_at(j, self.points)
            jf[idx, JOB_INFO] = (~np.isnan(profiler.rate[j, 1:])).sum(axis=1) / self.C
            curve[idx] = log1p(vals) / RATE_SCALE
            known_c[idx] = kn
            np.clip(jf[:, JOB_INFO], -1.0, OBS_HIGH, out=jf[:, JOB_INFO])
            np.clip(curve, 0.0, OBS_HIGH, out=curve)
        return {
            "nodes": nodes,
            "node_mask": node_mask,
            "node_job": node_job,
            "jobs": jf,
            "job_mask": job_mask,
            "job_curve": curve,
            "job_curve_known": known_c,
            "global": g,
            **(
                {"job_scale": js, "job_shape": shape, "global_scale": gs} if self.scale_free else {}
            ),
            "action_mask": action_mask.copy(),
        }


# ---------------------------------------------------------------------------------------
# Compiled kernels (numba): the loop form of the vectorised build. Logarithms are left to
# numpy (``build``), so every value is bit-identical to the vectorised formulas.
# ---------------------------------------------------------------------------------------
@njit(cache=True)
def log_arguments(frame: Any, t: float) -> tuple[int, int, int, int]:  # pragma: no cover - jit
    """Arguments of the log-scaled features at time ``t`` into ``frame.log_args``, flat: per
    node the idle time so far and the known time until reclaim (2N), then per slot the shown
    rate, age, progress and remaining work (``L_SLOT`` S; 0 for an empty slot, remaining
    work 0 when ``work`` is empty), then the time since the start. Returns the idle node
    count, the active job count, the nodes held by jobs and the occupied slots.

    Args:
        frame: the ``ObsFrame``.
        t: the time now, seconds.

    Returns:
        (idle nodes, active jobs, nodes held by jobs, occupied slots): what ``fill`` and
        ``ObservationBuilder.complete`` need (queued jobs = active - occupied).
    """
    x, available, window, start_s = frame.log_args, frame.available, frame.window, frame.start_s
    end_s, end_known, slot_job, status = frame.end_s, frame.end_known, frame.slot_job, frame.status
    rate, stall_until, submit_s = frame.rate, frame.stall_until, frame.submit_s
    progress, work, n_nodes = frame.progress, frame.shown_work, frame.n_nodes
    N = available.shape[0]
    S = slot_job.shape[0]
    x[:] = 0.0
    n_avail = 0
    for n in range(N):
        if available[n]:
            n_avail += 1
        w = window[n]
        if w >= 0:
            x[n] = max(t - start_s[w], 0.0)
            if end_known[w]:
                x[N + n] = max(end_s[w] - t, 0.0)
    n_active = n_held = 0
    for j in range(status.shape[0]):
        if status[j] == _ACTIVE:
            n_active += 1
        n_held += n_nodes[j]
    o = 2 * N
    n_present = 0
    for s in range(S):
        j = slot_job[s]
        if j < 0:
            continue
        n_present += 1
        r = o + L_SLOT * s
        x[r + L_RATE] = 0.0 if stall_until[j] > t else rate[j]  # 0 while the job pauses
        x[r + L_AGE] = max(t - submit_s[j], 0.0)
        x[r + L_PROGRESS] = progress[j]
        if work.shape[0]:
            x[r + L_REMAINING] = max(work[j] - progress[j], 0.0)
    x[o + L_SLOT * S] = max(t - frame.t_start, 0.0)
    return n_avail, n_active, n_held, n_present


@njit(cache=True)
def _clip32(v: float, lo: float) -> np.float32:  # pragma: no cover - jit
    """``v`` as float32, clipped to [lo, OBS_HIGH] (as ``np.clip`` on the float32 array).

    Args:
        v: the float64 value; rounded to float32 before the clip, as the vectorised build
            cast then clipped.
        lo: the lower bound (-1 for most features, 0 for curves and fractions).
    """
    f = np.float32(v)
    return min(max(f, np.float32(lo)), np.float32(OBS_HIGH))


@njit(cache=True)
def fill(
    frame: Any, t: float, counts: tuple[int, int, int, int], out: tuple
) -> None:  # pragma: no cover - jit
    """Fill ``out`` (``ObservationBuilder.outputs()``: nodes, a copy of the static part;
    node_job; node_mask; jobs; job_mask; job_curve and job_curve_known, zeros; global) at
    time ``t`` from the static parts, the features (``log1p`` of ``log_arguments``' output,
    divided by ``frame.log_scale``) and the ``counts`` it returned.

    Args:
        frame: the ``ObsFrame``, its ``log_args`` filled by ``log_arguments`` at ``t``.
        t: the time now, seconds.
        counts: ``log_arguments``' (idle nodes, active jobs, held nodes, occupied slots).
        out: the eleven output arrays, written in place; the last three (scale-free)
            only when they are not empty.
    """
    nodes, node_slot, node_mask, job_rows, job_mask, curve, known, global_row = out[:8]
    n_avail, n_active, n_held, n_present = counts
    x, scale, available, node_job = frame.log_args, frame.log_scale, frame.available, frame.node_job
    window, end_known, slot_job, n_nodes = (
        frame.window,
        frame.end_known,
        frame.slot_job,
        frame.n_nodes,
    )
    stall_until, job_static = frame.stall_until, frame.job_static
    curve_static, known_static, max_count = frame.curve_static, frame.known_static, frame.max_count
    t_start, t_end = frame.t_start, frame.t_end
    N = available.shape[0]
    S = slot_job.shape[0]
    slot_of_job = np.full(job_static.shape[0], -1, dtype=np.int64)
    for s in range(S):
        if slot_job[s] >= 0:
            slot_of_job[slot_job[s]] = s
    for n in range(N):
        nodes[n, NODE_AVAILABLE] = 1.0 if available[n] else 0.0
        node_mask[n] = 1.0 if available[n] else 0.0
        j = node_job[n]
        nodes[n, NODE_HELD] = 1.0 if j >= 0 else 0.0
        node_slot[n] = slot_of_job[j] if j >= 0 else -1
        w = window[n]
        nodes[n, NODE_IDLE_TIME] = _clip32(np.log1p(x[n]) / scale[n], -1.0)
        nodes[n, NODE_END_KNOWN] = 1.0 if w >= 0 and end_known[w] else 0.0
        nodes[n, NODE_TIME_TO_END] = _clip32(np.log1p(x[N + n]) / scale[N + n], -1.0)
    D = job_static.shape[1]
    P = curve_static.shape[1]
    o = 2 * N
    for s in range(S):
        j = slot_job[s]
        job_mask[s] = 1.0 if j >= 0 else 0.0
        if j < 0:
            continue
        for k in range(D):
            job_rows[s, k] = job_static[j, k]
        job_rows[s, JOB_NODES] = _clip32(n_nodes[j] / max_count, -1.0)
        r = o + L_SLOT * s
        job_rows[s, JOB_RATE] = _clip32(np.log1p(x[r + L_RATE]) / scale[r + L_RATE], -1.0)
        job_rows[s, JOB_AGE] = _clip32(np.log1p(x[r + L_AGE]) / scale[r + L_AGE], -1.0)
        job_rows[s, JOB_PAUSING] = 1.0 if stall_until[j] > t else 0.0
        job_rows[s, JOB_PROGRESS] = _clip32(
            np.log1p(x[r + L_PROGRESS]) / scale[r + L_PROGRESS], -1.0
        )
        job_rows[s, JOB_REMAINING] = _clip32(
            np.log1p(x[r + L_REMAINING]) / scale[r + L_REMAINING], -1.0
        )
        for k in range(P):
            curve[s, k] = curve_static[j, k]
            known[s, k] = known_static[j, k]
    # global: float64 values, then float32 and clipped
    span = t_end - t_start
    global_row[G_TIME] = _clip32(
        (t - t_start) / max(span, 1.0) if np.isfinite(t_end) else 0.0, -1.0
    )
    global_row[G_IDLE] = _clip32(n_avail / N, -1.0)
    global_row[G_FREE] = _clip32((n_avail - n_held) / N, -1.0)
    global_row[G_QUEUED] = _clip32((n_active - n_present) / max(S, 1), -1.0)  # slots.queued(state)
    global_row[G_SLOTS] = _clip32(n_present / max(S, 1), -1.0)
    global_row[G_LOG_TIME] = _clip32(np.log1p(x[o + L_SLOT * S]) / scale[o + L_SLOT * S], -1.0)
    _fill_scale(frame, n_avail, n_held, out[8], out[9], out[10])


@njit(cache=True)
def _fill_scale(
    frame: Any, n_avail: int, n_held: int, rows: np.ndarray, shape: np.ndarray, g: np.ndarray
) -> None:  # pragma: no cover - jit
    """The scale-free parts (``job_scale``, ``job_shape``, ``global_scale``; zeros in):
    counts over the idle pool and the job's own range, rates over the job's reference.

    Args:
        frame: the ``ObsFrame`` (its ``log_args`` hold the shown rates).
        n_avail: idle nodes now: the pool the counts are fractions of (taken as 1 when 0).
        n_held: nodes held by jobs: the free part of the pool is the rest.
        rows: (S, SCALE_DIM) ``job_scale``; empty: nothing is written.
        shape: (S, SHAPE_POINTS) ``job_shape``.
        g: (GLOBAL_SCALE_DIM,) ``global_scale``.
    """
    slot_job, n_nodes, x = frame.slot_job, frame.n_nodes, frame.log_args
    lo_of, hi_of, ref, shape_static = (
        frame.min_nodes,
        frame.max_nodes,
        frame.ref_rate,
        frame.shape_static,
    )
    if rows.shape[0] == 0:  # (a builder without the scale-free keys)
        return
    pool = max(n_avail, 1)
    o = 2 * frame.available.shape[0]
    d_min = d_max = 0
    for s in range(slot_job.shape[0]):
        j = slot_job[s]
        if j < 0:
            continue
        lo, hi, n = max(lo_of[j], 1), max(hi_of[j], 1), n_nodes[j]
        d_min += lo
        d_max += hi
        rows[s, S_HELD] = _clip32(n / pool, -1.0)
        rows[s, S_MIN] = _clip32(lo / pool, -1.0)
        rows[s, S_MAX] = _clip32(hi / pool, -1.0)
        rows[s, S_POS] = _clip32((n - lo + 1) / max(hi - lo + 1, 1), 0.0) if n > 0 else 0.0
        if ref[j] > 0:
            rows[s, S_RATE] = _clip32(x[o + L_SLOT * s + L_RATE] / ref[j], 0.0)
        for k in range(shape.shape[1]):
            shape[s, k] = shape_static[j, k]
    g[GS_FREE] = _clip32((n_avail - n_held) / pool, -1.0)
    g[GS_MIN] = _clip32(d_min / pool, -1.0)
    g[GS_MAX] = _clip32(d_max / pool, -1.0)
