"""``SchedulerView``: the read-only, information-limited snapshot a policy decides on.

What a policy may know depends on ``InfoMode``:

- ``user`` (FreeTrain): what users declare at submission: min/max nodes, a throughput curve
  and rescale costs (exact, or biased when the scenario says users misdeclare).
- ``profiled`` (MalleTrain): no curve up front; only what a profiler has measured (filled in
  by the policy's own profiler; here the curves are unknown, NaN).
- ``oracle``: the true curves and costs (for bounds and tests).

In every mode a policy sees the node map, node types, topology and the *profiled* per-class
slowdowns (PAL's per-GPU profiles), never the true slowdowns, and sees a window's end only
when it is known. All arrays are read-only views: a policy cannot mutate the state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import RescaleMode
from mtgym.sim.state import ClusterState


class InfoMode(enum.StrEnum):
    """Which job information a policy may see (see module docstring)."""

    USER = "user"
    PROFILED = "profiled"
    ORACLE = "oracle"


def _ro(arr: np.ndarray) -> np.ndarray:
    v = arr.view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True, eq=False)
class SchedulerView:
    """A decision-time snapshot. Per-node arrays (N,), per-job arrays (J,)."""

    time: float
    mode: InfoMode
    gpus_per_node: int
    # nodes
    available: np.ndarray  # bool
    node_job: np.ndarray  # int32, -1 = none
    gpu_type: np.ndarray  # int16
    topology_coords: np.ndarray  # (N, L) int32
    locality_factor: np.ndarray  # (L,) PAL's lambda per spread level (public: the machine's)
    slowdown: np.ndarray  # (N, 4) profiled per-class factors
    window_end: np.ndarray  # float64 known end of the node's current idle window, inf = unknown
    # jobs
    status: np.ndarray  # int8 JobStatus
    submit_s: np.ndarray
    app_class: np.ndarray
    min_nodes: np.ndarray
    max_nodes: np.ndarray
    n_nodes: np.ndarray
    progress: np.ndarray  # useful samples done (the job reports it)
    work: np.ndarray  # total work if known (user/oracle), nan otherwise
    curve_nodes: np.ndarray  # (J, K)
    curve_tput: np.ndarray  # (J, K) declared / true / nan by mode
    r_up_s: np.ndarray
    r_down_s: np.ndarray
    rate: np.ndarray  # samples/s its progress reports show now (0 while pausing)
    # How the system charges a resize (public, like the machine): a pause of R s at the new
    # size, or BFTrainer's R x (rate before) lost samples that the job redoes.
    rescale_mode: RescaleMode = RescaleMode.PAUSE
    # When each node's current idle window began (nan = not lent), and when the episode ends
    # (inf = open-ended): public facts a learned policy's observation shows (its idle time
    # so far, time / horizon); None / inf where the view's builder does not know them.
    idle_since: np.ndarray | None = None
    t_end: float = float("inf")

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.available.shape[0])

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return int(self.status.shape[0])


class ViewBuilder:
    """Builds views of one instance in one mode; the mode-dependent arrays are made once."""

    def __init__(self, instance: Instance, mode: InfoMode | str = InfoMode.USER) -> None:
        self.instance = instance
        self.mode = InfoMode(mode)
        jobs = instance.jobs
        J = instance.num_jobs
        if self.mode is InfoMode.ORACLE:
            curve, up, down, work = jobs.curve_tput, jobs.r_up_s, jobs.r_down_s, jobs.work
        elif self.mode is InfoMode.USER:
            curve, up, down, work = (
                jobs.declared_curve_tput,
                jobs.declared_r_up_s,
                jobs.declared_r_down_s,
                jobs.work,
            )
        else:
            nan = np.full(J, np.nan)
            curve, up, down, work = np.full(jobs.curve_tput.shape, np.nan), nan, nan, nan
        self._curve, self._up, self._down, self._work = (
            _ro(np.asarray(x)) for x in (curve, up, down, work)
        )
        # Private: the future of the supply must not leak (only open windows are shown).
        self._window_end = np.where(instance.supply.end_known, instance.supply.end_s, np.inf)
        self._window_start = np.asarray(instance.supply.start_s, dtype=np.float64)

    def __call__(self, state: ClusterState) -> SchedulerView:
        """Snapshot ``state`` (cheap: read-only views, two small derived arrays)."""
        w = state.window
        wend = np.where(w >= 0, self._window_end[np.maximum(w, 0)], np.inf)
        since = np.where(w >= 0, self._window_start[np.maximum(w, 0)], np.nan)
        rate = np.where(state.stall_until > state.time, 0.0, state.rate)
        jobs, cl = self.instance.jobs, self.instance.cluster
        return SchedulerView(
            time=state.time,
            mode=self.mode,
            gpus_per_node=cl.gpus_per_node,
            available=_ro(state.available),
            node_job=_ro(state.node_job),
            gpu_type=cl.gpu_type,
            topology_coords=cl.topology.coords,
            locality_factor=cl.topology.locality_factor,
            slowdown=cl.profiled_slowdown,
            window_end=_ro(wend),
            status=_ro(state.status),
            submit_s=jobs.submit_s,
            app_class=jobs.app_class,
            min_nodes=jobs.min_nodes,
            max_nodes=jobs.max_nodes,
            n_nodes=_ro(state.n_nodes),
            progress=_ro(state.progress),
            work=self._work,
            curve_nodes=jobs.curve_nodes,
            curve_tput=self._curve,
            r_up_s=self._up,
            r_down_s=self._down,
            rate=_ro(rate),
            rescale_mode=self.instance.costs.rescale,
            idle_since=_ro(since),
            t_end=float(self.instance.t_end),
        )
