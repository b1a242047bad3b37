"""``SchedulerView``: the read-only, information-limited snapshot a policy decides on.

What a policy may know depends on ``InfoMode``:

- ``user`` (FreeTrain): what users declare at submission: min/max nodes, a throughput curve
  and rescale costs (exact, or biased when the scenario says users misdeclare).
- ``profiled`` (MalleTrain): no curve up front; only what a profiler has measured (filled in
  by the policy's own profiler; here the curves are unknown, NaN).
- ``oracle``: the true curves and costs (for bounds and tests).
- ``clairvoyant``: the whole episode, for the clairvoyant planner only (``CLAIRVOYANT_POLICIES``;
  a builder refuses it to any other policy): the true curves and costs, the true per-class
  slowdowns instead of the profiled ones, every current window's true end (announced or
  not), and the instance itself (``SchedulerView.instance``: every future window and
  arrival).

In every mode a policy sees the node map, node types, topology and the *profiled* per-class
slowdowns (PAL's per-GPU profiles), never the true slowdowns, and sees a window's end only
when it is known. All arrays are read-only views: a policy cannot mutate the state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from mtgym.core.errors import PolicyUnsupportedError
from mtgym.core.instance import Instance, readonly_view
from mtgym.core.types import RescaleMode
from mtgym.model.placement import pack_targets
from mtgym.sim.state import ClusterState


class InfoMode(enum.StrEnum):
    """Which job information a policy may see (see module docstring).

    ``USER``: the declared curves and costs; ``PROFILED``: neither (NaN), nor the work;
    ``ORACLE``: the true ones; ``CLAIRVOYANT``: the whole episode (the clairvoyant
    planner's only).
    """

    USER = "user"
    PROFILED = "profiled"
    ORACLE = "oracle"
    CLAIRVOYANT = "clairvoyant"


#: the policies a ``CLAIRVOYANT`` view may be built for (by name; the planner's own
#: candidates are named ``clairvoyant/<candidate>``)
CLAIRVOYANT_POLICIES = ("clairvoyant",)


def may_see_the_future(policy_name: str | None) -> bool:
    """Whether ``policy_name`` may be given ``InfoMode.CLAIRVOYANT`` views."""
    name = str(policy_name or "")
    return name in CLAIRVOYANT_POLICIES or name.split("/", 1)[0] in CLAIRVOYANT_POLICIES


@dataclass(frozen=True, eq=False)
class SchedulerView:
    """A decision-time snapshot. Per-node arrays (N,), per-job arrays (J,).

    Attributes:
        time: the decision time, seconds on the instance's clock.
        mode: what the job columns below reveal (``InfoMode``).
        gpus_per_node: devices per node (every node has the same number).
        available: (N,) bool, the node is idle and lent now.
        node_job: (N,) int32, the job running on the node, -1 = none.
        gpu_type: (N,) int16 index into the cluster's ``gpu_type_names``.
        topology_coords: (N, L) int32 group id of each node at each topology level
            (``mtgym.core.topology``).
        locality_factor: (L,) PAL's lambda per spread level (public: the machine's).
        slowdown: (N, 4) profiled per-class factors (a profile's, never the true ones).
        window_end: (N,) float64 end of the node's current idle window when it is
            announced, inf = unknown or not lent.
        status: (J,) int8 ``JobStatus``.
        submit_s: (J,) submission times, seconds.
        app_class: (J,) ``AppClass`` index, the column of ``slowdown`` that applies.
        min_nodes: (J,) fewest nodes a running job may hold.
        max_nodes: (J,) most nodes it may hold.
        n_nodes: (J,) nodes held now.
        progress: (J,) useful samples done (the job reports it).
        work: (J,) total work in samples if known (user/oracle), NaN otherwise.
        curve_nodes: (J, K) node counts of each job's curve breakpoints.
        curve_tput: (J, K) samples/s at those counts: declared (user), true (oracle) or
            NaN (profiled).
        r_up_s: (J,) scale-up cost, seconds: declared, true or NaN by mode.
        r_down_s: (J,) scale-down cost, seconds: declared, true or NaN by mode.
        rate: (J,) samples/s its progress reports show now (0 while pausing).
        rescale_mode: how the system charges a resize (public, like the machine): a pause of
            R s at the new size, or BFTrainer's R x (rate before) lost samples that the job
            redoes.
        idle_since: (N,) when each node's current idle window began (NaN = not lent): a
            public fact a learned policy's observation shows (its idle time so far); None
            where the view's builder does not know it.
        t_end: when the episode ends (inf = open-ended or unknown), for time / horizon.
        instance: the whole episode (``CLAIRVOYANT`` views only; None otherwise).
    """

    time: float
    mode: InfoMode
    gpus_per_node: int
    # nodes
    available: np.ndarray
    node_job: np.ndarray
    gpu_type: np.ndarray
    topology_coords: np.ndarray
    locality_factor: np.ndarray
    slowdown: np.ndarray
    window_end: np.ndarray
    # jobs
    status: np.ndarray
    submit_s: np.ndarray
    app_class: np.ndarray
    min_nodes: np.ndarray
    max_nodes: np.ndarray
    n_nodes: np.ndarray
    progress: np.ndarray
    work: np.ndarray
    curve_nodes: np.ndarray
    curve_tput: np.ndarray
    r_up_s: np.ndarray
    r_down_s: np.ndarray
    rate: np.ndarray
    rescale_mode: RescaleMode = RescaleMode.PAUSE
    idle_since: np.ndarray | None = None
    t_end: float = float("inf")
    instance: Instance | None = None

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.available.shape[0])

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return int(self.status.shape[0])

    def pack(self, jobs: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """A node map giving ``jobs[i]`` exactly ``targets[i]`` of this view's idle nodes,
        without migration (shrinking jobs keep their fastest nodes): the model's placer
        (``mtgym.model.placement.pack_targets``) on the view's idle nodes, current map,
        profiled slowdowns, classes and topology.

        Args:
            jobs: job indices to place, in priority order (earlier jobs take the better
                free nodes).
            targets: node count for each of ``jobs``.

        Returns:
            (N,) int32 node map; jobs not in ``jobs`` get no node.

        Raises:
            ValueError: the targets need more free nodes than there are.
        """
        return pack_targets(
            self.available,
            self.node_job,
            self.slowdown,
            self.app_class,
            self.topology_coords,
            jobs,
            targets,
        )


class ViewBuilder:
    """Builds views of one instance in one mode; the mode-dependent arrays are made once.

    Args:
        instance: the episode's instance.
        mode: the information mode of every view built (an ``InfoMode`` or its value,
            ``"user"``, ``"profiled"``, ``"oracle"`` or ``"clairvoyant"``).
        policy_name: the name of the policy the views are for; ``CLAIRVOYANT`` views are
            built only for ``may_see_the_future`` names.

    Raises:
        ValueError: an unknown mode; PolicyUnsupportedError: ``CLAIRVOYANT`` for another
            policy.
    """

    def __init__(
        self,
        instance: Instance,
        mode: InfoMode | str = InfoMode.USER,
        *,
        policy_name: str | None = None,
    ) -> None:
        self.instance = instance
        self.mode = InfoMode(mode)
        self._future = self.mode is InfoMode.CLAIRVOYANT
        if self._future and not may_see_the_future(policy_name):
            raise PolicyUnsupportedError(
                str(policy_name or "a policy"),
                "the clairvoyant information mode (the whole episode) is the clairvoyant "
                "planner's only",
            )
        jobs = instance.jobs
        J = instance.num_jobs
        if self.mode in (InfoMode.ORACLE, InfoMode.CLAIRVOYANT):
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
            readonly_view(np.asarray(x)) for x in (curve, up, down, work)
        )
        # Private: the future of the supply must not leak (only open windows are shown),
        # except to the clairvoyant planner, which sees every window's true end
        sup = instance.supply
        self._window_end = sup.end_s if self._future else np.where(sup.end_known, sup.end_s, np.inf)
        cl = instance.cluster
        self._slowdown = cl.slowdown if self._future else cl.profiled_slowdown
        self._window_start = np.asarray(instance.supply.start_s, dtype=np.float64)

    def __call__(self, state: ClusterState) -> SchedulerView:
        """Snapshot ``state`` (cheap: read-only views, a few small derived arrays).

        Args:
            state: the current state of this builder's instance.

        Returns:
            The view. ``available``, ``node_job``, ``status``, ``n_nodes`` and
            ``progress`` are read-only views of the state's arrays, so they follow later
            in-place updates (copy them to keep a snapshot).
        """
        w = state.window
        wend = np.where(w >= 0, self._window_end[np.maximum(w, 0)], np.inf)
        since = np.where(w >= 0, self._window_start[np.maximum(w, 0)], np.nan)
        rate = np.where(state.stall_until > state.time, 0.0, state.rate)
        jobs, cl = self.instance.jobs, self.instance.cluster
        return SchedulerView(
            time=state.time,
            mode=self.mode,
            gpus_per_node=cl.gpus_per_node,
            available=readonly_view(state.available),
            node_job=readonly_view(state.node_job),
            gpu_type=cl.gpu_type,
            topology_coords=cl.topology.coords,
            locality_factor=cl.topology.locality_factor,
            slowdown=self._slowdown,
            window_end=readonly_view(wend),
            status=readonly_view(state.status),
            submit_s=jobs.submit_s,
            app_class=jobs.app_class,
            min_nodes=jobs.min_nodes,
            max_nodes=jobs.max_nodes,
            n_nodes=readonly_view(state.n_nodes),
            progress=readonly_view(state.progress),
            work=self._work,
            curve_nodes=jobs.curve_nodes,
            curve_tput=self._curve,
            r_up_s=self._up,
            r_down_s=self._down,
            rate=readonly_view(rate),
            rescale_mode=self.instance.costs.rescale,
            idle_since=readonly_view(since),
            t_end=float(self.instance.t_end),
            instance=self.instance if self._future else None,
        )
