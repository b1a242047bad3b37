"""``ObservationBuilder``: state -> the env's Dict observation (fixed shapes, padded, masked).

All values are float32 and roughly O(1): rates, work and durations are log-scaled with fixed
constants (``log1p(x) / scale``), never with instance truths, so nothing hidden leaks through
normalisation. What a job row shows depends on the information mode (``mtgym.sim.view``):
``user`` -> declared curve, work and costs; ``profiled`` -> only measured rates (passive
profiling) and no work or costs; ``oracle`` -> the truth.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from mtgym.env.slots import JobSlots
from mtgym.generate.instance import Instance
from mtgym.model.throughput import interp_rows
from mtgym.sim.profiling import PassiveProfiler
from mtgym.sim.state import ClusterState
from mtgym.sim.view import InfoMode
from mtgym.types import NUM_CLASSES

RATE_SCALE = 20.0  # log1p(samples/s) / 20: 1e8 samples/s -> 0.92
WORK_SCALE = 25.0  # log1p(samples) / 25
TIME_SCALE = 12.0  # log1p(seconds) / 12: one week -> 1.1
COST_SCALE = 60.0  # seconds / 60
OBS_HIGH = 8.0  # every scaled feature is clipped to [-1, 8] (values are O(1) by design)


def curve_points(max_count: int) -> np.ndarray:
    """Node counts at which curves are observed: 1, 2, 4, ... and ``max_count``."""
    pts = [1]
    while pts[-1] * 2 < max_count:
        pts.append(pts[-1] * 2)
    if pts[-1] != max_count:
        pts.append(max_count)
    return np.array(pts[: max(1, len(pts))], dtype=np.float64)


class ObservationBuilder:
    """Builds observations for fixed sizes; buffers are preallocated and reused."""

    NODE_BASE = 10  # available, held, type, 4 slowdowns, idle time, end known, time to end

    def __init__(
        self,
        num_nodes: int,
        num_slots: int,
        max_count: int,
        num_levels: int,
        num_gpu_types: int,
        mode: InfoMode,
        mask_size: int,
    ) -> None:
        self.N, self.S, self.C = num_nodes, num_slots, max_count
        self.mode = mode
        self.points = curve_points(max_count)
        self.P = self.points.size
        self.G = max(num_levels - 2, 0)  # intermediate topology levels
        self.T = num_gpu_types
        self.node_dim = self.NODE_BASE + self.G
        self.job_dim = 16
        self.global_dim = 6
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
                "action_mask": spaces.Box(0, 1, (mask_size,), np.int8),
            }
        )

    def bind(self, instance: Instance) -> None:
        """Precompute the parts of the observation that never change in an episode."""
        cl, jobs = instance.cluster, instance.jobs
        C = self.C
        ns = np.zeros((self.N, self.node_dim), dtype=np.float32)
        ns[:, 2] = cl.gpu_type / max(self.T - 1, 1)
        ns[:, 3 : 3 + NUM_CLASSES] = cl.profiled_slowdown
        if self.G:
            coords = cl.topology.coords[:, 1 : 1 + self.G]
            ns[:, self.NODE_BASE :] = coords / np.maximum(coords.max(axis=0), 1)
        np.clip(ns, -1.0, OBS_HIGH, out=ns)
        self._node_static = ns
        J = instance.num_jobs
        js = np.zeros((J, self.job_dim), dtype=np.float32)
        js[:, 0] = 1.0
        js[np.arange(J), 1 + jobs.app_class.astype(np.int64)] = 1.0
        js[:, 6] = jobs.min_nodes / C
        js[:, 7] = np.minimum(jobs.max_nodes, C) / C
        curve = np.zeros((J, self.P), dtype=np.float32)
        known = np.zeros((J, self.P), dtype=np.float32)
        self._work = None
        if self.mode is not InfoMode.PROFILED and J:
            oracle = self.mode is InfoMode.ORACLE
            tput = jobs.curve_tput if oracle else jobs.declared_curve_tput
            pts = np.broadcast_to(self.points, (J, self.P))
            rows = np.repeat(np.arange(J), self.P)
            vals = interp_rows(pts.ravel(), jobs.curve_nodes[rows], tput[rows]).reshape(J, self.P)
            kn = pts <= np.minimum(jobs.max_nodes, C)[:, None]
            curve[:] = np.log1p(np.where(kn, vals, 0.0)) / RATE_SCALE
            known[:] = kn
            js[:, 13] = (jobs.r_up_s if oracle else jobs.declared_r_up_s) / COST_SCALE
            js[:, 14] = (jobs.r_down_s if oracle else jobs.declared_r_down_s) / COST_SCALE
            js[:, 15] = 1.0
            self._work = jobs.work
        np.clip(js, -1.0, OBS_HIGH, out=js)
        np.clip(curve, 0.0, OBS_HIGH, out=curve)
        self._job_static, self._curve, self._known = js, curve, known

    def build(
        self,
        state: ClusterState,
        instance: Instance,
        slots: JobSlots,
        profiler: PassiveProfiler,
        action_mask: np.ndarray,
        t_end: float,
    ) -> dict[str, np.ndarray]:
        """The observation of ``state`` (fresh arrays: safe to keep). Call ``bind`` first."""
        N, S = self.N, self.S
        sup = instance.supply
        t = state.time
        # -- nodes: static columns from bind, dynamic ones here --
        nodes = self._node_static.copy()
        avail = state.available
        nodes[:, 0] = avail
        nodes[:, 1] = state.node_job >= 0
        w = state.window
        has = w >= 0
        wi = np.maximum(w, 0)
        nodes[:, 7] = (
            np.log1p(np.where(has, np.maximum(t - sup.start_s[wi], 0.0), 0.0)) / TIME_SCALE
        )
        known = has & sup.end_known[wi]
        nodes[:, 8] = known
        nodes[:, 9] = (
            np.log1p(np.where(known, np.maximum(sup.end_s[wi] - t, 0.0), 0.0)) / TIME_SCALE
        )
        # node -> slot (-1 maps through the extra last cell)
        slot_of_job = np.full(instance.num_jobs + 1, -1, dtype=np.int64)
        present = slots.present
        idx = np.flatnonzero(present)
        j = slots.job[idx]
        slot_of_job[j] = idx
        node_job = slot_of_job[state.node_job].astype(np.float32)
        # -- jobs --
        jf = np.zeros((S, self.job_dim), dtype=np.float32)
        curve = np.zeros((S, self.P), dtype=np.float32)
        known_c = np.zeros((S, self.P), dtype=np.float32)
        if idx.size:
            jf[idx] = self._job_static[j]
            jf[idx, 5] = state.n_nodes[j] / self.C
            # what progress reports show: 0 while the job pauses
            jf[idx, 8] = (
                np.log1p(np.where(state.stall_until[j] > t, 0.0, state.rate[j])) / RATE_SCALE
            )
            jf[idx, 9] = np.log1p(np.maximum(t - instance.jobs.submit_s[j], 0.0)) / TIME_SCALE
            jf[idx, 10] = state.stall_until[j] > t
            jf[idx, 11] = np.log1p(state.progress[j]) / WORK_SCALE
            if self._work is None:  # profiled: only what was measured
                vals, kn = profiler.curve_at(j, self.points)
                jf[idx, 15] = (~np.isnan(profiler.rate[j, 1:])).sum(axis=1) / self.C
                curve[idx] = np.log1p(vals) / RATE_SCALE
                known_c[idx] = kn
            else:
                jf[idx, 12] = (
                    np.log1p(np.maximum(self._work[j] - state.progress[j], 0.0)) / WORK_SCALE
                )
                curve[idx] = self._curve[j]
                known_c[idx] = self._known[j]
        # -- global --
        g = np.zeros(self.global_dim, dtype=np.float32)
        n_avail = int(np.count_nonzero(avail))
        g[0] = (
            (t - instance.t_start) / max(t_end - instance.t_start, 1.0)
            if np.isfinite(t_end)
            else 0.0
        )
        g[1] = n_avail / N
        g[2] = (n_avail - int(state.n_nodes.sum())) / N
        g[3] = slots.queued(state) / max(S, 1)
        g[4] = idx.size / max(S, 1)
        g[5] = np.log1p(max(t - instance.t_start, 0.0)) / TIME_SCALE
        np.clip(nodes[:, 7:10], -1.0, OBS_HIGH, out=nodes[:, 7:10])
        np.clip(jf, -1.0, OBS_HIGH, out=jf)
        np.clip(curve, 0.0, OBS_HIGH, out=curve)
        np.clip(g, -1.0, OBS_HIGH, out=g)
        return {
            "nodes": nodes,
            "node_mask": avail.astype(np.float32),
            "node_job": node_job,
            "jobs": jf,
            "job_mask": present.astype(np.float32),
            "job_curve": curve,
            "job_curve_known": known_c,
            "global": g,
            "action_mask": action_mask.copy(),
        }
